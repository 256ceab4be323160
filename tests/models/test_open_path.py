"""The open path: a vision architecture outside the family table (a tiny random LLaVA 1.5,
whose PIL image processor needs no torchvision) answers through its own processor, loaded by
path through the real loading code, and equals what its model card's path computes."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import resumes_as_uninterrupted, run_protocol  # noqa: E402
from PIL import Image  # noqa: E402
from reference.open_families import llava  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models import load_model  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.models.video_inputs import UnsupportedFamily  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import pattern_frames  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=5, families=("order",))

PROMPTS = Prompts()
CAPTIONS = ["a man opens the door and walks out of the room", "a man opens the door", "the door"]
CLIP = frames_of(pattern_frames(4, 60, 80), rate=0.8)
REF = VideoRef.file("/nonexistent/clip.mp4")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("llava"))
    llava.make(path, [PROMPTS.entailment, PROMPTS.choice, "Describe what happens"] + CAPTIONS)
    return path


def model_card(processor, text: str) -> dict:
    """The inputs as LLaVA's model card builds them: the frames as images inside the message."""
    content = [{"type": "image", "image": Image.fromarray(frame)} for frame in CLIP.array]
    content.append({"type": "text", "text": text})
    return dict(processor.apply_chat_template([{"role": "user", "content": content}], tokenize=True,
                                              return_dict=True, return_tensors="pt", add_generation_prompt=True))


def test_it_loads_on_the_open_path_and_says_so(folder):
    model = load_model(f"hf:{folder}")
    import transformers

    fingerprint = model.fingerprint()
    assert (fingerprint["preprocess"], fingerprint["video_as"]) == ("official", "images")
    assert fingerprint["transformers"] == transformers.__version__
    assert "one prompt per forward" in model.notes["open_path"] and "prefix_reuse" in model.notes
    assert model.batch_size == 1 and not model.prefix_reuse


def test_answers_equal_the_model_cards_path(folder):
    model = load_model(f"hf:{folder}", {"max_new_tokens": 5})
    processor, net = model.inputs.processor, model.model
    yes_ids = model.variant_ids(("Yes", "yes", "YES"))
    for caption in CAPTIONS:  # three token lengths, each its own forward
        text = PROMPTS.entailment.format(caption=caption)
        card = model_card(processor, text)
        ours = model.inputs.encode([model._prompt(Request("entailment", REF, text), CLIP)[0]], [CLIP])
        assert set(ours) >= {"input_ids", "pixel_values"}
        assert all(torch.equal(ours[key], card[key]) for key in card), "inputs differ from the model card's"
        with torch.no_grad():
            expected = torch.softmax(net(**card).logits[0, -1].float(), -1)[yes_ids].sum()
        answer = model.answer([Request("entailment", REF, text, caption=caption)], lambda r, s: CLIP)[0]
        assert answer.probs["yes"] == pytest.approx(float(expected), rel=1e-5)
    card = model_card(processor, "Describe what happens")
    with torch.no_grad():
        generated = net.generate(**card, do_sample=False, max_new_tokens=5, pad_token_id=model.tokenizer.pad_token_id)
    said = model.answer([Request("generation", REF, "Describe what happens", max_tokens=5)], lambda r, s: CLIP)[0]
    expected_text = model.tokenizer.decode(generated[0, card["input_ids"].shape[1]:], skip_special_tokens=True)
    assert said.raw == expected_text.strip() and said.meta["stopped"] in ("eos", "max_tokens")


@pytest.mark.parametrize("protocol,order", [("entailment", None), ("choice", "both"), ("similarity", None)])
def test_every_protocol_runs_with_no_error(folder, suite, tmp_path, protocol, order):
    _, meta = run_protocol(f"hf:{folder}", suite, tmp_path, protocol, order)
    assert meta["model_fingerprint"]["preprocess"] == "official"
    assert "open_path" in meta["model_notes"]


def test_a_finished_and_an_interrupted_run_resume(folder, suite, tmp_path, monkeypatch):
    from timefoil.models.local.hf_generative import HFGenerative

    resumes_as_uninterrupted(f"hf:{folder}", suite, tmp_path, monkeypatch, HFGenerative)


def test_what_the_open_path_cannot_do_is_refused_in_one_line(folder, tmp_path):
    with pytest.raises(UnsupportedFamily, match="'llava' is not one of them"):
        load_model(f"hf:{folder}", {"preprocess": "timefoil"})
    with pytest.raises(UnsupportedFamily, match="takes images only"):
        load_model(f"hf:{folder}", {"video_as": "video"})
    from transformers import VideoMAEConfig

    VideoMAEConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="videomae is a video encoder or classifier without a language head"):
        load_model(f"hf:{tmp_path}")
    from transformers import InstructBlipVideoConfig

    InstructBlipVideoConfig().save_pretrained(tmp_path / "blip")
    with pytest.raises(ValueError, match="instructblipvideo is refused: its processor drops a videos input"):
        load_model(f"hf:{tmp_path / 'blip'}")
