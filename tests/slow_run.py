"""A run slow enough to be killed mid-way: bag-of-frames that sleeps per request; and one whose
batches fail."""
import sys
import time

from timefoil.models.reference import BagOfFramesModel
from timefoil import RunConfig, run


class SlowBagOfFrames(BagOfFramesModel):
    batch_size = 2

    def answer(self, requests, frames):
        time.sleep(0.03 * len(requests))
        return super().answer(requests, frames)


class FailsInPairs(BagOfFramesModel):
    """bag-of-frames whose batches of two fail: answered one request at a time instead. Each
    failed batch's size is appended to ``log`` (workers of a local cluster share the disk)."""
    batch_size = 2

    def __init__(self, log: str):
        super().__init__()
        self.log = log

    def answer(self, requests, frames):
        if len(requests) > 1:
            with open(self.log, "a") as log:
                log.write(f"{len(requests)} ")
            raise RuntimeError("an illegal memory access was encountered")
        return super().answer(requests, frames)


if __name__ == "__main__":
    data, out, cache = sys.argv[1:4]
    run(RunConfig("synth", "bag-of-frames", data_dir=data), out, cache_dir=cache, model=SlowBagOfFrames(),
        progress=False)
