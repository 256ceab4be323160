"""Gemma 3: an image model, so a video is shown as its sampled frames, one image each. Every
frame is squashed to the configured square (896 on the hub) by a bilinear antialiased resize,
rescaled and normalised, and written into the prompt where the chat template put its
``<start_of_image>``: a blank line, that token, ``image_seq_length`` (256) soft tokens,
``<end_of_image>`` and a blank line. ``token_type_ids`` marks the soft tokens: the model lets
the tokens of one image attend to each other in both directions."""
from __future__ import annotations

from dataclasses import dataclass

from ..video_inputs import PixelSettings, ProcessorConfig, VisionBuilder, rescale_and_normalize, resize, to_nchw
from .base import TINY_SPECIAL, FamilySpec, TinyRecipe

BEGIN_IMAGE, END_IMAGE, SOFT_TOKEN = "<start_of_image>", "<end_of_image>", "<image_soft_token>"
TURN_TOKENS = ("<start_of_turn>", "<end_of_turn>")
# what the tokenizer names its image tokens by (tokenizer_config.json), which the official processor reads
NAMED_TOKENS = {"boi_token": BEGIN_IMAGE, "eoi_token": END_IMAGE, "image_token": SOFT_TOKEN}
# Gemma3ImageProcessor's class defaults, where a folder's configuration is silent
CLASS_PIXELS = {"resample": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}


@dataclass
class Gemma3Builder(VisionBuilder):
    height: int = 224
    width: int = 224
    image_seq_length: int = 256
    soft_token: str = SOFT_TOKEN
    end_token: str = END_IMAGE

    def images(self, frames):
        video = to_nchw(frames)
        if self.settings.do_resize:
            video = resize(video, self.height, self.width, self.settings.resample)
        return {"pixel_values": rescale_and_normalize(video, self.settings)}, [self.image_seq_length] * len(frames)

    def placeholders(self, token, counts, timing):
        # the begin-image token the chat template wrote stays, its image's tokens after it
        return [f"\n\n{token}{self.soft_token * count}{self.end_token}\n\n" for count in counts]

    def token_types(self, ids, tokenizer) -> dict:
        return {"token_type_ids": (ids == tokenizer.convert_tokens_to_ids(self.soft_token)).long()}


def vision(spec: FamilySpec, config: ProcessorConfig) -> Gemma3Builder:
    image = {**CLASS_PIXELS, **{key: value for key, value in config.image.items() if value is not None}}
    if image.get("do_pan_and_scan"):  # off unless asked; its extra crops would change what the model sees
        raise ValueError("Gemma 3's image processor is set to pan and scan, which timefoil does not build "
                         "(--model-arg preprocess=official uses the model's own processor)")
    size = image.get("size") or {}
    seq_length = config.processor.get("image_seq_length") or config.image.get("image_seq_length") or 256
    builder = Gemma3Builder(
        family=spec.name, settings=PixelSettings.read(image), image_token=BEGIN_IMAGE,
        soft_token=config.image_token or SOFT_TOKEN, height=int(size.get("height", 224)),
        width=int(size.get("width", 224)), image_seq_length=int(seq_length))
    builder.extras = {"height": builder.height, "width": builder.width, "image_seq_length": builder.image_seq_length}
    return builder


def tiny_model(text: dict, ids: dict, hidden: int):
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    layers = text["num_hidden_layers"]
    head_dim = hidden // text["num_attention_heads"]
    # a sliding window shorter than the prompt, as the hub models' 1024 is shorter than 8 frames of 256 tokens
    text = dict(model_type="gemma3_text", **text, head_dim=head_dim, query_pre_attn_scalar=head_dim,
                sliding_window=16, layer_types=["sliding_attention" if i % 2 == 0 else "full_attention"
                                                for i in range(layers)])
    # 32x32 images of 8x8 patches: 16 patches, average-pooled to 2x2 = 4 soft tokens
    vision_config = dict(model_type="siglip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, image_size=32, patch_size=8)
    config = Gemma3Config(text_config=text, vision_config=vision_config, mm_tokens_per_image=4,
                          boi_token_index=ids[BEGIN_IMAGE], eoi_token_index=ids[END_IMAGE],
                          image_token_index=ids[SOFT_TOKEN])
    model = Gemma3ForConditionalGeneration(config)
    # the projection into the text starts at zero, which would hide every pixel from a random model
    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0, 0.5)
    return model


# the hub template's layout: a turn per message, "model" for the assistant, <start_of_image> per image
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] | trim }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<start_of_image>{% elif c['type'] == 'text' %}{{ c['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")

GEMMA3 = FamilySpec(
    name="gemma3", title="Gemma 3", vision=vision,
    inputs=("images",),  # it has no video input: the sampled frames go in as images
    # on: the images' two-way attention stays inside each image, and an image lies wholly in the
    # shared prefix (its tokens are marked in token_type_ids, which the prefix is given) while the
    # suffix is text, which attends causally; a cut inside an image falls back to the plain path
    prefix_reuse_off=None,
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={},  # none: the processor has an image processor only
        image_processor={"size": {"height": 896, "width": 896}, "resample": 2, "do_resize": True, "do_rescale": True,
                         "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
                         "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": None, "do_pan_and_scan": None,
                         "image_processor_type": "Gemma3ImageProcessor"},
        processor={"processor_class": "Gemma3Processor", "image_seq_length": 256},
        model=tiny_model, small_image={"size": {"height": 32, "width": 32}}, small_processor={"image_seq_length": 4},
        special_tokens=TINY_SPECIAL + (BEGIN_IMAGE, END_IMAGE, SOFT_TOKEN) + TURN_TOKENS, named_tokens=NAMED_TOKENS,
        adds_bos=True))
