"""What a newcomer sees of the demo's runs: the same headline figures in the terminal, the HTML
summary and leaderboard and `score --json`, a choice run's bias beside its accuracy, and tables
that keep every column and every cell whole at 80, 120 and 200 columns, piped, and at 1280 px."""
import io
import json
import re

import pytest
from rich.console import Console

from helpers import cli, generated_suite
from test_html_report import chromium, needs_chromium
from timefoil import RunConfig, run
from timefoil.commands.demo import DEMO_RUNS, DemoRun, print_summary
from timefoil.reports.fit import make_console
from timefoil.reports.headline import headline
from timefoil.reports.report import print_runs, split_name
from timefoil.video import Sampling

WIDTHS = [80, 120, 200, "piped"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's runs on a small suite, reference models standing in for its language model."""
    suite = generated_suite(tmp_path_factory, seed=3, per_family=1)
    root = tmp_path_factory.mktemp("demo")
    stand_in = {"entailment": DemoRun("constant", "entailment", "always Yes"),
                "choice": DemoRun("random", "choice", "letters at random", order="both")}
    done = []
    for spec in DEMO_RUNS:
        spec = stand_in[spec.protocol] if spec.model == "blind-lm" else spec
        run_dir = str(root / f"{spec.model}-{spec.protocol}")
        run(RunConfig("synth", spec.model, data_dir=suite, protocol=spec.protocol, order_policy=spec.order,
                      sampling=Sampling(frames=4)), run_dir, cache_dir=str(root / "cache"), progress=False)
        done.append((spec, run_dir))
    return root, done


def shown(done, width) -> tuple[str, list]:
    """The demo's summary and full tables as a terminal of ``width`` columns (or a pipe) has them."""
    buffer = io.StringIO()
    console = make_console(buffer) if width == "piped" else Console(file=buffer, width=width)
    scored = print_summary(done, console)
    print_runs(scored, console)
    return buffer.getvalue(), scored


def tables(text: str) -> list[list[str]]:
    """Each table's column headers; a stacked table's (its metric columns under each other, in a
    "metric" column beside "value") with the metrics it lists in place of those two, sorted."""
    lines = text.splitlines()
    found: list[list[str]] = []
    for index, line in enumerate(lines):
        if not line.startswith("┏"):
            continue
        heads = [cell.strip() for cell in lines[index + 1].split("┃")[1:-1]]
        if heads[-2:] == ["metric", "value"]:
            body = lines[index + 3:lines.index(next(b for b in lines[index:] if b.startswith("└")), index)]
            named = [row.split("│")[len(heads) - 1].strip() for row in body if row.startswith("│")]
            heads = heads[:-2] + sorted(set(filter(None, named)))
        found.append(heads)
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_every_column_and_headline_figure_is_shown_whole(demo, width):
    _, done = demo
    text, scored = shown(done, width)
    assert "…" not in text
    if width != "piped":
        assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    found = tables(text)
    for one, heads in zip(scored, found):  # the runs' own tables come first, in order
        metrics = list(dict.fromkeys(split_name(m.name)[1] for m in one.report.metrics))
        assert heads in (["section", "n", *metrics], ["section", "n", *sorted(metrics)]), one.label
    comparisons = [heads for heads in found[len(scored):] if heads[0] == "run"]
    assert len(comparisons) == 3  # similarity, entailment and choice, each side by side
    summary = text[:text.index("┏")]  # the demo's summary, before the first full table
    final = text[list(re.finditer(r"^headline figures *$", text, re.M))[-1].start():]  # the report's, last
    for (spec, _), one in zip(done, scored):
        figures = {m.name: m for m in one.report.metrics}
        names = headline(one.report)
        assert names == one.report.headline  # as `score --json` names them
        if spec.protocol == "choice":
            assert {"overall/accuracy", "overall/bias", "overall/A∧B"} <= set(names)
        for name in names:  # the metric and its value on one line
            line = re.escape(split_name(name)[1]) + r" +" + re.escape(f"{figures[name].value:.1f}")
            assert re.search(line, summary) and re.search(line, final), (width, one.label, name)
    if width == "piped":  # every table whole: none in parts
        assert not re.search(r"\(\d+ of \d+\)", text)


def test_score_json_names_the_headline_the_views_show(demo):
    _, done = demo
    spec, run_dir = next((s, d) for s, d in done if s.protocol == "choice")
    scored = json.loads(cli("score", run_dir, "--json").stdout)
    values = {m["name"]: m["value"] for m in scored["metrics"]}
    assert scored["headline"] == ["overall/average P+T", "overall/accuracy", "overall/A∧B", "overall/bias"]
    assert values["overall/bias"] == -100.0 and values["overall/accuracy"] == 50.0  # constant: always A


# Laid out at 1280 px: tables wider than the window, columns out of view in the tables that
# should fit, words of a header split over lines, cells holding "…"; then the numbers shown.
MEASURE = """<script>addEventListener('load', () => {
  const width = document.documentElement.clientWidth, seen = {width, page: document.documentElement.scrollWidth,
        unboxed: [], hidden: [], split: [], cut: [], summary: [], leaderboard: []};
  for (const table of document.querySelectorAll('main table')) {
    const box = table.closest('.scroll'), edge = (box || document.documentElement).getBoundingClientRect();
    if (!box && table.getBoundingClientRect().right > width + 0.5) seen.unboxed.push(table.className);
    if (table.matches('.summary, .sortable, .compare'))
      for (const cell of table.querySelectorAll('th, td'))
        if (cell.getBoundingClientRect().right > edge.right + 0.5) seen.hidden.push(cell.textContent);
    for (const th of table.querySelectorAll('thead th')) {
      const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
      for (let node; (node = walk.nextNode());)
        for (const word of node.textContent.matchAll(/\\S+/g)) {
          const range = document.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          if (new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1) seen.split.push(word[0]);
        }
    }
    for (const cell of table.querySelectorAll('th, td'))
      if (cell.textContent.includes('…')) seen.cut.push(cell.textContent);
  }
  for (const row of document.querySelectorAll('table.summary tr[data-metric]'))
    seen.summary.push([row.dataset.run, row.dataset.metric, row.querySelector('.v').textContent]);
  for (const board of document.querySelectorAll('section.leaderboard')) {
    const names = [...board.querySelectorAll('th.sort')].map(th => th.title.replace('sort by ', ''));
    for (const row of board.querySelectorAll('tbody tr'))
      [...row.cells].forEach((cell, k) => { const v = cell.querySelector('.v');
        if (v) seen.leaderboard.push([row.dataset.run, names[k], v.textContent]); });
  }
  const out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
});</script>"""


@needs_chromium
def test_at_1280_px_the_report_keeps_every_column_and_shows_each_headline_figure(demo, tmp_path):
    from timefoil.reports.html import write_html

    root, done = demo
    html = write_html([d for _, d in done], str(root / "report.html"), thumbnails=False)
    text = open(html, encoding="utf-8").read()
    measured = tmp_path / "measured.html"
    measured.write_text(text.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dump = chromium(tmp_path, f"file://{measured}", "--dump-dom", "--hide-scrollbars", "--window-size=1280,900")
    seen = json.loads(re.search(r'<pre id="measured">(.*?)</pre>', dump, re.S).group(1).replace("&amp;", "&")
                      .replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"'))
    assert seen["width"] == 1280 and seen["page"] <= 1280  # only the tables' own boxes scroll sideways
    assert seen["unboxed"] == [] and seen["hidden"] == [] and seen["cut"] == []
    assert seen["split"] == []  # change_of_state, and every other word of a header, on one line
    summary = {(r, name): v for r, name, v in seen["summary"]}
    boards = {(r, name): v for r, name, v in seen["leaderboard"]}
    _, scored = shown(done, "piped")
    for (spec, run_dir), one in zip(done, scored):
        figures = {m.name: m for m in one.report.metrics}
        for name in one.report.headline:
            assert summary[(run_dir, name)] == f"{figures[name].value:.1f}", (run_dir, name)
            assert boards[(run_dir, name)] == f"{figures[name].value:.1f}", (run_dir, name)
        if spec.protocol == "choice":
            assert (run_dir, "overall/bias") in summary and (run_dir, "overall/bias") in boards
