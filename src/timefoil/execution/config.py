"""What a run is: benchmark x model x protocol x sampling, and the selection of its items."""
from __future__ import annotations

import os
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..benchmarks import get_benchmark
from ..core.hashing import stable_hash
from ..core.items import Item
from ..core.redaction import redact
from ..video.sampling import Sampling


class RunError(RuntimeError):
    """A run that cannot start (bad configuration, unsupported protocol, mismatched run dir)."""


@dataclass
class RunConfig:
    benchmark: str
    model: str
    data_dir: str | None = None
    protocol: str | None = None
    sampling: Sampling | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None  # first N groups; counterfactual groups are never split
    sample: int | None = None  # N groups drawn at random, stratified over tests (seeded by ``seed``)
    seed: int = 0
    order_policy: str | None = None  # "balanced" or "both"; the benchmark's by default
    blind: bool = False  # text only: the language-prior baseline
    judge: str | None = None  # a model that reads answers the protocol's parser cannot
    variant: str | None = None  # a prompt variant of the benchmark (e.g. "cot")
    max_tokens: int | None = None  # answer budget; the variant's own by default (chain of thought: 1024)
    benchmark_args: dict[str, Any] = field(default_factory=dict)  # loader options (subsets, id lists)

    def resolved(self) -> "RunConfig":
        bench = get_benchmark(self.benchmark)
        return RunConfig(**{**self.__dict__,
                            "protocol": self.protocol or bench.default_protocol,
                            "sampling": self.sampling or bench.default_sampling,
                            "order_policy": self.order_policy or bench.order_policy,
                            "data_dir": os.path.abspath(self.data_dir) if self.data_dir else None})

    def to_json(self) -> dict[str, Any]:
        """The stored form; a model spec's URL is stored without its userinfo and query (a key
        may be written there)."""
        data = dict(self.__dict__)
        data["sampling"] = self.sampling.to_json() if self.sampling else None
        data["model"], data["judge"] = redact(self.model), redact(self.judge)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> "RunConfig":
        data = dict(data)
        data["sampling"] = Sampling.from_json(data["sampling"]) if data.get("sampling") else None
        return RunConfig(**data)


def shown_count(sampling: Sampling) -> str:
    return f"{sampling.frames} frames" if sampling.frames is not None else f"{sampling.fps:g} fps"


class FramesRefused(RunError):
    """A sampling a model with a fixed frame count cannot take (``fitted_to_model``)."""


def fitted_to_model(config: RunConfig, fixed: tuple[int, str] | None) -> tuple[RunConfig, str | None]:
    """``config`` for a model that takes exactly ``fixed[0]`` frames (X-CLIP), and the line that
    says what changed. Where the benchmark's own sampling asks another count (Vinoground's 32
    frames, VELOCITI's 1 fps), the model's count is sampled instead, uniformly; a count the user
    asked for that the model cannot take is refused (RunError) before any video is decoded. A
    blind run shows no frames: it is left as it is."""
    if fixed is None or config.blind:
        return config, None
    count, source = fixed
    default = get_benchmark(config.benchmark).default_sampling
    asked = config.sampling or default
    if asked.single_frame and count != 1:  # the single-frame ablation shows one frame: never fitted
        raise FramesRefused(f"{redact(config.model)} takes exactly {count} frames ({source}): the single-frame "
                            "ablation, which shows one, cannot be run with it")
    if asked.frames == count:
        return config, None
    if (asked.frames, asked.fps) != (default.frames, default.fps):  # not the benchmark's: the user's own
        raise FramesRefused(f"{redact(config.model)} takes exactly {count} frames ({source}), not "
                            f"{shown_count(asked)}; use --frames {count}")
    sampling = replace(asked, frames=count, fps=None, max_frames=max(count, asked.max_frames or count))
    return replace(config, sampling=sampling), (
        f"{config.benchmark}: {redact(config.model)} takes exactly {count} frames ({source}): sampling {count} "
        f"uniform frames, not the benchmark's {shown_count(default)} (run.json: frames_fitted)")


def first_groups(items: Sequence[Item], limit: int | None) -> list[Item]:
    if limit is None:
        return list(items)
    keep = list(OrderedDict.fromkeys(item.group_id for item in items))[:limit]
    wanted = set(keep)
    return [item for item in items if item.group_id in wanted]


def sampled_groups(items: Sequence[Item], n: int | None, seed: int) -> list[Item]:
    """``n`` whole groups drawn per test in proportion to the test's size (largest remainders;
    every test gets one while n allows), in a seeded order: the same items for the same seed."""
    if n is None:
        return list(items)
    by_test: dict[str, list[str]] = defaultdict(list)
    for group in OrderedDict((item.group_id, item.test) for item in items).items():
        by_test[group[1]].append(group[0])
    total = sum(len(groups) for groups in by_test.values())
    if n >= total:
        return list(items)
    share = {test: n * len(groups) / total for test, groups in by_test.items()}
    take = {test: int(value) for test, value in share.items()}
    if n >= len(by_test):
        for test in by_test:  # one each first, then the largest remainders
            take[test] = max(1, take[test])
    for test in sorted(share, key=lambda t: (take[t] - share[t], t)):
        if sum(take.values()) >= n:
            break
        if take[test] < len(by_test[test]):
            take[test] += 1
    while sum(take.values()) > n:  # the one-each rule overshot: trim the largest
        largest = max(take, key=lambda t: (take[t], t))
        take[largest] -= 1
    wanted = {g for test, groups in by_test.items()
              for g in sorted(groups, key=lambda g: stable_hash([seed, g]))[:take[test]]}
    return [item for item in items if item.group_id in wanted]
