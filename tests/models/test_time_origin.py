"""Where the times a video LLM is told count from: the item's window (default) or its file.

The clip is a window of a file starting at 7.3 s; four frames 0.4 s apart (times 0.0, 0.4, 0.8,
1.2 from the window's start). Qwen3-VL writes one time per 2-frame temporal patch, the mean of
its frames' times: from the window 0.2 and 1.0; from the file 7.3 + 0.2 = 7.5 and 7.3 + 1.0 = 8.3.
SmolVLM2 writes each frame's whole minutes and seconds, and the last one's as the video's length.
Gemma 4 writes each frame's time in whole seconds, rounded down (mm:ss): from the window 00:00,
00:00, 00:00, 00:01; from the file 7.3, 7.7, 8.1 and 8.5 s are 00:07, 00:07, 00:08, 00:08.

Decoded frames know their file: a window from 9.98 s of a 29.97 fps (30000/1001) file starts with
frame 300 (9.98 x 29.97 = 299.1, rounded up), taken at 300 x 1001 / 30000 = 10.01 s. Frames 300,
330, 360 and 390 are 0, 1.001, 2.002 and 3.003 s into the window and 10.01, 11.011, 12.012 and
13.013 s into the file (index / rate, as a processor given the file's indices computes them; the
window's start plus the window times would say 9.98 s, a frame early). Gemma 4: 00:00 to 00:03
from the window, 00:10 to 00:13 from the file (not 00:09 to 00:12); Qwen3-VL: 0.5 and 2.5, 10.5
and 12.5; SmolVLM2: the same whole seconds, its length the last one's.
"""
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import FRAME_TIMES, file_times, frames_of, video_metadata  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402
from timefoil.video.frames import Frames, FrameStore, frame_times  # noqa: E402
from timefoil.video.sampling import PartInfo, Sampling, plan_frames, window_frames  # noqa: E402

PROMPTS = Prompts()
CLIP = frames_of(pattern_frames(4, 60, 80), rate=2.5)  # times 0.0, 0.4, 0.8, 1.2
WINDOW = VideoRef.file("/nonexistent/long.mp4", start=7.3, end=8.9)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    words = [PROMPTS.entailment, "a man opens the door"]
    return {f: tiny_vlm(tmp_path_factory.mktemp(f), f, words) for f in ("qwen3_vl", "qwen2_5_vl", "smolvlm", "gemma4")}


RATE = 30000 / 1001  # 29.97 frames per second
INDICES = (300, 330, 360, 390)
LATE = Frames(pattern_frames(4, 60, 80), tuple((0, i) for i in INDICES), times=tuple((i - 300) / RATE for i in INDICES),
              sampled_fps=RATE / 30, windows=((RATE, 300, 420, 900),))  # the window's frames 300 to 419 of 900
LATE_WINDOW = VideoRef.file("/nonexistent/long.mp4", start=9.98, end=14.0)


def written_times(model: HFGenerative, pattern: str = r"<([\d.]+) seconds>", clip: Frames = CLIP,
                  window: VideoRef = WINDOW) -> list[str]:
    """The timestamps the model's prompt held when it answered one request about the window."""
    builder, seen = model.inputs.builder, []
    plain = builder.placeholders

    def spy(token, counts, timing):
        texts = plain(token, counts, timing)
        seen.extend(texts)
        return texts

    builder.placeholders = spy
    request = Request("entailment", window, PROMPTS.entailment.format(caption="a man opens the door"),
                      caption="a man opens the door")
    answer = model.answer([request], lambda ref, sampling: clip)[0]
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
    clip of 1.6 s, 0:00:01; from the file they are at 7.3 to 8.5 s: 00:07, 00:07, 00:08, 00:08,
    in a clip ending 1.6 s after 7.3 s, 0:00:08. Frames of a file state its length as the model
    card's decoded metadata gives it: the window's 120 frames at 29.97 fps, 4.0 s, or the whole
    file's 900, 30.0 s."""
    times = r"(?:from a|Frame from) ([\d:]*\d)"
    window, file = HFGenerative(folders["smolvlm"]), HFGenerative(folders["smolvlm"], time_origin="file")
    assert written_times(window, times) == ["0:00:01", "00:00", "00:00", "00:00", "00:01"]
    assert written_times(file, times) == ["0:00:08", "00:07", "00:07", "00:08", "00:08"]
    assert file.fingerprint()["time_origin"] == "file"
    assert written_times(window, times, LATE, LATE_WINDOW)[0] == "0:00:04"


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


def test_a_window_starting_between_frames_begins_at_its_first_frame():
    """9.98 s x 29.97 = 299.1: frame 300 first; 14.0 s x 29.97 = 419.6: frame 419 last. Four
    frames from the middle of each quarter of its 120: 15, 45, 75 and 105 frames in, 15 x 1001 /
    30000 = 0.5005 s and so on; 4 frames over 120 / 29.97 s, 0.999 frames a second."""
    assert window_frames(900, RATE, 9.98, 14.0) == (300, 420)
    part = PartInfo(RATE, 300, 420)
    entries = plan_frames([part], Sampling(frames=4)).entries
    assert entries == ((0, 315), (0, 345), (0, 375), (0, 405))
    times, rate = frame_times(entries, [part], Sampling(frames=4))
    assert times == pytest.approx([0.5005, 1.5015, 2.5025, 3.5035], abs=1e-12)
    assert rate == pytest.approx(1 / 1.001, abs=1e-12)


def test_file_times_are_each_frames_index_over_the_files_rate():
    assert file_times(LATE, 9.98) == pytest.approx((10.01, 11.011, 12.012, 13.013), abs=1e-12)
    assert file_times(LATE, 9.98)[0] != pytest.approx(9.98)  # the window's start plus 0: a frame early
    # frames of no file: later by the window's start
    assert file_times(CLIP, 7.3) == pytest.approx((7.3, 7.7, 8.1, 8.5), abs=1e-12)


def test_a_decoded_window_knows_its_file(tmp_path):
    """50 frames at 25 fps, a window from 0.97 s to 1.9 s: frames 25 (0.97 x 25 = 24.25, rounded up)
    to 47 (1.9 x 25 = 47.5); two frames from the middle of each half of its 23: 5 and 17 in, frames 30
    and 42, 0.2 and 0.68 s into the window, 1.2 and 1.68 s into the file (not 0.97 + 0.2 = 1.17).
    Read back from the disk cache, the same."""
    from timefoil.video.decode import write_video

    path = str(tmp_path / "clip.mp4")
    write_video(path, pattern_frames(50, 16, 16), fps=25)
    ref = VideoRef.file(path, start=0.97, end=1.9)
    for store in (FrameStore(cache_dir=str(tmp_path / "cache")), FrameStore(cache_dir=str(tmp_path / "cache"))):
        frames = store.get(ref, Sampling(frames=2))
        assert frames.entries == ((0, 30), (0, 42)) and frames.windows == ((25.0, 25, 48, 50),)
        assert frames.times == pytest.approx((0.2, 0.68), abs=1e-12)
        assert file_times(frames, 0.97) == pytest.approx((1.2, 1.68), abs=1e-12)
    assert store.stats.disk_hits == 1


def test_gemma4_smolvlm_and_qwen3_tell_the_file_times_of_a_window_starting_between_frames(folders):
    mm_ss, smol = r"(\d\d:\d\d) <\|image>", r"(?:from a|Frame from) ([\d:]*\d)"
    late = {"clip": LATE, "window": LATE_WINDOW}
    assert written_times(HFGenerative(folders["gemma4"]), mm_ss, **late) == ["00:00", "00:01", "00:02", "00:03"]
    assert written_times(HFGenerative(folders["gemma4"], time_origin="file"), mm_ss, **late) == [
        "00:10", "00:11", "00:12", "00:13"]
    # its length from the file: the whole file's 900 frames at 29.97 fps, as the card's metadata says
    assert written_times(HFGenerative(folders["smolvlm"], time_origin="file"), smol, **late) == [
        "0:00:30", "00:10", "00:11", "00:12", "00:13"]
    assert written_times(HFGenerative(folders["qwen3_vl"]), **late) == ["0.5", "2.5"]
    model = HFGenerative(folders["qwen3_vl"], time_origin="file")
    assert written_times(model, **late) == ["10.5", "12.5"]
    assert model.fingerprint()["frame_times"] == FRAME_TIMES


def test_a_processor_is_given_the_indices_and_rate_of_the_file():
    """What the open path gives each kind of processor for the late window's frames; each
    computes index / fps: the times above."""
    window, file = video_metadata(LATE, "window", "indices"), video_metadata(LATE, "file", "indices")
    assert (window["fps"], window["frames_indices"], window["total_num_frames"]) == (RATE, [0, 30, 60, 90], 120)
    assert (file["fps"], file["frames_indices"], file["total_num_frames"]) == (RATE, [300, 330, 360, 390], 900)
    assert [i / file["fps"] for i in file["frames_indices"]] == pytest.approx([10.01, 11.011, 12.012, 13.013])
    assert "duration" not in window  # MiniCPM-V would split the frames by it; SmolVLM2 writes it
    # Nemotron-H Omni reads whole indices and whole milliseconds per frame: times in milliseconds
    nemotron = video_metadata(LATE, "window", "milliseconds")
    assert (nemotron["fps"], nemotron["frames_indices"]) == (1000.0, [0, 1001, 2002, 3003])
    from_file = video_metadata(Frames(LATE.array, LATE.entries, times=file_times(LATE, 9.98),
                                      sampled_fps=LATE.sampled_fps, windows=LATE.windows), "file", "milliseconds")
    assert from_file["frames_indices"] == [10010, 11011, 12012, 13013]
    # HyperCLOVA X writes the video's length: the window's 120 frames / 29.97 = 4.004 s
    assert video_metadata(LATE, None, "duration")["duration"] == pytest.approx(4.004, abs=1e-12)
    # frames of no file: their times as indices at 1 frame a second; Qwen2.5-VL's span: the sampling rate
    plain = video_metadata(CLIP, "window", "indices")
    assert (plain["fps"], plain["frames_indices"]) == (1.0, [0.0, 0.4, 0.8, 1.2])
    span = video_metadata(CLIP, "window", "span")
    assert (span["fps"], span["total_num_frames"]) == (2.5, 4) and span["frames_indices"] == pytest.approx([0, 1, 2, 3])
