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


def refuse_unfaithful(model_type: str) -> None:
    if model_type in REFUSED:
        raise ValueError(f"{model_type} is refused: {REFUSED[model_type]}")


__all__ = ["REFUSED", "ROWS", "WHY_NO_PREFIX", "WHY_ONE_ROW", "generate_alone", "model_inputs", "refuse_unfaithful"]
