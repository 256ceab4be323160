"""``timefoil inspect``: what a benchmark holds, and the chance level of each headline metric."""
from __future__ import annotations

from collections import Counter

from ..benchmarks import get_benchmark
from ..models.reference import RandomModel
from ..execution.offline import answer_offline
from ..core.options import typed_options
from ..scoring import score_records


def inspect_benchmark(name: str, data_dir: str, protocol: str | None = None, **options) -> dict:
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
    return {"benchmark": name, "unit": bench.unit, "protocol": protocol, "total": total,
            "counts": dict(sorted(counts.items())), "chance": chance, "missing_tests": missing,
            **(bench.survey(data_dir) if bench.survey else {})}
