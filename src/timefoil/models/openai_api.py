"""The OpenAI-compatible adapter's former home: it now lives in ``served.openai`` (its wire
format) on the transport shared by every served model (``served.transport``)."""
from .served.openai import OpenAICompatible

__all__ = ["OpenAICompatible"]
