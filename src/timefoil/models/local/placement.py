"""Where a local model runs and in what precision, when the user does not say: the first GPU
torch sees, in bfloat16 where that GPU computes it natively (Ampere or newer) and float32 where
it does not, with flash-attention where it imports and can run, else torch's scaled dot product;
on a machine without one, the CPU in float32 as always. float16 only when asked: a checkpoint
trained in bfloat16 (the Qwen2 family) overflows to NaN in float16, so auto never picks it and
run.json says so when it was asked for. ``device=``, ``device_map=``, ``dtype=`` and
``attention=`` still decide when given, and run.json names what each run used."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

DTYPES = ("auto", "float32", "bfloat16", "float16")
ATTENTIONS = ("auto", "sdpa", "eager", "flash_attention_2", "flash_attention_3")
FLOAT16_NOTE = ("float16 as asked: a model trained in bfloat16 (the Qwen2 family among them) can overflow to NaN in "
                "float16; dtype=bfloat16 on an Ampere or newer GPU, or float32, avoids it")


@dataclass(frozen=True)
class Placement:
    device: str  # where inputs go: "cpu", "cuda:0", "mps" (with a device_map, the device of its first layers)
    device_map: str | None  # what from_pretrained is given: weights load straight onto the GPU
    dtype: str  # a torch dtype's name: "auto" is settled by place(), never handed on
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
    checked_device(device)
    on_gpu = device.startswith("cuda")
    if device_map is None and on_gpu:
        device_map = device  # loaded onto the GPU directly: a 7B model never sits in host memory
    if dtype == "auto":
        # the CPU's precision as before GPUs were the default; on a GPU never the checkpoint's own,
        # which may be float16 (NaN for bfloat16-trained models) or bfloat16 on a GPU without it
        dtype = ("bfloat16" if bf16_native(device) else "float32") if on_gpu else "float32"
    if attention == "auto":
        attention = best_attention(dtype, device) if on_gpu else None
    if dtype == "float16":  # only ever asked for: said now, and in run.json (ran_on's dtype_note)
        print(f"timefoil: {FLOAT16_NOTE}", file=sys.stderr)
    return Placement(device, device_map, dtype, attention)


def checked_device(device: str) -> None:
    """Nothing where torch can put a model on ``device``: cpu, cuda, cuda:N of a GPU it sees, or
    mps where torch has it; anything else (meta, which holds no weights; a typo) refused in one
    line before anything loads."""
    import torch

    cuda = re.fullmatch(r"cuda(?::([0-9]+))?", device)
    if device == "cpu":
        return
    if cuda:
        if not torch.cuda.is_available():
            raise ValueError(f"model-arg device={device}, but torch sees no GPU on this machine (torch "
                             f"{torch.__version__}, built {'with' if torch.version.cuda else 'without'} CUDA)")
        count = torch.cuda.device_count()
        if cuda.group(1) is not None and int(cuda.group(1)) >= count:
            raise ValueError(f"model-arg device={device}, but torch sees {count} GPU{'s' * (count != 1)} on this "
                             f"machine (cuda:0{f' to cuda:{count - 1}' if count > 1 else ''})")
        return
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError("model-arg device=mps, but this torch has no Apple GPU (MPS) backend here")
        return
    raise ValueError(f"model-arg device must be cpu, cuda, cuda:N or mps, not {device!r}")


def bf16_native(device: str) -> bool:
    """Whether the GPU ``device`` computes bfloat16 itself: Ampere (compute capability 8.0) or
    newer, or any ROCm GPU. torch.cuda.is_bf16_supported() alone also says yes for older GPUs
    that emulate it (slowly), and asks about the current GPU rather than this one."""
    import torch

    if torch.version.hip:
        return torch.cuda.is_bf16_supported()
    return torch.cuda.get_device_capability(device) >= (8, 0)


def best_attention(dtype: str, device: str) -> str:
    """flash-attention where it imports and can run (float16 or bfloat16, on an Ampere or newer
    GPU: elsewhere it fails at the first forward), else torch's scaled dot product."""
    import torch

    if dtype not in ("float16", "bfloat16") or torch.cuda.get_device_capability(device) < (8, 0):
        return "sdpa"
    try:
        import flash_attn  # noqa: F401  (found is not enough: a build for another torch fails to import)
    except Exception:
        return "sdpa"
    return "flash_attention_2"


def torch_dtype(name: str):
    """What from_pretrained takes for ``dtype=``: "auto" (the checkpoint's own) or a torch dtype."""
    import torch

    return name if name == "auto" else getattr(torch, name)


def dtype_name(model) -> str:
    """The dtype a loaded model computes in ("bfloat16"), named as ``dtype=`` takes it."""
    return str(getattr(model, "dtype", None) or next(model.parameters()).dtype).removeprefix("torch.")


def ran_on(model, device) -> dict[str, str]:
    """What run.json says a run used: device, dtype and attention implementation; with a
    device_map, the devices its layers went to; in float16, what that risks."""
    config = getattr(model, "config", None)
    attention = getattr(config, "_attn_implementation", None) or "default"
    said = {"device": str(device), "dtype": dtype_name(model), "attention": str(attention)}
    spread = devices_of(getattr(model, "hf_device_map", None))
    if spread:  # loaded with a device_map: where its layers went (named when memory runs out)
        said["device_map"] = spread
    if said["dtype"] == "float16":  # never chosen by auto: asked for (or a model handed over in it), and said
        said["dtype_note"] = FLOAT16_NOTE
    return said


def devices_of(device_map) -> str | None:
    """The devices a loaded model's ``hf_device_map`` puts its layers on, in order: "cuda:0",
    "cuda:0+cuda:1"; None for a model loaded without one."""
    if not isinstance(device_map, dict) or not device_map:
        return None
    named = [f"cuda:{d}" if isinstance(d, int) else str(d) for d in device_map.values()]
    return "+".join(dict.fromkeys(named))


def out_of_memory(what: str, *, device: str, device_map: str | None, dtype: str,
                  batch_size: int | None = None, can_spread: bool = True) -> str:
    """One line for a device that ran out of memory: the settings that decided how much was
    asked of it, and what asks less (``can_spread``: the model takes a device_map)."""
    settings = f"device={device}, device_map={device_map or 'none'}, dtype={dtype}"
    if batch_size is not None:
        settings += f", batch_size={batch_size}"
    tries = ["a smaller batch_size"] if batch_size is not None and batch_size > 1 else []
    if dtype == "float32":
        tries.append("dtype=bfloat16 (half the memory)")
    if can_spread and device_map != "auto" and "+" not in (device_map or ""):
        tries.append("device_map=auto (the layers spread over every GPU torch sees)")
    tries.append("a GPU with more free memory")
    ways = tries[0] if len(tries) == 1 else f"{', '.join(tries[:-1])} or {tries[-1]}"
    return f"out of memory {what} ({settings}); try {ways}"


__all__ = ["ATTENTIONS", "DTYPES", "FLOAT16_NOTE", "Placement", "best_attention", "bf16_native", "checked_device",
           "devices_of", "dtype_name", "out_of_memory", "place", "ran_on", "torch_dtype"]
