"""The HTML report, checked in headless Chromium: numbers, plots, filters, escaping, offline."""
import json
import math
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from timefoil import RunConfig, run
from timefoil.execution.store import RunLog
from timefoil.synth import generate
from timefoil.video import Sampling
from helpers import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--proxy-server=127.0.0.1:9", "--virtual-time-budget=5000"]
PAYLOAD = "<script>document.title='pwned'</script> a <img src=x onerror=\"document.title='pwned'\"> caption"


def chromium(tmp_path, url, *extra):
    profile = tmp_path / f"profile-{len(os.listdir(tmp_path))}"
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url], capture_output=True,
                            text=True, timeout=120)
    return result.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    suite = str(root / "suite")
    generate(suite, per_family=2, seed=6)
    # One caption carries markup that must stay text.
    manifest = os.path.join(suite, "synth.jsonl")
    lines = open(manifest).read().splitlines()
    first = json.loads(lines[0])
    first["texts"][1] = PAYLOAD
    lines[0] = json.dumps(first)
    open(manifest, "w").write("\n".join(lines) + "\n")
    cache = str(root / "cache")
    plan = {"random": ("random", "similarity", None, Sampling(frames=4)),
            "bof": ("bag-of-frames", "similarity", None, Sampling(frames=4)),
            "bof2": ("bag-of-frames", "similarity", None, Sampling(frames=2)),
            "entail": ("random", "entailment", None, Sampling(frames=4)),
            "choice": ("constant", "choice", "both", Sampling(frames=4))}
    dirs = {}
    for name, (model, protocol, order, sampling) in plan.items():
        dirs[name] = str(root / name)
        run(RunConfig("synth", model, data_dir=suite, protocol=protocol, order_policy=order, sampling=sampling),
            dirs[name], cache_dir=cache, progress=False)
    html = str(root / "report.html")
    result = cli("report", *dirs.values(), "--html", html, "--csv", str(root / "t.csv"), "--json",
                 str(root / "t.json"), "--latex", str(root / "t.tex"))
    assert result.returncode == 0, result.stderr
    return root, dirs, html


class Cells(HTMLParser):
    """Table cells per run row, plots, items and comparison p-values from a DOM dump."""

    def __init__(self):
        super().__init__()
        self.cells, self.plots, self.items, self.p_values = {}, [], [], {}
        self._row = self._metric = None
        self._in_value = False
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-run" in a:
            self._row = a["data-run"]
        if tag == "tr" and "data-first" in a:
            self._pair = (a["data-first"], a["data-second"])
        if tag == "td" and "data-p" in a:
            self.p_values[self._pair] = float(a["data-p"])
        if tag == "td" and self._row and "data-metric" in a:
            self._metric = a["data-metric"]
        if tag == "span" and a.get("class") == "v":
            self._in_value = True
        if tag == "svg" and "data-plot" in a:
            self.plots.append(a["data-plot"])
        if tag == "div" and a.get("class") == "item":
            self.items.append(a)
        if tag == "title":
            self._in_title = True
        if tag == "img" and a.get("src") == "x":
            raise AssertionError("an <img> element from data was created")

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None
        if tag == "span":
            self._in_value = False
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_value and self._row and self._metric:
            self.cells[(self._row, self._metric)] = data
        if self._in_title and not self.title:
            self.title = data


@needs_chromium
def test_tables_hold_the_scored_numbers_and_the_plots_render(runs, tmp_path):
    root, dirs, html = runs
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"file://{html}", f"--screenshot={shot}", "--window-size=1300,2000")
    assert shot.exists() and shot.stat().st_size > 10_000
    dom = Cells()
    dom.feed(chromium(tmp_path, f"file://{html}", "--dump-dom"))
    checked = 0
    for name, run_dir in dirs.items():
        scored = json.loads(cli("score", run_dir, "--json").stdout)
        for metric in scored["metrics"]:
            if (run_dir, metric["name"]) in dom.cells:
                assert dom.cells[(run_dir, metric["name"])] == f"{metric['value']:.1f}", metric["name"]
                checked += 1
    assert checked >= 30
    assert {"entailment-scatter", "frames-line", "category-bars", "bias-bars"} <= set(dom.plots)
    assert dom.title == "timefoil report"


@needs_chromium
def test_sample_browser_filters_from_the_address(runs, tmp_path):
    _, _, html = runs
    everything = Cells()
    everything.feed(chromium(tmp_path, f"file://{html}", "--dump-dom"))
    ties = Cells()
    ties.feed(chromium(tmp_path, f"file://{html}#outcome=tie&test=order", "--dump-dom"))
    expected = [i for i in everything.items if i["data-outcome"] == "tie" and i["data-test"] == "order"]
    assert ties.items and len(ties.items) == len(expected) < len(everything.items)
    assert all(i["data-outcome"] == "tie" and i["data-test"] == "order" for i in ties.items)


@needs_chromium
def test_markup_in_captions_is_shown_as_text_and_runs_nothing(runs, tmp_path):
    _, _, html = runs
    dump = chromium(tmp_path, f"file://{html}#test=order", "--dump-dom")
    dom = Cells()
    dom.feed(dump)  # raises if an <img src=x> element exists
    assert dom.title == "timefoil report"  # neither payload ran
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dump
    assert "&lt;img" in dump and "onerror" in dump


@needs_chromium
def test_paired_p_value_matches_an_independent_mcnemar(runs, tmp_path):
    """Over the headline items, as the ablation table pairs them (one test, one unit)."""
    root, dirs, html = runs

    def right(run_dir):  # similarity: the target scores strictly highest; headline items: no proficiency item
        scores = {}
        for r in RunLog(run_dir).read():
            if r["item"]["role"] == "proficiency":
                continue
            scores.setdefault(r["item"]["id"], (r["item"]["target"], {}))[1][r["request"]["option"]] = \
                r["answer"]["score"]
        return {i: all(s[t] > v for k, v in s.items() if k != t) for i, (t, s) in scores.items()}

    a, b = right(dirs["random"]), right(dirs["bof"])
    only_a = sum(a[i] and not b[i] for i in a)
    only_b = sum(b[i] and not a[i] for i in a)
    n = only_a + only_b
    expected = min(1.0, 2 * sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n)
    dom = Cells()
    dom.feed(chromium(tmp_path, f"file://{html}", "--dump-dom"))
    assert 0 < only_a + only_b < len(a) and len(a) < len({r["item"]["id"] for r in RunLog(dirs["random"]).read()})
    assert dom.p_values[(dirs["random"], dirs["bof"])] == pytest.approx(expected, rel=1e-9)
    exported = next(c for t in json.load(open(root / "t.json")) for c in t["comparisons"]
                    if (c["first"], c["second"]) == (dirs["random"], dirs["bof"]))
    assert (exported["unit"], exported["n"], exported["only_first"], exported["only_second"]) == \
        ("headline items", len(a), only_a, only_b)
    assert exported["p_value"] == pytest.approx(expected, rel=1e-9)
    assert "paired comparison over the headline items" in open(root / "t.csv").read()


def test_the_file_needs_no_network_and_exports_match(runs):
    root, dirs, html = runs
    text = open(html, encoding="utf-8").read()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text)
    assert "@import" not in text and "url(http" not in text
    tables = json.load(open(root / "t.json"))
    random_row = next(row for t in tables if t["protocol"] == "similarity" for row in t["rows"]
                      if row["run"] == dirs["random"])
    scored = {m["name"]: m for m in json.loads(cli("score", dirs["random"], "--json").stdout)["metrics"]}
    for name, metric in random_row["metrics"].items():
        assert metric["value"] == pytest.approx(scored[name]["value"])
    assert "\\toprule" in open(root / "t.tex").read() and "chance" in open(root / "t.csv").read()
