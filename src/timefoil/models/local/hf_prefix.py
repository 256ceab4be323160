"""Prefix reuse: requests that share a video and the prompt before their first difference
run that prefix once; every suffix runs, batched, on the prefix's KV cache taken once per
row, at the positions it has in its full sequence. Exact: the same tokens at the same
positions as the plain path. A call's suffixes run in as few forwards as memory allows:
a video's all in one, and the rows of several videos together where their caches join
(``suffix_rows``, ``row_budget``).

What the host does per video: one encode of the first prompt (pixels, positions), the other
prompts' text after the video tokenised alone (``InputEncoder.encode_shared``), and every
chunk's tokens, masks, positions and read indexes made while the prefixes run and sent to
the device without waiting. What the device gives back: nothing until the caller reads the
rows (one read per video; ``rows_read``)."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from .context import refuse_past_context
from .greedy import Continuation, cache_keyword, cache_of, kept_logits
from .row_budget import free_bytes
from .suffix_rows import joinable, joined_rows, read_positions, suffix_chunks
from ..video_inputs import _torch

# per-token types that mark vision tokens (nonzero), cut with the prefix: Qwen's and Gemma 3's
TOKEN_TYPE_INPUTS = ("mm_token_type_ids", "token_type_ids")


@dataclass(eq=False)
class Prefix:
    """One video's shared prefix, run: what its suffixes need, and where their rows go."""

    sequences: list  # each prompt's whole token sequence
    captions: list[int]  # each prompt's caption tokens (0: its next token is read)
    shared: int  # the prefix's tokens
    after: Any  # the position after the prefix's last token ([3] for 3-D positions, [] for flat ones)
    cache: Any  # the prefix's one-row KV cache, on the device
    asks: list | None = None  # each prompt's (budget, ends at first line) where answers are generated
    rows: list = field(default_factory=list)
    answers: list = field(default_factory=list)

    def suffix(self, i: int):
        return self.sequences[i][self.shared:]


class PrefixReuse:
    """The prefix-reuse forward of a generative model: mixed into ``HFGenerative``, whose
    encoding (``_on_device``, ``inputs``), plain forward and greedy continuation it uses."""

    def _group_rows(self, groups: list[tuple[list[tuple[str, str]], Any, list | None]]) -> list[tuple[list, Any]]:
        """(rows, answers) of each group of prompts over one video (``(prompts, video, asks)``):
        each video's prefix runs once; then its suffixes, and where rows of several videos may
        share a forward, theirs with them, run in as few forwards as the memory budget allows
        (``_suffix_chunks``). A group whose prompts share no prefix runs the plain path."""
        budget = free_bytes(self.devices)
        out: list = []
        pending: list[Prefix] = []
        for prompts, video, asks in groups:
            prefix = self._prefix(prompts, video) if self.prefix_reuse and len(prompts) > 1 else None
            if prefix is None:
                said: list | None = [] if asks is not None else None
                out.append((self._plain_rows(prompts, video, asks, said), said))
                continue
            prefix.asks = asks
            prefix.rows, prefix.answers = [None] * len(prompts), [None] * len(prompts)
            out.append(prefix)
            pending.append(prefix)
            # prefixes held for suffixes still to run keep at most half the budget
            if sum(self.row_cost.prefix(p.shared) for p in pending) > budget // 2:
                self._suffixes(pending, budget)
                pending = []
        if pending:
            self._suffixes(pending, budget)
        return [(made.rows, made.answers if made.asks is not None else None) if isinstance(made, Prefix) else made
                for made in out]

    def _prefix(self, prompts: list[tuple[str, str]], video) -> Prefix | None:
        """The shared token prefix (vision tokens and instruction) run once, or None where the
        prompts share none that can be reused. Its suffixes later run on rows of its KV cache,
        at the positions they have in their full sequences: text after the prefix's last token
        (text) continues from its position, on every axis of Qwen's 3-D rotary positions as in
        flat ones."""
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
            return None
        positions = encoded.positions
        prefix_inputs = {k: v for k, v in first.items() if k not in ("input_ids", "attention_mask", *token_types)}
        prefix_inputs.update(input_ids=sequences[0][None, :shared], **self._unpadded_row(positions[..., :shared]))
        # the prefix's tokens keep their types (Gemma 3's image tokens attend both ways within
        # an image); the suffix, text only, needs none
        prefix_inputs.update({k: types[:, :shared] for k, types in token_types.items()})
        cache = cache_of(self.model(**self._on_device(prefix_inputs), use_cache=True,
                                    **kept_logits(self.model, 1)))
        self.stats["prefix_forwards"] += 1
        self.stats["forward_tokens"] += shared
        self.stats["prefix_hits"] += len(prompts) - 1
        return Prefix(sequences, captions, shared, positions[..., 0, shared - 1] + 1, cache)

    def _suffixes(self, prefixes: list[Prefix], budget: int) -> None:
        """Every suffix of ``prefixes`` run, in the chunks ``_suffix_chunks`` makes; each row's
        (next-token log-probabilities, None) or (None, the caption's mean token log-likelihood),
        still on the device, into its prefix's ``rows``; answers, where asked, into ``answers``.
        Every chunk's tokens, masks, positions and read indexes are made on the host and sent
        to the device before the first suffix runs, without waiting."""
        torch = _torch()
        generating = prefixes[0].asks is not None
        chunks = [(chunk, self._on_device(self._suffix_batch(chunk, generating)))
                  for chunk in self._suffix_chunks(prefixes, generating, budget)]
        if self.logits_device != self.device:  # a device_map over GPUs: the logits are on the last one
            chunks = [(chunk, {**suffix, **{k: suffix[k].to(self.logits_device, non_blocking=True)
                                            for k in ("read", "rows", "last", "caption_ids")}})
                      for chunk, suffix in chunks]
        for chunk, suffix in chunks:
            kept = kept_logits(self.model, suffix["read"])
            # eager or compiled (compiled.py): a chunk that only reads logits may run padded to
            # bucketed shapes, its extra rows copies of its last (so of its last row's prefix)
            output = self.forwards.suffix(
                dict(input_ids=suffix["ids"], attention_mask=suffix["mask"], use_cache=True,
                     position_ids=suffix["where"], cache_position=suffix["cache_position"], **kept),
                len(chunk), lambda rows, chunk=chunk: self._chunk_cache(chunk + [chunk[-1]] * (rows - len(chunk))),
                cache_keyword(self.model), reads_only=not generating)
            self.stats["suffix_forwards"] += 1
            # the read positions' logits in float32 (bfloat16 logits move p(yes) by up to 0.03)
            logits = output.logits.float()
            if not kept:  # the model computed logits everywhere: keep the read positions
                logits = logits[:, suffix["read"]]
            self.stats["forward_tokens"] += int(suffix["lengths"].sum())
            logprobs = torch.log_softmax(logits, dim=-1)
            if generating:  # each row's answer goes on from its own last token, at its own next position
                went_on: list = []
                self._continue([p.asks[i] for p, i in chunk], went_on,
                               Continuation(logits[suffix["rows"], suffix["last"]], cache_of(output), suffix["mask"],
                                            suffix["following"]))
                for (p, i), answer in zip(chunk, went_on):
                    p.answers[i] = answer
            lasts = logprobs[suffix["rows"], suffix["last"]]  # each row's next-token distribution
            for b, (p, i) in enumerate(chunk):
                n = p.captions[i]
                if n:  # its caption tokens' log-likelihoods, at consecutive kept positions
                    at = suffix["caption_at"][b]
                    p.rows[i] = (None, logprobs[b, at:at + n].gather(-1, suffix["caption_ids"][b, :n, None]).mean())
                else:
                    p.rows[i] = (lasts[b], None)
        for prefix in prefixes:  # its rows are made: its cache is let go
            prefix.cache = None

    def _unpadded_row(self, positions) -> dict:
        """The prefix's positions and attention mask, as a forward over one row without padding
        takes them: no mask (every token attends to those before it, which a mask of ones would
        say too, but transformers would read it back from the device to find out), and flat
        positions left to the model, which counts the same 0, 1, 2... itself (with positions but
        no mask, masks made before the cache exists, Gemma 3's, would read them back to look for
        packed sequences). Qwen's 3-D positions are handed over: the model cannot count them. A
        family whose model reads its own positions back without a mask keeps both (``prefix_mask``)."""
        torch = _torch()
        family = self.inputs.family
        if family is not None and family.prefix_mask:
            return {"position_ids": positions, "attention_mask": torch.ones(positions.shape[-2:], dtype=torch.long)}
        return {"position_ids": positions} if self.inputs.mrope else {}

    def _suffix_batch(self, chunk: list[tuple[Prefix, int]], generating: bool) -> dict:
        """One chunk's suffixes as host tensors: tokens (padded after), attention mask over the
        prefix slots and the suffix (a shorter prefix's slots padded before it, as the chunk's
        cache pads them), positions, the positions whose logits are read (each row's caption
        tokens, predicted from the token before each, or its last token) and where each row's
        reads sit among them."""
        torch = _torch()
        suffixes = [p.suffix(i) for p, i in chunk]
        captions = [p.captions[i] for p, i in chunk]
        cached = max(p.shared for p, _ in chunk)
        width = max(len(s) for s in suffixes)
        ids = torch.full((len(chunk), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), cached + width), dtype=torch.long)
        afters = torch.stack([p.after for p, _ in chunk], dim=-1)  # [rows] or [3, rows]
        where = torch.zeros(tuple(afters.shape) + (width,), dtype=torch.long)
        for b, ((p, _), s) in enumerate(zip(chunk, suffixes)):
            ids[b, :len(s)] = s
            mask[b, cached - p.shared:cached + len(s)] = 1
            where[..., b, :len(s)] = afters[..., b, None] + torch.arange(len(s))
        read = sorted(read_positions(suffixes, captions))
        at = {p: k for k, p in enumerate(read)}
        lengths = torch.tensor([len(s) for s in suffixes])
        caption_ids = torch.zeros((len(chunk), max(captions + [1])), dtype=torch.long)
        for b, n in enumerate(captions):
            if n:
                caption_ids[b, :n] = suffixes[b][len(suffixes[b]) - n:]
        last = [at.get(len(s) - 1, 0) for s in suffixes]  # a caption's row reads no last token: any kept one
        host = {"ids": ids, "mask": mask, "where": where, "read": torch.tensor(read), "lengths": lengths,
                "rows": torch.arange(len(chunk)), "last": torch.tensor(last),
                "cache_position": torch.arange(cached, cached + width), "caption_ids": caption_ids,
                "following": (afters + lengths) if generating else None}
        host["caption_at"] = [at[len(s) - 1 - n] if n else None for s, n in zip(suffixes, captions)]
        return host

    def _chunk_cache(self, chunk: list[tuple[Prefix, int]]):
        """The chunk's cache: each row its prefix's (rows of one prefix are next to each other)."""
        counts: dict[int, tuple[Prefix, int]] = {}
        for p, _ in chunk:
            counts[id(p)] = (p, counts.get(id(p), (p, 0))[1] + 1)
        if len(counts) == 1:
            return self._prefix_rows(chunk[0][0].cache, len(chunk))
        return joined_rows([(p.cache, n) for p, n in counts.values()], max(p.shared for p, _ in chunk))

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

    def _suffix_chunks(self, prefixes: list[Prefix], generating: bool, budget: int) -> list[list[tuple[Prefix, int]]]:
        """Rows that run their suffixes together: as many as the memory budget allows (at most
        ``batch_size`` where it was given), rows of several videos together where their caches
        join. Where answers are generated on a model with sliding-window layers (Gemma 3), only
        suffixes of one length share a chunk: a shorter one's pads would sit inside the window
        of every token it generates, which would then see fewer real tokens than the plain
        path's. The same on a model with linear-attention layers (Qwen3.5): the pads after a
        shorter suffix would run through its recurrent state, which its generated tokens then
        start from. Generated answers of several videos share a chunk only where their decode
        steps are shared too (``decode_batching``, on caches it joins)."""
        by_length = generating and (self.sliding_window or self.recurrent)
        across = (len(prefixes) > 1 and joinable([p.cache for p in prefixes])
                  and (not generating or (self._decoding is not None and not by_length)))
        return suffix_chunks(prefixes, across=across, by_length=by_length, cap=self.rows_cap, cost=self.row_cost,
                             budget=budget, every_logit=not kept_logits(self.model, 1))


__all__ = ["Prefix", "PrefixReuse", "TOKEN_TYPE_INPUTS"]
