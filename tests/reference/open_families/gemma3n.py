"""Gemma 3n (google/gemma-3n-E4B-it): Gemma 3n's text model (AltUp, Laurel, per-layer inputs), an
audio conformer and timm's MobileNetV5 vision tower (needs the timm package). Its processor takes
images only (and audio): each frame's ``<image_soft_token>`` becomes the frame's soft tokens
between ``<start_of_image>`` and ``<end_of_image>``, with blank lines around."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "gemma3n"
SHOWN_AS = "images"
NOTE = "its vision tower is a timm model (MobileNetV5): the timm package must be installed to load it"

# as the hub template (Gemma 3's) writes a turn: <start_of_turn>role, images and texts in order,
# <end_of_turn>; the assistant's role is "model"; the template writes the begin token itself
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ '<image_soft_token>' }}{% elif item['type'] == 'audio' %}"
    "{{ '<audio_soft_token>' }}{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")
SIDE, TOKENS = 64, 4  # frames of 64x64 pixels, each fused by the tower into 2x2 soft tokens
# the multimodal tokens come last, in the order of the model's vocabulary: the text's own tokens,
# then the vision range (from <end_of_image>), then the audio range (from <end_of_audio>)
TEXT_SPECIAL = ["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<start_of_audio>"]
VISION_SPECIAL = ["<end_of_image>", "<image_soft_token>"]
AUDIO_SPECIAL = ["<end_of_audio>", "<audio_soft_token>"]
NAMED = {"image_token": "<image_soft_token>", "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
         "audio_token": "<audio_soft_token>", "boa_token": "<start_of_audio>", "eoa_token": "<end_of_audio>"}


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Gemma3nAudioConfig, Gemma3nAudioFeatureExtractor, Gemma3nConfig,
                              Gemma3nForConditionalGeneration, Gemma3nProcessor, Gemma3nTextConfig,
                              Gemma3nVisionConfig, SiglipImageProcessor)

    tokenizer = tiny_tokenizer(words, TEXT_SPECIAL + VISION_SPECIAL + AUDIO_SPECIAL, named_tokens=NAMED,
                               adds_bos=True)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in TEXT_SPECIAL + VISION_SPECIAL + AUDIO_SPECIAL}
    text_vocab, vision_at, audio_at = ids["<end_of_image>"], ids["<end_of_image>"], ids["<end_of_audio>"]
    text = Gemma3nTextConfig(vocab_size=len(tokenizer), vocab_size_per_layer_input=text_vocab, hidden_size=32,
                             intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             head_dim=8, hidden_size_per_layer_input=8, laurel_rank=4, altup_num_inputs=2,
                             num_kv_shared_layers=0, layer_types=["sliding_attention", "full_attention"],
                             sliding_window=64, pad_token_id=tokenizer.pad_token_id,
                             bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    # timm's MobileNetV5 with a tenth of its channels; its multi-scale fusion still gives 2048 channels
    vision = Gemma3nVisionConfig(vocab_offset=vision_at, vocab_size=len(VISION_SPECIAL), hidden_size=2048,
                                 model_args={"channel_multiplier": 0.1, "msfa_output_resolution": 2})
    audio = Gemma3nAudioConfig(vocab_offset=audio_at, vocab_size=len(AUDIO_SPECIAL), hidden_size=32,
                               conf_num_attention_heads=4, conf_num_hidden_layers=1, sscp_conv_channel_size=(8, 4))
    config = Gemma3nConfig(text_config=text, vision_config=vision, audio_config=audio,
                           vision_soft_tokens_per_image=TOKENS, audio_soft_tokens_per_image=4,
                           boi_token_id=ids["<start_of_image>"], eoi_token_id=ids["<end_of_image>"],
                           image_token_id=ids["<image_soft_token>"], boa_token_id=ids["<start_of_audio>"],
                           eoa_token_id=ids["<end_of_audio>"], audio_token_id=ids["<audio_soft_token>"])
    torch.manual_seed(0)
    Gemma3nForConditionalGeneration(config).save_pretrained(folder)
    images = SiglipImageProcessor(size={"height": SIDE, "width": SIDE})
    Gemma3nProcessor(feature_extractor=Gemma3nAudioFeatureExtractor(), image_processor=images, tokenizer=tokenizer,
                     image_seq_length=TOKENS, audio_seq_length=4, chat_template=CHAT_TEMPLATE).save_pretrained(folder)
