"""Answers on the open path: a vision architecture whose inputs timefoil does not build itself,
shown through its own processor (``hf_inputs``). Each prompt is its own batch, so there are no
pads, and the model computes its own positions (3-D rotary ones included) as in its model card;
generation is the model's own ``generate``, whose first step gives the answer's probabilities.
Prefix reuse stays off: no test shows it equal to the plain forward for these architectures."""
from __future__ import annotations

import copy
import inspect

from .greedy import end_ids, ends_first_line

ROWS = 1  # prompts per forward on the open path: a processor's padding is not proven safe for the model
WHY_ONE_ROW = "one prompt per forward (the model computes its own positions; padding is not proven safe for it)"
WHY_NO_PREFIX = "not shown equal to the plain forward for an architecture shown through its own processor"


# architectures whose own processor cannot show timefoil's frames faithfully (found on their tiny
# models in the live check): refused when they load, never answered wrong
REFUSED = {
    "instructblip": "its processor writes one image's query tokens per prompt however many images it is given, so "
                    "a prompt with several frames fails in the forward",
    "instructblipvideo": "its processor drops a videos input (a text-only answer) and always writes 4 frames' "
                         "query tokens, so the model would silently use a slice of more frames' features",
    "diffusion_gemma": "its generation is block diffusion (a block of tokens denoised together), not next-token: "
                       "it has no next-token probabilities for entailment or choice to read",
    "minimax_m3_vl": "its processor never resizes video frames (do_resize is off in its own defaults), so every frame "
                     "whose sides are not multiples of its patch size x merge size (28 as released) fails in the "
                     "processor with a reshape error",
}
TRAINING_ONLY = ("labels",)  # PaliGemma's processor returns labels: given to the model, it computes a loss


def model_inputs(model, batch: dict) -> dict:
    """The processor's outputs the model's forward names (a processor may also return metadata
    the model does not take), training targets aside."""
    named = inspect.signature(type(model).forward).parameters
    return {key: value for key, value in batch.items() if key in named and key not in TRAINING_ONLY}


def generate_alone(model, tokenizer, batch: dict, budget: int, first_line: bool):
    """One prompt's greedy answer from the model's own ``generate``: (first step's logits,
    (answer token ids, why it stopped: "eos", "line" or "max_tokens"), tokens fed after the
    prompt). Stops as ``continue_greedy`` does: at an end token (not kept), at the end of the
    first answer line where asked, or at ``budget`` new tokens."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    prompt_length = batch["input_ids"].shape[1]
    ends = end_ids(model, tokenizer)

    class FirstLine(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            done = ends_first_line(tokenizer, input_ids[0, prompt_length:].tolist())
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

    settings = copy.deepcopy(model.generation_config)
    settings.update(do_sample=False, temperature=None, top_p=None, top_k=None, max_new_tokens=max(budget, 1),
                    output_logits=True, return_dict_in_generate=True,
                    pad_token_id=tokenizer.pad_token_id, eos_token_id=sorted(ends) or None)
    output = model.generate(**batch, generation_config=settings,
                            stopping_criteria=StoppingCriteriaList([FirstLine()] if first_line else []))
    first = output.logits[0][0].float()
    new = output.sequences[0, prompt_length:].tolist()
    tokens: list[int] = []
    why = "max_tokens"
    for token in new[:max(budget, 0)]:
        if token in ends:
            why = "eos"
            break
        tokens.append(token)
        if first_line and ends_first_line(tokenizer, tokens):
            why = "line"
            break
    return first, (tokens, why), max(len(new) - 1, 0)


# How each open-path architecture's processor (transformers 5.24) is told when its frames were
# taken, and so what metadata timefoil gives it (``video_metadata`` in hf_inputs):
#   indices: it computes each frame's time as frames_indices / fps and writes it into the prompt
#            (or, Ernie 4.5-VL, draws it on the frame): given the frame's index in the source and
#            the source's rate, counted from the window's first frame or the file's
#   milliseconds: the same, but it reads whole milliseconds per frame (int(1000 / fps)) and whole
#            indices: given the time in milliseconds at 1000 frames per second
#   duration: it writes the video's length (metadata duration): given the window's length
#   fps: it spaces its temporal positions by its own fps argument: given the sampling rate
# Only the first two state when a frame was taken, so only they take ``time_origin``.
TIMES = {
    **dict.fromkeys(("cohere_compass", "cosmos3_edge", "cosmos3_omni", "ernie4_5_vl_moe", "gemma4_unified", "glm46v",
                     "glm4v", "glm4v_moe", "glm5_next", "glmga", "kimi_k25", "lfm3_vl", "molmo2", "muse_glimmer",
                     "muse_spark", "qwen3_5_moe", "qwen4_exp", "video_llama_3"), "indices"),
    "nemotron_h_omni": "milliseconds",
    "hyperclovax_vision_v2": "duration",
    # answered by their thinkers, whose config names the thinker
    **dict.fromkeys(("qwen2_5_omni", "qwen2_5_omni_thinker", "qwen3_omni_moe", "qwen3_omni_moe_thinker"), "fps"),
}
STATES_WHEN = ("indices", "milliseconds")  # the kinds that say when each frame was taken


def generation_class(model_type: str) -> str:
    """The class transformers loads ``model_type`` with as an image-text-to-text or multimodal LM."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
                                                        MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)

    return (MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(model_type)
            or MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES.get(model_type) or "")


def why_refused(model_type: str, config=None) -> str | None:
    """Why an architecture cannot answer faithfully on the open path, or None: refused by name
    (``REFUSED``), a generation that is not next-token (a diffusion class), or an
    encoder-decoder (its answer comes from a decoder fed apart from the prompt, where timefoil
    reads the next token after the prompt in one sequence); the last two for the architectures
    transformers loads as image-text-to-text or multimodal LMs. ``config``: the loaded config
    (else the architecture's config class is read)."""
    if model_type in REFUSED:
        return REFUSED[model_type]
    generator = generation_class(model_type)
    if "Diffusion" in generator:
        return (f"its generation is diffusion ({generator}), not next-token: it has no next-token probabilities "
                "for entailment or choice to read")
    if config is None:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        config = CONFIG_MAPPING[model_type] if model_type in CONFIG_MAPPING else None
    if generator and getattr(config, "is_encoder_decoder", False):
        return ("an encoder-decoder: its answer is generated by a decoder fed apart from the prompt, where timefoil "
                "reads the next token after the prompt in one sequence")
    return None


def refuse_unfaithful(model_type: str, config=None) -> None:
    why = why_refused(model_type, config)
    if why:
        raise ValueError(f"{model_type} is refused: {why}")


def refuse_frameless(model_type: str, processor) -> None:
    """A processor with neither an image nor a video processor (speech, protein) cannot be shown
    frames: refused when it loads, not request by request."""
    if not any(getattr(processor, name, None) is not None for name in ("image_processor", "video_processor")):
        raise ValueError(f"{model_type} is refused: its processor takes no images or video "
                         f"({type(processor).__name__} has neither an image nor a video processor)")


__all__ = ["REFUSED", "ROWS", "STATES_WHEN", "TIMES", "WHY_NO_PREFIX", "WHY_ONE_ROW", "generate_alone",
           "generation_class", "model_inputs", "refuse_frameless", "refuse_unfaithful", "why_refused"]
