"""Tiny random models of the video-capable architectures of transformers whose inputs timefoil
does not build itself: they answer through the model's own processor (the official path).

One module per architecture, named by its ``model_type``, holding::

    MODEL_TYPE = "glm4v"
    SHOWN_AS = "video"           # or "images": what its processor is given the frames as
    NOTE = "..."                 # optional: what a user must know that the check cannot show
    def make(folder: str, words: list[str]) -> None:
        # saves a tiny random model, its processor (tokenizer with the architecture's special
        # tokens, a minimal chat template placing them as the real one does, small image and
        # video settings) to ``folder``

Run by ``check_open_families.py`` in the throwaway environment with torchvision (video
processors need it), never in CI. The helpers below are shared by the modules.
"""
from __future__ import annotations

import importlib
import pkgutil

from timefoil.testing import word_tokenizer

SIZES = {  # what a tiny model's (sub-)configs are shrunk to, where the config has the field
    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 8, "depth": 2, "num_heads": 4, "embed_dim": 32,
    "out_hidden_size": 32, "projection_dim": 32, "max_position_embeddings": 4096,
}


def tiny_tokenizer(words, special_tokens=(), chat_template: str | None = None, named_tokens: dict | None = None,
                   adds_bos: bool = False):
    """A word-level tokenizer knowing ``words`` (and the chat roles) and the architecture's
    ``special_tokens``; ``named_tokens`` become attributes the processor reads (e.g.
    ``image_token``); ``adds_bos``: it puts its begin token before a text tokenised with
    special tokens, as Llama's and Gemma's do."""
    from tokenizers import AddedToken

    tokenizer = word_tokenizer(list(words) + ["system user assistant model"])
    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken(t, special=True)
                                                                for t in special_tokens]})
    if named_tokens:
        tokenizer._set_model_specific_special_tokens(special_tokens=dict(named_tokens))
    if chat_template:
        tokenizer.chat_template = chat_template
    if adds_bos:
        from tokenizers.processors import TemplateProcessing

        bos = tokenizer.bos_token
        tokenizer._tokenizer.post_processor = TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tokenizer.bos_token_id)])
    return tokenizer


def shrink(config, **overrides):
    """``config`` and every sub-config (``text_config``, ``vision_config``, ...) with the
    fields of SIZES set small where they exist; ``overrides`` are set on the top config."""
    for name, value in SIZES.items():
        if hasattr(config, name) and isinstance(getattr(config, name), int):
            setattr(config, name, value)
    for name in list(vars(config)):
        sub = getattr(config, name)
        if name.endswith("_config") and hasattr(sub, "to_dict"):
            shrink(sub)
    for name, value in overrides.items():
        setattr(config, name, value)
    return config


def recipes() -> dict:
    """model_type -> its module, for every module in this package."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "MODEL_TYPE"):
            found[module.MODEL_TYPE] = module
    return found
