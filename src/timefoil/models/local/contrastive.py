"""Contrastive encoders: transformers CLIP / SigLIP / SigLIP 2 / X-CLIP / PE-Video, open_clip,
and BLIP-2 image-text matching (see blip2.py).

Each unique (video content, sampling) and each unique text is encoded once per model
instance (so once per run). A video embedding is the mean of its L2-normalised frame
embeddings, normalised again (X-CLIP and PE-Video embed the whole clip: see pe_video.py);
similarity is the cosine, the model's own logit (scale * cosine + bias) with ``score=logit``,
or a SigLIP model's match probability (the logit's sigmoid) with ``score=sigmoid``, SigLIP 2's
default.
"""
from __future__ import annotations

from itertools import groupby
from typing import Any, Sequence

from ...core.hashing import stable_hash
from ...core.memory import is_out_of_memory, release_memory
from ...core.options import checked_count
from ..requests import Answer, Request
from ...video.frames import content_key
from ..base import FrameSource, Model, ranks_of
from .blip2 import BLIP2_SCORES, BLIP2_TYPES, Blip2Matcher, load_blip2_retrieval
from .hf_loading import weights_fingerprint
from .placement import dtype_name, out_of_memory, place, ran_on, torch_dtype
from ..torchvision_match import advice
from .pe_video import PE_VIDEO_TYPES, load_pe_video, text_embeddings, video_embedding

EMBEDDING_SCORES = ("cosine", "logit", "sigmoid")


def _features(output):
    """transformers 5 returns an output object whose pooler_output is the projection."""
    return output if hasattr(output, "shape") else output.pooler_output


def on_device(model, path: str, placed):
    """``model`` moved where it answers; a device without room for it is one line naming the
    settings (it was "unexpected OutOfMemoryError")."""
    try:
        return model.eval().to(placed.device)
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
    release_memory()  # out of the except block: the cached blocks of what failed to move go back
    raise ValueError(f"{path}: " + out_of_memory("moving its weights to the device", device=placed.device,
                                                 device_map=None, dtype=placed.dtype, can_spread=False))


class Contrastive(Model):
    weights_memo_dir: str | None = None  # the cache folder keeping its weights' hashes (load_model sets it)

    def __init__(self, path: str, *, backend: str = "hf", dtype: str = "auto", device: str | None = None,
                 batch_size: int = 32, score: str | None = None, pretrained: str | None = None,
                 model=None, processor=None):
        """``score``: cosine, logit or sigmoid for embedding models (default cosine, SigLIP 2
        sigmoid); itm or itc for BLIP-2 (default itm)."""
        import torch

        if score is not None and score not in EMBEDDING_SCORES + BLIP2_SCORES:  # refused before weights load
            raise ValueError(f"score must be one of {', '.join(EMBEDDING_SCORES + BLIP2_SCORES)}, not {score!r}")
        self.torch, self.path, self.backend = torch, path, backend
        self.pretrained, self.batch_size = pretrained, checked_count("batch_size", batch_size)
        self.name = f"{'openclip' if backend == 'openclip' else 'clip'}:{path}"
        placed = place(device=device, dtype=dtype)  # the first GPU where there is one, in its own dtype
        self.device = torch.device(placed.device)
        if model is None:
            model, processor = (load_openclip(path, pretrained) if backend == "openclip"
                                else load_hf_contrastive(path, placed.dtype))
        self.model, self.processor = on_device(model, path, placed), processor
        self.dtype = dtype_name(self.model)  # what "auto" came to: the fingerprint names the precision
        self.kind = getattr(getattr(model, "config", None), "model_type", "openclip")
        # X-CLIP embeds each frame position: it takes exactly its vision config's count (the run
        # samples that many; see frame_counts)
        self.fixed_frames = getattr(model.config.vision_config, "num_frames", None) if self.kind == "xclip" else None
        self.matcher = None
        if self.kind in BLIP2_TYPES:
            self.score_kind = score or "itm"
            self.matcher = Blip2Matcher(self.model, processor, self.score_kind, self.device, self.batch_size)
        else:
            self.score_kind = score or ("sigmoid" if self.kind == "siglip2" else "cosine")
            if self.kind in PE_VIDEO_TYPES and self.score_kind != "cosine":
                # its forward's logit multiplies unnormalised embeddings: not the cosine's scale
                raise ValueError(f"score={self.score_kind} is not offered for PE-Video; it scores cosine")
            if self.score_kind not in EMBEDDING_SCORES:
                raise ValueError(f"score={self.score_kind} is for BLIP-2; this {self.kind} model scores with "
                                 f"{', '.join(EMBEDDING_SCORES)}")
            if self.score_kind == "sigmoid" and getattr(self.model, "logit_bias", None) is None:
                raise ValueError(f"score=sigmoid needs a model trained with a sigmoid loss (SigLIP); "
                                 f"this {self.kind} model has no logit bias")
        self._videos: dict[str, Any] = {}
        self._texts: dict[str, Any] = {}
        # texts longer than the text encoder reads, by text: (their tokens, the limit, a digest of
        # the tokens read); texts read as the same tokens share one embedding, hence one score
        self._cut: dict[str, tuple[int, int, str]] = {}
        self._read: dict[str, Any] = {}  # the embedding of each tokens' digest
        self._tokenizer = None
        self.stats = {"video_encodes": 0, "text_encodes": 0, "frames_encoded": 0}

    def fingerprint(self) -> dict:
        backend = "openclip" if self.backend == "openclip" else getattr(
            getattr(self.processor, "image_processor", None), "backend", "pil")
        weights = weights_fingerprint(self.path, self.weights_memo_dir)
        if self.kind in PE_VIDEO_TYPES:
            return {"name": self.name, "weights": weights, "dtype": self.dtype,
                    "score": self.score_kind, "image_backend": "timefoil",
                    "pixels": self.processor.pixels.fingerprint(), "pooling": "whole clip"}
        return {"name": self.name, "pretrained": self.pretrained, "weights": weights,
                "dtype": self.dtype, "score": self.score_kind, "image_backend": backend,
                "pooling": "mean of frame scores" if self.matcher else "mean"}

    @property
    def notes(self) -> dict:
        return {"ran_on": ran_on(self.model, self.device)}

    # -- encoders --------------------------------------------------------------------------
    def _encode_frames(self, frames) -> Any:
        torch = self.torch
        if self.matcher:
            self.stats["frames_encoded"] += len(frames)
            return self.matcher.encode_frames(frames)
        if self.kind == "xclip":  # X-CLIP encodes the clip as a whole
            pixels = self.processor(videos=[list(frames)], return_tensors="pt")["pixel_values"].to(self.device)
            return torch.nn.functional.normalize(_features(self.model.get_video_features(pixel_values=pixels))[0],
                                                 dim=-1)
        if self.kind in PE_VIDEO_TYPES:  # every frame at once: the temporal encoder pools the clip
            self.stats["frames_encoded"] += len(frames)
            pixels = self.processor.pixels(frames).to(self.device, self.model.dtype)
            return torch.nn.functional.normalize(video_embedding(self.model, pixels)[0].float(), dim=-1)
        parts = []
        for start in range(0, len(frames), self.batch_size):
            chunk = list(frames[start:start + self.batch_size])
            if self.backend == "openclip":
                pixels = torch.stack([self.processor(_pil(f)) for f in chunk]).to(self.device)
                feats = self.model.encode_image(pixels)
            else:
                # the image processor itself: the SigLIP 2 processor would override its patch size
                # and patch budget with class defaults (16 and 256) whatever the checkpoint says
                inputs = self.processor.image_processor(chunk, return_tensors="pt")
                inputs = {k: v.to(self.device) for k, v in inputs.items()
                          if k in ("pixel_values", "pixel_attention_mask", "spatial_shapes")}
                feats = _features(self.model.get_image_features(**inputs))
            parts.append(torch.nn.functional.normalize(feats.float(), dim=-1))
        self.stats["frames_encoded"] += len(frames)
        return torch.nn.functional.normalize(torch.cat(parts).mean(0), dim=-1)

    def _encode_texts(self, texts: list[str]) -> Any:
        torch = self.torch
        if self.matcher:
            return self.matcher.encode_texts(texts)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start:start + self.batch_size]
            if self.backend == "openclip":
                feats = self.model.encode_text(self.tokenizer(chunk).to(self.device))
            else:
                padding = "max_length" if self.kind.startswith("siglip") else True
                batch = self.processor(text=chunk, return_tensors="pt", padding=padding, truncation=True)
                batch = {k: v.to(self.device) for k, v in batch.items() if k in ("input_ids", "attention_mask")}
                feats = (text_embeddings(self.model, **batch) if self.kind in PE_VIDEO_TYPES
                         else _features(self.model.get_text_features(**batch)))
            parts.append(torch.nn.functional.normalize(feats.float(), dim=-1))
        return torch.cat(parts)

    @property
    def tokenizer(self):
        """open_clip's tokenizer for the architecture, made once (not per batch)."""
        if self._tokenizer is None:
            import open_clip

            self._tokenizer = open_clip.get_tokenizer(self.path)
        return self._tokenizer

    def _scores(self, video, texts: list[str]) -> list[float]:
        """The score of each text (already encoded) against one video."""
        if self.matcher:
            return self.matcher.scores(video, [self._texts[t] for t in texts])
        features = [self._texts[t] for t in texts]
        unique = list({id(f): f for f in features}.values())  # one row per embedding
        rows = {id(f): n for n, f in enumerate(unique)}
        products = (self.torch.stack(unique) @ video).tolist()
        cosines = [products[rows[id(f)]] for f in features]  # a shared embedding: exactly one score
        if self.score_kind == "cosine":
            return cosines
        scale = float(self.model.logit_scale.exp())
        bias = float(getattr(self.model, "logit_bias", None) or 0.0)
        logits = [scale * c + bias for c in cosines]
        return logits if self.score_kind == "logit" else self.torch.tensor(logits).sigmoid().tolist()

    # -- answering -------------------------------------------------------------------------
    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        """Requests sharing a video (adjacent, as the runner groups them) scored together."""
        with self.torch.inference_mode():
            self._encode_new_texts([r.text for r in requests])
            answers = []
            for _, group in groupby(requests, key=self._video_key):
                group = list(group)
                video = self._video_feature(group[0], frames)
                answers += ([video] * len(group) if isinstance(video, Answer) else
                            [Answer(score=s, meta=self._text_cut(r.text))
                             for s, r in zip(self._scores(video, [r.text for r in group]), group)])
        return answers

    def answer_rank(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        """Every candidate text scored against the video in one product (each unique text and
        video encoded once per run), and the asked candidates' ranks reported."""
        with self.torch.inference_mode():
            answers = []
            for request in requests:
                self._encode_new_texts(list(request.option_texts))
                video = self._video_feature(request, frames)
                if isinstance(video, Answer):
                    answers.append(video)
                    continue
                scores = self._scores(video, list(request.option_texts))
                answers.append(Answer(meta={"ranks": ranks_of(scores, request.ask), "candidates": len(scores),
                                            **self._texts_cut(list(request.option_texts))}))
        return answers

    def _encode_new_texts(self, texts: list[str]) -> None:
        """Encodes those of ``texts`` not seen yet: each text once per model instance. Where the
        tokens the encoder reads are known (transformers' tokenizers), texts read as the same
        tokens (two captions that differ only past the text limit) share one embedding: their
        scores are equal, a tie, never told apart by float noise from separate encodings."""
        new_texts = list(dict.fromkeys(t for t in texts if t not in self._texts))
        if not new_texts:
            return
        read = self._tokens_read(new_texts)
        if read is None:
            for text, feature in zip(new_texts, self._encode_texts(new_texts)):
                self._texts[text] = feature
        else:
            fresh = list(dict.fromkeys(digest for digest in read if digest not in self._read))
            first: dict[str, str] = {}  # each digest's first text: the one encoded
            for text, digest in zip(new_texts, read):
                first.setdefault(digest, text)
            if fresh:
                for digest, feature in zip(fresh, self._encode_texts([first[d] for d in fresh])):
                    self._read[digest] = feature
            for text, digest in zip(new_texts, read):
                self._texts[text] = self._read[digest]
        self.stats["text_encodes"] += len(new_texts)

    def _tokens_read(self, texts: list[str]) -> list[str] | None:
        """A digest of the tokens the text encoder reads of each text, noting each text cut to
        the limit in ``_cut``; None where the tokenizer is not transformers' own (open_clip,
        BLIP-2's matcher and PE-Video read their texts themselves)."""
        tokenizer = getattr(self.processor, "tokenizer", None)
        if self.backend != "hf" or self.matcher or self.kind in PE_VIDEO_TYPES or tokenizer is None:
            return None
        read = tokenizer(texts, truncation=True)["input_ids"]
        whole = tokenizer(texts, truncation=False)["input_ids"]
        limit = getattr(tokenizer, "model_max_length", None)
        digests = []
        for text, kept, full in zip(texts, read, whole):
            digest = stable_hash(list(kept), 16)
            if len(full) > len(kept):
                self._cut[text] = (len(full), int(limit) if isinstance(limit, int) else len(kept), digest)
            digests.append(digest)
        return digests

    def _text_cut(self, text: str) -> dict:
        """What a similarity answer says of its text where it was cut to the limit: its tokens,
        the limit and a digest of the tokens read (two texts with one digest read the same)."""
        if text not in self._cut:
            return {}
        tokens, limit, digest = self._cut[text]
        return {"text_cut": {"tokens": tokens, "limit": limit, "read": digest}}

    def _texts_cut(self, texts: Sequence[str]) -> dict:
        """What a rank answer says of its candidates cut to the limit: how many, and the limit."""
        cut = [self._cut[t] for t in dict.fromkeys(texts) if t in self._cut]
        return {"texts_cut": len(cut), "text_limit": cut[0][1]} if cut else {}

    @staticmethod
    def _video_key(request: Request) -> str | None:
        if request.video is None:
            return None
        return stable_hash([content_key(request.video), request.sampling.to_json()])

    def _video_feature(self, request: Request, frames: FrameSource):
        if request.video is None:
            return Answer(error="a contrastive model needs the video (no blind mode)")
        key = self._video_key(request)
        if key not in self._videos:
            self._videos[key] = self._encode_frames(frames(request.video, request.sampling).array)
            self.stats["video_encodes"] += 1
        return self._videos[key]


def _pil(frame):
    from PIL import Image

    return Image.fromarray(frame)


def load_hf_contrastive(path: str, dtype: str = "float32"):
    from transformers import AutoConfig, AutoModel, AutoProcessor

    from ...core.weights import quiet_transformers

    quiet_transformers()
    config = AutoConfig.from_pretrained(path)
    if config.model_type in PE_VIDEO_TYPES:  # no processor: its video processor needs torchvision
        return load_pe_video(path, dtype)
    # The PIL image processors on every machine: where torchvision is installed transformers
    # would switch to its torchvision ones, whose pixels differ by up to 1/255.
    processor = AutoProcessor.from_pretrained(path, backend="pil")
    if config.model_type in BLIP2_TYPES:  # AutoModel would give the generative BLIP-2, with no matching head
        return load_blip2_retrieval(path, config, torch_dtype(dtype)), processor
    return AutoModel.from_pretrained(path, dtype=torch_dtype(dtype)), processor


def load_openclip(arch: str, pretrained: str | None):
    try:
        import open_clip
    except Exception as exc:  # absent, or torchvision not matching torch ("operator torchvision::nms ...")
        raise ImportError(f"open_clip cannot be imported ({type(exc).__name__}: {str(exc)[:120]}); it needs "
                          f"open_clip_torch and a torchvision built for your torch ({advice()}): see the README, "
                          "'open_clip'") from None
    model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=pretrained)
    return model, preprocess
