"""Prefix reuse: requests that share a video and the prompt before their first difference
run that prefix once; every suffix runs, batched, on the prefix's KV cache taken once per
row, at the positions it has in its full sequence. Exact: the same tokens at the same
positions as the plain path.

What the host does per video: one encode of the first prompt (pixels, positions), the other
prompts' text after the video tokenised alone (``InputEncoder.encode_shared``), and every
chunk's tokens, masks, positions and read indexes made before the first forward and sent
to the device without waiting. What the device gives back: nothing until the caller reads
the rows (one read per video; ``rows_read``)."""
from __future__ import annotations

import copy
from typing import Any

from .context import refuse_past_context
from .greedy import Continuation, cache_keyword, cache_of, kept_logits
from ..video_inputs import _torch

# per-token types that mark vision tokens (nonzero), cut with the prefix: Qwen's and Gemma 3's
TOKEN_TYPE_INPUTS = ("mm_token_type_ids", "token_type_ids")


class PrefixReuse:
    """The prefix-reuse forward of a generative model: mixed into ``HFGenerative``, whose
    encoding (``_on_device``, ``inputs``), plain forward and greedy continuation it uses."""

    def _prefix_forward(self, prompts: list[tuple[str, str]], video, asks=None,
                        said: list | None = None) -> list[tuple[Any, Any]]:
        """The shared token prefix (vision tokens and instruction) runs once; every suffix then
        runs, batched, on rows of its KV cache, at the positions it has in its full sequence:
        text after the prefix's last token (text) continues from its position, on every axis
        of Qwen's 3-D rotary positions as in flat ones.
        Each row: (next-token log-probabilities, None) or (None, the caption's mean token
        log-likelihood), both still on the device."""
        torch = _torch()
        encoded = self._encoded([p + c for p, c in prompts], video)
        self.stats["host_encodes"] += encoded.whole
        sequences, first = encoded.sequences, encoded.inputs
        refuse_past_context(self.model, [len(s) for s in sequences])
        captions = self._caption_lengths(prompts)
        shared = min(len(s) for s in sequences) - 1
        for s in sequences[1:]:
            differ = (s[:shared] != sequences[0][:shared]).nonzero()
            shared = min(shared, int(differ[0]) if len(differ) else shared)
        # logits for the first caption token come from the token before it: keep it in the suffix
        shared = min([shared] + [len(s) - n - 1 for s, n in zip(sequences, captions) if n])
        token_types = {k: first[k] for k in TOKEN_TYPE_INPUTS if k in first}
        # the video (every image) must lie wholly in the prefix, and the prefix end in text: text
        # after text continues from the position before it on every axis, where text after a
        # video continues from a position each family computes its own way
        if shared > 0 and any(types[0, shared:].any() or types[0, shared - 1] for types in token_types.values()):
            shared = 0
        if shared < 1:
            return self._plain_rows(prompts, video, asks, said)
        positions = encoded.positions
        prefix_inputs = {k: v for k, v in first.items() if k not in ("input_ids", "attention_mask", *token_types)}
        prefix_inputs.update(input_ids=sequences[0][None, :shared], position_ids=positions[..., :shared],
                             attention_mask=torch.ones(1, shared, dtype=torch.long))
        # the prefix's tokens keep their types (Gemma 3's image tokens attend both ways within
        # an image); the suffix, text only, needs none
        prefix_inputs.update({k: types[:, :shared] for k, types in token_types.items()})
        # the position after the prefix's last token, per axis ([3] for 3-D positions, [] for flat ones)
        after = positions[..., 0, shared - 1] + 1
        chunks = [self._suffix_batch(chunk, sequences, captions, shared, after, bool(asks))
                  for chunk in self._suffix_chunks([len(s) - shared for s in sequences], bool(asks))]
        prefix_inputs = self._on_device(prefix_inputs)
        chunks = [(chunk, self._on_device(host)) for chunk, host in chunks]
        if self.logits_device != self.device:  # a device_map over GPUs: the logits are on the last one
            chunks = [(chunk, {**suffix, **{k: suffix[k].to(self.logits_device, non_blocking=True)
                                            for k in ("read", "rows", "last", "caption_ids")}})
                      for chunk, suffix in chunks]
        cache = cache_of(self.model(**prefix_inputs, use_cache=True, **kept_logits(self.model, 1)))
        self.stats["prefix_forwards"] += 1
        self.stats["forward_tokens"] += shared
        self.stats["prefix_hits"] += len(prompts) - 1
        rows: list[tuple[Any, Any] | None] = [None] * len(prompts)
        answers: list = [None] * len(prompts)
        for chunk, suffix in chunks:
            kept = kept_logits(self.model, suffix["read"])
            output = self.model(input_ids=suffix["ids"], attention_mask=suffix["mask"], use_cache=True,
                                position_ids=suffix["where"], cache_position=suffix["cache_position"],
                                **{cache_keyword(self.model): self._prefix_rows(cache, len(chunk))}, **kept)
            # the read positions' logits in float32 (bfloat16 logits move p(yes) by up to 0.03)
            logits = output.logits.float()
            if not kept:  # the model computed logits everywhere: keep the read positions
                logits = logits[:, suffix["read"]]
            self.stats["forward_tokens"] += int(suffix["lengths"].sum())
            logprobs = torch.log_softmax(logits, dim=-1)
            if asks:  # each row's answer goes on from its own last token, at its own next position
                went_on: list = []
                self._continue([asks[i] for i in chunk], went_on,
                               Continuation(logits[suffix["rows"], suffix["last"]], cache_of(output), suffix["mask"],
                                            suffix["following"]))
                for i, answer in zip(chunk, went_on):
                    answers[i] = answer
            lasts = logprobs[suffix["rows"], suffix["last"]]  # each row's next-token distribution
            for b, i in enumerate(chunk):
                if captions[i]:  # its caption tokens' log-likelihoods, at consecutive kept positions
                    at = suffix["caption_at"][b]
                    scores = logprobs[b, at:at + captions[i]].gather(-1, suffix["caption_ids"][b, :captions[i], None])
                    rows[i] = (None, scores.mean())
                else:
                    rows[i] = (lasts[b], None)
        if asks:
            said += answers
        return rows  # type: ignore[return-value]

    def _suffix_batch(self, chunk: list[int], sequences: list, captions: list[int], shared: int, after,
                      generating: bool) -> tuple[list[int], dict]:
        """One chunk's suffixes as host tensors: tokens (padded after), attention mask over the
        prefix and the suffix, positions, the positions whose logits are read (each row's
        caption tokens, predicted from the token before each, or its last token) and where
        each row's reads sit among them."""
        torch = _torch()
        suffixes = [sequences[i][shared:] for i in chunk]
        width = max(len(s) for s in suffixes)
        ids = torch.full((len(chunk), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), shared + width), dtype=torch.long)
        where = torch.zeros(tuple(after.shape) + (len(chunk), width), dtype=torch.long)
        for b, s in enumerate(suffixes):
            ids[b, :len(s)] = s
            mask[b, :shared + len(s)] = 1
            where[..., b, :len(s)] = after[..., None] + torch.arange(len(s))
        read = sorted({p for b, i in enumerate(chunk)
                       for p in (range(len(suffixes[b]) - 1 - captions[i], len(suffixes[b]) - 1) if captions[i]
                                 else (len(suffixes[b]) - 1,))})
        at = {p: k for k, p in enumerate(read)}
        lengths = torch.tensor([len(s) for s in suffixes])
        caption_ids = torch.zeros((len(chunk), max([captions[i] for i in chunk] + [1])), dtype=torch.long)
        for b, i in enumerate(chunk):
            if captions[i]:
                caption_ids[b, :captions[i]] = suffixes[b][len(suffixes[b]) - captions[i]:]
        last = [at.get(len(s) - 1, 0) for s in suffixes]  # a caption's row reads no last token: any kept one
        host = {"ids": ids, "mask": mask, "where": where, "read": torch.tensor(read), "lengths": lengths,
                "rows": torch.arange(len(chunk)), "last": torch.tensor(last),
                "cache_position": torch.arange(shared, shared + width), "caption_ids": caption_ids,
                "following": (after[..., None] + lengths) if generating else None}
        host["caption_at"] = [at[len(s) - 1 - captions[i]] if captions[i] else None for s, i in zip(suffixes, chunk)]
        return chunk, host

    def _prefix_rows(self, cache, times: int):
        """A cache of ``times`` rows, each the one-row prefix cache, sharing nothing with it
        that a forward writes: the prefix is kept for the next chunk without a copy of it (a
        key/value layer's rows are a view of the prefix, which the forward's concatenation
        reads once; a linear-attention layer's states are gathered into new tensors, since
        its forward writes them in place). A layer of another kind is copied whole (counted)."""
        torch = _torch()
        from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

        fresh = copy.copy(cache)
        fresh.layers = []
        for layer in cache.layers:
            new = copy.copy(layer)
            for name, value in vars(layer).items():  # per-layer dicts (a linear layer's states) are its own
                if isinstance(value, dict):
                    setattr(new, name, dict(value))
            if type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) and getattr(layer, "keys", None) is not None:
                new.keys = layer.keys.expand(times, *layer.keys.shape[1:])
                new.values = layer.values.expand(times, *layer.values.shape[1:])
            elif hasattr(layer, "conv_states"):
                new.reorder_cache(torch.zeros(times, dtype=torch.long, device=self.device))
            elif hasattr(layer, "batch_repeat_interleave"):
                if times > 1:  # assigns new tensors: the prefix's are left as they are
                    new.batch_repeat_interleave(times)
            else:
                new = copy.deepcopy(layer)
                self.stats["cache_copies"] += 1
                if times > 1:
                    new.reorder_cache(torch.zeros(times, dtype=torch.long, device=self.device))
            fresh.layers.append(new)
        return fresh

    def _suffix_chunks(self, lengths: list[int], generating: bool) -> list[list[int]]:
        """Rows that run their suffixes together, at most ``batch_size`` a chunk. Where answers
        are generated on a model with sliding-window layers (Gemma 3), only suffixes of one
        length share a chunk: a shorter one's pads would sit inside the window of every token
        it generates, which would then see fewer real tokens than the plain path's. The same
        on a model with linear-attention layers (Qwen3.5): the pads after a shorter suffix
        would run through its recurrent state, which its generated tokens then start from."""
        order = list(range(len(lengths)))
        if generating and (self.sliding_window or self.recurrent):
            by_length: dict[int, list[int]] = {}
            for i in order:
                by_length.setdefault(lengths[i], []).append(i)
            groups = list(by_length.values())
        else:
            groups = [order]
        return [group[start:start + self.batch_size] for group in groups
                for start in range(0, len(group), self.batch_size)]


__all__ = ["PrefixReuse", "TOKEN_TYPE_INPUTS"]
