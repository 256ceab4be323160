"""Building benchmarks: generators, filters, agreement, the folder format and plugins."""
import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timefoil.benchmarks import folder, get_benchmark, load_plugins
from timefoil.building.agreement import fleiss_kappa, krippendorff_alpha, summary
from timefoil.building.filters import aspect_decision, class_probabilities, language_prior_filter, p_yes
from timefoil.building.generate import prompt, read_counterfactual
from timefoil.building.rules import Event, count_foil, role_swaps, same_words, swap_events, swap_words
from timefoil.core.items import Item, VideoRef
from timefoil.models.requests import Answer
from helpers import REPO, install_package


@pytest.mark.parametrize("caption, expected", [
    ("the red circle jumps and then the white square jumps", "the white square jumps and then the red circle jumps"),
    ("A man jumps, then a dog barks.", "A dog barks, then a man jumps."),
    ("She sits down before he stands up", "He stands up before she sits down"),
    ("a woman waves after the bus leaves", "the bus leaves after a woman waves"),
    ("he runs then jumps then falls", None),  # two connectives: which events is unclear
    ("a cat sleeps on a sofa", None),
])
def test_event_order_swaps_keep_the_words(caption, expected):
    foil = swap_events(caption)
    assert (foil.text if foil else None) == expected
    if foil:
        assert same_words(caption, foil.text) and foil.aspect == "order"


@pytest.mark.parametrize("caption, policy, expected", [
    ("a man skips rope exactly three times", "easy", "a man skips rope exactly six times"),
    ("someone lifts weights exactly 1 time", "easy", "someone lifts weights exactly 4 time"),
    ("a man skips rope exactly seven times", "easy", None),  # easy: small counts only
    ("a man skips rope exactly seven times", "hard", "a man skips rope exactly two times"),  # 1 + 7 % 3
    ("a girl claps exactly 3 times", "hard", "a girl claps exactly 1 times"),
    ("a girl claps exactly twelve times", "hard", None),  # twelve is not a count word we read; over 10 anyway
    ("a girl claps exactly 12 times", "hard", None),  # above ViLMA's threshold of 10
    ("a girl claps three times", "easy", None),  # no "exactly"
])
def test_counting_foils_follow_the_policy(caption, policy, expected):
    foil = count_foil(caption, policy)
    assert (foil.text if foil else None) == expected


def test_word_swaps_swap_both_ways_at_once_and_keep_capitals():
    assert swap_words("Left of the box, the ball rolls right", "spatial").text == \
        "Right of the box, the ball rolls left"
    assert swap_words("it spins counterclockwise towards the hill", "direction").text == \
        "it spins clockwise away from the hill"
    assert swap_words("she walks into the room, then out of it", "direction").text == \
        "she walks out of the room, then into it"
    assert swap_words("the dog barks", "spatial") is None


def test_role_swaps_pair_each_event_with_the_others_roles():
    made = role_swaps([Event("a man", "opens the door"), Event("a woman", "sits down")])
    assert [(c, f.text, f.aspect) for c, f in made] == [
        ("a man opens the door", "a man sits down", "action"),
        ("a man opens the door", "a woman opens the door", "agent"),
        ("a woman sits down", "a woman opens the door", "action"),
        ("a woman sits down", "a man sits down", "agent"),
        ("a man opens the door, then a woman sits down", "a woman sits down, then a man opens the door", "order")]
    assert role_swaps([Event("a man", "waves"), Event("a man", "waves")]) == []


def test_aspect_rule_multiplies_both_directions_and_needs_the_margin():
    classes = ("disqualified", "direction", "sequence")
    # products 0.0, 0.72, 0.02: direction wins by 0.70
    assert aspect_decision([0.0, 0.9, 0.1], [0.0, 0.8, 0.2], classes)[0] == "direction"
    # products 0.05, 0.36, 0.08: 0.36 - 0.08 = 0.28 is short of 0.3
    assert aspect_decision([0.1, 0.6, 0.3], [0.5, 0.6, 0.3], classes)[0] is None
    # inconsistent: (t1, t2) says direction, (t2, t1) says sequence: products 0, 0.09, 0.09
    assert aspect_decision([0.0, 0.9, 0.1], [0.0, 0.1, 0.9], classes)[0] is None
    # disqualified wins clearly: kept out
    assert aspect_decision([0.9, 0.1, 0.0], [0.9, 0.1, 0.0], classes)[0] is None
    # exactly at the margin is not above it: products 0.5 and 0.25 (exact in binary), margin 0.25
    assert aspect_decision([0.0, 0.5, 0.25], [0.0, 1.0, 1.0], classes, margin=0.25)[0] is None
    assert aspect_decision([0.0, 0.5, 0.25], [0.0, 1.0, 1.0], classes, margin=0.24)[0] == "direction"


def test_kappa_and_alpha_match_published_worked_examples():
    # Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories -> 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1], [7, 7, 0, 0, 0],
             [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[k for k, count in enumerate(row) for _ in range(count)] for row in table]
    assert round(fleiss_kappa(ratings), 3) == 0.210
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units with
    # missing values, nominal alpha 0.743
    n = None
    observers = [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
                 [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]]
    units = [[v for v in column if v is not None] for column in zip(*observers)]
    assert round(krippendorff_alpha(units), 3) == 0.743


def test_kappa_and_alpha_on_a_table_worked_by_hand():
    # 4 items, 2 raters: agree, agree, disagree, agree on labels a/b.
    ratings = [["a", "a"], ["b", "b"], ["a", "b"], ["a", "a"]]
    # Fleiss: P_i = 1, 1, 0, 1 -> 0.75; p_a = 5/8, p_b = 3/8 -> P_e = 34/64; kappa = (0.75 - 34/64) / (30/64) = 7/15
    assert fleiss_kappa(ratings) == pytest.approx(7 / 15)
    # Alpha: o_aa = 4, o_bb = 2, o_ab = o_ba = 1; n_a = 5, n_b = 3, n = 8; 1 - 7 * 2 / (2 * 15) = 8/15
    assert krippendorff_alpha(ratings) == pytest.approx(8 / 15)
    out = summary(ratings, draws=200)
    low, high = out["krippendorff_alpha"]["ci95"]
    assert low <= out["krippendorff_alpha"]["value"] <= high and out["ratings"] == 8
    assert fleiss_kappa([["a", "a"], ["a", "a"]]) is None  # one category: undefined, not a number


def test_answers_read_into_probabilities():
    assert p_yes(Answer(raw="No", probs={"yes": 0.3, "no": 0.1})) == pytest.approx(0.75)
    assert p_yes(Answer(raw="Yes, it does")) == 1.0 and p_yes(Answer(raw="hmm")) is None
    assert class_probabilities(Answer(raw="B"), ("A", "B", "C")) == [0.0, 1.0, 0.0]
    assert class_probabilities(Answer(probs={"A": 0.2, "B": 0.6}), ("A", "B")) == pytest.approx([0.25, 0.75])


class ScriptedAsker:
    """Answers blind order questions from a table: p(A) per (first, second) pair."""

    def __init__(self, p_first):
        self.p_first = p_first

    def ask(self, requests):
        return [Answer(probs={"A": self.p_first[r.option_texts], "B": 1 - self.p_first[r.option_texts]})
                for r in requests]


def test_language_prior_filter_drops_what_the_text_alone_solves():
    pairs = [("a man climbs up", "a man climbs down"), ("a dog runs", "a dog walks")]
    asker = ScriptedAsker({pairs[0]: 0.95, pairs[0][::-1]: 0.1,  # caption scored 0.95 and 0.9: solved
                           pairs[1]: 0.6, pairs[1][::-1]: 0.6})  # A-biased: caption 0.6 then 0.4
    verdicts = language_prior_filter(asker, pairs, threshold=0.8)
    assert [v.keep for v in verdicts] == [False, True]
    assert verdicts[0].detail == {"p": 0.925, "correct": True} and verdicts[1].detail == {"p": 0.5, "correct": False}
    flagged = language_prior_filter(asker, pairs, threshold=0.8, action="flag")
    assert [(v.keep, v.flagged) for v in flagged] == [(True, True), (True, False)]


def test_llm_prompt_shows_six_examples_and_two_not_applicable_and_reads_replies():
    from timefoil.building.generate import load_aspects, load_exemplars

    text = prompt("direction", load_aspects()["direction"], load_exemplars(), "a boy walks up the stairs")
    assert text.count("Counterfactual: ") == 8 and text.count("Counterfactual: Not applicable") == 2
    assert text.endswith("Caption: a boy walks up the stairs\nCounterfactual:")
    # The same question in another process (another string-hash seed): a rerun asks exactly the
    # same text, so it hits the response cache
    import subprocess

    script = ("from timefoil.building.generate import prompt, load_aspects, load_exemplars; "
              "print(prompt('direction', load_aspects()['direction'], load_exemplars(), 'a boy walks up the stairs'), "
              "end='')")
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout
    assert other == text
    caption = "a boy walks up the stairs"
    assert read_counterfactual('Counterfactual: "a boy walks down the stairs"\nmore', caption) == \
        ("a boy walks down the stairs", "")
    assert read_counterfactual("Not applicable.", caption) == (None, "not applicable")
    assert read_counterfactual("  ", caption) == (None, "empty reply")
    assert read_counterfactual("A boy walks up the stairs.", caption) == (None, "unchanged")


# -- the folder format ------------------------------------------------------------------------------------------
def write_folder(root, lines, meta=None):
    os.makedirs(os.path.join(root, "videos"), exist_ok=True)
    for name in ("a.mp4", "b.mp4"):
        open(os.path.join(root, "videos", name), "wb").close()
    with open(os.path.join(root, "items.jsonl"), "w") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    with open(os.path.join(root, "benchmark.json"), "w") as handle:
        json.dump(meta or {"name": "mine"}, handle)
    return str(root)


def test_folder_reads_every_item_shape(tmp_path):
    root = write_folder(tmp_path, [
        {"id": "p1", "test": "order", "video": "videos/a.mp4", "texts": ["c", "f1", "f2"], "target": 0},
        {"id": "g-t1", "group": "g", "test": "vino", "role": "main", "video": "videos/a.mp4", "texts": ["x", "y"]},
        {"id": "g-t2", "group": "g", "test": "vino", "video": "videos/b.mp4", "texts": ["x", "y"], "target": 1},
        {"id": "g-v1", "group": "g", "test": "vino", "videos": ["videos/a.mp4", "videos/b.mp4"], "text": "x"},
        {"id": "q1", "group": "q", "test": "count", "video": {"path": "videos/a.mp4", "start": 1, "end": 3},
         "texts": ["jumps exactly 2 times", "jumps exactly 5 times"]},
        {"id": "q1p", "group": "q", "test": "count", "role": "proficiency", "video": "videos/a.mp4",
         "texts": ["jumps", "sits"]},
        {"id": "gen", "test": "describe", "video": "videos/b.mp4", "references": ["a man jumps"]},
    ])
    items = {i.id: i for i in folder.load(root)}
    assert items["p1"].n_options == 3 and items["p1"].group_id == "p1" and items["p1"].benchmark == "mine"
    assert items["g-v1"].options_are == "videos" and items["g-t2"].target == 1
    assert (items["q1"].videos[0].start, items["q1"].videos[0].end) == (1, 3) and items["q1p"].is_proficiency
    assert items["gen"].options_are == "references"
    folder.write(root, list(items.values()), {"name": "mine"})  # rewrite in place: same items back
    assert {i.id: i for i in folder.load(root)} == items


@pytest.mark.parametrize("line, message", [
    ({"id": "x", "test": "t", "video": "videos/a.mp4", "texts": ["only one"]}, "at least two options"),
    ({"id": "x", "test": "t", "video": "videos/a.mp4", "texts": ["a", "b"], "target": 2}, "target 2 outside"),
    ({"id": "x", "test": "t", "video": "../a.mp4", "texts": ["a", "b"]}, "leaves the dataset directory"),
    ({"id": "x", "video": "videos/a.mp4", "texts": ["a", "b"]}, "missing field 'test'"),
    ({"id": "x", "test": "t", "video": "videos/a.mp4", "texts": ["a", "b"], "role": "boss"},
     "'role' must be one of main"),
])
def test_folder_refuses_bad_items_naming_file_and_line(tmp_path, line, message):
    root = write_folder(tmp_path, [{"id": "ok", "test": "t", "video": "videos/a.mp4", "texts": ["a", "b"]}, line])
    with pytest.raises(folder.DataError, match=f"items.jsonl: line 2: .*{message}"):
        folder.load(root)


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(str.strip)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(texts, min_size=2, max_size=4, unique=True), st.integers(0, 3),
                          st.sampled_from(["main", "proficiency"]), st.sampled_from(["a", "b"])),
                min_size=1, max_size=6))
def test_folder_write_then_load_gives_the_same_items(tmp_path_factory, specs):
    root = str(tmp_path_factory.mktemp("roundtrip"))
    os.makedirs(os.path.join(root, "videos"))
    items = [Item(id=f"i{k}", group_id=f"g{k // 2}", benchmark="rt", test="t", role=role,
                  videos=(VideoRef.file(os.path.join(root, "videos", f"{v}.mp4")),), texts=tuple(options),
                  target=target % len(options)) for k, (options, target, role, v) in enumerate(specs)]
    folder.write(root, items, {"name": "rt"})
    assert folder.load(root) == items


def test_a_benchmark_registers_through_an_entry_point(tmp_path, monkeypatch, capsys):
    package = install_package(tmp_path / "site", "mybench", (
        "from dataclasses import replace\nfrom timefoil.benchmarks import folder\n"
        "BENCHMARK = replace(folder.BENCHMARK, name='my-plugin-bench', description='from a plugin')\n"),
        "mine = mybench\nbroken = mybench.nothing:X", group="timefoil.benchmarks")
    monkeypatch.syspath_prepend(str(package))
    added = load_plugins()
    assert added == ["my-plugin-bench"] and get_benchmark("my-plugin-bench").description == "from a plugin"
    assert "benchmark plugin 'broken' could not be loaded" in capsys.readouterr().err  # said, then skipped
    sys.modules.pop("mybench", None)


# -- converters of newer contrast sets (examples/) ---------------------------------------------------------------
EXAMPLES = os.path.join(REPO, "examples")


def converted(tmp_path, module, records):
    sys.path.insert(0, EXAMPLES)
    try:
        from _folder import write_folder
    finally:
        sys.path.remove(EXAMPLES)
    os.makedirs(tmp_path / "videos", exist_ok=True)
    for record in records:
        for path in [record.get("video")] + list(record.get("videos", [])):
            if path:
                open(tmp_path / path, "wb").close()
    write_folder(str(tmp_path), module, records, "test")
    return {i.id: i for i in folder.load(str(tmp_path))}


def example(name):
    import importlib

    sys.path.insert(0, EXAMPLES)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(EXAMPLES)


def test_mvp_pairs_become_groups_asked_as_written(tmp_path):
    rows = [{"video_id": "v1", "video_path": "videos/v1.mp4", "question": "Is the cup moving left?",
             "answer": "Yes", "candidates": '["Yes", "No"]', "source": "physics"},
            {"video_id": "v2", "video_path": "videos/v2.mp4", "question": "Is the cup moving left?",
             "answer": "No", "candidates": "['Yes', 'No']", "source": "physics"}]
    items = converted(tmp_path, "mvp", example("convert_mvp").convert(rows))
    assert items["v1"].group_id == items["v2"].group_id and (items["v1"].target, items["v2"].target) == (0, 1)
    assert items["v2"].prompt == "Is the cup moving left?\nOptions:\nA. Yes\nB. No\nAnswer with the option's letter."
    assert items["v2"].target_position == 1 and items["v1"].test == "physics"


def test_videocomp_rows_and_tempcompass_caption_matching_become_pairs(tmp_path):
    rows = [{"id": "r1", "video": "videos/a.mp4", "positive": "he sits then stands",
             "negative": ["he stands then sits", "he sits"]}]
    items = converted(tmp_path / "vc", "videocomp", example("convert_videocomp").convert(rows))
    assert items["r1"].texts == ("he sits then stands", "he stands then sits", "he sits") and items["r1"].target == 0
    data = {"123": [{"question": "Which caption matches the video?\nCaption A: the car slows down\n"
                                 "Caption B: the car speeds up", "answer": "Caption B: the car speeds up"}]}
    tc = converted(tmp_path / "tc", "tempcompass", example("convert_tempcompass").convert(data, "speed"))
    assert tc["123_0"].texts == ("the car slows down", "the car speeds up")
    assert (tc["123_0"].target, tc["123_0"].target_position, tc["123_0"].labels) == (1, 1, ("A", "B"))
    assert tc["123_0"].prompt.startswith("Which caption") and tc["123_0"].test == "speed"


def test_validation_answers_are_accepted_by_aspect_with_agreement(tmp_path):
    from timefoil.building.collect import collect

    root = write_folder(tmp_path, [{"id": f"i{k}", "test": "direction", "video": "videos/a.mp4",
                                    "texts": [f"up {k}", f"down {k}"]} for k in range(3)])
    votes = {"ann": {"i0": ("direction",), "i1": ("direction",), "i2": (None,)},
             "bob": {"i0": ("direction",), "i1": ("sequence",), "i2": (None,)},
             "cat": {"i0": ("direction",), "i1": ("direction",), "i2": ("direction",)}}
    files = []
    for name, answers in votes.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"annotator": name, "task": "validate", "answers": {
            i: ({"valid": False} if a is None else {"valid": True, "aspect": a}) for i, (a,) in answers.items()}}))
        files.append(str(path))
    result = collect(root, files, rule="2/3")
    # i0: 3 of 3 say direction; i1: 2 of 3; i2: 1 of 3 (two say invalid)
    assert result["accepted"] == 2 and result["task"] == "validate" and result["ratings"] == 9
    # alpha by hand: values i0 d,d,d; i1 d,s,d; i2 x,x,d -> o_dd = 3*2/2 + 2*1/2 = 4, o_xx = 1, o_ds = o_sd = 1,
    # o_dx = o_xd = 1; n_d = 6, n_s = 1, n_x = 2, n = 9; D_o pairs = 4; sum n_c n_k (c != k) = 2*(6+12+2) = 40
    assert result["krippendorff_alpha"]["value"] == pytest.approx(1 - 8 * 4 / 40, abs=1e-4)
