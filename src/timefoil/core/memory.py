"""Device memory after a failure: telling an out-of-memory error from others, and giving back
what a failed forward held before anything is asked again. Neither imports torch: where torch
was never loaded, no device memory was taken."""
from __future__ import annotations

import gc
import sys


def is_out_of_memory(exc: BaseException) -> bool:
    """A GPU (CUDA or ROCm) that ran out of memory, or Apple's MPS (a RuntimeError there)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    kind = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if kind is not None and isinstance(exc, kind):
        return True
    if not isinstance(exc, RuntimeError):
        return False
    try:
        return "MPS backend out of memory" in str(exc)
    except Exception:  # noqa: BLE001 - a message that cannot be printed names no memory
        return False


def release_memory() -> None:
    """Frees what nothing refers to any more (a failed batch's activations, once its exception
    and traceback are gone) and hands torch's cached GPU blocks back, so the next forward starts
    from the memory the model itself holds. Only where torch is loaded and sees a GPU: host
    memory comes back by itself, and a collection per failed request would cost a run whose
    every request fails (a model refusing a kind) seconds each thousand."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()


__all__ = ["is_out_of_memory", "release_memory"]
