"""``--bench-arg``: one grammar whether a command runs one benchmark or several.

``NAME.KEY=VALUE`` sets KEY for benchmark NAME; a plain ``KEY=VALUE`` sets it for every benchmark
of the command (with one benchmark, that one). KEY is one of the benchmark's loader options
(``subset``, ``format``, ...) or a run option (``protocol``, ``variant``). A name or key that
names nothing is a usage error (exit 2) offering the closest one and listing those accepted."""
from __future__ import annotations

import inspect
import os

from ..benchmarks import get_benchmark
from ..core.registry import UnknownName, did_you_mean

RUN_OPTIONS = ("protocol", "variant")  # set the run's protocol or prompt variant, not a loader option


def accepted_keys(benchmark: str) -> tuple[str, ...] | None:
    """The keys ``--bench-arg`` takes for ``benchmark``: its loader's options and the run
    options; None where its loader takes any keyword (a plugin's may)."""
    parameters = inspect.signature(get_benchmark(benchmark).load).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return None
    loader = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
              and p.name != "data_dir" and p.default is not inspect.Parameter.empty]
    return (*sorted(loader), *RUN_OPTIONS)


def split_pairs(pairs: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UnknownName(f"--bench-arg takes NAME.KEY=VALUE (or KEY=VALUE), got {pair!r}")
        out.append((key.strip(), value))
    return out


def bench_options(pairs: tuple[str, ...] | list[str], benchmarks: list[str]) -> dict[str, dict[str, str]]:
    """Each benchmark's options from the command's ``--bench-arg`` pairs, checked: the name one
    of the command's benchmarks, the key one its benchmark accepts."""
    out: dict[str, dict[str, str]] = {name: {} for name in benchmarks}
    for key, value in split_pairs(pairs):
        name, dot, option = key.rpartition(".")
        if dot and name not in out:
            if name in _all_benchmarks():
                raise UnknownName(f"--bench-arg {key}={value}: {name!r} is not one of this run's benchmarks "
                                  f"({', '.join(benchmarks)})")
            raise UnknownName(f"--bench-arg {key}={value}: unknown benchmark {name!r}"
                              f"{did_you_mean(name, benchmarks)}; this run's: {', '.join(benchmarks)}")
        for target in ([name] if dot else benchmarks):
            keys = accepted_keys(target)
            if keys is not None and option not in keys:
                raise UnknownName(_unknown_key(target, option, keys, key, value, several=len(benchmarks) > 1))
            if option == "protocol":
                _check_protocol(target, value)
            _check_value(target, option, value, key)
            out[target][option] = value
    return out


def _check_protocol(benchmark: str, protocol: str) -> None:
    """A protocol that names none, or none the benchmark is asked under, is a usage error."""
    from ..protocols import get_protocol

    get_protocol(protocol)  # an unknown name offers the closest
    bench = get_benchmark(benchmark)
    if protocol not in bench.protocols:
        raise UnknownName(bench.refusal(protocol))


def _check_value(benchmark: str, option: str, value: str, key: str) -> None:
    """A value that is neither one of the words the option takes nor (where it takes one) an
    existing file is a usage error naming both."""
    declared = get_benchmark(benchmark).option_values.get(option)
    if declared is None:
        return
    words, other = declared
    if value in words or (other is not None and os.path.exists(value)):
        return
    takes = " or ".join(words) if len(words) <= 2 else ", ".join(words[:-1]) + " or " + words[-1]
    neither = f"neither {takes} nor an existing file" if other is not None else f"not {takes}"
    raise UnknownName(f"--bench-arg {key}={value}: {benchmark}'s {option} takes {takes}"
                      + (f", or {other}" if other is not None else "")
                      + f"; {value!r} is {neither}{did_you_mean(value, words)}")


def _unknown_key(benchmark: str, option: str, keys: tuple[str, ...], key: str, value: str, several: bool) -> str:
    where = f"{benchmark} has no option {option!r}" if several and "." not in key else \
        f"unknown {benchmark} option {option!r}"
    return f"--bench-arg {key}={value}: {where}{did_you_mean(option, keys)}; accepted: {', '.join(keys)}" + \
        (f" (give it to one benchmark as NAME.{option}={value})" if several and "." not in key else "")


def _all_benchmarks() -> list[str]:
    from ..benchmarks import BENCHMARKS

    return list(BENCHMARKS)


def run_options(options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(run options, loader options) of one benchmark's ``--bench-arg`` options."""
    return ({k: v for k, v in options.items() if k in RUN_OPTIONS},
            {k: v for k, v in options.items() if k not in RUN_OPTIONS})


__all__ = ["RUN_OPTIONS", "accepted_keys", "bench_options", "run_options", "split_pairs"]
