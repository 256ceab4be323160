"""The conclusion of a reasoned answer."""
import pytest
from timefoil.measures.parsing import conclusion


@pytest.mark.parametrize("raw, said", [
    ("The man opens the door.\nSo the answer is B.", "B"),
    ("Thinking about A and B... <answer>Yes</answer>", "Yes"),
    ("Step one: A.\nFinal answer: (A)", "(A)"),
    ("B", "B"),
])
def test_conclusion_of_a_reasoned_answer(raw, said):
    assert conclusion(raw).strip(". ") == said
