"""How many suffix rows one forward takes: as many as a memory budget holds.

A suffix forward costs the host about the same whatever its rows (on a GPU, a decoder's
forward is a fixed train of small kernels launched one by one), so fewer, wider forwards
are faster until memory runs out. The rows a forward takes are therefore bounded by an
estimate of what each row holds while it runs, against a share of the device's free memory
read once per answering call, not by a fixed count; ``batch_size``, when given, caps them too.

What a row holds (worst case, every layer's cache kept until the forward ends):
- its keys and values, prefix and suffix, for every layer, twice (the prefix's rows made for
  the forward and the forward's concatenation of them with the suffix's);
- one layer's activations over its suffix tokens (the MLP's widest, a few hidden widths);
- one layer's attention weights, where the attention implementation materialises them;
- the logits of its read positions in float32, with their log-softmax.
"""
from __future__ import annotations

from dataclasses import dataclass

CPU_BUDGET = 4 << 30  # bytes a forward may take on the host (or any device without a free-memory query)
DEVICE_SHARE = 0.5  # of the device's free memory: the rest is left for the allocator's slack and the next video


@dataclass(frozen=True)
class RowCost:
    """Bytes one row costs a forward, from the language model's shape."""

    kv_per_token: int  # keys and values of one token over every layer
    activation_per_token: int  # one layer's activations of one token
    heads: int
    vocabulary: int

    @classmethod
    def of(cls, config, element_bytes: int) -> "RowCost":
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden = getattr(text, "hidden_size", 0) or 0
        heads = getattr(text, "num_attention_heads", 1) or 1
        kv_heads = getattr(text, "num_key_value_heads", None) or heads
        head_dim = getattr(text, "head_dim", None) or max(hidden // heads, 1)
        layers = getattr(text, "num_hidden_layers", 1) or 1
        intermediate = getattr(text, "intermediate_size", None) or 4 * hidden
        return cls(kv_per_token=layers * 2 * kv_heads * head_dim * element_bytes,
                   activation_per_token=(4 * hidden + 3 * intermediate) * element_bytes,
                   heads=heads, vocabulary=getattr(text, "vocab_size", 0) or 0)

    def prefix(self, tokens: int) -> int:
        """A one-row prefix cache held until its suffixes have run."""
        return self.kv_per_token * tokens

    def forward(self, rows: int, cached: int, width: int, reads: int) -> int:
        """A forward of ``rows`` suffixes ``width`` tokens wide over ``cached`` prefix slots,
        logits kept at ``reads`` positions."""
        row = (2 * self.kv_per_token * (cached + width) + self.activation_per_token * width
               + 4 * self.heads * width * (cached + width) + 3 * 4 * self.vocabulary * reads)
        return rows * row


def free_bytes(devices) -> int:
    """What a forward may take: a share of the least free memory among the model's CUDA
    devices (the free memory the driver reports plus what torch's allocator holds unused),
    else ``CPU_BUDGET``."""
    import torch

    cuda = [d for d in devices if getattr(d, "type", None) == "cuda"]
    if not cuda:
        return CPU_BUDGET
    free = []
    for device in cuda:
        unused, _ = torch.cuda.mem_get_info(device)
        free.append(unused + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
    return int(DEVICE_SHARE * min(free))


__all__ = ["CPU_BUDGET", "DEVICE_SHARE", "RowCost", "free_bytes"]
