"""No vision block or decoder layer reads the device during a forward, for every family, and
the sync-free forwards answer exactly as transformers' own.

On the CPU every tensor is in host memory, so what a GPU would hold is followed here: the
model's weights and every tensor handed to its forward are "on the device", and so is every
tensor an operation makes from one, or makes at a device named by one (``device=x.device``);
``.cpu()``, ``.tolist()`` and a tensor made from Python numbers are on the host. A read is a
call that brings device values to the host: ``tolist``, ``item``, a tensor as a bool, an int,
a float or an index, ``nonzero``, ``cpu``, ``numpy``, a boolean mask as an index, and the
operations whose output size depends on the values (``unique``, ``masked_select``,
``repeat_interleave`` by a tensor without ``output_size``)."""
import collections
import os
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402
from torch.utils.weak import WeakIdKeyDictionary  # noqa: E402

from timefoil import RunConfig  # noqa: E402
from timefoil.benchmarks.velociti import TESTS  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.models.families import FAMILIES  # noqa: E402
from timefoil.models.local import sync_free  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402
from timefoil.video.decode import write_video  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402

WORDS = "a man opens closes the door two birds fly Yes No Does the video entail caption What happens first".split()
REF = VideoRef.file("/x.mp4")
CAPTIONS = ("a man opens the door", "two birds fly", "the man closes the door")
READS = {"tolist", "item", "__bool__", "__int__", "__float__", "__index__", "nonzero", "cpu", "numpy",
         "masked_select", "unique", "unique_consecutive", "equal", "allclose", "__format__", "__repr__"}
# operations that take a host tensor beside a device one on a GPU: copies between them, indexes
CROSSING = {"to", "copy_", "__getitem__", "__setitem__", "index_put_", "index_select", "tensor", "as_tensor"}
EVERY = frozenset(FAMILIES)
# The reads left outside the layers in a prompt prefix's forward and its suffixes' (the prefix
# path): function -> (its file, the families that still read there). Why each is left is in
# docs/performance.md: on a GPU each is a read of a small device tensor, once a forward.
LEFT = {
    # Gemma 4's forward checks the vision tokens against the features inline (a count formatted
    # into its message, a boolean index; elsewhere the count is made on the host: sync_free's
    # placeholder check), and its vision model strips the padding patches by a boolean index
    "forward": ("modeling_gemma4.py", {"gemma4"}),
    # the features split per image or video by sizes worked out on the device: from pixel
    # position ids (Gemma 4), from which images are all padding (SmolVLM2)
    "get_image_features": ("modeling_", {"smolvlm", "gemma4"}), "get_video_features": ("modeling_gemma4", {"gemma4"}),
    "<listcomp>": ("modeling_gemma4.py", {"gemma4"}),
    # whether the vision encoder's patch mask is all ones (its images' padding)
    "_ignore_bidirectional_mask_sdpa": ("masking_utils.py", {"smolvlm", "gemma4"}),
    # the prefix keeps its mask of ones (FamilySpec.prefix_mask): without it, two reads
    "_ignore_causal_mask_sdpa": ("masking_utils.py", {"gemma4"}),
    # whether the suffixes' padding mask is all ones, for the recurrent layers
    "create_recurrent_attention_mask": ("masking_utils.py", {"qwen3_5"}),
}
# what a greedy answer reads besides: whether the attention mask is all ones, in the one-prompt
# forward before it and in each decoding step
GREEDY = {"_ignore_causal_mask_sdpa": ("masking_utils.py", EVERY),
          "create_recurrent_attention_mask": ("masking_utils.py", {"qwen3_5"})}


def left_in(family: str, *tables) -> dict:
    """function -> its file, for the reads ``tables`` leave to ``family``."""
    return {function: where for table in tables for function, (where, families) in table.items()
            if family in families}


class DeviceReads(TorchFunctionMode):
    """Counts the reads of device values, by where they are made: inside a layer (a child of
    any ``ModuleList`` of the model: vision blocks, decoder layers, mergers) or outside."""

    def __init__(self, model, host=()):
        super().__init__()
        self.host = set(host)  # the forward's inputs, by name, that the caller keeps in host memory
        self.device = WeakIdKeyDictionary()
        self.device_names = {}  # id -> the torch.device objects read off device tensors (kept alive)
        for tensor in (*model.parameters(), *model.buffers()):
            self.device[tensor] = True
        self.depth = self.forwards = self.calls = 0
        self.reads = collections.Counter()  # (inside a layer, function, file:line) -> reads, during a forward
        # (operation, function, file:line) -> times a host tensor of values met a device tensor in
        # an operation, which a GPU refuses (a scalar, an index or a copy excepted)
        self.mixes = collections.Counter()
        model.register_forward_pre_hook(self._inputs, with_kwargs=True)
        model.register_forward_hook(lambda *_: self._forward(-1))
        for module in model.modules():
            if isinstance(module, torch.nn.ModuleList):
                for layer in module:
                    layer.register_forward_pre_hook(lambda *_: self._enter(1))
                    layer.register_forward_hook(lambda *_: self._enter(-1))

    def _enter(self, step):
        self.depth += step

    def _forward(self, step):
        self.forwards += step

    def _inputs(self, module, args, kwargs):
        self._forward(1)
        self.calls += 1
        for tensor in tree_leaves((args, {k: v for k, v in kwargs.items() if k not in self.host})):
            if isinstance(tensor, torch.Tensor):
                self.device[tensor] = True

    def _on_device(self, value) -> bool:
        if isinstance(value, torch.device):
            return id(value) in self.device_names
        return isinstance(value, torch.Tensor) and value in self.device

    def _reads(self, name, args, kwargs) -> bool:
        if name in READS:
            return True
        if name == "where" and len(args) + len(kwargs) == 1:
            return True
        if name == "repeat_interleave":
            return isinstance(args[1] if len(args) > 1 else kwargs.get("repeats"), torch.Tensor) \
                and kwargs.get("output_size") is None
        if name in ("__getitem__", "__setitem__"):
            index = args[1] if isinstance(args[1], tuple) else (args[1],)
            return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in index)
        if name == "to":
            return any(isinstance(a, str) and a.startswith("cpu") for a in (*args[1:], kwargs.get("device")))
        return False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        leaves = tree_leaves((args, kwargs))
        on_device = any(self._on_device(leaf) for leaf in leaves)
        if on_device and self.forwards and self._reads(name, args, kwargs):
            self.reads[(self.depth > 0, *self._site())] += 1
        if on_device and self.forwards and name not in CROSSING and any(
                isinstance(leaf, torch.Tensor) and leaf.dim() and leaf not in self.device for leaf in leaves):
            self.mixes[(name, *self._site())] += 1
        out = func(*args, **kwargs)
        if isinstance(out, torch.device):  # x.device: the device of x's values
            if on_device:
                self.device_names[id(out)] = out
        elif on_device and not (name in READS or name == "to" and self._reads(name, args, kwargs)):
            for tensor in tree_leaves(out):
                if isinstance(tensor, torch.Tensor):
                    self.device[tensor] = True
        return out

    @staticmethod
    def _site() -> tuple[str, str]:
        frame = sys._getframe(2)
        while frame and (f"{os.sep}torch{os.sep}" in frame.f_code.co_filename or frame.f_code.co_filename == __file__):
            frame = frame.f_back
        return frame.f_code.co_name, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"

    def inside(self) -> dict:
        return {tuple(site): n for (inside, *site), n in self.reads.items() if inside}

    def outside(self) -> dict:
        return {tuple(site): n for (inside, *site), n in self.reads.items() if not inside}


def clip(frames: int):
    return frames_of(pattern_frames(frames, 48, 64), rate=1.5)


def entail_everything(model: HFGenerative, kind: str, said: dict) -> None:
    """Entailment through the prefix path, a video of 6 frames then one of 5, shown as ``kind``:
    p(yes) per (kind, frames, caption) into ``said``."""
    model.inputs.video_as = kind
    for frames in (6, 5):
        requests = [Request("entailment", REF, f"Does the video entail {c}", caption=c) for c in CAPTIONS]
        for caption, answer in zip(CAPTIONS, model.answer(requests, lambda ref, sampling: clip(frames))):
            assert answer.error is None
            said[(kind, frames, caption)] = answer.probs["yes"]


def answer_everything(model: HFGenerative) -> dict:
    """Entailment through the prefix path (one video of 6 frames, one of 5) and a greedy answer,
    for each input kind the family takes: p(yes) per (kind, frames, caption)."""
    said: dict = {}
    for kind in model.inputs.family.inputs:
        entail_everything(model, kind, said)
        answers = model.answer([Request("generation", REF, "What happens first", max_tokens=3)],
                               lambda ref, sampling: clip(4))
        assert answers[0].error is None
    return said


def counter(model: HFGenerative) -> DeviceReads:
    """The reads of ``model``'s forwards, its inputs on the device but those its caller keeps on
    the host (the Qwen grids, where the sync-free tower is installed)."""
    return DeviceReads(model.model, host=sync_free.host_inputs(model.model))


def assert_only_left(counted: DeviceReads, left: dict) -> None:
    """Every read outside the layers is one ``left`` names, in its file, at most once a forward."""
    for (function, where), reads in counted.outside().items():
        assert where.startswith(left.get(function, "?")), (function, where)
        assert reads <= counted.calls  # at most once a forward


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    made = {}

    def path(family):
        if family not in made:
            made[family] = tiny_vlm(tmp_path_factory.mktemp(family), family, WORDS)
        return made[family]
    return path


def plain_model(path, monkeypatch) -> HFGenerative:
    """The model as transformers runs it: nothing installed."""
    with monkeypatch.context() as patched:
        patched.setattr(sync_free, "install", lambda model, model_type: [])
        return HFGenerative(path)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_no_layer_reads_the_device_and_the_reads_outside_are_the_listed_ones(family, tiny, monkeypatch):
    model = HFGenerative(tiny(family))
    counted = counter(model)
    with counted:
        answer_everything(model)
    assert counted.inside() == {}
    assert_only_left(counted, left_in(family, LEFT, GREEDY))
    if sync_free.host_inputs(model.model):  # the grids kept on the host never meet a device tensor
        assert counted.mixes == {}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_prefix_and_its_suffixes_read_only_what_is_left(family, tiny):
    """The prefix path alone: the mask shortcut is not read (the prefix runs without its mask of
    ones) but where the family keeps the mask, and no Qwen family reads its grid or split sizes."""
    model = HFGenerative(tiny(family))
    counted = counter(model)
    with counted:
        for kind in model.inputs.family.inputs:
            entail_everything(model, kind, {})
    assert counted.calls == 4 * len(model.inputs.family.inputs)  # a prefix and a suffix forward a video
    assert counted.inside() == {}
    assert_only_left(counted, left_in(family, LEFT))
    functions = {function for function, _ in counted.outside()}
    assert ("_ignore_causal_mask_sdpa" in functions) == FAMILIES[family].prefix_mask
    if family not in ("smolvlm", "gemma4"):  # nothing at all, but Qwen3.5's padded suffixes
        assert functions == ({"create_recurrent_attention_mask"} if family == "qwen3_5" else set())


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_prefix_without_its_mask_of_ones_answers_exactly_as_with_it(family, tiny, monkeypatch):
    from timefoil.models.local.hf_prefix import PrefixReuse

    path = tiny(family)
    without, said_with = {}, {}
    model = HFGenerative(path)
    for kind in model.inputs.family.inputs:
        entail_everything(model, kind, without)
    with monkeypatch.context() as patched:  # the prefix handed its mask of ones and its positions, as before
        patched.setattr(PrefixReuse, "_unpadded_row", lambda self, positions: {
            "position_ids": positions, "attention_mask": torch.ones(positions.shape[-2:], dtype=torch.long)})
        for kind in model.inputs.family.inputs:
            entail_everything(model, kind, said_with)
    assert model.stats["prefix_forwards"] == 4 * len(model.inputs.family.inputs)
    assert without == said_with and len(without) == 6 * len(model.inputs.family.inputs)


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f].grid_inputs] + ["llava_onevision"])
def test_the_grids_stay_on_the_host_where_the_sync_free_tower_reads_them(family, tiny, monkeypatch):
    """``_on_device`` to a device that is not the CPU ("meta" here, pinning left out): every
    tensor goes there but the grids the installed tower reads on the host; an uninstalled tower's
    grids go too, and nothing stays for a family without a sync-free tower."""
    for model, kept in ((HFGenerative(tiny(family)), bool(FAMILIES[family].grid_inputs)),
                        (plain_model(tiny(family), monkeypatch), False)):
        for kind in FAMILIES[family].inputs:
            model.inputs.video_as = kind
            video = model.inputs.timeline(clip(4), 0.0)
            prompt = model._prompt(Request("entailment", REF, "Does the video entail it"), video)[0]
            batch = model.inputs.encode([prompt], [video])
            monkeypatch.setattr(model, "device", torch.device("meta"))
            monkeypatch.setattr(torch.Tensor, "pin_memory", lambda tensor: tensor)
            sent = model._on_device(batch)
            monkeypatch.undo()
            stayed = {k for k, v in sent.items() if torch.is_tensor(v) and v.device.type == "cpu"}
            grid, pixels = ("video_grid_thw", "pixel_values_videos") if kind == "video" else \
                ("image_grid_thw", "pixel_values")
            assert stayed == ({grid} if kept else set()), stayed
            assert all(sent[k] is batch[k] for k in stayed)
            assert sent[pixels].device.type == "meta" and sent["input_ids"].device.type == "meta"


@pytest.fixture(scope="module")
def velociti(tmp_path_factory):
    """VELOCITI's layout, 2 videos of 10 rows (a caption and its foil): 20 captions a video."""
    import json

    root = tmp_path_factory.mktemp("velociti")
    (root / "videos").mkdir()
    with open(root / "velociti.jsonl", "w") as handle:
        for n in range(20):
            handle.write(json.dumps({"test_name": TESTS[n % len(TESTS)], "video_id": f"v_clip{n % 2}_seg_0_4",
                                     "pos": " ".join(WORDS[n % 5:n % 5 + 3 + n % 4]),
                                     "neg": " ".join(WORDS[n % 7:n % 7 + 2 + n % 3]), "in_subset": True}) + "\n")
    for v in range(2):
        write_video(str(root / "videos" / f"v_clip{v}_seg_0_4.mp4"), pattern_frames(8, 48, 64)[:, :, ::1 + v], 2)
    return str(root)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_no_layer_reads_the_device_through_the_runner_at_the_default_settings(family, tiny, velociti, tmp_path):
    model = HFGenerative(tiny(family))
    config = RunConfig("velociti", f"hf:{model.path}", data_dir=velociti, protocol="entailment",
                       benchmark_args={"subset": "paper"}, sampling=Sampling(frames=4))
    counted = counter(model)
    with counted:
        report = Runner(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=model,
                        progress=False).run()
    assert report.errors == 0 and model.stats["prefix_forwards"] == 2
    assert counted.calls >= 4  # each video's prefix and its suffixes
    assert counted.inside() == {}
    assert_only_left(counted, left_in(family, LEFT))


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f].grid_inputs])
def test_transformers_own_vision_blocks_read_the_device_in_every_block(family, tiny, monkeypatch):
    """The count above can fail: the plain model's vision attention splits by lengths read off
    the device, three times (q, k and v) in each block of each vision forward."""
    model = plain_model(tiny(family), monkeypatch)
    counted = DeviceReads(model.model)
    with counted:
        model.inputs.video_as = "video"
        model.answer([Request("entailment", REF, f"Does the video entail {c}", caption=c) for c in CAPTIONS[:2]],
                     lambda ref, sampling: clip(6))
    blocks = len(model.model.model.visual.blocks)
    assert sum(counted.inside().values()) == 3 * blocks  # one prefix forward: one vision forward
    assert {function for function, _ in counted.inside()} == {"<listcomp>"}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_answers_equal_transformers_own_for_videos_of_different_lengths(family, tiny, monkeypatch):
    path = tiny(family)
    sync_free_answers = answer_everything(HFGenerative(path))
    plain = answer_everything(plain_model(path, monkeypatch))
    assert sync_free_answers.keys() == plain.keys()
    assert max(abs(sync_free_answers[k] - plain[k]) for k in plain) <= 1e-5
    assert sync_free_answers == plain  # the same operations on the same values: equal on the CPU


# grids of one video, of a video and an image of other sizes (Qwen2.5-VL's edge windows are
# smaller than the others), and of three images
GRIDS = ([[3, 4, 6]], [[2, 6, 10], [1, 4, 4]], [[1, 4, 6], [1, 4, 6], [1, 8, 4]])


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f].grid_inputs])
def test_the_vision_tower_gives_transformers_own_outputs(family, tiny, monkeypatch):
    path = tiny(family)
    ours, plain = HFGenerative(path).model, plain_model(path, monkeypatch).model
    tower, plain_tower = ours.model.visual, plain.model.visual
    assert tower.forward.__name__ == "grid_ready_forward"
    assert type(tower).forward is type(plain_tower).forward  # transformers' class is left as it is
    assert plain_tower.forward.__func__ is type(plain_tower).forward
    config = tower.config
    width = config.in_channels * config.temporal_patch_size * config.patch_size ** 2
    generator = torch.Generator().manual_seed(0)
    for grid in GRIDS:
        grid = torch.tensor(grid)
        pixels = torch.randn(int(grid.prod(-1).sum()), width, generator=generator)
        with torch.no_grad():
            got, want = tower(pixels, grid_thw=grid), plain_tower(pixels, grid_thw=grid)
        leaves = [t for t in tree_leaves(dict(got)) if isinstance(t, torch.Tensor)]
        wanted = [t for t in tree_leaves(dict(want)) if isinstance(t, torch.Tensor)]
        assert len(leaves) == len(wanted) >= 2
        assert all(torch.equal(a, b) for a, b in zip(leaves, wanted))


def test_the_bounds_stay_on_the_host_under_sdpa_and_go_to_the_device_with_their_longest_under_flash(
        tiny, monkeypatch):
    """Under a flash kernel the bounds are read by the kernel on the device, with the longest
    segment as a number (which transformers would read off the device before the blocks)."""
    from transformers.utils import generic

    model = plain_model(tiny("qwen2_5_vl"), monkeypatch).model
    tower = model.model.visual
    seen = {}
    tower.forward = lambda hidden_states, grid_thw, **kwargs: seen.update(kwargs)
    sync_free.install(model, "qwen2_5_vl")
    grid = torch.tensor([[2, 6, 10]])
    counted = DeviceReads(tower)
    with counted:
        tower(torch.zeros(120, 8), grid_thw=grid)
        frames = [0, 60, 120]
        assert seen["cu_seqlens"].tolist() == frames and seen["cu_seqlens"] not in counted.device
        assert "max_seqlen" not in seen
        assert seen["cu_window_seqlens"] not in counted.device and seen["position_ids"] in counted.device
        monkeypatch.setattr(generic, "is_flash_attention_requested", lambda config: True)
        tower(torch.zeros(120, 8), grid_thw=grid)
    assert seen["cu_seqlens"].tolist() == frames and seen["cu_seqlens"] in counted.device
    assert seen["max_seqlen"] == 60
    # windows of 2x2 merged patches (4 patches each) over a frame's 3x5 of them: two rows of
    # windows (2 and 1 high), three columns (2, 2 and 1 wide)
    bounds = seen["cu_window_seqlens"].tolist()
    assert [b - a for a, b in zip(bounds, bounds[1:])] == [16, 16, 8, 8, 8, 4] * 2
    assert seen["max_window_seqlen"] == 16
    assert seen["window_index"] not in counted.device  # transformers makes the window order on the host
    assert {function for function, _ in counted.outside()} == {"grid_ready_forward"}  # the grid, once a forward
    assert sum(counted.outside().values()) == 2


def test_the_deepstack_merge_adds_as_transformers_does():
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextModel

    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(2, 7, 8, generator=generator)
    mask = torch.zeros(2, 7, dtype=torch.bool)
    mask[0, 1:4] = mask[1, 5] = True
    features = torch.randn(4, 8, generator=generator)
    want = Qwen3VLTextModel._deepstack_process(None, hidden, mask, features)
    assert torch.equal(sync_free._deepstack_added(hidden, mask, features), want)
    assert not torch.equal(want, hidden)


@pytest.mark.parametrize("family", ["qwen2_vl", "llava_onevision", "internvl"])
def test_the_placeholder_check_counted_on_the_host_gives_transformers_masks_and_error(family, tiny):
    """The masks transformers' own check gives, the count taken from the host; features of
    another size than the tokens raise its error, counted on the host or (tokens handed over
    some other way) by transformers itself."""
    model = HFGenerative(tiny(family))
    inner = model.model.model
    check = inner.get_placeholder_mask
    assert check.__name__ == "placeholder_mask_checked_on_host"
    own = type(inner).get_placeholder_mask.__get__(inner)  # transformers' own, on this instance
    kind = "video" if "video" in check.tokens else "image"
    token = check.tokens[kind]
    ids = torch.tensor([[5, token, token, token, 7], [token, 6, token, token, 8]])
    embeds = torch.zeros(2, 5, 4)
    features = {f"{kind}_features": torch.ones(6, 4)}
    host = ids.clone()
    sync_free.note_host_ids(model.model, host, ids)
    assert check.host_counts[ids] == {**{name: 0 for name in check.tokens}, kind: 6}
    counted = DeviceReads(inner)
    with counted:  # the check is called alone here: counted as inside a forward, the tokens on the device
        counted.forwards, counted.device[ids] = 1, True
        got = check(ids, embeds, **features)
        counted.forwards = 0
    assert counted.reads == collections.Counter()  # no read of the device tokens
    want = own(ids, embeds, **features)
    for a, b in zip(*((got, want) if isinstance(got, tuple) else ((got,), (want,)))):
        assert torch.equal(a, b) and a.shape == b.shape
    assert int(want[-1].sum() if isinstance(want, tuple) else want.sum()) == 6
    wrong = {f"{kind}_features": torch.ones(5, 4)}
    with pytest.raises(ValueError, match="tokens do not match, tokens: 6, features: 5"):
        check(ids, embeds, **wrong)
    other = ids.clone()  # not counted on the host: transformers' own check, which raises too
    with pytest.raises(ValueError, match="do not match"):
        check(other, embeds, **wrong)
