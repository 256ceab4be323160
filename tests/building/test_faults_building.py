"""Fault rows of `timefoil build`: answer files whose answers are not options of their items, outputs
that would be written into the folder being read, and an annotation page fed hostile text."""
import hashlib
import json
import os
from html.parser import HTMLParser

import pytest
from faults import Fault, cli, run_fault

from timefoil.benchmarks import folder

OPTIONS = 2  # every item of the bench below has a caption and one foil


def write_bench(root, name="B", captions=None):
    """Three items i0..i2 with options (c_k, f_k), target 0, one (undecodable) video."""
    os.makedirs(os.path.join(root, "videos"), exist_ok=True)
    open(os.path.join(root, "videos", "a.mp4"), "wb").close()
    captions = captions or [f"c{k}" for k in range(3)]
    with open(os.path.join(root, "items.jsonl"), "w", encoding="utf-8") as handle:
        for k, caption in enumerate(captions):
            handle.write(json.dumps({"id": f"i{k}", "test": "order", "video": "videos/a.mp4",
                                     "texts": [caption, f"f{k}"]}) + "\n")
    with open(os.path.join(root, "benchmark.json"), "w", encoding="utf-8") as handle:
        json.dump({"name": name}, handle)
    return str(root)


def write_answers(path, annotator, answers, task="choice"):
    """As the page saves it (indent 1), so the answer of i1 has its first field on line 9:
    1 {, 2 annotator, 3 task, 4 "answers": {, 5 "i0": {, 6 its field, 7 }, 8 "i1": {, 9 its field."""
    path.write_text(json.dumps({"annotator": annotator, "task": task, "answers": answers}, indent=1))
    return str(path)


def fingerprints(tmp_path):
    """sha256 of every file under the bench and of the answer files (links not followed)."""
    out = {}
    for base, _, names in os.walk(tmp_path / "B"):
        for name in names:
            out[os.path.join(base, name)] = hashlib.sha256(open(os.path.join(base, name), "rb").read()).hexdigest()
    for path in tmp_path.glob("*.json"):
        out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def remember_inputs(tmp_path):
    (tmp_path / "inputs.sha256").write_text(json.dumps(fingerprints(tmp_path)))


def inputs_unchanged(tmp_path, also_absent=("accepted", "human")):
    assert fingerprints(tmp_path) == json.loads((tmp_path / "inputs.sha256").read_text())
    for name in also_absent:
        assert not (tmp_path / name).exists(), f"{name} was written by a refused command"


def collect_with(answer):
    """ann answers i0 with 0, i1 with ANSWER, i2 with 0; collect would write accepted items and a run."""
    def prepare(tmp_path):
        bench = write_bench(tmp_path / "B")
        ann = write_answers(tmp_path / "ann.json", "ann", {"i0": {"choice": 0}, "i1": answer, "i2": {"choice": 0}})
        remember_inputs(tmp_path)
        return ["build", "collect", bench, ann, "--accepted", str(tmp_path / "accepted"),
                "--out", str(tmp_path / "human")]
    return prepare


def validate_with(answer):
    def prepare(tmp_path):
        bench = write_bench(tmp_path / "B")
        ann = write_answers(tmp_path / "ann.json", "ann", {"i0": {"valid": False}, "i1": answer}, task="validate")
        remember_inputs(tmp_path)
        return ["build", "collect", bench, ann, "--accepted", str(tmp_path / "accepted")]
    return prepare


def bad_choice(value, shown):
    return Fault(f"choice {shown}", collect_with({"choice": value, "ms": 800}), 1,
                 rf'ann\.json: line 9: answers\["i1"\]\.choice: {shown} is not an option of this item '
                 rf"\(0 to {OPTIONS - 1}, or null for none of them\)$", inputs_unchanged)


def raw_answers(text):
    def prepare(tmp_path):
        bench = write_bench(tmp_path / "B")
        (tmp_path / "ann.json").write_text(text)
        remember_inputs(tmp_path)
        return ["build", "collect", bench, str(tmp_path / "ann.json"), "--accepted", str(tmp_path / "accepted")]
    return prepare


def collect_into(where):
    """A good answer file; the command's OUTPUT option is aimed at WHERE (relative to tmp_path)."""
    option, target = where

    def prepare(tmp_path):
        bench = write_bench(tmp_path / "B")
        os.symlink(tmp_path / "B", tmp_path / "L")  # a second name for the bench
        ann = write_answers(tmp_path / "ann.json", "ann", {f"i{k}": {"choice": 1} for k in range(3)})
        remember_inputs(tmp_path)
        return ["build", "collect", bench, ann, option, str(tmp_path / target)]
    return prepare


def annotate_into(tmp_path):
    bench = write_bench(tmp_path / "B")
    remember_inputs(tmp_path)
    return ["build", "annotate", bench, "--annotator", "ann", "--frames", "1", "--out", str(tmp_path / "B" / "p.html")]


def validation_half_answered(tmp_path):
    """i0: ann and cat say 'order'; bob pressed y and saved before naming the aspect (not answered yet,
    as the page counts it). Unanimous over the two who answered: i0 accepted. i1: ann says not valid."""
    bench = write_bench(tmp_path / "B")
    files = [write_answers(tmp_path / "ann.json", "ann",
                           {"i0": {"valid": True, "aspect": "order"}, "i1": {"valid": False}}, task="validate"),
             write_answers(tmp_path / "bob.json", "bob", {"i0": {"valid": True, "ms": 500}}, task="validate"),
             write_answers(tmp_path / "cat.json", "cat", {"i0": {"valid": True, "aspect": "order"}}, task="validate")]
    remember_inputs(tmp_path)
    return ["build", "collect", bench, *files, "--rule", "unanimous", "--accepted", str(tmp_path / "accepted")]


def only_i0_accepted(tmp_path):
    inputs_unchanged(tmp_path, also_absent=())
    assert [i.id for i in folder.load(str(tmp_path / "accepted"))] == ["i0"]


def recipe_cut_short(suffix, text):
    """A recipe file that ends part way (a copy interrupted, an editor's crash)."""
    def prepare(tmp_path):
        (tmp_path / f"recipe.{suffix}").write_text(text)
        return ["build", "run", str(tmp_path / f"recipe.{suffix}"), "--out", str(tmp_path / "built")]
    return prepare


def nothing_built(tmp_path):
    assert not (tmp_path / "built").exists()


FAULTS = [
    bad_choice(-1, "-1"),  # read as texts[-1], option B, before
    bad_choice(True, "true"),  # True == 1: option B
    bad_choice(OPTIONS, str(OPTIONS)),  # one past the last option
    bad_choice(1.5, "1.5"),
    bad_choice("B ", '"B "'),
    bad_choice("0", '"0"'),
    Fault("valid given as a word", validate_with({"valid": "yes", "aspect": "order"}), 1,
          r'ann\.json: line 9: answers\["i1"\]\.valid: "yes" is not true or false$', inputs_unchanged),
    Fault("aspect given as a number", validate_with({"valid": True, "aspect": 3}), 1,
          r'ann\.json: line 10: answers\["i1"\]\.aspect: 3 is not the name of an aspect$', inputs_unchanged),
    Fault("unknown task", raw_answers('{"annotator": "ann",\n "task": "choise",\n "answers": {"i0": {"choice": 0}}}'),
          1, r'ann\.json: line 2: task "choise" is not one of choice, validate$', inputs_unchanged),
    Fault("an item answered twice", raw_answers('{"annotator": "ann", "answers": {\n "i0": {"choice": 0},\n'
                                                ' "i0": {"choice": 1}}}'),
          1, r'ann\.json: not a readable answer file \(line 3: the key "i0" twice in one object\)$', inputs_unchanged),
    Fault("an answer that is not an object", raw_answers('{"annotator": "ann", "answers": {\n "i0": 1}}'),
          1, r'ann\.json: line 2: answers\["i0"\]: an answer is an object, not 1$', inputs_unchanged),
    Fault("accepted items written over the bench", collect_into(("--accepted", "B")), 1,
          r"the output \S+/B is the input \S+/B; write the output elsewhere$", inputs_unchanged),
    Fault("accepted items under a link into the bench", collect_into(("--accepted", "L/accepted")), 1,
          r"the output \S+/L/accepted lies inside the input \S+/B; write the output elsewhere$", inputs_unchanged),
    Fault("human run inside the bench", collect_into(("--out", "B/human")), 1,
          r"the output \S+/B/human lies inside the input \S+/B; write the output elsewhere$", inputs_unchanged),
    Fault("annotation page inside the bench", annotate_into, 1,
          r"the output \S+/B/p\.html lies inside the input \S+/B; write the output elsewhere$", inputs_unchanged),
    Fault("validation saved before the aspect", validation_half_answered, 0, r"^$", only_i0_accepted),
    Fault("JSON recipe cut short", recipe_cut_short("json", '{"source": "pairs.jsonl", "steps": [\n'), 1,
          r"^Error: \S+/recipe\.json: not a readable recipe \(Expecting value at line 2 column 1 \(cut short\?\)\)$",
          nothing_built),
    Fault("YAML recipe cut short", recipe_cut_short("yaml", "source: pairs.jsonl\nsteps: [{generate: rules\n"), 1,
          r"^Error: \S+/recipe\.yaml: not a readable recipe \(expected ',' or '}', but got '<stream end>' at line 3 "
          r"column 1\)$", nothing_built),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


# -- the annotation page with hostile text --------------------------------------------------------------------
HOSTILE = ["{{title}}", "{{data}}", "</script><script>document.title='pwned'</script>", "<!--<script>",
           "\" onmouseover=\"alert(1)\" x='", "a\u2028b\u2029c & &amp; &lt;"]


class PageParts(HTMLParser):
    """The page as a browser's tokenizer sees it: every start tag with its attributes, the title's
    text, and the text of each script element."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.title, self.scripts, self._in = [], "", [], None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self._in = tag
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "title":
            self.title += data
        elif self._in == "script":
            self.scripts[-1] += data


def test_hostile_captions_and_names_stay_data_on_the_annotation_page(tmp_path):
    bench = write_bench(tmp_path / "B", name=HOSTILE[2], captions=HOSTILE[:3])
    plain = write_bench(tmp_path / "P", name="plain")
    pages = {}
    for root, annotator in ((bench, HOSTILE[4]), (plain, "ann")):
        page = str(tmp_path / f"{os.path.basename(root)}.html")
        made = cli("build", "annotate", root, "--annotator", annotator, "--frames", "1", "--out", page, timeout=120,
                   env={"TIMEFOIL_CACHE": str(tmp_path / "cache")})
        assert made.returncode == 0, made.stderr
        pages[root] = open(page, encoding="utf-8").read()
    hostile, benign = PageParts(pages[bench]), PageParts(pages[plain])
    # The same elements and attributes as a page of plain text: nothing the data said became markup
    assert hostile.tags == benign.tags
    assert [tag for tag, _ in hostile.tags].count("script") == 2
    assert hostile.title == f"{HOSTILE[2]}: choice ({HOSTILE[4]})"
    # The data round-trips exactly, each caption once, in the annotator's order of items and options
    data = json.loads(hostile.scripts[0])
    texts = {item["id"]: item["texts"] for item in data["items"]}
    for k in range(3):
        order = next(item["order"] for item in data["items"] if item["id"] == f"i{k}")
        assert texts[f"i{k}"] == [[HOSTILE[k], f"f{k}"][i] for i in order]
    assert (data["benchmark"], data["annotator"]) == (HOSTILE[2], HOSTILE[4])
    assert pages[bench].count("<script") == 2 and "\u2028" not in pages[bench]


def test_the_page_escapes_line_separators_and_fills_each_placeholder_once(tmp_path):
    from timefoil.building.annotate import write_page

    data = {"annotator": "{{data}}", "benchmark": "{{title}}", "task": "choice", "seed": 0, "aspects": [],
            "items": [{"id": "x", "test": "t", "frames": "video unavailable", "texts": HOSTILE, "order": [0, 1]}]}
    text = open(write_page(str(tmp_path / "p.html"), data), encoding="utf-8").read()
    parts = PageParts(text)
    assert json.loads(parts.scripts[0]) == data and parts.title == "{{title}}: choice ({{data}})"
    assert "\u2028" not in text and "\u2029" not in text and "</script><script>document" not in text
