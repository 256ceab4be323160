"""The tiny Qwen3-VL processor that Qwen3.5, Qwen3.5-MoE, Qwen3-VL-MoE and Qwen4-Exp all load
(their ``processor_class`` is ``Qwen3VLProcessor``): 8-pixel patches merged 2x2, so the 8 frames
of 60x80 become 4 temporal patches of 4x5 tokens, each written after its time.

Qwen3.5's, Qwen3.5-MoE's and Qwen4-Exp's tokenizer class is forced by transformers whatever the folder
names (``MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS``): it is rebuilt as a byte-level BPE from the
saved vocabulary and merges, which a word-level vocabulary does not survive (every word longer
than a byte vanishes). Those get a byte-level BPE learnt on the words instead."""
from __future__ import annotations

from timefoil.testing import BASE_WORDS, SPECIAL

from . import tiny_tokenizer

PATCH, MERGE, TEMPORAL = 8, 2, 2
TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# the times the processor writes before each temporal patch ("<1.2 seconds>") are words too
TIME_WORDS = "< . > seconds 0 1 2 3 4 5 6 7 8 9"
# the hub template's placement: a video is <|vision_start|><|video_pad|><|vision_end|> in the
# user turn, before its text; the processor expands the pad into the timed patches
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|> {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")


def tokenizer(words, byte_level: bool = False):
    if byte_level:
        return byte_level_tokenizer(list(words) + [TIME_WORDS], TOKENS, TEMPLATE)
    return tiny_tokenizer(list(words) + [TIME_WORDS], TOKENS, TEMPLATE)


def byte_level_tokenizer(words, special_tokens, chat_template):
    """A BPE with Qwen3.5's normaliser, pre-tokeniser and decoder, its merges learnt on ``words``
    (each word and each word after a space, so most become one token), knowing the same
    specials as ``tiny_tokenizer``'s."""
    from tokenizers import AddedToken, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer

    core = Qwen3_5Tokenizer()._tokenizer
    lines = list(words) + BASE_WORDS + ["system user assistant model"]
    trainer = trainers.BpeTrainer(vocab_size=100_000, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(lines + [" " + line for line in lines], trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>", bos_token="<s>",
                                  eos_token="</s>")
    tok.add_special_tokens({"additional_special_tokens": [AddedToken(t, special=True) for t in special_tokens]})
    tok.chat_template = chat_template
    return tok


def token_ids(tok) -> dict:
    """The config's placeholder ids, as the tokenizer spells them."""
    ids = {t: tok.convert_tokens_to_ids(t) for t in TOKENS}
    return dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])


def small_hybrid_text(text, tok) -> None:
    """Qwen3.5's kind of text config (linear and full attention layers, a partial rotary
    m-RoPE) made tiny: one layer of each, 4 rotary frequencies per head (16 * 0.5 / 2) shared
    out over time, height and width, the tokenizer's vocabulary and ids."""
    text.vocab_size = len(tok)
    text.layer_types = ["linear_attention", "full_attention"]
    text.linear_key_head_dim = text.linear_value_head_dim = 8
    text.linear_num_key_heads, text.linear_num_value_heads = 2, 4
    text.head_dim = 16
    text.rope_parameters = {**text.rope_parameters, "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1]}
    text.pad_token_id, text.bos_token_id, text.eos_token_id = tok.pad_token_id, tok.bos_token_id, tok.eos_token_id


def vision_sizes() -> dict:
    """What the vision sub-config must agree on with the processor."""
    return dict(patch_size=PATCH, spatial_merge_size=MERGE, temporal_patch_size=TEMPORAL)


def save_processor(folder: str, tok) -> None:
    from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor, Qwen3VLVideoProcessor

    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL, image_mean=[0.5] * 3,
                  image_std=[0.5] * 3)
    factor = PATCH * MERGE
    images = Qwen2VLImageProcessor(size={"shortest_edge": factor * factor, "longest_edge": 64 * 80}, **pixels)
    # a budget over the whole clip: 8 frames of 64x80 fit, so the frames are only rounded to 16
    videos = Qwen3VLVideoProcessor(size={"shortest_edge": 2 * factor * factor, "longest_edge": 8 * 64 * 80}, **pixels)
    Qwen3VLProcessor(image_processor=images, tokenizer=tok, video_processor=videos,
                     chat_template=TEMPLATE).save_pretrained(folder)
