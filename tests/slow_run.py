"""A run slow enough to be killed mid-way: bag-of-frames that sleeps per request."""
import sys
import time

from timefoil.models.reference import BagOfFramesModel
from timefoil import RunConfig, run


class SlowBagOfFrames(BagOfFramesModel):
    batch_size = 2

    def answer(self, requests, frames):
        time.sleep(0.03 * len(requests))
        return super().answer(requests, frames)


if __name__ == "__main__":
    data, out, cache = sys.argv[1:4]
    run(RunConfig("synth", "bag-of-frames", data_dir=data), out, cache_dir=cache, model=SlowBagOfFrames(),
        progress=False)
