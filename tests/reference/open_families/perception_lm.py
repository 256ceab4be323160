"""PerceptionLM (Llama 3 text, a timm Perception Encoder; needs the timm package): the template
writes one ``<|video|>`` before the user's text; the processor widens it into each frame's
pooled patch tokens. The real template starts with the begin token itself."""
MODEL_TYPE = "perception_lm"
SHOWN_AS = "video"
NOTE = "its vision tower is a timm model: the timm package must be installed to load it"

TURN = ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
            "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
            "{% if c['type'] == 'image' %}<|image|>{% elif c['type'] == 'video' %}<|video|>"
            "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|eot_id|>{% endfor %}"
            "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (LlamaConfig, PerceptionLMConfig, PerceptionLMForConditionalGeneration,
                              PerceptionLMImageProcessor, PerceptionLMProcessor, PerceptionLMVideoProcessor)

    from . import shrink, tiny_tokenizer

    named = {"image_token": "<|image|>", "video_token": "<|video|>"}
    tokenizer = tiny_tokenizer(words, TURN + list(named.values()), TEMPLATE, named_tokens=named, adds_bos=True)
    text = shrink(LlamaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    # the real tower's timm architecture, made tiny: 56-pixel frames are 4x4 patches, pooled 2x2 to 4 tokens
    vision = {"model_type": "timm_wrapper", "architecture": "vit_pe_core_large_patch14_336", "do_pooling": False,
              "model_args": {"embed_dim": 32, "depth": 2, "num_heads": 4, "img_size": [56, 56],
                             "ref_feat_shape": [4, 4], "attn_pool_num_heads": 4}}
    config = PerceptionLMConfig(text_config=text.to_dict(), vision_config=vision, projector_pooling_ratio=2,
                                image_token_id=tokenizer.image_token_id, video_token_id=tokenizer.video_token_id)
    torch.manual_seed(0)
    PerceptionLMForConditionalGeneration(config).save_pretrained(folder)
    video = PerceptionLMVideoProcessor(size={"height": 56, "width": 56})
    image = PerceptionLMImageProcessor(tile_size=56, max_num_tiles=4, size={"height": 56, "width": 56})
    PerceptionLMProcessor(video, image, tokenizer, patch_size=14, pooling_ratio=2,
                          chat_template=TEMPLATE).save_pretrained(folder)
