"""Every number in the tables says where it comes from: a run's own (and under which reading of
its answers), or quoted from the paper, the released README or the released code."""
import io
import re

import pytest

from helpers import Scripted, pair_item
from timefoil.benchmarks import get_benchmark
from timefoil.benchmarks.base import paper_rows
from timefoil.execution.offline import answer_offline
from timefoil.reports.card import beside_paper
from timefoil.reports.fit import make_console
from timefoil.reports.report import ScoredRun, print_runs
from timefoil.scoring import beside, score_records


def terminal(report, model="m") -> str:
    out = io.StringIO()
    print_runs([ScoredRun("/no/run", "8f", "8 frames", report)], make_console(out))
    return out.getvalue()


def rows_of(text: str, label: str) -> list[list[str]]:
    """The cells of a table row whose first cell starts with ``label`` and of its continuation lines."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("│") and
                 line.split("│")[1].strip().startswith(label))
    rows = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("│") or line.split("│")[1].strip():
            break
        rows.append(line)
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in rows]


def test_a_test_the_released_reading_drops_whole_shows_its_meant_number_in_the_terminal():
    """VELOCITI multiple choice, chrono answered "A." / "B." throughout: no first token is exactly a
    letter, so the released reading drops every chrono pair; coref answered "A" / "B" is kept.
    The released table's chrono row: "–", and under it the meant number, named, with its n (2
    pairs, each right in both orders: 100.0)."""
    items = [pair_item(f"c{k}", f"c{k}", [f"true {k}", f"false {k}"], test="chrono") for k in range(2)] + \
        [pair_item(f"r{k}", f"r{k}", [f"true r{k}", f"false r{k}"], test="coref") for k in range(2)]
    declared = get_benchmark("velociti")
    replies = {"true 0": "{L}.", "true 1": "{L}.", "true r0": "{L}", "true r1": "{L}"}
    records = answer_offline(items, "choice", Scripted(replies), order_policy="both")
    common = dict(benchmark="velociti", model="m", protocol="choice", spec=declared.summary)
    meant = score_records(records, **common)
    released = beside(score_records(records, **common, rule=declared.released), meant)
    shown = terminal(released)
    table = shown[:shown.index("items ·")]
    header = next(line for line in table.splitlines() if line.startswith("┃") and "section" in line)
    columns = [cell.strip() for cell in header.split("┃")[1:-1]]
    chrono = rows_of(table, "chrono")
    a_and_b = columns.index("A∧B")
    assert chrono[0][a_and_b] == "–" and chrono[0][1] == "0"  # no value and no pair under the released reading
    assert "meant 100.0 · n 2" in [line[a_and_b] for line in chrono[1:]]
    assert "meant 100.0 · n 4" in [line[columns.index("accuracy")] for line in chrono[1:]]  # 4 questions
    coref = rows_of(table, "coref")
    assert coref[0][a_and_b].startswith("100.0") and not any("meant" in c for line in coref for c in line)
    # the legend says what the magenta line is, and that a "–" may carry one
    assert "under a – where that reading has none" in " ".join(shown.split())


def test_temporalbench_row_for_llava_onevision_7b_is_labelled_as_the_released_readme():
    """The paper prints GPT-4o's and the human MBA; LLaVA-OneVision-7B at 1 frame (BA 53.30,
    MBA 13.31) is printed in the repository's README: each row says which."""
    declared = get_benchmark("temporalbench")
    readme = next(r for r in declared.quoted if r.label == "LLaVA-OneVision-7B, 1 frame")
    assert (readme.origin, readme.cited, readme.values) == \
        ("released README", "released README", {"overall/BA": 53.30, "overall/MBA": 13.31})
    assert {(r.label, r.origin) for r in declared.quoted if r is not readme} == \
        {("GPT-4o", "paper"), ("human", "paper")}
    assert "released README (choice): LLaVA-OneVision-7B, 1 frame BA 53.3, MBA 13.31" in declared.paper_numbers
    items = [pair_item(f"q{k}", "v1", [f"true {k}", f"false {k}"]) for k in range(2)]
    records = answer_offline(items, "choice", Scripted({"true 0": "{L}", "true 1": "{L}"}), order_policy="both")
    report = score_records(records, benchmark="temporalbench", model="hf:llava-hf/llava-onevision-qwen2-7b-ov-hf",
                           protocol="choice", spec=declared.summary)
    shown = terminal(report)
    assert [c for c in rows_of(shown, "released README · LLaVA-OneVision-7B, 1 frame")[0] if c][1:] == \
        ["53.3", "13.3"]
    assert rows_of(shown, "paper · GPT-4o")[0][0] == "paper · GPT-4o"
    assert not re.search(r"paper · LLaVA-OneVision-7B", shown)
    said, whose = beside_paper(ScoredRun("/no/run", "8f", "8 frames", report))
    assert whose == "LLaVA-OneVision-7B, 1 frame (released README)" and said[:1] == ["13.31"]  # MBA leads the headline


def test_velociti_rows_say_paper_and_their_table():
    row = next(r for r in get_benchmark("velociti").quoted if r.source == "Table 2")
    assert (row.origin, row.cited, row.quoted_from) == ("paper", "paper, Table 2", "the paper (Table 2)")


def test_a_quoted_table_of_no_known_origin_is_refused():
    with pytest.raises(ValueError, match="origin 'blog' is none of"):
        paper_rows("choice", "somewhere", ("overall/BA",), {"x": (1.0,)}, origin="blog")
