"""Where a local model runs and in what precision, when the user does not say: the first GPU
torch sees, in the checkpoint's own dtype, with the fastest attention installed; on a machine
without one, the CPU in float32 as always. ``device=``, ``device_map=``, ``dtype=`` and
``attention=`` still decide when given, and run.json names what each run used."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

DTYPES = ("auto", "float32", "bfloat16", "float16")
ATTENTIONS = ("auto", "sdpa", "eager", "flash_attention_2", "flash_attention_3")


@dataclass(frozen=True)
class Placement:
    device: str  # where inputs go: "cpu", "cuda:0" (with a device_map, the device of its first layers)
    device_map: str | None  # what from_pretrained is given: weights load straight onto the GPU
    dtype: str  # a torch dtype's name, or "auto": the checkpoint's own
    attention: str | None  # attn_implementation; None: transformers' own choice (the CPU's default)

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")


def place(*, device: str | None = None, device_map: str | None = None, dtype: str = "auto",
          attention: str = "auto") -> Placement:
    """The placement asked for, with the defaults filled in (refused in one line if unknown)."""
    import torch

    if dtype not in DTYPES:
        raise ValueError(f"model-arg dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if attention not in ATTENTIONS:
        raise ValueError(f"model-arg attention must be one of {', '.join(ATTENTIONS)}, not {attention!r}")
    gpus = torch.cuda.is_available()
    if device is None:
        device = "cuda:0" if gpus and device_map in (None, "auto", "cuda") else "cpu"
    if device.startswith("cuda") and not gpus:
        raise ValueError(f"model-arg device={device}, but torch sees no GPU on this machine "
                         f"(torch {torch.__version__}, built {'with' if torch.version.cuda else 'without'} CUDA)")
    on_gpu = device.startswith("cuda")
    if device_map is None and on_gpu:
        device_map = device  # loaded onto the GPU directly: a 7B model never sits in host memory
    if dtype == "auto" and not on_gpu:
        dtype = "float32"  # the CPU's precision, as before GPUs were the default
    if attention == "auto":
        attention = best_attention() if on_gpu else None
    return Placement(device, device_map, dtype, attention)


def best_attention() -> str:
    """flash-attention where its package is installed, else torch's scaled dot product."""
    return "flash_attention_2" if importlib.util.find_spec("flash_attn") is not None else "sdpa"


def torch_dtype(name: str):
    """What from_pretrained takes for ``dtype=``: "auto" (the checkpoint's own) or a torch dtype."""
    import torch

    return name if name == "auto" else getattr(torch, name)


def dtype_name(model) -> str:
    """The dtype a loaded model computes in ("bfloat16"), named as ``dtype=`` takes it."""
    return str(getattr(model, "dtype", None) or next(model.parameters()).dtype).removeprefix("torch.")


def ran_on(model, device) -> dict[str, str]:
    """What run.json says a run used: device, dtype and attention implementation."""
    config = getattr(model, "config", None)
    attention = getattr(config, "_attn_implementation", None) or "default"
    return {"device": str(device), "dtype": dtype_name(model), "attention": str(attention)}


__all__ = ["ATTENTIONS", "DTYPES", "Placement", "best_attention", "dtype_name", "place", "ran_on", "torch_dtype"]
