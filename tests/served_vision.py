"""A tiny random SmolVLM whose tokenizer is SmolLM2's real one, converted to GGUF by llama.cpp's
own converter (a text GGUF and a vision projector, ``--mmproj``) for llama-server to serve.

The converter takes the text half only from a folder whose config names ``LlamaForCausalLM``
(it refuses ``SmolVLMForConditionalGeneration`` there), so the text half is converted from a copy
of the folder with the text config alone; the projector from the folder as saved."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import real_server
from served_vs_local import SMOLLM2_FILE, smollm2_gguf

CONVERT_TIMEOUT_S = 300
SPECIAL = ("<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>")


def tiny_smolvlm(folder: str, seed: int = 0) -> str:
    """The transformers folder: 2 text layers of width 64, one vision layer of width 32 on 64-px
    images of 16-px patches (pixel-shuffled by 2: 4 image tokens), SmolLM2's tokenizer."""
    import torch
    from transformers import AutoTokenizer, SmolVLMConfig, SmolVLMForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(os.path.dirname(smollm2_gguf()), gguf_file=SMOLLM2_FILE)
    tokenizer.add_special_tokens({"additional_special_tokens": list(SPECIAL)})
    text = dict(model_type="llama", vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=64,
                  patch_size=16)
    torch.manual_seed(seed)
    config = SmolVLMConfig(text_config=text, vision_config=vision, scale_factor=2,
                           image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    SmolVLMForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as out:  # what the projector's converter reads
        json.dump({"image_processor_type": "SmolVLMImageProcessor", "size": {"longest_edge": 64},
                   "max_image_size": {"longest_edge": 64}, "image_mean": [0.5] * 3, "image_std": [0.5] * 3}, out)
    return folder


def convert(folder: str, out: str, *args: str) -> str:
    command = [*real_server.converter(log=lambda line: None), folder, "--outfile", out, "--outtype", "f32", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S,
                            env=real_server.converter_env())
    if result.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"convert_hf_to_gguf failed: {result.stderr.strip().splitlines()[-1:]}")
    return out


def smolvlm_gguf(workdir: str) -> tuple[str, str]:
    """(text GGUF, vision projector GGUF) of a tiny SmolVLM made in ``workdir``."""
    folder = tiny_smolvlm(os.path.join(workdir, "smolvlm"))
    return text_gguf(folder, workdir), convert(folder, os.path.join(workdir, "mmproj.gguf"), "--mmproj")


def text_gguf(folder: str, workdir: str) -> str:
    """The text half of the SmolVLM in ``folder`` as a GGUF of its own (a random language model
    with SmolLM2's tokenizer)."""
    text_only = os.path.join(workdir, "smolvlm-text")
    shutil.copytree(folder, text_only)
    with open(os.path.join(folder, "config.json")) as saved:
        text_config = json.load(saved)["text_config"]
    with open(os.path.join(text_only, "config.json"), "w") as out:
        json.dump({**text_config, "architectures": ["LlamaForCausalLM"], "model_type": "llama"}, out)
    return convert(text_only, os.path.join(workdir, "text.gguf"))
