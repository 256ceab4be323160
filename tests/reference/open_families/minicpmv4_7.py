"""MiniCPM-V 4.7: MiniCPM-V 4.6's layout and template (it reuses 4.6's image and video
processors); its canvas rotary positions also read the ids of the image, slice and newline
markers from the config."""
MODEL_TYPE = "minicpmv4_7"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    from .minicpmv4_6 import build

    # the newline between slice rows is a token of its own, as in Qwen's byte-level vocabulary
    build(folder, words, "MiniCPMV4_7", extra_tokens=["\n"], image_size=112, image_start_id="<image>",
          image_end_id="</image>", slice_start_id="<slice>", slice_end_id="</slice>", newline_id="\n")
