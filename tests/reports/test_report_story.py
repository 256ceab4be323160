"""The report tells the terminal's story: the ablation table with the same numbers in the
terminal, the HTML, its JSON and `score --json`; a summary against chance and the paper's rows;
charts whose labels are whole at 1280 px and whose zero bars show; a sortable leaderboard."""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from helpers import generated_suite, run_records
from timefoil.reports.html.svg import wrap_label
from helpers import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
CONDITIONS = ["full", "shuffled", "reversed", "single frame", "blind", "1 frames", "2 frames"]


@pytest.fixture(scope="module")
def ablation(tmp_path_factory):
    suite = generated_suite(tmp_path_factory, seed=4)
    root = tmp_path_factory.mktemp("ablation")
    html, data = str(root / "abl.html"), str(root / "abl.json")
    result = cli("ablate", "synth", "--data", suite, "--model", "bag-of-frames", "--frames", "1,2",
                 "--out", str(root / "runs"), "--html", html, "--json", data, "--cache-dir", str(root / "cache"))
    assert result.returncode == 0, result.stderr
    return root, suite, html, json.load(open(data)), result.stdout


class AblationRows(HTMLParser):
    """The ablation table's rows and the dependence lines, as the page shows them."""

    def __init__(self):
        super().__init__()
        self.rows, self.lines = {}, []
        self._row = self._col = self._metric = None
        self._li = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-condition" in a:
            self._row = self.rows.setdefault(a["data-condition"], {"run": a["data-run"]})
        if tag == "td" and self._row is not None:
            self._col = a.get("data-col")
            self._metric = a.get("data-metric")
        if tag == "span" and a.get("class") == "v" and self._metric:
            self._col = f"metric:{self._metric}"
        if tag == "li" and "data-what" in a:
            self._li = True
            self.lines.append("")

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None
        if tag in ("td", "span"):
            self._col = None
        if tag == "li":
            self._li = False

    def handle_data(self, data):
        if self._row is not None and self._col:
            self._row[self._col] = self._row.get(self._col, "") + data
        if self._li:
            self.lines[-1] += data


def headline_right(run_dir) -> dict[str, bool]:
    """Similarity by hand: an item is right when its target scores strictly highest; headline
    items leave the proficiency items out."""
    scores = {}
    for r in run_records(run_dir):
        if r["item"]["role"] != "proficiency":
            scores.setdefault(r["item"]["id"], (r["item"]["target"], {}))[1][r["request"]["option"]] = \
                r["answer"]["score"]
    return {i: all(s[t] > v for k, v in s.items() if k != t) for i, (t, s) in scores.items()}


def mcnemar(b: int, c: int) -> float:
    n = b + c
    return 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n)


def terminal_rows(stdout: str) -> dict[str, list[str]]:
    """The rich table's first line per condition: the cells between the bars."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().split("│")[1:-1]]
        if cells and cells[0] in CONDITIONS:
            rows[cells[0]] = cells
    return rows


def test_the_ablation_table_has_the_same_numbers_in_terminal_html_json_and_score(ablation):
    root, _, html, data, stdout = ablation
    page = AblationRows()
    page.feed(open(html, encoding="utf-8").read())
    shown = terminal_rows(stdout)
    assert list(page.rows) == [r["condition"] for r in data["rows"]] == CONDITIONS == list(shown)
    assert data["unit"] == "headline items" and "paired over the headline items" in stdout
    full = headline_right(page.rows["full"]["run"])
    for row in data["rows"]:
        cells, html_row = shown[row["condition"]], page.rows[row["condition"]]
        right = headline_right(row["run"])
        only_full = sum(full[i] and not right[i] for i in full)
        only_this = sum(right[i] and not full[i] for i in full)
        # worked out from the stored answers, without timefoil's scoring or pairing
        assert (row["right"], row["n"]) == (sum(right.values()), len(full))
        assert html_row["right"] == cells[-3] == f"{row['right']}/{row['n']}"
        if row["condition"] == "full":
            assert row["p_value"] is None and html_row.get("difference", "") == cells[-2] == ""
            continue
        assert row["difference"] == pytest.approx(100 * (only_this - only_full) / len(full))
        assert row["p_value"] == pytest.approx(mcnemar(only_full, only_this), rel=1e-9)
        assert html_row["difference"] == cells[-2] == f"{row['difference']:+.1f}"
        assert html_row["p"] == cells[-1] == f"{row['p_value']:.3g}"
        scored = {m["name"]: m for m in json.loads(cli("score", row["run"], "--json").stdout)["metrics"]}
        for k, name in enumerate(data["headline"]):
            value = f"{scored[f'overall/{name}']['value']:.1f}"
            assert html_row[f"metric:{name}"] == value == f"{row['metrics'][name]['value']:.1f}"
            assert cells[1 + k].startswith(value)
    assert data["rows"][4]["condition"] == "blind" and data["rows"][4]["right"] == 0  # the video matters here
    said = [line for line in stdout.splitlines() if line.startswith("depends on")]
    assert said == page.lines == [d["line"] for d in data["dependence"]] and len(said) == 2
    blind = data["rows"][4]
    assert f"{0.0 - blind['difference']:+.1f} points of headline items right" in said[1]


def test_the_ablation_page_leads_with_the_table_then_the_sweep_then_the_tables(ablation):
    _, _, html, _, _ = ablation
    text = open(html, encoding="utf-8").read()
    order = [text.index(f'<section id="{key}">') for key in ("summary", "ablation", "tables", "plots", "browser")]
    assert order == sorted(order)
    ablation_section = text[order[1]:order[2]]
    assert ablation_section.count('data-plot="frames-line"') == 1 and 'id="compare"' not in text
    sweep = re.search(r'data-plot="frames-line".*?</svg>', ablation_section, re.S).group(0)
    assert sweep.count('class="dot') == 3  # 1, 2 and 8 frames (the full run): one point per count


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Page:
    """Headless Chromium at 1280 x 900, driven over the DevTools protocol."""

    def __init__(self, profile):
        import websocket

        port = _free_port()
        self.proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--hide-scrollbars", f"--remote-debugging-port={port}",
                                      "--remote-allow-origins=*", f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                listed = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=2).read())
                target = next(t for t in listed if t["type"] == "page")
                break
            except (OSError, StopIteration, ValueError):
                if time.monotonic() > deadline:
                    self.proc.kill()
                    raise
                time.sleep(0.2)
        self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30)
        self.calls = 0
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)

    def call(self, method, **params):
        self.calls += 1
        self.ws.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.calls:
                assert "error" not in reply, reply["error"]
                return reply.get("result", {})

    def js(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, path):
        self.call("Page.navigate", url=f"file://{path}")
        deadline = time.monotonic() + 30
        while self.js("document.readyState") != "complete" or not self.js("!!document.getElementById('summary')"):
            assert time.monotonic() < deadline, "the report did not load"
            time.sleep(0.1)

    def close(self):
        self.ws.close()
        self.proc.kill()
        self.proc.wait(timeout=30)


# Every text of every chart against its chart's box, and every summary cell and row against
# the window: what a reader at 1280 px would see cut.
MEASURE = """(() => {
  const cut = [], inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 &&
                                    a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  for (const svg of document.querySelectorAll('svg.plot')) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text'))
      if (!inside(t.getBoundingClientRect(), box)) cut.push(svg.dataset.plot + ': ' + t.textContent);
  }
  const width = document.documentElement.clientWidth, over = [];
  for (const row of document.querySelectorAll('table.summary tr'))
    if (row.getBoundingClientRect().right > width + 0.5) over.push(row.textContent);
  for (const cell of document.querySelectorAll('table.summary td, table.summary th'))
    if (cell.scrollWidth > cell.clientWidth + 1) over.push(cell.textContent);
  const bars = [...document.querySelectorAll('svg[data-plot=category-bars] rect.bar')]
    .filter(r => r.querySelector('title')).map(r => [r.querySelector('title').textContent,
                                                     r.getBoundingClientRect().width]);
  const labels = [...document.querySelectorAll('svg[data-plot=category-bars] text.bar-label')]
    .map(t => t.textContent);
  return {cut, over, bars, labels, page: document.documentElement.scrollWidth, width};
})()"""


@pytest.fixture(scope="module")
def report(ablation, tmp_path_factory):
    """Several models on one benchmark (a leaderboard), a category with a long name, zero bars."""
    root, suite, _, _, _ = ablation
    manifest = os.path.join(suite, "synth.jsonl")
    items = [json.loads(line) for line in open(manifest)]
    long_name = "change_of_state_with_a_rather_long_category_name"
    for item in items:
        if item["test"] == "change_of_state":
            item["test"] = long_name
    out = tmp_path_factory.mktemp("report")
    renamed = out / "suite"
    shutil.copytree(suite, renamed)
    with open(renamed / "synth.jsonl", "w") as handle:
        handle.writelines(json.dumps(item) + "\n" for item in items)
    dirs = []
    for model in ("random", "bag-of-frames", "constant"):
        dirs.append(str(out / model))
        result = cli("run", "synth", "--model", model, "--data", str(renamed), "--frames", "4", "--out", dirs[-1],
                     "--cache-dir", str(out / "cache"), "--no-progress")
        assert result.returncode == 0, result.stderr
    html = str(out / "reports" / "report.html")
    os.makedirs(os.path.dirname(html))
    result = cli("report", *dirs, "--html", html)
    assert result.returncode == 0, result.stderr
    return dirs, html, long_name


@needs_chromium
def test_at_1280_px_no_chart_label_is_cut_no_summary_row_overflows_and_zero_bars_show(ablation, report, tmp_path):
    dirs, html, long_name = report
    page = Page(tmp_path / "profile")
    try:
        for path in (html, ablation[2]):
            page.open(path)
            seen = page.js(MEASURE)
            assert seen["cut"] == [] and seen["over"] == [], path
            assert seen["page"] <= seen["width"] == 1280  # nothing scrolls sideways but the wide tables' own boxes
            zeros = [width for title, width in seen["bars"] if title.endswith(": 0.0")]
            assert zeros and min(w for _, w in seen["bars"]) >= 1.5  # the zero bars (bag-of-frames) are drawn
            if path == html:  # the long test name is there whole, over several lines
                assert "".join(wrap_label(long_name)) in [label.replace(" ", "") for label in seen["labels"]]
        shot = page.call("Page.captureScreenshot", format="png")["data"]
        assert len(shot) > 10_000
    finally:
        page.close()


@needs_chromium
def test_the_leaderboard_sorts_and_its_tooltips_carry_the_paired_test(report, tmp_path):
    dirs, html, _ = report
    page = Page(tmp_path / "profile")
    try:
        page.open(html)
        order = "[...document.querySelectorAll('section.leaderboard tbody tr')].map(r => r.dataset.run)"
        assert page.js(order) == dirs
        # accuracy, which stands beside the headline (synth's average P+T), high first
        column = page.js("[...document.querySelectorAll('section.leaderboard th.sort')]"
                         ".findIndex(th => th.title === 'sort by overall/accuracy')")
        assert column > 1
        page.js(f"document.querySelectorAll('section.leaderboard th.sort')[{column}].click()")
        sorted_runs = page.js(order)
        tips = page.js("Object.fromEntries([...document.querySelectorAll('section.leaderboard tbody tr')]"
                       f".map(r => [r.dataset.run, r.cells[{column}].title]))")
    finally:
        page.close()
    accuracy = {d: json.loads(cli("score", d, "--json").stdout) for d in dirs}
    values = {d: next(m for m in s["metrics"] if m["name"] == "overall/accuracy") for d, s in accuracy.items()}
    assert sorted_runs == sorted(dirs, key=lambda d: -values[d]["value"])
    random_run, bof, constant = dirs
    # bag-of-frames and constant overlap on accuracy: the tooltip carries their McNemar test, by hand
    assert values[bof]["ci95"][0] <= values[constant]["ci95"][1]
    a, b = headline_right(bof), headline_right(constant)
    only_bof, only_constant = sum(a[i] and not b[i] for i in a), sum(b[i] and not a[i] for i in a)
    difference = 100 * (only_constant - only_bof) / len(a)
    assert (f"overlaps constant · 4f: {difference:+.1f} points for constant · 4f, paired p "
            f"{mcnemar(only_bof, only_constant):.3g} over {len(a)} of the headline items") in tips[bof]
    assert "overlaps" not in tips[random_run]  # random's interval is far from the others'


def test_the_summary_shows_the_headline_against_chance_and_the_paper_row_of_the_same_model(report):
    from timefoil.reports.html.summary import summary_html
    from timefoil.reports.pairing import load_outcomes
    from timefoil.reports.report import load_scored
    from timefoil import load_run

    dirs, html, _ = report
    text = open(html, encoding="utf-8").read()
    summary = text[text.index('<section id="summary">'):text.index('<section id="leaderboard">')]
    for run_dir in dirs:
        scored = json.loads(cli("score", run_dir, "--json").stdout)
        assert scored["headline"][:2] == ["overall/average P+T", "overall/accuracy"]  # synth's headline, then beside
        figures = [m for name in scored["headline"] for m in scored["metrics"] if m["name"] == name]
        bar = 0.05 / len(figures)  # the headline figures are tested together
        for metric in figures:
            row = re.search(rf'<tr data-run="{re.escape(run_dir)}" data-metric="{re.escape(metric["name"])}".*?</tr>',
                            summary).group(0)
            assert f'{metric["value"]:.1f}</span> <span class="ci">[{metric["ci95"][0]:.1f}, ' \
                f'{metric["ci95"][1]:.1f}]' in row and f'<td>{metric["chance"]:.1f}</td>' in row
            verdict = "above chance" if metric["p_value"] < bar and metric["value"] > metric["chance"] else \
                "below chance" if metric["p_below"] < bar and metric["value"] < metric["chance"] else "at chance"
            assert f'<td class="verdict">{verdict}' in row
    # run paths relative to the report, the full path on hover
    assert f'<code title="{dirs[0]}">../random</code>' in text
    # the paper's rows: a VELOCITI run recorded under LLaVA-OneVision-7B gets that model's row, not 72B's
    scored = load_scored(dirs[0])
    velociti = replace(scored, report=replace(scored.report, benchmark="velociti", protocol="entailment",
                                              model="hf:llava-hf/llava-onevision-qwen2-7b-ov-hf",
                                              metrics=[replace(m, name="overall/average StrictVLE")
                                                       for m in scored.report.metrics if m.name == "overall/P"]))
    shown = summary_html([velociti], {dirs[0]: load_run(dirs[0])[0]["config"]}, {dirs[0]: load_outcomes(dirs[0])})
    paper = re.search(r'<td class="paper-rows">(.*?)</td>', shown).group(1)
    assert paper == "LLaVA-OneVision-7B 32.1 (paper, Table 2)"  # where the number is printed
    assert "the paper (Table 2), average StrictVLE: LLaVA-OneVision-72B 43.1 · LLaVA-OneVision-7B 32.1" in shown
