"""VideoLLaMA3 (Qwen2.5 text): the template writes one ``<|video_pad|>`` before the user's
text; the processor widens it into "Time 0.0s:" and each frame's tokens, frames joined by
commas (frames too like the one before lose tokens to its compression)."""
MODEL_TYPE = "video_llama_3"
SHOWN_AS = "video"

NAMED = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|image_pad|>\n"
            "{% elif c['type'] == 'video' %}<|video_pad|>\n{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
            "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Qwen2Config, VideoLlama3Config, VideoLlama3ForConditionalGeneration,
                              VideoLlama3ImageProcessor, VideoLlama3Processor, VideoLlama3VideoProcessor)

    from . import shrink, tiny_tokenizer

    # frame times are written as "Time 1.2s:", which this tokenizer reads as "Time", "1", ".", "2s", ":"
    times = "Time , : . " + " ".join(map(str, range(100))) + " " + " ".join(f"{n}s" for n in range(10))
    tokenizer = tiny_tokenizer(list(words) + [times], ["<|im_start|>", "<|im_end|>"] + list(NAMED.values()), TEMPLATE,
                               named_tokens=NAMED)
    text = shrink(Qwen2Config(vocab_size=len(tokenizer), num_hidden_layers=2, pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = VideoLlama3Config(text_config=text.to_dict(), vision_config={"patch_size": 14},
                               image_token_id=tokenizer.image_token_id, video_token_id=tokenizer.video_token_id)
    shrink(config.vision_config)
    torch.manual_seed(0)
    VideoLlama3ForConditionalGeneration(config).save_pretrained(folder)
    small = {"shortest_edge": 28 * 28, "longest_edge": 56 * 56}  # a 60x80 frame becomes a few merged patches
    VideoLlama3Processor(VideoLlama3ImageProcessor(size=small), tokenizer, VideoLlama3VideoProcessor(size=small),
                         chat_template=TEMPLATE).save_pretrained(folder)
