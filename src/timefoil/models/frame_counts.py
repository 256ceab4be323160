"""Models that take a fixed number of frames, told from their config.json before any weight
loads: X-CLIP's video encoder adds a learnt embedding per frame position (its vision config's
``num_frames``), so a clip of any other length fails in its forward. A run gives such a model
that many frames (``execution.config.fitted_to_model``)."""
from __future__ import annotations

import json
import os

XCLIP_FRAMES = 8  # XCLIPVisionConfig's default, where a config.json leaves num_frames out


def fixed_frames(config: dict) -> tuple[int, str] | None:
    """(the frame count a model with this config takes, where it comes from), or None where the
    model takes any count."""
    if config.get("model_type") == "xclip":
        vision = config.get("vision_config") or {}
        count = vision.get("num_frames", XCLIP_FRAMES) if isinstance(vision, dict) else XCLIP_FRAMES
        return (count, "its vision config's num_frames") if isinstance(count, int) and count > 0 else None
    return None


def folder_frames(name: str | None) -> tuple[int, str] | None:
    """``fixed_frames`` of the model ``name`` names (a folder, or a hub id in the local cache);
    None where its config cannot be read here (the loaded model then says, see ``Contrastive``)."""
    config = _config(name) if name else None
    return fixed_frames(config) if isinstance(config, dict) else None


def _config(name: str) -> dict | None:
    path = os.path.join(name, "config.json")
    if not os.path.isdir(name):
        try:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(name, "config.json")
        except Exception:  # noqa: BLE001 - no hub client, or a name it refuses: nothing known here
            return None
        if not isinstance(found, str):
            return None
        path = found
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):  # unreadable here: the load itself says what is wrong
        return None


__all__ = ["fixed_frames", "folder_frames"]
