"""Prefix reuse: requests that share a video and the prompt before their first difference
run that prefix once; every suffix runs, batched, on a copy of its KV cache, at the positions
it has in its full sequence. Exact: the same tokens at the same positions as the plain path."""
from __future__ import annotations

from typing import Any

from .greedy import Continuation, cache_keyword, cache_of, kept_logits, repeat_rows
from ..video_inputs import _torch

# per-token types that mark vision tokens (nonzero), cut with the prefix: Qwen's and Gemma 3's
TOKEN_TYPE_INPUTS = ("mm_token_type_ids", "token_type_ids")


class PrefixReuse:
    """The prefix-reuse forward of a generative model: mixed into ``HFGenerative``, whose
    encoding (``_encode``, ``inputs``), plain forward and greedy continuation it uses."""

    def _prefix_forward(self, prompts: list[tuple[str, str]], video, asks=None,
                        said: list | None = None) -> list[tuple[Any, float | None]]:
        """The shared token prefix (vision tokens and instruction) runs once; every suffix then
        runs, batched, on a copy of its KV cache, at the positions it has in its full sequence
        (for Qwen's 3-D rotary positions, the text after the video continues from the prefix's
        largest position). Exact: the same tokens at the same positions."""
        torch = _torch()
        # made on the host, where the tokens and positions are read: only the prefix's inputs
        # (the video's pixels among them) and each chunk's suffixes cross to the device, once
        encoded = [self.inputs.encode([p + c], [video] if video is not None else None) for p, c in prompts]
        sequences = [e["input_ids"][0] for e in encoded]
        positions = [self.inputs.positions(self.model, e) for e in encoded]
        captions = [len(self.tokenizer.encode(c, add_special_tokens=False)) if c else 0 for _, c in prompts]
        shared = min(len(s) for s in sequences) - 1
        for s in sequences[1:]:
            differ = (s[:shared] != sequences[0][:shared]).nonzero()
            shared = min(shared, int(differ[0]) if len(differ) else shared)
        # logits for the first caption token come from the token before it: keep it in the suffix
        shared = min([shared] + [len(s) - n - 1 for s, n in zip(sequences, captions) if n])
        token_types = {k: encoded[0][k] for k in TOKEN_TYPE_INPUTS if k in encoded[0]}
        if any(types[0, shared:].any() for types in token_types.values()):
            shared = 0  # the video (every image) must lie wholly in the prefix
        if shared < 1:
            return self._plain_rows(prompts, video, asks, said)
        prefix_inputs = {k: v for k, v in encoded[0].items() if k not in ("input_ids", "attention_mask", *token_types)}
        prefix_inputs.update(input_ids=sequences[0][None, :shared], position_ids=positions[0][..., :shared],
                             attention_mask=torch.ones(1, shared, dtype=torch.long))
        # the prefix's tokens keep their types (Gemma 3's image tokens attend both ways within
        # an image); the suffix, text only, needs none
        prefix_inputs.update({k: types[:, :shared] for k, types in token_types.items()})
        prefix_inputs = self._on_device(prefix_inputs)
        cache = cache_of(self.model(**prefix_inputs, use_cache=True, **kept_logits(self.model, 1)))
        self.stats["forward_tokens"] += shared
        self.stats["prefix_hits"] += len(prompts) - 1
        rows: list[tuple[Any, float | None] | None] = [None] * len(prompts)
        answers: list = [None] * len(prompts)
        for chunk in self._suffix_chunks([len(s) - shared for s in sequences], bool(asks)):
            suffixes = [sequences[i][shared:] for i in chunk]
            width = max(len(s) for s in suffixes)
            pad = self.tokenizer.pad_token_id
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), shared + width), dtype=torch.long)
            where = positions[0][..., :1].new_zeros(positions[0].shape[:-2] + (len(chunk), width))
            for b, (i, s) in enumerate(zip(chunk, suffixes)):
                ids[b, :len(s)] = s
                mask[b, :shared + len(s)] = 1
                where[..., b, :len(s)] = positions[i][..., 0, shared:]
            following = torch.stack([positions[i][..., 0, -1] + 1 for i in chunk], dim=-1) if asks else None
            suffix = self._on_device({"ids": ids, "mask": mask, "where": where, "following": following,
                                      **{f"tokens{b}": s for b, s in enumerate(suffixes)}})
            ids, mask, where = suffix["ids"], suffix["mask"], suffix["where"]
            # logits only where they are read: each row's caption tokens (predicted from the token
            # before each) or its next-token distribution, at its own last token
            read = sorted({p for b, i in enumerate(chunk)
                           for p in (range(len(suffixes[b]) - 1 - captions[i], len(suffixes[b]) - 1) if captions[i]
                                     else (len(suffixes[b]) - 1,))})
            kept = kept_logits(self.model, torch.tensor(read, device=self.device))
            at = {p: k for k, p in enumerate(read)} if kept else {p: p for p in range(width)}
            batch_cache = _repeat_cache(cache, len(chunk))
            output = self.model(input_ids=ids, attention_mask=mask, use_cache=True, position_ids=where,
                                cache_position=torch.arange(shared, shared + width, device=self.device),
                                **{cache_keyword(self.model): batch_cache}, **kept)
            logits = output.logits
            self.stats["forward_tokens"] += sum(len(s) for s in suffixes)
            if asks:  # each row's answer goes on from its own last token, at its own next position
                lasts = torch.tensor([at[len(s) - 1] for s in suffixes], device=self.device)
                went_on: list = []
                self._continue([asks[i] for i in chunk], went_on,
                               Continuation(logits[torch.arange(len(chunk)), lasts].float(), cache_of(output), mask,
                                            suffix["following"]))
                for i, answer in zip(chunk, went_on):
                    answers[i] = answer
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            for b, i in enumerate(chunk):
                last = len(suffixes[b]) - 1
                n = captions[i]
                if n:  # positions last - n .. last - 1 are consecutive in ``read``
                    token_ids = suffix[f"tokens{b}"][last - n + 1:last + 1]
                    scores = logprobs[b, at[last - n]:at[last - n] + n].gather(-1, token_ids[:, None]).squeeze(-1)
                    rows[i] = (None, float(scores.mean()))
                else:
                    rows[i] = (logprobs[b, at[last]], None)
        if asks:
            said += answers
        return rows  # type: ignore[return-value]

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


def _repeat_cache(cache, times: int):
    """A copy of a one-row KV cache repeated ``times`` times along the batch."""
    import copy

    repeated = copy.deepcopy(cache)
    if times > 1:
        repeat_rows(repeated, times)
    return repeated


__all__ = ["PrefixReuse", "TOKEN_TYPE_INPUTS"]
