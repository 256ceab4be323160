"""Molmo2 (Qwen3 text): the template writes one ``<|video|>`` before the user's text; the
processor widens it into each frame's time ("0.0") and ``<frame_start>`` patch run
``<frame_end>``, and starts every prompt with the begin token."""
MODEL_TYPE = "molmo2"
SHOWN_AS = "video"

MARKERS = ["<im_patch>", "<im_col>", "<im_start>", "<low_res_im_start>", "<frame_start>", "<im_end>", "<frame_end>",
           "<im_low>"]
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|image|>"
            "{% elif c['type'] == 'video' %}<|video|>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
            "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Molmo2Config, Molmo2ForConditionalGeneration, Molmo2ImageProcessor, Molmo2Processor,
                              Molmo2VideoProcessor)

    from . import shrink, tiny_tokenizer

    # frame times are written as text: "1.5" is "1", ".", "5" to this tokenizer
    tokenizer = tiny_tokenizer(list(words) + ["0 1 2 3 4 5 6 7 8 9 ."],
                               ["<|im_start|>", "<|im_end|>", "<|image|>", "<|video|>"] + MARKERS, TEMPLATE,
                               named_tokens={"image_token": "<|image|>", "video_token": "<|video|>"})
    ids = dict(zip(MARKERS, tokenizer.convert_tokens_to_ids(MARKERS)))
    config = Molmo2Config(
        text_config={"vocab_size": len(tokenizer), "additional_vocab_size": 0, "num_hidden_layers": 2},
        vision_config={"num_hidden_layers": 2, "image_size": [84, 84], "patch_size": 14},
        adapter_config={"vision_feature_layer": [-1, -2], "text_hidden_size": 32},
        image_start_token_id=ids["<im_start>"], low_res_image_start_token_id=ids["<low_res_im_start>"],
        image_end_token_id=ids["<im_end>"], image_patch_id=ids["<im_patch>"],
        frame_start_token_id=ids["<frame_start>"], frame_end_token_id=ids["<frame_end>"])
    shrink(config)
    config.text_config.pad_token_id = tokenizer.pad_token_id
    config.text_config.bos_token_id = tokenizer.bos_token_id
    config.text_config.eos_token_id = tokenizer.eos_token_id
    torch.manual_seed(0)
    Molmo2ForConditionalGeneration(config).save_pretrained(folder)
    small = {"size": {"height": 84, "width": 84}, "patch_size": 14}  # 6x6 patches pooled 3x3: 4 tokens a frame
    Molmo2Processor(Molmo2ImageProcessor(**small, max_crops=2), Molmo2VideoProcessor(**small), tokenizer,
                    chat_template=TEMPLATE).save_pretrained(folder)
