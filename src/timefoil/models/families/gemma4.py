"""Gemma 4: frames resized, keeping their aspect, to the largest size whose 16-pixel patches
fit a budget of soft tokens (70 a video frame, 280 an image on the hub; each soft token pools
3 x 3 patches), then cut into patches, padded to the budget with zero patches at position -1.
A video is written frame by frame: ``mm:ss <|image>`` + the frame's ``<|video|>`` tokens +
``<image|>``, the frames separated by spaces, the times those the frames were taken at. The
same frames can be shown as images instead, each ``<|image>`` + its ``<|image|>`` tokens +
``<image|>``. ``mm_token_type_ids`` marks the soft tokens (1 image, 2 video): the larger models
let the tokens of one frame attend to each other both ways in their sliding-window layers."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..video_inputs import (
    PixelSettings,
    ProcessorConfig,
    Timing,
    VisionBuilder,
    _torch,
    rescale_and_normalize,
    resize,
    to_nchw,
)
from .base import TINY_SPECIAL, FamilySpec, TinyRecipe

BEGIN_IMAGE, END_IMAGE, IMAGE_TOKEN, VIDEO_TOKEN = "<|image>", "<image|>", "<|image|>", "<|video|>"
AUDIO_TOKENS = ("<|audio>", "<audio|>", "<|audio|>")
TURN_TOKENS = ("<|turn>", "<turn|>")
# what the tokenizer names its tokens by (tokenizer_config.json), which the official processor reads;
# it refuses to start without the audio ones, even for a video
NAMED_TOKENS = {"boi_token": BEGIN_IMAGE, "eoi_token": END_IMAGE, "image_token": IMAGE_TOKEN,
                "boa_token": AUDIO_TOKENS[0], "eoa_token": AUDIO_TOKENS[1], "audio_token": AUDIO_TOKENS[2]}
# the soft-token budgets the processors accept
SOFT_TOKEN_BUDGETS = (70, 140, 280, 560, 1120)
# Gemma4VideoProcessor's and Gemma4ImageProcessor's class defaults, where a folder's configuration is
# silent: pixels only rescaled to [0, 1] (the model centres them itself); the video's by a division
# (normalising by mean 0 and std 1 after rescaling), the image's by a multiplication, which round apart
CLASS_VIDEO = {"resample": 3, "image_mean": [0.0, 0.0, 0.0], "image_std": [1.0, 1.0, 1.0], "do_normalize": True,
               "patch_size": 16, "max_soft_tokens": 70, "pooling_kernel_size": 3}
CLASS_IMAGE = {**CLASS_VIDEO, "do_normalize": False, "max_soft_tokens": 280}


def patch_budget_size(height: int, width: int, patch: int, max_patches: int, pooling: int) -> tuple[int, int]:
    """Gemma 4's size rule: the frame scaled to the area of ``max_patches`` patches, each side
    rounded down to a multiple of ``pooling`` patches; a side that rounds to nothing gets one
    such step and the other its aspect ratio's whole steps, at most the budget's length."""
    step = pooling * patch
    scale = math.sqrt(max_patches * patch ** 2 / (height * width))
    new_h = int(math.floor(scale * height / step)) * step
    new_w = int(math.floor(scale * width / step)) * step
    if not new_h and not new_w:
        raise ValueError(f"a {height}x{width} frame cannot be resized to whole {step}-pixel steps")
    longest = (max_patches // pooling ** 2) * step
    if not new_h:
        new_h, new_w = step, min(int(math.floor(width / height)) * step, longest)
    elif not new_w:
        new_h, new_w = min(int(math.floor(height / width)) * step, longest), step
    if new_h * new_w > max_patches * patch ** 2:
        raise ValueError(f"a {height}x{width} frame would become {new_h}x{new_w}, more than {max_patches} "
                         f"patches of {patch} pixels")
    return new_h, new_w


@dataclass(frozen=True)
class PatchSettings:
    """One of the two processors' patching: patch side, soft-token budget, pooling kernel."""

    patch_size: int = 16
    max_soft_tokens: int = 70
    pooling: int = 3

    @property
    def max_patches(self) -> int:
        return self.max_soft_tokens * self.pooling ** 2


@dataclass
class Gemma4Builder(VisionBuilder):
    video_patches: PatchSettings = field(default_factory=PatchSettings)
    image_patches: PatchSettings = field(default_factory=lambda: PatchSettings(max_soft_tokens=280))
    image_settings: PixelSettings = field(default_factory=PixelSettings)  # the image processor's own
    begin_token: str = BEGIN_IMAGE
    end_token: str = END_IMAGE
    # the frame count of the last video built, read by placeholders (which follows video() for the same frames)
    _frames_shown: int = field(default=0, init=False, repr=False)

    def _patched(self, frames, settings: PixelSettings, patching: PatchSettings):
        """(patches [frames, budget, patch * patch * 3], their (x, y) positions, soft tokens a frame)."""
        torch = _torch()
        clip = to_nchw(frames)
        p = patching.patch_size
        if settings.do_resize:
            clip = resize(clip, *patch_budget_size(clip.shape[2], clip.shape[3], p, patching.max_patches,
                                                   patching.pooling), settings.resample)
        clip = rescale_and_normalize(clip, settings)
        count, channels, height, width = clip.shape
        rows, cols = height // p, width // p
        if rows * p != height or cols * p != width:
            raise ValueError(f"Gemma 4 cuts frames into {p}-pixel patches; {height}x{width} frames are not "
                             "(its processor is set not to resize them)")
        # each patch's pixels in (row, column, channel) order, patches row by row
        patches = (clip.reshape(count, channels, rows, p, cols, p).permute(0, 2, 4, 3, 5, 1)
                   .reshape(count, rows * cols, p * p * channels))
        ys, xs = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
        where = torch.stack([xs, ys], dim=-1).reshape(1, rows * cols, 2).repeat(count, 1, 1)
        budget = max(patching.max_patches, rows * cols)
        padded = patches.new_zeros(count, budget, patches.shape[-1])
        padded[:, :rows * cols] = patches
        positions = where.new_full((count, budget, 2), -1)
        positions[:, :rows * cols] = where
        return padded, positions, rows * cols // patching.pooling ** 2

    def video(self, frames, timing):
        torch = _torch()
        patches, positions, per_frame = self._patched(frames, self.settings, self.video_patches)
        self._frames_shown = len(frames)
        return {"pixel_values_videos": patches, "video_position_ids": positions,
                "num_frames_per_video": torch.tensor([len(frames)])}, per_frame * len(frames)

    def images(self, frames):
        patches, positions, per_frame = self._patched(frames, self.image_settings, self.image_patches)
        return {"pixel_values": patches, "image_position_ids": positions}, [per_frame] * len(frames)

    def placeholders(self, token, counts, timing: Timing | None):
        """An image's tokens between begin and end; a video's, frame by frame, each after its time."""
        if token == self.image_token:
            return [f"{self.begin_token}{token * count}{self.end_token}" for count in counts]
        if timing is None or not timing.sampled_fps > 0:
            raise ValueError("Gemma 4 needs the times of the sampled frames")
        out = []
        for count in counts:
            times = list(timing.times) or [i / timing.sampled_fps for i in range(self._frames_shown)]
            # the official processor's times: index / fps of the metadata timefoil gives it
            # (hf_inputs.video_metadata), which is the frame's time itself
            seconds = list(times)
            if not seconds or count % len(seconds):
                raise ValueError(f"Gemma 4 writes one time per frame: {len(seconds)} frame times cannot share "
                                 f"{count} soft tokens")
            per_frame = count // len(seconds)
            out.append(" ".join(f"{int(s // 60):02d}:{int(s % 60):02d} {self.begin_token}{token * per_frame}"
                                f"{self.end_token}" for s in seconds))
        return out


def _patching(config: dict, what: str) -> PatchSettings:
    budget = int(config["max_soft_tokens"])
    if budget not in SOFT_TOKEN_BUDGETS:
        raise ValueError(f"Gemma 4's {what} processor is set to {budget} soft tokens; its processor takes "
                         f"{', '.join(map(str, SOFT_TOKEN_BUDGETS))}")
    return PatchSettings(int(config["patch_size"]), budget, int(config["pooling_kernel_size"]))


def vision(spec: FamilySpec, config: ProcessorConfig) -> Gemma4Builder:
    def settled(defaults: dict, found: dict) -> dict:
        return {**defaults, **{key: value for key, value in found.items() if value is not None}}

    video, image = settled(CLASS_VIDEO, config.video), settled(CLASS_IMAGE, config.image)
    builder = Gemma4Builder(
        family=spec.name, settings=PixelSettings.read(video), image_settings=PixelSettings.read(image),
        video_token=VIDEO_TOKEN,  # the processor's own, whatever the tokenizer names
        image_token=config.image_token or IMAGE_TOKEN, mm_token_types=True,
        video_patches=_patching(video, "video"), image_patches=_patching(image, "image"))
    builder.extras = {"video_patches": builder.video_patches.__dict__, "image_patches": builder.image_patches.__dict__,
                      "image_settings": builder.image_settings.__dict__}
    return builder


def tiny_model(text: dict, ids: dict, hidden: int):
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration

    head_dim = hidden // text["num_attention_heads"]
    # As the larger hub models: one frame's tokens attend both ways in the sliding-window layers,
    # whose window is shorter than the prompt. As the small ones (E2B, E4B): per-layer inputs, and
    # the last layers reuse the keys and values of the last earlier layer of their kind, which
    # takes two layers of each kind (four, whatever depth is asked).
    text = dict(model_type="gemma4_text", **{**text, "num_hidden_layers": 4}, head_dim=head_dim,
                global_head_dim=head_dim, sliding_window=16, layer_types=["sliding_attention", "full_attention"] * 2,
                num_kv_shared_layers=2, use_bidirectional_attention="vision",
                vocab_size_per_layer_input=text["vocab_size"], hidden_size_per_layer_input=8)
    vision_config = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, head_dim=8, patch_size=16,
                         pooling_kernel_size=3, position_embedding_size=256)
    config = Gemma4Config(text_config=text, vision_config=vision_config, audio_config=None,
                          boi_token_id=ids[BEGIN_IMAGE], eoi_token_id=ids[END_IMAGE], image_token_id=ids[IMAGE_TOKEN],
                          video_token_id=ids[VIDEO_TOKEN], boa_token_id=ids[AUDIO_TOKENS[0]],
                          eoa_token_index=ids[AUDIO_TOKENS[1]], audio_token_id=ids[AUDIO_TOKENS[2]])
    return Gemma4ForConditionalGeneration(config)


# the hub template's layout: a turn per message, "model" for the assistant, one placeholder per image or video
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] | trim }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|image|>{% elif c['type'] == 'video' %}<|video|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] | trim }}{% endif %}{% endfor %}{% endif %}<turn|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|turn>model\n{% endif %}")
_PIXELS = {"do_convert_rgb": True, "do_resize": True, "do_rescale": True, "rescale_factor": 1 / 255, "resample": 3,
           "image_mean": [0.0, 0.0, 0.0], "image_std": [1.0, 1.0, 1.0], "patch_size": 16, "pooling_kernel_size": 3}
# the audio feature extractor's entry, which the processor is built with (Gemma4AudioFeatureExtractor's settings)
_AUDIO = {"feature_extractor_type": "Gemma4AudioFeatureExtractor", "feature_size": 128, "sampling_rate": 16000,
          "frame_length": 320, "hop_length": 160, "fft_length": 512, "min_frequency": 0.0, "max_frequency": 8000.0,
          "mel_floor": 0.001, "padding_side": "right", "padding_value": 0.0, "return_attention_mask": True}

GEMMA4 = FamilySpec(
    name="gemma4", title="Gemma 4", vision=vision, inputs=("video", "images"), time="text_timestamps",
    prefix_mask=True,
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={**_PIXELS, "do_normalize": True, "do_sample_frames": True, "num_frames": 32,
                         "max_soft_tokens": 70, "return_metadata": False,
                         "video_processor_type": "Gemma4VideoProcessor"},
        image_processor={**_PIXELS, "do_normalize": False, "max_soft_tokens": 280, "image_seq_length": 280,
                         "image_processor_type": "Gemma4ImageProcessor"},
        processor={"processor_class": "Gemma4Processor", "image_seq_length": 280, "audio_seq_length": 750,
                   "audio_ms_per_token": 40, "feature_extractor": _AUDIO},
        model=tiny_model, small_image={"max_soft_tokens": 70, "image_seq_length": 70},
        small_processor={"image_seq_length": 70},
        special_tokens=TINY_SPECIAL + (BEGIN_IMAGE, END_IMAGE, IMAGE_TOKEN, VIDEO_TOKEN) + AUDIO_TOKENS + TURN_TOKENS,
        named_tokens=NAMED_TOKENS, adds_bos=True))
