import pytest

from timefoil.measures.parsing import parse_choice, parse_yes_no

OPTIONS = ("the red square jumps and then the blue circle jumps",
           "the blue circle jumps and then the red square jumps")


@pytest.mark.parametrize("raw, expected", [
    ("B", "B"), ("(B)", "B"), ("B.", "B"), ("b)", "B"), ("  a ", "A"), ("Answer: B", "B"),
    ("The correct caption is B.", "B"), ("The answer is (A).", "A"), ("Option B", "B"),
    ("**A**", "A"), ("B) the blue circle jumps and then the red square jumps", "B"),
    ("the blue circle jumps and then the red square jumps", "B"),
    ("A man is walking; I pick B", "B"), ("B is correct", "B"), ("A is correct.", "A"),
])
def test_choice_accepts_what_models_write(raw, expected):
    parsed = parse_choice(raw, ("A", "B"), OPTIONS)
    assert parsed.value == expected and parsed.status == "ok"


@pytest.mark.parametrize("raw, status", [
    ("A or B", "ambiguous"), ("A and B are both plausible", "ambiguous"), ("", "empty"), (None, "empty"),
    ("   ", "empty"), ("I cannot tell", "unparseable"), ("C", "unparseable"),
])
def test_choice_refuses_ambiguous_output(raw, status):
    parsed = parse_choice(raw, ("A", "B"), OPTIONS)
    assert parsed.value is None and parsed.status == status


def test_choice_matches_more_than_two_labels():
    assert parse_choice("D.", ("A", "B", "C", "D")).value == "D"
    assert parse_choice("The answer is C", ("A", "B", "C", "D")).value == "C"


@pytest.mark.parametrize("raw, expected", [
    ("Yes", "yes"), (" no", "no"), ("Yes, because the man opens the door.", "yes"), ("NO.", "no"),
    ("The answer is yes.", "yes"), ("yes\n", "yes"),
])
def test_yes_no(raw, expected):
    assert parse_yes_no(raw).value == expected


@pytest.mark.parametrize("raw, status", [("", "empty"), ("maybe", "unparseable"),
                                         ("It could be yes or no", "ambiguous")])
def test_yes_no_failures(raw, status):
    parsed = parse_yes_no(raw)
    assert parsed.value is None and parsed.status == status
