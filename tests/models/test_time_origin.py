"""Where the times a video LLM is told count from: the item's window (default) or its file.

The clip is a window of a file starting at 7.3 s; four frames 0.4 s apart (times 0.0, 0.4, 0.8,
1.2 from the window's start). Qwen3-VL writes one time per 2-frame temporal patch, the mean of
its frames' times: from the window 0.2 and 1.0; from the file 7.3 + 0.2 = 7.5 and 7.3 + 1.0 = 8.3.
SmolVLM2 writes each frame's whole minutes and seconds, and the last one's as the video's length.
Gemma 4 writes each frame's time in whole seconds, rounded down (mm:ss): from the window 00:00,
00:00, 00:00, 00:01; from the file 7.3, 7.7, 8.1 and 8.5 s are 00:07, 00:07, 00:08, 00:08.
"""
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402

PROMPTS = Prompts()
CLIP = frames_of(pattern_frames(4, 60, 80), rate=2.5)  # times 0.0, 0.4, 0.8, 1.2
WINDOW = VideoRef.file("/nonexistent/long.mp4", start=7.3, end=8.9)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    words = [PROMPTS.entailment, "a man opens the door"]
    return {f: tiny_vlm(tmp_path_factory.mktemp(f), f, words) for f in ("qwen3_vl", "qwen2_5_vl", "smolvlm", "gemma4")}


def written_times(model: HFGenerative, pattern: str = r"<([\d.]+) seconds>") -> list[str]:
    """The timestamps the model's prompt held when it answered one request about the window."""
    builder, seen = model.inputs.builder, []
    plain = builder.placeholders

    def spy(token, counts, timing):
        texts = plain(token, counts, timing)
        seen.extend(texts)
        return texts

    builder.placeholders = spy
    request = Request("entailment", WINDOW, PROMPTS.entailment.format(caption="a man opens the door"),
                      caption="a man opens the door")
    answer = model.answer([request], lambda ref, sampling: CLIP)[0]
    assert answer.error is None and len(seen) == 1
    return re.findall(pattern, seen[0])


def test_qwen3_times_count_from_the_window_by_default(folders):
    model = HFGenerative(folders["qwen3_vl"])
    assert written_times(model) == ["0.2", "1.0"]
    assert model.fingerprint()["time_origin"] == "window"


def test_qwen3_times_count_from_the_file_when_asked(folders):
    model = HFGenerative(folders["qwen3_vl"], time_origin="file")
    assert written_times(model) == ["7.5", "8.3"]
    assert model.fingerprint()["time_origin"] == "file"


def test_smolvlm_times_and_length_count_from_the_window_or_the_file(folders):
    """From the window: frames at 0.0, 0.4, 0.8 and 1.2 s are 00:00 three times and 00:01, in a
    video of 0:00:01; from the file they are at 7.3 to 8.5 s: 00:07, 00:07, 00:08, 00:08, 0:00:08."""
    times = r"(?:from a|Frame from) ([\d:]*\d)"
    assert written_times(HFGenerative(folders["smolvlm"]), times) == ["0:00:01", "00:00", "00:00", "00:00", "00:01"]
    model = HFGenerative(folders["smolvlm"], time_origin="file")
    assert written_times(model, times) == ["0:00:08", "00:07", "00:07", "00:08", "00:08"]
    assert model.fingerprint()["time_origin"] == "file"


def test_gemma4_writes_each_frames_whole_seconds_from_the_chosen_origin(folders):
    mm_ss = r"(\d\d:\d\d) <\|image>"
    window, file = HFGenerative(folders["gemma4"]), HFGenerative(folders["gemma4"], time_origin="file")
    assert written_times(window, mm_ss) == ["00:00", "00:00", "00:00", "00:01"]
    assert window.fingerprint()["time_origin"] == "window"
    assert written_times(file, mm_ss) == ["00:07", "00:07", "00:08", "00:08"]


def test_time_origin_is_refused_where_no_time_is_written_and_when_misspelt(folders):
    with pytest.raises(ValueError, match="qwen2_5_vl is told no such time"):
        HFGenerative(folders["qwen2_5_vl"], time_origin="file")
    spans = HFGenerative(folders["qwen2_5_vl"]).fingerprint()
    assert "time_origin" not in spans and spans["second_per_grid_ts"] == "temporal_patch_size / sampling rate"
    with pytest.raises(ValueError, match="time_origin must be one of window, file, got 'start'"):
        HFGenerative(folders["qwen3_vl"], time_origin="start")


def test_qwen2_5_is_told_the_span_of_a_temporal_patch_whatever_the_window(folders):
    """Frames 0.4 s apart, two a temporal patch: 0.8 s a patch, for a window at 7.3 s as at 0."""
    model = HFGenerative(folders["qwen2_5_vl"])
    for start in (7.3, None):
        frames = model._video(Request("entailment", VideoRef.file("/nonexistent/long.mp4", start=start), "a"),
                              lambda ref, sampling: CLIP)
        batch = model.inputs.encode([model._prompt(Request("entailment", WINDOW, "a"), frames)[0]], [frames])
        assert [float(s) for s in batch["second_per_grid_ts"]] == pytest.approx([0.8])
