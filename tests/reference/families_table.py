"""The table of every architecture of the installed transformers that ``hf:`` or ``clip:`` could be
asked to show a video (every image-text-to-text and multimodal LM, and every architecture with a
video processor), as docs/models.md gives it ("Every video architecture"): built by timefoil,
shown through its own processor (the open path, with what ``check_open_families.py`` found on its
tiny model), matched by ``clip:``, or refused with the reason it is refused at load.

    PYTHONPATH=src python tests/reference/families_table.py        # rewrite the table in docs/models.md

It needs transformers, not torchvision; a test holds the committed table to this script's output,
so a transformers release with new architectures cannot go unlisted.
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "..", "docs", "models.md")
RESULTS = os.path.join(HERE, "open_families", "results.json")
BEGIN, END = "<!-- architectures: begin (tests/reference/families_table.py) -->", "<!-- architectures: end -->"
# image-text models people show videos to as frames: listed with the video architectures
IMAGE_ONLY_FOR_VIDEO = ("llava", "llava_next", "idefics2", "idefics3", "mllama", "paligemma", "mistral3", "gemma3",
                        "gemma3n", "aya_vision", "lfm2_vl")
CONTRASTIVE = {"pe_video": "`clip:` (PE-Video: whole-clip video embeddings)",
               "x_clip": "`clip:` (X-CLIP: whole-clip video embeddings)"}


def architectures() -> list[str]:
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    from timefoil.models.local.hf_loading import language_model_types

    return sorted(set(VIDEO_PROCESSOR_MAPPING_NAMES) | language_model_types() | set(IMAGE_ONLY_FOR_VIDEO)
                  | set(CONTRASTIVE))


def processor_parts(model_type: str) -> set[str] | None:
    """The parts of the processor transformers names for ``model_type`` (image_processor,
    video_processor, feature_extractor...), None where it names none or its class cannot be read
    here (it needs a package not installed)."""
    import importlib
    import inspect

    import transformers
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    name = PROCESSOR_MAPPING_NAMES.get(model_type)
    cls = getattr(transformers, name, None) if name else None
    if cls is None:
        return None
    try:  # the class from its own module: the top-level name is a placeholder where a backend the
        # processor needs at run time is missing (Voxtral Realtime's mistral-common)
        cls = getattr(importlib.import_module(f"transformers.models.{model_type}.processing_{model_type}"), name, cls)
    except Exception:  # noqa: BLE001 - a module that needs a missing package to import: the class as found
        pass
    try:
        return set(cls.get_attributes())
    except Exception:  # noqa: BLE001 - a class that needs a missing package: read its signature
        params = inspect.signature(cls.__init__).parameters
        if any(p.kind is p.VAR_POSITIONAL for p in params.values()):
            return None
        return set(params)


def frames_as(model_type: str) -> str:
    """What the open path shows the frames as: a video where its processor has a video processor."""
    parts = processor_parts(model_type)
    if parts is None:
        return "video, else images"
    return "video" if "video_processor" in parts else "images"


def row(model_type: str, results: dict) -> str:
    from timefoil.models.families import FAMILIES
    from timefoil.models.local.hf_loading import language_model_types
    from timefoil.models.local.hf_open import why_refused

    if model_type in FAMILIES:
        spec = FAMILIES[model_type]
        reuse = f"off: {spec.prefix_reuse_off}" if spec.prefix_reuse_off else "on"
        return (f"| `{model_type}` | built by timefoil, exact (committed digests of the official processor) | "
                f"{', '.join(spec.inputs)} | every protocol on a tiny model in CI; inputs and logits equal the "
                f"model card's | {reuse} |")
    if model_type in CONTRASTIVE:
        return f"| `{model_type}` | {CONTRASTIVE[model_type]} | video | similarity on a tiny model in CI | n/a |"
    if model_type not in language_model_types():
        return (f"| `{model_type}` | refused: a video encoder or classifier without a language head, so it "
                f"answers no request kind | | | n/a |")
    why = why_refused(model_type)
    if why:
        return f"| `{model_type}` | refused: {why} | | | n/a |"
    parts = processor_parts(model_type)
    if parts is not None and not parts & {"image_processor", "video_processor"}:
        return (f"| `{model_type}` | refused: its processor takes no images or video (speech, protein...), so it "
                "cannot be shown frames | | | n/a |")
    found = results.get(model_type)
    if not found:
        verified = "not verified on a tiny model"
    elif found["status"] == "runs":
        verified = (f"entailment, choice and generation on a tiny model, 0 errors; inputs, last-token logits and "
                    f"greedy text equal the model card's (transformers {found['transformers']})"
                    + (f"; note: {found['note']}" if found.get("note") else ""))
    elif found["status"] == "refused":
        return f"| `{model_type}` | refused: {found['reason']} | | | n/a |"
    else:
        reason = found.get("error") or found.get("first_error") or ", ".join(
            k for k in ("inputs_equal", "logits_equal", "generation_equal") if not found.get(k))
        verified = f"failed on its tiny model ({reason})"
    shown = (found or {}).get("shown_as") or frames_as(model_type)
    return (f"| `{model_type}` | its own processor (the open path) | {shown} | {verified} | "
            "off (one prompt per forward) |")


def table() -> str:
    results = json.load(open(RESULTS)) if os.path.exists(RESULTS) else {}
    lines = [BEGIN, "| architecture | how timefoil shows it | frames as | verified | prefix reuse |",
             "|---|---|---|---|---|"]
    lines += [row(model_type, results) for model_type in architectures()]
    return "\n".join(lines + [END])


def rewrite(path: str = DOCS) -> None:
    text = open(path).read()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    with open(path, "w") as handle:
        handle.write(text[:start] + table() + text[end:])


if __name__ == "__main__":
    rewrite(sys.argv[1] if len(sys.argv) > 1 else DOCS)
