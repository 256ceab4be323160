"""What one video-LLM family is, for timefoil: the row of the family table."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..video_inputs import ProcessorConfig, VisionBuilder

INPUT_KINDS = ("video", "images")  # what a family's frames can be shown as (``video_as``)
# How a family is told when its frames were taken: not at all, by the seconds each temporal
# patch spans (Qwen2.5-VL's second_per_grid_ts, which scales its temporal rotary positions),
# or by timestamps written into the prompt text (the builder's ``placeholders``).
TIME_STATEMENTS = ("none", "second_per_grid_ts", "text_timestamps")
# Where a family's stated times count from: the start of the item's window (the clip the model is
# shown) or of the file the window is cut from (``--model-arg time_origin``).
TIME_ORIGINS = ("window", "file")
# The placeholder tokens the tiny test tokenizers know, in this order: their ids are fixed by the
# committed processor digests. A family that needs more appends its own.
TINY_SPECIAL = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|video_pad|>",
                "<|image_pad|>", "<video>", "<image>")


@dataclass(frozen=True)
class TinyRecipe:
    """How the tests make a tiny random model of the family (timefoil.testing.tiny_vlm) and the
    processor files its hub repository carries (timefoil.testing.write_processor_files)."""

    chat_template: str  # a minimal template placing the family's placeholders as the real one does
    video_processor: dict  # processor_config.json's "video_processor" entry, as the hub ships it
    image_processor: dict  # its "image_processor" entry
    processor: dict  # its top-level settings (processor_class, tokens, counts)
    # (text config keyword arguments, the ids of TINY_SPECIAL tokens, hidden size) -> a random model
    model: Callable[[dict, dict, int], Any]
    small_video: dict = field(default_factory=dict)  # overrides that keep the tiny model's inputs small
    small_processor: dict = field(default_factory=dict)
    small_image: dict = field(default_factory=dict)  # the same for an image-only family's image processor
    special_tokens: tuple = TINY_SPECIAL
    # tokens the tokenizer names as attributes (tokenizer_config.json's extra_special_tokens), which the
    # official processor reads (e.g. InternVL's start_image_token)
    named_tokens: dict = field(default_factory=dict)
    # whether the family's real tokenizer puts its begin token before a text it tokenises with special
    # tokens (Llama's and Gemma's do, Qwen's has none): the reference tokenizers copy it
    adds_bos: bool = False
    # the tokenizer class transformers loads for the family's model type whatever class the folder
    # names, rebuilt from the saved vocabulary and merges (Qwen3.5's): the tiny tokenizer is then a
    # byte-level BPE of that class, which survives the rebuild
    tokenizer_class: str | None = None
    # words the family's processor writes into the prompt itself (SmolVLM2's introduction and frame
    # times), which the tiny tokenizers then know: a wrong one shows in input_ids, not as <unk>
    words: tuple = ()


@dataclass(frozen=True)
class FamilySpec:
    """One video-LLM family (a transformers ``model_type``): how timefoil builds its inputs and
    positions, and how the tests make a tiny one."""

    name: str  # transformers' model_type, e.g. "qwen2_5_vl"
    title: str  # as people write it, e.g. "Qwen2.5-VL"
    vision: Callable[["FamilySpec", ProcessorConfig], VisionBuilder]  # its input builder, from the folder's settings
    tiny: TinyRecipe
    mrope: bool = False  # 3-D rotary positions (time, height, width) from the model's own rope index
    inputs: tuple = ("video",)  # what timefoil builds for it, the first the default (INPUT_KINDS)
    time: str = "none"  # TIME_STATEMENTS
    # whether its prompt states the clip's length (SmolVLM2: "from a 0:00:03 video"), from the
    # duration its model card's decoded metadata gives the processor
    states_length: bool = False
    prefix_reuse_off: str | None = None  # why a shared prompt prefix's KV cache cannot be reused, if it cannot
    # what its stated times count from by default (TIME_ORIGINS), and why: docs/models.md
    time_origin: str = "window"
    # the chat template the official processor renders a conversation holding a video with, in place
    # of the model folder's (SmolVLM2's processor does so); None: the folder's
    video_template: str | None = None
    # (the loaded vision tower, its grid_thw on the host) -> the inputs the tower would otherwise
    # derive from the grid on the device, made by transformers' own functions on the host, so
    # that no layer reads the device (models.local.sync_free); None: its layers read none
    grid_inputs: Callable[[Any, Any], dict] | None = None
    # whether a prompt prefix (one row, no padding) is run with its mask of ones and positions
    # rather than without them (models.local.hf_prefix): where the model makes its attention masks
    # before its cache and counts positions itself before them (Gemma 4), a forward without a
    # mask reads the positions back from the device to look for packed sequences, twice where
    # the mask of ones costs one read
    prefix_mask: bool = False

    def __post_init__(self):
        if not self.inputs or set(self.inputs) - set(INPUT_KINDS):
            raise ValueError(f"family {self.name}: inputs must be some of {', '.join(INPUT_KINDS)}")
        if self.time not in TIME_STATEMENTS:
            raise ValueError(f"family {self.name}: time must be one of {', '.join(TIME_STATEMENTS)}")
        if self.time_origin not in TIME_ORIGINS:
            raise ValueError(f"family {self.name}: time_origin must be one of {', '.join(TIME_ORIGINS)}")
