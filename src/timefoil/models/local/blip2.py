"""BLIP-2 image-text matching (``Blip2ForImageTextRetrieval``) scored frame by frame.

Two heads, chosen by ``score``:

- ``itm``: the matching head's p(match) (softmax over its two logits), the Q-Former attending
  to the frame and the text together;
- ``itc``: the contrastive score, the highest cosine between any query token's projection and
  the text's projection.

A video's score is the mean of its frames' scores. The vision encoder runs once per video
(``itm`` keeps its patch embeddings, ``itc`` its projected query tokens) and the text side
once per text (token ids for ``itm``, the projection for ``itc``); the model's forward would
redo both for every pair.
"""
from __future__ import annotations

from typing import Any

BLIP2_TYPES = ("blip-2", "blip_2")
BLIP2_SCORES = ("itm", "itc")


class Blip2Matcher:
    def __init__(self, model, processor, score: str, device, batch_size: int):
        import torch

        if score not in BLIP2_SCORES:
            raise ValueError(f"a BLIP-2 model scores with score=itm or score=itc, not {score!r}")
        self.torch, self.model, self.processor, self.score = torch, model, processor, score
        self.device, self.batch_size = device, batch_size
        self.queries = model.query_tokens.shape[1]

    def encode_frames(self, frames) -> Any:
        """[frames, patches, width] for ``itm``; [frames, queries, dim] unit vectors for ``itc``."""
        parts = []
        for start in range(0, len(frames), self.batch_size):
            chunk = list(frames[start:start + self.batch_size])
            pixels = self.processor.image_processor(chunk, return_tensors="pt")["pixel_values"]
            vision = self.model.vision_model
            embeds = vision(pixel_values=pixels.to(self.device, vision.dtype)).last_hidden_state
            parts.append(embeds if self.score == "itm" else self._query_projections(embeds))
        return self.torch.cat(parts)

    def _query_projections(self, image_embeds):
        torch, model = self.torch, self.model
        queries = model.query_tokens.expand(image_embeds.shape[0], -1, -1)
        out = model.qformer(query_embeds=queries, encoder_hidden_states=image_embeds,
                            encoder_attention_mask=self._ones(image_embeds)).last_hidden_state
        projected = model.vision_projection(out.to(model.vision_projection.weight.dtype))
        return torch.nn.functional.normalize(projected.float(), dim=-1)

    def encode_texts(self, texts: list[str]) -> list:
        """Per text: its token ids (``itm``) or its projection, a unit vector (``itc``)."""
        torch, model = self.torch, self.model
        # text alone: the processor adds no image tokens, so none need dropping
        batch = self.processor(text=texts, return_tensors="pt", padding=True, truncation=True)
        ids, mask = batch["input_ids"].to(self.device), batch["attention_mask"].to(self.device)
        if self.score == "itm":
            return [row[m.bool()] for row, m in zip(ids, mask)]
        out = model.qformer(query_embeds=model.embeddings(input_ids=ids), query_length=0,
                            attention_mask=mask).last_hidden_state
        projected = model.text_projection(out[:, 0].to(model.text_projection.weight.dtype))
        return list(torch.nn.functional.normalize(projected.float(), dim=-1))

    def scores(self, video, texts: list) -> list[float]:
        """Mean over the video's frames of each text's score."""
        if self.score == "itc":
            per_frame = self.torch.einsum("fqd,td->ftq", video, self.torch.stack(texts)).amax(-1)
            return per_frame.mean(0).tolist()
        pairs = [(f, t) for t in range(len(texts)) for f in range(len(video))]
        matches = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            matches.append(self._match_probability(video[[f for f, _ in chunk]], [texts[t] for _, t in chunk]))
        return self.torch.cat(matches).view(len(texts), len(video)).mean(1).tolist()

    def _match_probability(self, image_embeds, ids: list):
        """p(match) of each (frame, text) pair from the matching head, read off the query
        tokens after they attended to the frame and, jointly, to the text."""
        torch, model = self.torch, self.model
        pad = model.config.qformer_config.pad_token_id or 0
        length = max(len(i) for i in ids)
        input_ids = torch.full((len(ids), length), pad, dtype=torch.long, device=self.device)
        text_mask = torch.zeros((len(ids), length), dtype=torch.long, device=self.device)
        for row, tokens in enumerate(ids):
            input_ids[row, :len(tokens)], text_mask[row, :len(tokens)] = tokens, 1
        queries = model.query_tokens.expand(len(ids), -1, -1)
        query_mask = torch.ones(queries.shape[:-1], dtype=torch.long, device=self.device)
        out = model.qformer(query_embeds=model.embeddings(input_ids=input_ids, query_embeds=queries),
                            query_length=self.queries, attention_mask=torch.cat([query_mask, text_mask], dim=1),
                            encoder_hidden_states=image_embeds,
                            encoder_attention_mask=self._ones(image_embeds)).last_hidden_state
        logits = model.itm_head(out[:, :self.queries].to(model.itm_head.weight.dtype)).mean(1)
        return logits.float().softmax(-1)[:, 1]

    def _ones(self, image_embeds):
        return self.torch.ones(image_embeds.shape[:-1], dtype=self.torch.long, device=image_embeds.device)


def load_blip2_retrieval(path: str, config, dtype):
    """The retrieval model of a BLIP-2 checkpoint; a generative one (no matching head) is
    refused rather than scored by randomly initialised heads."""
    from transformers import Blip2ForImageTextRetrieval

    architectures = getattr(config, "architectures", None) or []
    if "Blip2ForImageTextRetrieval" not in architectures:
        raise ValueError(f"clip: takes BLIP-2 image-text retrieval checkpoints (e.g. Salesforce/blip2-itm-vit-g); "
                         f"{path} is {', '.join(architectures) or 'of no stated architecture'}, "
                         "which has no matching head")
    return Blip2ForImageTextRetrieval.from_pretrained(path, dtype=dtype)
