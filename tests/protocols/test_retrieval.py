"""Retrieval: recall@k over a test's texts."""
import os
import pytest
from timefoil.models import Model
from timefoil.models.requests import Answer


# -- retrieval -------------------------------------------------------------------------------------
MATRIX = {"v0": [0.9, 0.8, 0.1, 0.2], "v1": [0.7, 0.3, 0.9, 0.1], "v2": [0.2, 0.1, 0.3, 0.4],
          "v3": [0.5, 0.6, 0.7, 0.8]}  # rows: videos; columns: texts c0..c3


def test_retrieval_recall_on_a_four_by_four_matrix():
    """Item i: video v_i, caption c_i, counterfactual c_(i+1). Ranks by hand (row order):
    v0: caption 1, counterfactual 2; v1: 3, 1; v2: 2, 1; v3: 1, 4 (ties would lose).
    R@1 caption 2/4, counterfactual 2/4, and "All" (VITATECS Table 7's third row) their mean,
    2/4, not "either" (4/4); chance 1/4 each. At k = 1 an item's caption and counterfactual
    cannot both hit, so each item gives one hit (chance 1/2) or none: 4 hits of 8 units has
    P(X >= 4) = 1/16 for X ~ Binomial(4, 1/2), not the 0.114 of eight independent quarters."""
    from timefoil.core.items import Item, VideoRef
    from timefoil.models.base import RanksBySimilarity
    from timefoil.execution.offline import answer_offline
    from timefoil.scoring import score_records

    texts = [f"c{j}" for j in range(4)]
    items = [Item(id=f"i{i}", group_id=f"i{i}", benchmark="t", test="t", videos=(VideoRef.file(f"/v{i}.mp4"),),
                  texts=(texts[i], texts[(i + 1) % 4])) for i in range(4)]

    class Matrix(RanksBySimilarity, Model):
        def answer_similarity(self, requests, frames):
            return [Answer(score=MATRIX[os.path.basename(r.video.path)[:-4]][int(r.text[1])]) for r in requests]

    records = answer_offline(items, "retrieval", Matrix())
    assert [r["answer"]["meta"]["ranks"] for r in records] == [[1, 2], [3, 1], [2, 1], [1, 4]]
    report = score_records(records, benchmark="t", model="m", protocol="retrieval")
    expected = {"caption": (50.0, 25.0), "counterfactual": (50.0, 25.0), "All": (50.0, 25.0)}
    for role, (value, chance) in expected.items():
        metric = report.get(f"overall/R@1 {role}")
        assert metric.value == value and metric.chance == pytest.approx(chance)
    assert report.get("overall/R@1 All").p_value == pytest.approx(1 / 16)
    assert not any(m.name.endswith("either") for m in report.metrics)
    assert report.get("overall/R@5 caption").value == 100.0 and report.get("overall/R@5 caption").chance == 100.0
