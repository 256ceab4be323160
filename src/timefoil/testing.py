"""Tiny randomly initialised transformers models for testing adapters offline.

Each is saved to a folder and loaded back by path, so the real loading code runs. The
tokenizer is word-level, built from the words it must know, with a minimal chat template.
"""
from __future__ import annotations

import re

CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|> {% endif %}")
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>", "<|user|>", "<|system|>", "<|assistant|>"]
BASE_WORDS = ["Yes", "No", "yes", "no", "A", "B", "C", "D", "the", "a", "video", "caption"]


def word_tokenizer(texts):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = dict.fromkeys(SPECIAL + BASE_WORDS)
    for text in texts:
        words.update(dict.fromkeys(re.findall(r"\w+|[^\w\s]", text)))
    vocab = {w: i for i, w in enumerate(words)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    core.decoder = decoders.WordPiece(prefix="##")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_llama(path, texts, seed=0, hidden=32, layers=2):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_tokenizer(texts)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=1024, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def tiny_clip(path, texts, seed=0, kind="clip"):
    """A tiny CLIP (or SigLIP) with a word-level tokenizer and a 32x32 image processor."""
    import torch
    from transformers import (CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, SiglipConfig,
                              SiglipImageProcessor, SiglipModel, SiglipProcessor)

    tokenizer = word_tokenizer(texts)
    text = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    vision = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32,
                  patch_size=8)
    torch.manual_seed(seed)
    if kind == "siglip":
        model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
        processor = SiglipProcessor(image_processor=SiglipImageProcessor(size={"height": 32, "width": 32}),
                                    tokenizer=tokenizer)
    else:
        model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
        processor = CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32},
                                                                     crop_size={"height": 32, "width": 32}),
                                  tokenizer=tokenizer)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return str(path)
