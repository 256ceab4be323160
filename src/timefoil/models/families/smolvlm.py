"""SmolVLM2: a video is shown as its frames, each one image without splitting. Every frame's
longer side is resized to the configured ``size`` (Lanczos, the shorter side kept in proportion
and made even), then the frame is squashed to the ``max_image_size`` square the vision tower
takes, rescaled and normalised. The ``<video>`` the chat template wrote becomes an introduction
naming the frame count in words and the video's length, then per frame its time (minutes and
seconds) and its image tokens between two ``<fake_token_around_image>``, and a blank line.
Positions are plain counts: the text model is Llama's."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..video_inputs import (
    LANCZOS,
    PixelSettings,
    ProcessorConfig,
    Timing,
    UnsupportedFamily,
    VisionBuilder,
    _torch,
    rescale_and_normalize,
    resize,
    to_nchw,
)
from .base import TINY_SPECIAL, FamilySpec, TinyRecipe

FAKE_IMAGE, GLOBAL_IMAGE, END_OF_UTTERANCE = "<fake_token_around_image>", "<global-img>", "<end_of_utterance>"
# SmolVLMVideoProcessor's class defaults, where a folder's configuration is silent
CLASS_PIXELS = {"resample": LANCZOS, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
CLASS_SIZE, CLASS_MAX_IMAGE_SIZE, CLASS_IMAGE_SEQ_LEN = 4 * 364, 364, 169
LARGEST_SIDE = 4096  # the processor never resizes a side beyond this
INTRO = "You are provided the following series of {count} frames from a {duration} [H:MM:SS] video.\n"

# The official processor renders any conversation holding a video with this layout, whatever
# template the model folder has: "<|im_start|>", then per message its capitalised role, ":" (a
# space after it unless the message opens with an image), its parts and "<end_of_utterance>\n".
VIDEO_TEMPLATE = (
    "<|im_start|>{% for m in messages %}{{ m['role'] | capitalize }}{% if m['content'] is string %}"
    "{{ ': ' + m['content'] }}{% else %}{{ ':' if m['content'][0]['type'] == 'image' else ': ' }}"
    "{% for c in m['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% elif c['type'] == 'image' %}<image>"
    "{% elif c['type'] == 'video' %}<video>{% endif %}{% endfor %}{% endif %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}")

_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ("", " thousand", " million", " billion")


def _below_thousand(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    tens = (_SMALL[rest] if rest < 20 else _TENS[rest // 10] + (f"-{_SMALL[rest % 10]}" if rest % 10 else ""))
    if not hundreds:
        return tens
    return f"{_SMALL[hundreds]} hundred" + (f" and {tens}" if rest else "")


def number_in_words(n: int) -> str:
    """A count in English words as the processor's num2words writes it: "twenty-one", "one
    hundred and one", "one thousand, two hundred", "one thousand and one" (the last group joined
    by "and" when it is below a hundred, every other by a comma)."""
    if not 0 <= n < 1000 ** len(_SCALES):
        raise ValueError(f"cannot write {n} frames in words")
    if n == 0:
        return _SMALL[0]
    groups = []
    scale = 0
    while n:
        n, group = divmod(n, 1000)
        if group:
            groups.append((scale, group))
        scale += 1
    groups.reverse()
    text = ""
    for i, (scale, group) in enumerate(groups):
        words = _below_thousand(group) + _SCALES[scale]
        if i == 0:
            text = words
        else:
            text += (" and " if scale == 0 and group < 100 else ", ") + words
    return text


def longest_edge_size(height: int, width: int, longest: int) -> tuple[int, int]:
    """The size that brings the longer side to ``longest`` (at most 4096): the other side from
    the aspect ratio, truncated, then made even by adding one, as SmolVLM's processor computes it."""
    longest = min(LARGEST_SIDE, longest)
    aspect = width / height
    if width >= height:
        width, height = longest, int(longest / aspect)
        height += height % 2
    else:
        height, width = longest, int(longest * aspect)
        width += width % 2
    return max(height, 1), max(width, 1)


def frame_seconds(count: int, timing: Timing | None) -> list[float]:
    """Each frame's time as the official processor computes it from the metadata timefoil gives
    it (hf_inputs.video_metadata): index / fps, which is the frame's time itself."""
    if timing is None or not timing.sampled_fps > 0:
        raise ValueError("SmolVLM2 needs the times of the sampled frames")
    fps = timing.sampled_fps
    times = list(timing.times) or [i / fps for i in range(count)]
    if len(times) != count:
        raise ValueError(f"SmolVLM2 is shown {count} frames with {len(times)} times")
    return list(times)


@dataclass
class SmolVLMBuilder(VisionBuilder):
    longest_edge: int | None = CLASS_SIZE  # None: ``size`` is a fixed height and width
    size: tuple[int, int] | None = None
    max_image_size: int = CLASS_MAX_IMAGE_SIZE
    image_seq_len: int = CLASS_IMAGE_SEQ_LEN
    pad: bool = True  # do_pad: the processor then returns pixel_attention_mask
    fake_image_token: str = FAKE_IMAGE
    global_image_token: str = GLOBAL_IMAGE

    def video(self, frames, timing):
        torch = _torch()
        video = to_nchw(frames)
        if self.settings.do_resize:
            height, width = (longest_edge_size(*video.shape[-2:], self.longest_edge) if self.longest_edge
                             else self.size)
            video = resize(video, height, width, self.settings.resample)
            # then squashed to the square the vision tower takes (frames are never split)
            video = resize(video, self.max_image_size, self.max_image_size, self.settings.resample)
        pixels = rescale_and_normalize(video, self.settings)
        inputs = {"pixel_values": pixels[None]}
        if self.pad:  # one video a row, its frames of one size: nothing padded, every pixel real
            inputs["pixel_attention_mask"] = torch.ones((1, *pixels.shape[:1], *pixels.shape[-2:]), dtype=torch.int64)
        return inputs, frames.shape[0]

    def fingerprint(self) -> dict:
        # answers given when the stated length was the last frame's time are not reused
        return {**super().fingerprint(), "length": "the clip's duration"}

    def images(self, frames):
        raise UnsupportedFamily("timefoil builds SmolVLM2's video input only (its images are split into "
                                "tiles; --model-arg preprocess=official shows them)")

    def placeholders(self, token: str, counts, timing: Timing | None) -> list[str]:
        """Per video: the introduction (frame count in words, length as H:MM:SS: the clip's
        duration in whole seconds, as the processor takes it from the model card's decoded
        metadata; the last frame's time where no duration is known), then per frame "Frame from
        MM:SS:" and its image, then a blank line."""
        image = f"{self.fake_image_token}{self.global_image_token}{self.image_token * self.image_seq_len}" \
                f"{self.fake_image_token}"
        out = []
        for count in counts:
            seconds = frame_seconds(count, timing)
            length = timing.duration if timing is not None and timing.duration is not None else seconds[-1]
            text = INTRO.format(count=number_in_words(count), duration=timedelta(seconds=int(length)))
            for second in seconds:
                text += f"\nFrame from {int(second // 60):02d}:{int(second % 60):02d}:{image}"
            out.append(text + "\n\n")
        return out


def vision(spec: FamilySpec, config: ProcessorConfig) -> SmolVLMBuilder:
    video = config.video
    settings = PixelSettings.read({**CLASS_PIXELS, **{k: v for k, v in video.items() if v is not None}})
    # the size the processor resizes to: ``size`` where given, else the video sampling's video_size
    size = video.get("size") or (video.get("video_sampling") or {}).get("video_size") or {"longest_edge": CLASS_SIZE}
    if not ("longest_edge" in size or ("height" in size and "width" in size)):
        raise ValueError(f"SmolVLM2's video processor size {size} is neither a longest edge nor a height and width")
    max_image_size = (video.get("max_image_size") or {}).get("longest_edge", CLASS_MAX_IMAGE_SIZE)
    builder = SmolVLMBuilder(
        family=spec.name, settings=settings, video_token=config.video_token or "<video>",
        image_token=config.image_token or "<image>",
        longest_edge=int(size["longest_edge"]) if "longest_edge" in size else None,
        size=None if "longest_edge" in size else (int(size["height"]), int(size["width"])),
        max_image_size=int(max_image_size), pad=video.get("do_pad") is not False,
        image_seq_len=int(config.processor.get("image_seq_len") or CLASS_IMAGE_SEQ_LEN))
    builder.extras = {k: getattr(builder, k) for k in ("longest_edge", "size", "max_image_size", "image_seq_len",
                                                        "pad")}
    return builder


def tiny_model(text: dict, ids: dict, hidden: int):
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration

    # 32x32 frames of 8x8 patches: 16 patches, pixel-shuffled by 2 to 4 image tokens
    vision_config = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                         image_size=32, patch_size=8)
    config = SmolVLMConfig(text_config=dict(model_type="llama", **text), vision_config=vision_config, scale_factor=2,
                           image_token_id=ids["<image>"], pad_token_id=text.get("pad_token_id"))
    return SmolVLMForConditionalGeneration(config)


# the words the processor and its template write, so the tiny tokenizers spell them: the roles,
# the introduction, count words, minutes and seconds of two digits
WORDS = (" ".join(["System User Assistant", INTRO.format(count="", duration=""), "Frame from and hundred thousand , -",
                   *_SMALL, *_TENS[2:], *(f"{i:02d}" for i in range(60)), *(str(i) for i in range(10))]),)
# the preprocessor configuration of the hub's SmolVLM2 checkpoints (2.2B's sizes): frames resized
# to a longer side four times the tower's, then squashed to its square
PIXELS = {"do_resize": True, "resample": LANCZOS, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
          "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True, "do_pad": True,
          "size": {"longest_edge": 1536}, "max_image_size": {"longest_edge": 384}}

SMOLVLM = FamilySpec(
    name="smolvlm", title="SmolVLM2", vision=vision, time="text_timestamps", video_template=VIDEO_TEMPLATE,
    states_length=True,
    inputs=("video",),  # its images are split into tiles with their own row and column tokens
    # on: positions are plain 1-D counts and attention is causal, so the KV cache of a shared prefix
    # (the frames and the instruction before the caption) is the same whatever suffix follows
    prefix_reuse_off=None,
    tiny=TinyRecipe(
        chat_template=VIDEO_TEMPLATE,
        video_processor={**PIXELS, "video_sampling": {"fps": 1, "max_frames": 64,
                                                      "video_size": {"longest_edge": 384}},
                         "video_processor_type": "SmolVLMVideoProcessor"},
        image_processor={**PIXELS, "do_image_splitting": True, "image_processor_type": "SmolVLMImageProcessor"},
        processor={"processor_class": "SmolVLMProcessor", "image_seq_len": 81},
        model=tiny_model, small_video={"size": {"longest_edge": 64}, "max_image_size": {"longest_edge": 32}},
        small_image={"size": {"longest_edge": 64}, "max_image_size": {"longest_edge": 32}},
        small_processor={"image_seq_len": 4},
        special_tokens=TINY_SPECIAL + (FAKE_IMAGE, GLOBAL_IMAGE, END_OF_UTTERANCE), words=WORDS))
