"""The terminal's tables: each number beside its own chance."""
from benchmark_files import (ByLength)


def test_terminal_table_shows_each_numbers_own_chance():
    """ViLMA-like: T has chance 1/3 in one test and 1/2 in the other; the overall row's chance
    must not stand above every test."""
    from rich.console import Console

    from helpers import pair_item

    from timefoil.reports.report import ScoredRun, run_table
    from timefoil.scoring import score_records

    items = [pair_item(f"a{k}", f"a{k}", ["c", "f", "g"], test="a") for k in range(3)]
    items += [pair_item(f"b{k}", f"b{k}", ["c", "f"], test="b") for k in range(3)]
    from timefoil.execution.offline import answer_offline

    report = score_records(answer_offline(items, "similarity", ByLength()), benchmark="t", model="m",
                           protocol="similarity")
    console = Console(width=200, record=True)
    console.print(run_table(ScoredRun("d", "m", "8f", report)))
    lines = console.export_text().splitlines()
    chance_under = {row.split("│")[1].strip(): lines[i + 1] for i, row in enumerate(lines)
                    if row.startswith("│ ") and row.split("│")[1].strip() in ("a", "b", "overall")}
    assert "c 33.3" in chance_under["a"] and "c 50.0" in chance_under["b"] and "c 41.7" in chance_under["overall"]
