"""The centralised-option analysis of choice answers."""
from timefoil.models import Model
from timefoil.models.requests import Answer


def test_centralized_option_analysis():
    """Options: the truth and three one-word edits of it; the truth shares most words with the
    others, so it is the centre. A model that always answers the centre is always right."""
    from timefoil.core.items import Item, VideoRef
    from timefoil.execution.offline import answer_offline
    from timefoil.protocols.choice import central_option
    from timefoil.scoring import score_records

    truth = "the man opens the red door slowly"
    foils = ["the man closes the red door slowly", "the woman opens the red door slowly",
             "the man opens the blue door slowly"]
    assert central_option([foils[0], truth, foils[1], foils[2]]) == 1
    items = [Item(id=f"i{k}", group_id=f"i{k}", benchmark="t", test="t", videos=(VideoRef.file("/v.mp4"),),
                  texts=(truth, *foils)) for k in range(4)]

    class Centre(Model):
        def answer_choice(self, requests, frames):
            return [Answer(raw=r.labels[central_option(r.option_texts)]) for r in requests]

    class First(Model):
        def answer_choice(self, requests, frames):
            return [Answer(raw="A") for _ in requests]

    for model, picks in ((Centre(), 100.0), (First(), None)):
        answered = answer_offline(items, "choice", model)
        report = score_records(answered, benchmark="t", model="m", protocol="choice")
        assert report.get("overall/central is true").value == 100.0
        assert report.get("overall/central is true").chance == 25.0
        central = report.get("overall/central picks")
        if picks is not None:
            assert central.value == picks and report.get("overall/accuracy").value == 100.0
        else:  # "A" is the centre only where the truth is shown first
            shown_first = sum(r["request"]["position"] == 0 for r in answered)
            assert central.value == 100 * shown_first / 4
