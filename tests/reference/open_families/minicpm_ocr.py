"""MiniCPM-OCR: MiniCPM-V 4.6's layout and template, keeping 4x more visual tokens."""
MODEL_TYPE = "minicpm_ocr"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    from .minicpmv4_6 import build

    build(folder, words, "MiniCPMOcr")
