"""The meant reading over families of phrasings: letters named together after "both" in either
order, Unicode compatibility forms of every letter and of Yes/No, and negations that answer."""
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from timefoil.measures.parsing import first_word_verdict, parse_choice, parse_yes_no

SETTINGS = settings(max_examples=60, deadline=None)
LABELS = "ABCD"
PAIRS = st.sampled_from([(a, b) for a in LABELS for b in LABELS if a != b])


def full_width(text: str) -> str:
    """Each ASCII letter, digit and sign as its full-width form (U+FF01..U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@SETTINGS
@given(PAIRS, st.sampled_from(["Both {} and {} are plausible.", "both {} and {} fit the video",
                               "Both {} and {} were shown.", "I think both {} and {} are right"]))
def test_two_letters_named_together_after_both_conclude_nothing_in_either_order(pair, template):
    first, second = pair
    for x, y in ((first, second), (second, first)):
        assert parse_choice(template.format(x, y), list(LABELS)).status == "ambiguous", template.format(x, y)


@SETTINGS
@given(st.sampled_from(LABELS), st.sampled_from(["{}", "({})", "The answer is {}", "**{}**", "Option {}."]),
       st.sampled_from([full_width, lambda c: unicodedata.normalize("NFKD", c)]))
def test_a_compatibility_form_of_a_letter_reads_as_the_letter(letter, template, form):
    plain = parse_choice(template.format(letter), list(LABELS))
    assert plain.value == letter
    assert parse_choice(template.format(form(letter)), list(LABELS)).value == letter
    assert parse_choice(full_width(template.format(letter)), list(LABELS)).value == letter


@SETTINGS
@given(st.sampled_from(["Yes", "No", "yes", "NO", "Yes, it does.", "No, he leaves first."]))
def test_a_full_width_yes_or_no_reads_as_the_plain_one(reply):
    wide = full_width(reply)
    assert wide != reply and parse_yes_no(wide) == parse_yes_no(reply) and parse_yes_no(reply).ok
    assert first_word_verdict(wide) == first_word_verdict(reply)


@SETTINGS
@given(st.sampled_from(["Not really", "Not at all", "Absolutely not", "Certainly not", "Definitely not",
                        "Of course not", "Not quite", "Not true"]),
       st.sampled_from(["", ".", "!", ", the man leaves first.", " because the door stays shut", "**"]),
       st.booleans())
def test_a_negation_that_stands_as_the_answer_is_no(negation, ending, lower):
    reply = (negation.lower() if lower else negation) + ending
    assert parse_yes_no(reply).value == "no", reply


@SETTINGS
@given(st.sampled_from(["Not really sure.", "Not only does he open it, he closes it.", "Not certain",
                        "Not really sure whether it matches", "Not at all sure"]))
def test_a_negation_that_goes_on_to_something_else_is_no_answer(reply):
    assert not parse_yes_no(reply).ok, reply
