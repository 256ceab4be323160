"""The meant reading's grammar (docs/reproduce.md, "How a reply is read") on reply shapes real
models write, each labelled with what a careful person reads in it, or with the parse failure it
stays where such a reader would hesitate. Every row goes through the protocol that asks its
question: choice (options as texts; Vinoground's video questions, options as segments) and
entailment (Yes/No), so every protocol reads a reply alike."""
import pytest

from timefoil.models.requests import Answer, Request
from timefoil.protocols.choice import PROTOCOL as CHOICE
from timefoil.protocols.entailment import PROTOCOL as ENTAILMENT

AB, ABCD = ("A", "B"), ("A", "B", "C", "D")
TEXTS = {AB: ("the man opens the door and then sits down", "the man sits down and then opens the door"),
         ABCD: ("the dog runs left", "the dog runs right", "the dog jumps twice", "the dog sits down")}
FAIL = {"ambiguous", "unparseable", "empty"}

# (class, reply, labels, what a careful reader reads: a letter, or the failure it stays)
LETTERS = [
    # the letter A, not the article: the words after it cannot follow "a"
    ("article", "B at first, then A on reflection.", AB, "A"),
    ("article", "B? No, A in my view.", AB, "A"),
    ("article", "A in my view.", AB, "A"),
    ("article", "A on reflection.", AB, "A"),
    ("article", "I'd say A on reflection", AB, "A"),
    ("article", "A, not B.", AB, "A"),
    ("article", "A shows the door opening first.", AB, "A"),
    ("article", "A then, since the door opens first.", AB, "A"),
    ("article", "A too, as the man opens the door first.", AB, "A"),
    ("article", "A for sure.", AB, "A"),
    ("article", "A it is.", AB, "A"),
    ("article", "After watching twice: A.", AB, "A"),
    ("article", "Between the two, A.", ABCD, "A"),
    ("article", "B is reversed, so A.", AB, "A"),
    # ... and the article, not the letter: a noun phrase follows it
    ("article", "A man opens the door first, so B.", AB, "B"),
    ("article", "A while later he sits down. B", AB, "B"),
    ("article", "A clearly visible man opens the door; B", AB, "B"),
    ("article", "A really quick motion, then the door opens: B", AB, "B"),
    ("article", "A so-called reversal happens in B.", AB, "B"),
    ("article", "A man walks in.", AB, "unparseable"),
    ("article", "A small dog runs; the answer is B.", ABCD, "B"),
    # the answer first, then its reason
    ("reason", "A. Caption B reverses the order.", AB, "A"),
    ("reason", "A. B has the man sitting first.", AB, "A"),
    ("reason", "B. In A the man sits down before opening the door.", AB, "B"),
    ("reason", "(A) Caption B has the order reversed.", AB, "A"),
    ("reason", "A, because caption B reverses the order.", AB, "A"),
    ("reason", "A: option B describes the opposite order.", AB, "A"),
    ("reason", "**B**. Option A gets the order wrong.", AB, "B"),
    ("reason", "C. A and B show running, D shows sitting, only C shows jumping.", ABCD, "C"),
    ("reason", "D - unlike A, B and C, the dog sits.", ABCD, "D"),
    ("reason", "B\nA would need the door to open first.", AB, "B"),
    ("reason", "Option A is correct because option B reverses the order.", AB, "A"),
    ("reason", "A is the correct answer. In B the order is reversed.", AB, "A"),
    ("reason", "A.\n\nExplanation: in caption B the man sits first.", AB, "A"),
    ("reason", "A is correct. B is also correct.", AB, "ambiguous"),
    ("reason", "A. B is also right.", AB, "ambiguous"),  # the later option affirmed: hesitation
    ("reason", "A. B.", AB, "ambiguous"),  # two answers, one after the other
    ("reason", "A. Or B.", AB, "ambiguous"),
    ("reason", "A. Maybe B.", AB, "ambiguous"),
    ("reason", "A. B could be correct too.", AB, "ambiguous"),
    ("reason", "A or B. B reverses the order.", AB, "ambiguous"),  # it opens with a list, not an answer
    ("reason", "B. The man opens the door and then sits down.", AB, "ambiguous"),  # its reason quotes A's text
    # a changed mind: the last answer settled on
    ("changed", "Initially I thought B, but on reflection A.", AB, "A"),
    ("changed", "At first B, but on second thought A.", AB, "A"),
    ("changed", "I was going to say B, but in fact it's A.", AB, "A"),
    ("changed", "B? No, A.", AB, "A"),
    ("changed", "C at first; after all D.", ABCD, "D"),
    ("changed", "My first guess was C. Ultimately D.", ABCD, "D"),
    ("changed", "I thought A initially. B.", AB, "B"),
    ("changed", "B at first, now A.", AB, "A"),
    ("changed", "I think it's A. Actually, B.", AB, "B"),
    ("changed", "A. Wait, no: B.", AB, "B"),
    ("changed", "B. On reflection, A in my view.", AB, "A"),
    ("changed", "Initially A or B, in the end B.", AB, "B"),
    ("changed", "A, then B.", AB, "ambiguous"),  # a list of answers, none settled on
    ("changed", "I'm torn: A at first, B at first too.", AB, "ambiguous"),
    # negation before a letter
    ("negation", "Not A. B.", AB, "B"),
    ("negation", "I wouldn't say A; B.", AB, "B"),
    ("negation", "I would not pick A, so B.", AB, "B"),
    ("negation", "It isn't option A. The answer is B.", AB, "B"),
    ("negation", "The answer is not C but D.", ABCD, "D"),
    ("negation", "Rather than B, A.", AB, "A"),
    ("negation", "B is wrong; A is right.", AB, "A"),
    ("negation", "Not A.", AB, "unparseable"),  # no answer named, only one refused
    ("negation", "I wouldn't say A.", AB, "unparseable"),
    ("negation", "Not sure it's A.", AB, "unparseable"),  # a hedge: neither A nor its denial
    # options by place or number
    ("numbered", "Option 2", AB, "B"),
    ("numbered", "option 1.", AB, "A"),
    ("numbered", "Caption 2 is correct.", AB, "B"),
    ("numbered", "Choice 3", ABCD, "C"),
    ("numbered", "Option #4", ABCD, "D"),
    ("numbered", "The answer is option 2 because the man sits first.", AB, "B"),
    ("numbered", "Choice 3", AB, "unparseable"),  # no third option
    ("numbered", "Option 1 or option 2.", AB, "ambiguous"),
    ("ordinal", "The first one", AB, "A"),
    ("ordinal", "The first one.", AB, "A"),
    ("ordinal", "the second caption", AB, "B"),
    ("ordinal", "The second option is correct.", AB, "B"),
    ("ordinal", "It's the third one.", ABCD, "C"),
    ("ordinal", "The fourth option.", ABCD, "D"),
    ("ordinal", "The last one.", ABCD, "D"),
    ("ordinal", "The latter.", AB, "B"),
    ("ordinal", "The former", AB, "A"),
    ("ordinal", "The first is right.", AB, "A"),
    ("ordinal", "Not the first one; the second one.", AB, "B"),
    ("ordinal", "I'd go with the second description.", AB, "B"),
    ("ordinal", "The first one, on reflection.", AB, "A"),
    ("ordinal", "The first or the second.", AB, "ambiguous"),
    ("ordinal", "The first and second are both plausible.", AB, "ambiguous"),
    ("ordinal", "The man opens the door first.", AB, "unparseable"),  # "first" tells the order, names nothing
    ("ordinal", "At first the man sits.", AB, "unparseable"),
    ("ordinal", "The first time he sits down, he is alone.", AB, "unparseable"),
    ("ordinal", "He is the first to leave.", AB, "unparseable"),
    ("ordinal", "He is the first one to enter, so B.", AB, "B"),
    ("ordinal", "The latter.", ABCD, "unparseable"),  # "the latter" of four options names none
    # plain forms the grammar keeps reading
    ("plain", "B", AB, "B"), ("plain", "(b)", AB, "B"), ("plain", "Answer: A", AB, "A"),
    ("plain", "The answer is C.", ABCD, "C"), ("plain", "**D**", ABCD, "D"), ("plain", "I choose B.", AB, "B"),
    ("plain", "the man sits down and then opens the door", AB, "B"),
    ("plain", "Final answer: (A)", AB, "A"), ("plain", "b)", AB, "B"), ("plain", "Option C.", ABCD, "C"),
    # where a careful reader hesitates: unreadable
    ("unreadable", "Both.", AB, "unparseable"),
    ("unreadable", "both", AB, "unparseable"),
    ("unreadable", "Both A and B.", AB, "ambiguous"),
    ("unreadable", "Neither.", AB, "unparseable"),
    ("unreadable", "Neither A nor B.", AB, "unparseable"),
    ("unreadable", "A or B", AB, "ambiguous"),
    ("unreadable", "Either the first or the second.", AB, "ambiguous"),
    ("unreadable", "A and B are both wrong.", AB, "unparseable"),
    ("unreadable", "I cannot tell.", AB, "unparseable"),
    ("unreadable", "2", AB, "unparseable"),  # a bare number may count something: no option named
    ("unreadable", "Yes", AB, "unparseable"),
    ("unreadable", "", AB, "empty"),
]

# Vinoground's video questions: the options are the two segments of one joined video.
SEGMENTS = [
    ("segment", "The second video", "B"), ("segment", "The second video.", "B"),
    ("segment", "the first segment", "A"), ("segment", "First segment (before black frame)", "A"),
    ("segment", "Second segment (after black frame)", "B"), ("segment", "Segment 2", "B"),
    ("segment", "Video 1.", "A"), ("segment", "The clip after the black frame.", "B"),
    ("segment", "The one before the black frame.", "A"), ("segment", "The caption matches the second clip.", "B"),
    ("segment", "It's the first video: the man opens the door there.", "A"),
    ("segment", "B. The first segment shows the reverse.", "B"),  # the answer, then its reason
    ("segment", "Not the first segment; the second.", "B"),
    ("segment", "The second segment, on reflection.", "B"),
    ("segment", "Initially the first video, but on reflection the second video.", "B"),
    ("segment", "(A)", "A"), ("segment", "Answer: B", "B"),
    ("segment", "In the first segment he sits; in the second he stands.", "ambiguous"),
    ("segment", "The first video or the second video.", "ambiguous"),
    ("segment", "Both segments.", "unparseable"),
    ("segment", "Both videos match.", "unparseable"),
    ("segment", "The video is too dark.", "unparseable"),
    ("segment", "Neither segment.", "unparseable"),
]

# (class, reply, what a careful reader reads: yes/no, or the failure it stays)
VERDICTS = [
    # a negated Yes or No
    ("negation", "I wouldn't say yes.", "no"), ("negation", "Not yes.", "no"),
    ("negation", "The answer is not yes.", "no"), ("negation", "I would not answer yes.", "no"),
    ("negation", "I can't say yes.", "no"), ("negation", "It is not a clear yes.", "no"),
    ("negation", "No, I wouldn't say yes.", "no"), ("negation", "That's not correct.", "no"),
    ("negation", "The caption is not true: he sits first.", "no"), ("negation", "It isn't correct.", "no"),
    ("negation", "Not quite correct.", "no"), ("negation", "I wouldn't say no.", "yes"),
    ("negation", "The answer is not no.", "yes"), ("negation", "Nothing is wrong with it.", "yes"),
    ("negation", "Yes, nothing went wrong.", "yes"), ("negation", "No, that is not correct.", "no"),
    ("negation", "I don't think so.", "no"), ("negation", "Not really.", "no"), ("negation", "Absolutely not.", "no"),
    ("negation", "Not exactly; the order is reversed.", "no"),
    ("negation", "I'm not sure, yes.", "yes"),  # the comma ends the negation's clause
    ("negation", "The door does not open first, so no.", "no"),
    ("negation", "It doesn't matter which hand; yes.", "yes"),
    ("negation", "Not necessarily yes.", "ambiguous"),  # a hedge, not a denial
    ("negation", "Neither yes nor no.", "ambiguous"),
    # a changed mind
    ("changed", "Initially I thought yes, but on reflection no.", "no"),
    ("changed", "Yes? No, the order is reversed.", "no"),
    ("changed", "Yes at first, but no.", "no"),
    ("changed", "No at first; on second thought, yes.", "yes"),
    ("changed", "Yes. Actually, no: the order is reversed.", "no"),
    ("changed", "My first instinct was no, but in fact yes.", "yes"),
    ("changed", "I thought yes. No.", "no"),
    ("changed", "No, on reflection.", "no"),
    ("changed", "Yes. No.", "ambiguous"),
    # the answer, then its reason
    ("reason", "Yes, because the man opens the door first.", "yes"),
    ("reason", "No. The man sits down before he opens the door.", "no"),
    ("reason", "No, the video shows the reverse.", "no"),
    ("reason", "Yes. No one else enters.", "yes"),
    ("reason", "No. There is no door opening first.", "no"),
    ("reason", "Yes, there is no doubt.", "yes"),
    # other words for the same answer
    ("synonym", "Y", "yes"), ("synonym", "N", "no"), ("synonym", "y.", "yes"), ("synonym", "N.", "no"),
    ("synonym", "(Y)", "yes"), ("synonym", "N, he sits first.", "no"),
    ("synonym", "True", "yes"), ("synonym", "False.", "no"), ("synonym", "true", "yes"),
    ("synonym", "FALSE", "no"), ("synonym", "The statement is false because he sits first.", "no"),
    ("synonym", "This is true.", "yes"),
    ("synonym", "Correct", "yes"), ("synonym", "Incorrect.", "no"), ("synonym", "The caption is correct.", "yes"),
    ("synonym", "The caption is incorrect, the man sits first.", "no"), ("synonym", "Wrong.", "no"),
    ("synonym", "The caption is accurate.", "yes"), ("synonym", "Inaccurate: he sits first.", "no"),
    ("synonym", "Y/N", "ambiguous"), ("synonym", "Y, N", "ambiguous"),
    ("synonym", "Yeah.", "yes"), ("synonym", "Yep", "yes"), ("synonym", "Nope.", "no"), ("synonym", "Yup!", "yes"),
    ("synonym", "是", "yes"), ("synonym", "否", "no"), ("synonym", "是的。", "yes"), ("synonym", "不是。", "no"),
    ("synonym", "是，视频中的男人先开门。", "yes"), ("synonym", "否，他先坐下。", "no"), ("synonym", "答案：否", "no"),
    ("synonym", "对", "yes"), ("synonym", "不对。", "no"),
    # plain forms the grammar keeps reading
    ("plain", "Yes", "yes"), ("plain", "no", "no"), ("plain", " No.", "no"), ("plain", "**Yes**", "yes"),
    ("plain", "The answer is yes.", "yes"), ("plain", "Answer: No", "no"), ("plain", "So the answer is no.", "no"),
    ("plain", "It is true that he walks, but the order is wrong.", "no"),
    # where a careful reader hesitates: unreadable
    ("unreadable", "Yes and no.", "ambiguous"), ("unreadable", "Both.", "unparseable"),
    ("unreadable", "It could be yes or no.", "ambiguous"), ("unreadable", "Maybe.", "unparseable"),
    ("unreadable", "The caption is partially correct.", "ambiguous"),
    ("unreadable", "Mostly true.", "ambiguous"), ("unreadable", "Yes. No.", "ambiguous"),
    ("unreadable", "Correct order, wrong person.", "unparseable"),
    ("synonym", "It is true that the man walks.", "unparseable"),  # a fact, not a verdict
    ("unreadable", "The man turns right.", "unparseable"),
    ("unreadable", "N/A", "unparseable"), ("unreadable", "I cannot determine that.", "unparseable"),
    ("unreadable", "There is no dog.", "unparseable"), ("synonym", "是否", "unparseable"),
    ("unreadable", "", "empty"),
]


def _got(parsed):
    return parsed.value if parsed.ok else parsed.status


def _choice_request(labels, segments=False):
    texts = () if segments else TEXTS[labels]
    return Request("choice", None, "question", labels=labels, option_texts=texts).to_json()


@pytest.mark.parametrize("kind, raw, labels, expected", LETTERS, ids=[f"{r[0]}:{r[1]!r}"[:60] for r in LETTERS])
def test_choice_reads_a_letter_as_meant(kind, raw, labels, expected):
    assert _got(CHOICE.read(_choice_request(labels), Answer(raw=raw))) == expected


@pytest.mark.parametrize("kind, raw, expected", SEGMENTS, ids=[f"{r[1]!r}"[:60] for r in SEGMENTS])
def test_a_video_question_reads_the_segment_a_reply_names(kind, raw, expected):
    assert _got(CHOICE.read(_choice_request(AB, segments=True), Answer(raw=raw))) == expected


def test_segment_words_name_no_option_of_a_text_question():
    """A text question shows one video: "the second video" there is a word of the sentence."""
    for raw in ("The second video", "Segment 2", "The clip after the black frame."):
        assert _got(CHOICE.read(_choice_request(AB), Answer(raw=raw))) == "unparseable", raw


@pytest.mark.parametrize("kind, raw, expected", VERDICTS, ids=[f"{r[0]}:{r[1]!r}"[:60] for r in VERDICTS])
def test_entailment_reads_a_verdict_as_meant(kind, raw, expected):
    request = Request("entailment", None, "question", labels=("Yes", "No"), caption="c").to_json()
    assert _got(ENTAILMENT.read(request, Answer(raw=raw))) == expected


def test_a_reasoned_reply_is_read_by_the_same_grammar_from_its_conclusion():
    """A reasoning question reads its last line: the grammar applies there as anywhere."""
    request = {**_choice_request(AB), "reasoning": True}
    raw = "Step 1: the man sits.\nStep 2: he opens the door.\nB at first, then A on reflection."
    assert _got(CHOICE.read(request, Answer(raw=raw))) == "A"
    yes_no = {**Request("entailment", None, "q", caption="c").to_json(), "reasoning": True}
    assert _got(ENTAILMENT.read(yes_no, Answer(raw="He sits first.\nI wouldn't say yes."))) == "no"


def test_the_corpus_covers_every_class_and_what_stays_unreadable():
    rows = LETTERS + [(k, r, AB, e) for k, r, e in SEGMENTS] + [(k, r, (), e) for k, r, e in VERDICTS]
    assert len(rows) >= 200
    classes = {row[0] for row in rows}
    assert {"negation", "article", "reason", "changed", "numbered", "ordinal", "synonym", "segment",
            "unreadable"} <= classes
    for kind in classes - {"plain"}:
        # every class but the plain forms holds rows read and rows that stay unreadable
        expected = [row[3] for row in rows if row[0] == kind]
        assert any(e in FAIL for e in expected) and any(e not in FAIL for e in expected) or kind == "unreadable", kind
