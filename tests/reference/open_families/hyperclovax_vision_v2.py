"""HyperCLOVA X SEED Vision V2 (HyperCLOVA X text, Qwen2.5-VL's vision tower and image and video
processors): the template writes the video between its start and end tokens and its duration
as the text ``<|video_duration|>``, which the processor fills in ("10.0") before widening the
video token into the frames' merged patch tokens."""
MODEL_TYPE = "hyperclovax_vision_v2"
SHOWN_AS = "video"

NAMED = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}
MARKERS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>"]
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|>"
            "<|vision_end|>\n{% elif c['type'] == 'video' %}duration: "
            "{{ c.get('video_duration', '<|video_duration|>') }}\n<|vision_start|><|video_pad|><|vision_end|>\n"
            "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
            "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% endif %}")


def byte_level_tokenizer(texts):
    """transformers loads this architecture's tokenizer as GPT-2's byte-level BPE whatever the
    folder holds, so a word-level one would be read back as bytes: a small byte-level BPE learnt
    from ``texts`` (and the chat roles) instead, with the architecture's tokens."""
    import json

    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Tokenizer

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, show_progress=False, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(list(texts) + ["system user assistant"], trainer)
    learnt = json.loads(core.to_str())["model"]
    tokenizer = GPT2Tokenizer(vocab=learnt["vocab"], merges=[tuple(merge) for merge in learnt["merges"]],
                              unk_token="<pad>", bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken(t, special=True)
                                                                for t in MARKERS + list(NAMED.values())]})
    tokenizer._set_model_specific_special_tokens(special_tokens=dict(NAMED))
    tokenizer.chat_template = TEMPLATE
    return tokenizer


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (HyperCLOVAXVisionV2Config, HyperCLOVAXVisionV2ForConditionalGeneration,
                              HyperCLOVAXVisionV2Processor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor)

    from . import shrink

    tokenizer = byte_level_tokenizer(list(words) + ["duration: 10.0 seconds"])
    text = {"model_type": "hyperclovax", "vocab_size": len(tokenizer), "num_hidden_layers": 2,
            "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id}
    vision = {"model_type": "qwen2_5_vl_vision", "depth": 2, "fullatt_block_indexes": [1], "window_size": 56}
    config = HyperCLOVAXVisionV2Config(text_config=text, vision_config=vision, image_token_id=tokenizer.image_token_id,
                                       video_token_id=tokenizer.video_token_id)
    shrink(config)
    config.vision_config.out_hidden_size = config.text_config.hidden_size
    torch.manual_seed(0)
    HyperCLOVAXVisionV2ForConditionalGeneration(config).save_pretrained(folder)
    small = {"shortest_edge": 28 * 28, "longest_edge": 56 * 56}  # a 60x80 frame becomes a few merged patches
    HyperCLOVAXVisionV2Processor(Qwen2VLImageProcessor(size=small), tokenizer, Qwen2VLVideoProcessor(size=small),
                                 chat_template=TEMPLATE).save_pretrained(folder)
