"""``timefoil inspect``: what a benchmark holds, and the chance level of each headline metric."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..benchmarks import get_benchmark
from ..models.reference import RandomModel
from ..execution.offline import answer_offline
from ..core.bulk import no_cycle_passes
from ..core.items import Item
from ..core.options import typed_options
from ..scoring import score_records


def inspect_benchmark(name: str, data_dir: str, protocol: str | None = None, **options) -> dict:
    with no_cycle_passes():  # loading, planning and scoring 100,000 items: see no_cycle_passes
        return _inspected(name, data_dir, protocol, **options)


def _inspected(name: str, data_dir: str, protocol: str | None = None, **options) -> dict:
    bench = get_benchmark(name)
    items = bench.load(data_dir, **typed_options(bench.load, options, f"{name} option"))
    main = [item for item in items if not item.is_proficiency]
    counts: Counter = Counter()
    seen = set()
    for item in main:
        unit = item.group_id if bench.unit == "groups" else item.id
        for key in [item.test] + ([f"{item.test}/{item.subtest}"] if item.subtest else []):
            if (key, unit) not in seen:
                seen.add((key, unit))
                counts[key] += 1
    total = len({(i.group_id if bench.unit == "groups" else i.id) for i in main})
    protocol = protocol or bench.default_protocol
    # Chance depends only on structure: score any answers and keep the chance column.
    records = answer_offline(items, protocol, RandomModel(), prompts=bench.prompts, order_policy=bench.order_policy)
    report = score_records(records, benchmark=name, model="structure", protocol=protocol, spec=bench.summary)
    chance = {m.name.removeprefix("overall/"): round(m.chance, 4) for m in report.metrics
              if m.name.startswith("overall/") and m.chance is not None}
    missing = [t for t in bench.summary.tests if t not in {item.test for item in items}]
    repeats = repeated(items)
    return {"benchmark": name, "unit": bench.unit, "protocol": protocol, "total": total,
            "counts": dict(sorted(counts.items())), "chance": chance, "missing_tests": missing,
            **({"repeated": {"items": len(repeats), "first": list(repeats[0])}} if repeats else {}),
            **(bench.survey(data_dir) if bench.survey else {})}


def repeated(items: Sequence[Item]) -> list[tuple[str, str]]:
    """(item, the earlier item it repeats) for each item that asks what another asks, word for
    word: a line repeated in an annotation file, whose id a loader made from its place (VITATECS
    numbers its rows, and its release repeats some). Each is counted, as the release counts it;
    ``inspect`` says so rather than letting the count pass as distinct questions."""
    first: dict[tuple, str] = {}
    found = []
    for item in items:
        asked = (item.benchmark, item.test, item.subtest, item.role, item.categories, item.videos, item.texts,
                 item.target, item.options_are, item.prompt, item.target_position, item.joined_video, item.labels)
        if asked in first:
            found.append((item.id, first[asked]))
        else:
            first[asked] = item.id
    return found
