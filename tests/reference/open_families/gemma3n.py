"""Gemma 3n (google/gemma-3n-E4B-it): no tiny random model is made. Its vision tower is timm's
MobileNetV5, created through ``timm.create_model`` (transformers' TimmWrapperModel raises
ImportError without timm), and even with its channels cut to a tenth it keeps about 12M
parameters and 256 tokens of 2048 channels per frame, fixed by its multi-scale fusion."""
from __future__ import annotations

MODEL_TYPE = "gemma3n"
REFUSED = ("its vision tower is timm's MobileNetV5, which cannot be built without the timm package (absent here) "
           "and cannot be made tiny (12M parameters and 256 tokens per frame even with its channels cut to a tenth)")
