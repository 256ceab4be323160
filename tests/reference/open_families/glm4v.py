"""GLM-4.1V: a video is written ``<|begin_of_video|><|video|><|end_of_video|>`` and the processor
turns ``<|video|>`` into one ``<|begin_of_image|>...<|end_of_image|>`` block per temporal patch,
each followed by its time (whole seconds here, "0.0 seconds" in GLM-4.5V, which shares the recipe)."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "glm4v"
SHOWN_AS = "video"

# the hub template opens with [gMASK]<sop>, puts each visual item before the text of the user turn,
# and ends the prompt with <|assistant|>
CHAT_TEMPLATE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for item in m['content'] %}"
    "{% if item['type'] == 'video' %}<|begin_of_video|><|video|><|end_of_video|>"
    "{% elif item['type'] == 'image' %}<|begin_of_image|><|image|><|end_of_image|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
# the roles are single tokens in the real vocabulary
SPECIAL = ["[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|begin_of_image|>", "<|end_of_image|>",
           "<|begin_of_video|>", "<|end_of_video|>", "<|image|>", "<|video|>"]
TIMES = " ".join(map(str, range(1000))) + " . seconds"  # the words of the frames' times
PATCH, MERGE = 4, 2


def glm_tokenizer(words: list[str]):
    """The tokenizer with GLM's special tokens and template, and the config's token-id fields."""
    tokenizer = tiny_tokenizer(list(words) + [TIMES], SPECIAL, CHAT_TEMPLATE)
    ids = dict(zip(SPECIAL, tokenizer.convert_tokens_to_ids(SPECIAL)))
    return tokenizer, {"image_token_id": ids["<|image|>"], "video_token_id": ids["<|video|>"],
                       "image_start_token_id": ids["<|begin_of_image|>"], "image_end_token_id": ids["<|end_of_image|>"],
                       "video_start_token_id": ids["<|begin_of_video|>"], "video_end_token_id": ids["<|end_of_video|>"]}


def save_processor(folder: str, tokenizer, prefix: str, image_budget: dict | None = None,
                   video_budget: dict | None = None, processor: str | None = None) -> None:
    """The processor from the transformers classes named ``prefix`` + ImageProcessor, VideoProcessor,
    Processor (or ``processor``); a budget replaces the pixel ``size`` where the processor counts it otherwise."""
    import transformers

    pixels = {"patch_size": PATCH, "merge_size": MERGE, "temporal_patch_size": 2}
    # size counts the pixels of all frames: 8 frames of 60x80 become 24x32
    images = getattr(transformers, prefix + "ImageProcessor")(
        **(image_budget or {"size": {"shortest_edge": 64, "longest_edge": 2 * 32 * 32}}), **pixels)
    videos = getattr(transformers, prefix + "VideoProcessor")(
        **(video_budget or {"size": {"shortest_edge": 64, "longest_edge": 8 * 32 * 32}}), **pixels)
    getattr(transformers, processor or prefix + "Processor")(
        image_processor=images, tokenizer=tokenizer, video_processor=videos, chat_template=CHAT_TEMPLATE,
    ).save_pretrained(folder)


def save(folder: str, words: list[str], prefix: str, processor: str | None = None, processors: str | None = None,
         text_sizes: dict | None = None) -> None:
    """The tiny model and processor of the GLM-4.1V layout: the config ``prefix`` + Config, the
    model transformers registers for it, the processors of ``save_processor`` (named by
    ``processors`` where they are another architecture's); ``text_sizes`` set on the text config."""
    import transformers

    tokenizer, token_ids = glm_tokenizer(words)
    config = shrink(getattr(transformers, prefix + "Config")(), **token_ids)
    text = config.text_config
    for name, value in (text_sizes or {}).items():
        setattr(text, name, value)
    text.vocab_size, text.pad_token_id = len(tokenizer), tokenizer.pad_token_id
    # head_dim 16, half of it rotated, split over time, height and width as the real config splits it
    text.num_attention_heads = 2
    text.rope_parameters = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                            "mrope_section": [2, 1, 1]}
    vision = config.vision_config
    vision.patch_size, vision.spatial_merge_size, vision.image_size = PATCH, MERGE, 32
    vision.out_hidden_size = text.hidden_size
    transformers.AutoModelForImageTextToText.from_config(config).save_pretrained(folder)
    save_processor(folder, tokenizer, processors or prefix, processor=processor)


def make(folder: str, words: list[str]) -> None:
    save(folder, words, "Glm4v")
