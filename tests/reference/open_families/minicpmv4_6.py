"""MiniCPM-V 4.6 (Qwen3.5 text): the template writes one video token where the video goes;
the processor widens it into each frame's ``<image>`` ... ``</image>`` run, with an
``<image_id>`` tag before it."""
MODEL_TYPE = "minicpmv4_6"
SHOWN_AS = "video"

NAMED = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>", "image_start_token": "<image>",
         "image_end_token": "</image>", "slice_start_token": "<slice>", "slice_end_token": "</slice>",
         "image_id_start_token": "<image_id>", "image_id_end_token": "</image_id>"}
CHATML = ["<|im_start|>", "<|im_end|>"]
# ChatML as Qwen's: the video's token goes before the user's text, in the user's turn
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|image_pad|>"
            "{% elif c['type'] == 'video' %}<|video_pad|>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
            "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% endif %}")


def make(folder: str, words: list[str]) -> None:
    build(folder, words, "MiniCPMV4_6", image_size=112)


def build(folder: str, words: list[str], prefix: str, extra_tokens=(), **settings) -> None:
    """A tiny model of the MiniCPM-V family whose classes are named ``prefix``...; ``settings``
    go to its config (a later member reads more token ids from it)."""
    import torch
    import transformers

    from . import shrink, tiny_tokenizer

    # the image-id tags hold the frame's number as text
    tokenizer = tiny_tokenizer(list(words) + ["0 1 2 3 4 5 6 7 8 9"],
                               CHATML + list(NAMED.values()) + list(extra_tokens), TEMPLATE, named_tokens=NAMED)
    ids = {name: tokenizer.convert_tokens_to_ids(NAMED[name]) for name in ("image_token", "video_token")}
    settings = {key: tokenizer.convert_tokens_to_ids(value) if key.endswith("_id") else value
                for key, value in settings.items()}
    config = getattr(transformers, f"{prefix}Config")(
        text_config={"model_type": "qwen3_5_text", "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                     "num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"],
                     "linear_key_head_dim": 8, "linear_value_head_dim": 8, "linear_num_key_heads": 2,
                     "linear_num_value_heads": 4},
        vision_config={"patch_size": 14, "image_size": 112}, insert_layer_id=0,
        image_token_id=ids["image_token"], video_token_id=ids["video_token"], **settings)
    shrink(config)
    torch.manual_seed(0)
    getattr(transformers, f"{prefix}ForConditionalGeneration")(config).save_pretrained(folder)
    small = {"scale_resolution": 112, "patch_size": 14}  # 60x80 frames become 56x56: a few tokens after merging
    family = prefix if hasattr(transformers, f"{prefix}ImageProcessor") else "MiniCPMV4_6"
    image = getattr(transformers, f"{family}ImageProcessor")(**small)
    video = getattr(transformers, f"{family}VideoProcessor")(**small)
    getattr(transformers, f"{prefix}Processor")(image, video, tokenizer, chat_template=TEMPLATE).save_pretrained(folder)
