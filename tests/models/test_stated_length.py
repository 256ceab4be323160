"""SmolVLM2 states the clip's length as its model card's path states it: the duration of the
decoded clip in whole seconds (the processor's int(metadata.duration)), not the last frame's
time; clips of 3.0, 7.5 and 59.9 s, 8 frames each, decoded from real files."""
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import video_metadata  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.testing import tiny_vlm  # noqa: E402
from timefoil.video.decode import write_video  # noqa: E402
from timefoil.video.frames import FrameStore  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402


@pytest.mark.parametrize("seconds,stated,last", [(3.0, "0:00:03", 2), (7.5, "0:00:07", 7), (59.9, "0:00:59", 56)])
def test_smolvlm2_states_the_clips_duration(tmp_path, monkeypatch, seconds, stated, last):
    path = str(tmp_path / "clip.mp4")
    count = round(seconds * 10)
    write_video(path, np.zeros((count, 16, 16, 3), np.uint8) + np.arange(count, dtype=np.uint8)[:, None, None, None],
                10)
    frames = FrameStore(max_pixels=10**6).get(VideoRef.file(path), Sampling(frames=8))
    assert int(frames.times[-1]) == last  # what the last frame's time would state
    model = HFGenerative(tiny_vlm(tmp_path / "model", "smolvlm", ["Describe the video"]))
    written = []
    placeholders = model.inputs.builder.placeholders

    def spy(token, counts, timing):
        written.extend(placeholders(token, counts, timing))
        return written[-len(counts):]

    monkeypatch.setattr(model.inputs.builder, "placeholders", spy)
    shown = model.inputs.timeline(frames, None)
    model.inputs.encode([model._prompt(Request("generation", None, "Describe the video"), shown)[0]], [shown])
    assert f"frames from a {stated} [H:MM:SS] video" in written[0]
    # the official processor is given the same duration in its metadata (preprocess=official)
    assert model.inputs.times_told == "duration"
    assert video_metadata(shown, model.inputs.time_origin, "duration")["duration"] == pytest.approx(seconds)
