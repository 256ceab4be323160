"""GLM-4.5V's mixture-of-experts text model (Glm4vMoe) with GLM-4.1V's processors: its checkpoints
name ``Glm4vProcessor``, so its frames are written as GLM-4.1V's (whole seconds after each block)."""
from __future__ import annotations

from .glm4v import save

MODEL_TYPE = "glm4v_moe"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    # four small experts, two a token; the first layer dense as in the released config
    save(folder, words, "Glm4vMoe", processors="Glm4v",
         text_sizes={"moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
                     "n_shared_experts": 1})
