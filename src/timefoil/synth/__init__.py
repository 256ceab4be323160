"""Synthetic counterfactual videos rendered with numpy and written with PyAV."""
from .check import frame_multiset, same_frame_multiset
from .suite import FAMILIES, MANIFEST, SAME_FRAMES, build_pairs, generate

__all__ = ["FAMILIES", "MANIFEST", "SAME_FRAMES", "build_pairs", "frame_multiset", "generate",
           "same_frame_multiset"]
