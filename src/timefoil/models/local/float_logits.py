"""Logits in float32 from a model that computes in bfloat16 or float16.

A bfloat16 logit carries 8 significant bits: near 20 it moves in steps of 0.125, so p(yes) read
from bfloat16 logits moves by up to about 0.03 near 0.5, and an answer near the line flips with
it. The output projection is therefore computed in float32 (its bfloat16 weights, exact in
float32, times the last hidden states, in float32) for every position whose logits are kept;
the layers below keep the model's own precision."""
from __future__ import annotations


def float32_logits(model) -> bool:
    """Make ``model``'s output projection compute in float32 where it computes in another
    precision; whether it now does (a projection other than a plain linear layer is left as it is)."""
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if not isinstance(head, torch.nn.Linear) or head.weight.dtype == torch.float32:
        return False
    kept: dict = {}  # the float32 copy of the weights, made once (2.2 GB for a 152k vocabulary at width 3,584)

    def in_float32(module, args, output):
        weight = kept.get("weight")
        if weight is None or weight.device != module.weight.device:
            weight = kept["weight"] = module.weight.detach().float()
        bias = None if module.bias is None else module.bias.detach().float()
        return torch.nn.functional.linear(args[0].float(), weight, bias)

    head.register_forward_hook(in_float32)
    return True


__all__ = ["float32_logits"]
