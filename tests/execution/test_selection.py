"""--sample: whole groups, stratified over tests, seeded."""
from collections import Counter


# -- sampling over tests ------------------------------------------------------------------------
def test_sample_is_stratified_over_tests_and_seeded():
    from helpers import pair_item

    from timefoil.execution.config import sampled_groups

    items = [pair_item(f"{t}{k}", f"{t}{k}", ["c", "f"], test=t) for t, n in (("a", 60), ("b", 30), ("c", 10))
             for k in range(n)]
    drawn = sampled_groups(items, 10, seed=1)
    assert Counter(i.test for i in drawn) == {"a": 6, "b": 3, "c": 1}  # 10 in proportion to 60:30:10
    assert [i.id for i in drawn] == [i.id for i in sampled_groups(items, 10, seed=1)]
    assert {i.id for i in drawn} != {i.id for i in sampled_groups(items, 10, seed=2)}
    assert Counter(i.test for i in sampled_groups(items, 3, seed=0)) == {"a": 1, "b": 1, "c": 1}  # each test once
    assert len(sampled_groups(items, 500, seed=0)) == 100
