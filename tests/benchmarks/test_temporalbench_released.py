"""TemporalBench long-video QA held to the numbers the released scorer printed.

The released code is github.com/mu-cai/TemporalBench at 62f88ab9a93699cb45f89c6e9ac034e2b83fcb39.
get_qa_acc.py (binary accuracy and MBA) ran unchanged, as `get_qa_acc.py --data_json
temporalbench_long_qa.json`, on the records and replies of this file written out as the data file
and a predictions file of one {"idx", "response"} line per reply, as the released eval scripts
write them (eval/gpt-4o.py line 124); each constant below is what it printed.
"""
import json

from timefoil.benchmarks import get_benchmark
from timefoil.execution.offline import answer_offline
from timefoil.models import Model
from timefoil.models.requests import Answer
from timefoil.scoring import score_records


def question(a: str, b: str) -> str:
    return (f"Which caption best describes this video?\nA. {a}\nB. {b}\n"
            "Answer with the option's letter from the given choices directly.")


def long_record(video: str, k: int, dataset: str, gt: str, true: str, negative: str, **extra) -> dict:
    a, b = (true, negative) if gt == "A" else (negative, true)
    return {"idx": f"{video}_{k}", "video_name": video, "dataset": dataset, "question": question(a, b), "GT": gt,
            **extra}


# -- long-video QA ------------------------------------------------------------------------------
# Five long videos of three questions each; a caption of several clips with one clip's caption
# replaced by its negative. Some records carry a category, as short QA's do: get_qa_acc.py reads
# none for a file whose name lacks "short" (lines 40 and 72).
V1, V2, V3 = "long_video/ActivityNet/v_a1.mp4", "long_video/Charades/c1.mp4", "long_video/COIN/k1.mp4"
V4, V5 = "long_video/EgoExo4D/e1.mp4", "long_video/COIN/k2.mp4"
CLIPS = "A man fills a pot with water. He puts it on the stove. He {} the pasta into the pot."
LONG_QA = [
    long_record(V1, 0, "ActivityNet", "A", CLIPS.format("pours"), CLIPS.format("throws")),
    long_record(V1, 1, "ActivityNet", "B", "He stirs twice, then tastes.", "He stirs once, then tastes."),
    long_record(V1, 2, "ActivityNet", "A", "She waves with the left hand.", "She waves with the right hand."),
    long_record(V2, 0, "Charades", "B", "A person opens the door, then sits.", "A person sits, then opens the door.",
                category="Event Order"),
    long_record(V2, 1, "Charades", "B", "He lifts the box slowly.", "He lifts the box quickly."),
    long_record(V2, 2, "Charades", "A", "She turns the light off.", "She turns the light on."),
    long_record(V3, 0, "COIN", "A", "The worker tightens the screw clockwise.",
                "The worker tightens the screw counterclockwise."),
    long_record(V3, 1, "COIN", "A", "He sands the board three times.", "He sands the board five times."),
    long_record(V3, 2, "COIN", "B", "The paint is rolled upward.", "The paint is rolled downward."),
    long_record(V4, 0, "EgoExo4D", "B", "The left hand holds the bowl.", "The right hand holds the bowl."),
    long_record(V4, 1, "EgoExo4D", "A", "The camera wearer cracks two eggs.", "The camera wearer cracks one egg."),
    long_record(V4, 2, "EgoExo4D", "B", "The whisk moves in circles.", "The whisk moves back and forth."),
    long_record(V5, 0, "COIN", "A", "The tire is lifted off the car.", "The tire is pushed onto the car."),
    long_record(V5, 1, "COIN", "B", "She tightens the bolts in a star pattern.",
                "She tightens the bolts in a circle."),
    long_record(V5, 2, "COIN", "B", "The jack is lowered last.", "The jack is lowered first."),
]
# bare labels, verbose answers, 3 of 15 unreadable (20%); each the reply to its idx
LONG_REPLIES = {
    f"{V1}_0": "A", f"{V1}_1": "b", f"{V1}_2": "A. He pours the pasta into the pot.",
    f"{V2}_0": "Answer: B", f"{V2}_1": "B", f"{V2}_2": "a",
    f"{V3}_0": "The answer is A.", f"{V3}_1": "I cannot tell from these frames.", f"{V3}_2": "B",
    f"{V4}_0": "(B)", f"{V4}_1": "A", f"{V4}_2": " B",
    f"{V5}_0": "A", f"{V5}_1": "B", f"{V5}_2": "Neither caption matches; C.",
}
# get_qa_acc.py on LONG_REPLIES printed (lines 92 and 94, then 102-103 per dataset, in the order met):
#   Binary Accuracy: 9/15 60.00%; Multiple Binary Accuracy: 1/5 20.00%
#   ActivityNet 3/3 100.00% ||| 1/1 100.00%;  Charades 2/3 66.67% ||| 0/1 0.00%
#   COIN 3/6 50.00% ||| 0/2 0.00%;  EgoExo4D 1/3 33.33% ||| 0/1 0.00%
RELEASED_LONG = {"overall/BA": (60.0, 15), "overall/MBA": (20.0, 5),
                 "category:ActivityNet/BA": (100.0, 3), "category:ActivityNet/MBA": (100.0, 1),
                 "category:Charades/BA": (66.67, 3), "category:Charades/MBA": (0.0, 1),
                 "category:COIN/BA": (50.0, 6), "category:COIN/MBA": (0.0, 2),
                 "category:EgoExo4D/BA": (33.33, 3), "category:EgoExo4D/MBA": (0.0, 1)}


class Silent(Model):
    """Answers nothing of its own: each test writes the replies into the stored records."""

    name = "silent"

    def answer_choice(self, requests, frames):
        return [Answer(raw="") for _ in requests]

    def answer_generation(self, requests, frames):
        return [Answer(raw="") for _ in requests]


def scored(tmp_path, subset, file, records, replies, protocol):
    (tmp_path / file).write_text(json.dumps(records))
    bench = get_benchmark("temporalbench")
    answered = answer_offline(bench.load(str(tmp_path), subset=subset), protocol, Silent(), prompts=bench.prompts)
    for record in answered:
        record["answer"]["raw"] = replies[record["item"]["id"]]
    common = dict(benchmark="temporalbench", model="m", protocol=protocol, spec=bench.summary)
    return score_records(answered, **common, rule=bench.released), score_records(answered, **common)


def values(report, names):
    return {name: (round(report.get(name).value, 2), report.get(name).n) for name in names}


def test_long_qa_equals_get_qa_acc_on_bare_verbose_and_unreadable_replies(tmp_path):
    """By hand, as get_qa_acc.py line 49 reads them (the first character against GT, in lower
    case): V1 all right ("A", "b", "A. He pours..."); V2 "Answer: B" reads a against b; V3 "The
    answer is A." reads t, "I cannot tell..." i; V4 "(B)" reads "(" and " B" a space; V5 "Neither
    caption..." reads n. Right: 3 + 2 + 1 + 1 + 2 = 9 of 15 = 60.00 (line 92), and of the five
    videos only V1 has every answer right: 1/5 = 20.00 (line 94), as the script printed."""
    released, meant = scored(tmp_path, "long_qa", "temporalbench_long_qa.json", LONG_QA, LONG_REPLIES, "choice")
    assert values(released, RELEASED_LONG) == RELEASED_LONG
    assert released.released["dropped"] == 0 and released.items == 15
    # the meant reading reads the letter each reply chose: "Answer: B", "The answer is A.", "(B)"
    # and " B" right; "I cannot tell..." and the "C" of "Neither caption matches; C." unread.
    # 13 of 15 right; V1, V2 and V4 all right: 3 of 5.
    assert values(meant, ("overall/BA", "overall/MBA")) == {"overall/BA": (86.67, 15), "overall/MBA": (60.0, 5)}
    assert meant.parse_failures == 2


def test_long_qa_empty_reply_stops_the_released_script_and_counts_wrong_here(tmp_path):
    """get_qa_acc.py, given the same replies with V5's first one empty, stopped at line 49
    (IndexError: string index out of range, outside the try of lines 86-130) and printed no number
    for the file. timefoil counts the empty reply wrong under both readings: released 8 of 15 and
    no video all right; meant 12 of 15 (V1, V2 and V4 still all right)."""
    replies = dict(LONG_REPLIES, **{f"{V5}_0": ""})
    released, meant = scored(tmp_path, "long_qa", "temporalbench_long_qa.json", LONG_QA, replies, "choice")
    names = ("overall/BA", "overall/MBA")
    assert values(released, names) == {"overall/BA": (53.33, 15), "overall/MBA": (20.0, 5)}
    assert values(meant, names) == {"overall/BA": (80.0, 15), "overall/MBA": (60.0, 5)}


def test_long_qa_record_with_an_empty_category_loads_and_scores_as_get_qa_acc_does(tmp_path):
    """get_qa_acc.py reads no category from a long QA file (line 72 reads one only where the file's
    name holds "short"), so a record whose category is "" or null is scored like any other; the
    lmms-eval task the README links to reads "" as no category too. timefoil refused the file."""
    records = [dict(r, category="" if k % 2 else None) for k, r in enumerate(LONG_QA)]
    records[3]["category"] = "Event Order"
    released, _ = scored(tmp_path, "long_qa", "temporalbench_long_qa.json", records, LONG_REPLIES, "choice")
    assert values(released, RELEASED_LONG) == RELEASED_LONG
    items = get_benchmark("temporalbench").load(str(tmp_path), subset="long_qa")
    assert [i.categories for i in items[2:4]] == [("ActivityNet",), ("Charades", "Event Order")]

