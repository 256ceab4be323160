"""Generative models through Hugging Face transformers: video LLMs (image-text-to-text
models such as LLaVA-OneVision and Qwen2-VL) and text-only causal LMs (blind baselines).

entailment  the first-token distribution after the prompt; p(Yes) and p(No) each sum the
            token variants (case, leading space) that are single tokens; the ids are recorded.
choice      option-letter probabilities from the same distribution, and the greedy answer to the
            end of its first line (``choice_reading=letters``: the likeliest letter alone).
similarity  the mean log-probability of the caption's tokens (length-normalised likelihood),
            after "Describe the video." (``score=conditional``), or the caption alone as plain
            text (``score=perplexity``: lower perplexity wins, computed as ViLMA's official
            script does for its GPT-2/OPT rows; the default for a language model without a
            chat template).
generation  greedy decoding with a token budget.

Answers are generated on from the forward pass that read the first-token distribution (its
logits and KV cache, ``greedy``): the video and the prompt are encoded and prefilled once.

Requests that share a video and a prompt prefix (the captions of one video, both option
orders) run the prefix once and reuse its KV cache for every suffix (Qwen's 3-D rotary
positions included: each suffix runs at the positions of its full sequence), unless the
family's table row switches it off, with the reason, which run.json's notes then give.
Video inputs come from ``hf_inputs`` (timefoil's own preprocessing unless
``preprocess=official``); ``video_as=images`` shows the sampled frames as a list of images.
"""
from __future__ import annotations

import math
import os
import time
from collections import OrderedDict
from typing import Any, Sequence

from ..core.hashing import file_hash, stable_hash
from .requests import Answer, Request
from ..video.frames import Frames
from .base import FrameSource, Model, RanksBySimilarity
from .greedy import Continuation, cache_keyword, cache_of, continue_greedy, kept_logits
from .hf_inputs import InputEncoder
from .video_inputs import _torch

SIMILARITY_INSTRUCTION = "Describe the video."
BLIND_SIMILARITY_INSTRUCTION = "Describe a video in one sentence."
# Named in the fingerprint, so answers cached under the earlier rule (a start token added, the
# mean over the caption's tokens) are not reused.
PERPLEXITY_RULE = "vilma-run.py: tokenizer's own special tokens, tokens 2..L, summed cross-entropy / L"
YES_WORDS, NO_WORDS = ("Yes", "yes", "YES"), ("No", "no", "NO")
# per-token types that mark vision tokens (nonzero), cut with the prefix: Qwen's and Gemma 3's
TOKEN_TYPE_INPUTS = ("mm_token_type_ids", "token_type_ids")


def weights_fingerprint(path: str) -> str:
    """For a local directory: the config's bytes, the weight files' names and sizes, and the
    bytes of the Python files a remote-code model runs (a folder without any keeps the
    fingerprint it always had)."""
    if not os.path.isdir(path):
        return path
    listing = sorted((f, os.path.getsize(os.path.join(path, f))) for f in os.listdir(path)
                     if f.endswith((".safetensors", ".bin", ".gguf", ".json")))
    config = os.path.join(path, "config.json")
    code = code_fingerprint(path)
    return stable_hash({"files": listing, "config": file_hash(config) if os.path.exists(config) else None,
                        **({"code": code} if code else {})})


def code_fingerprint(folder: str) -> dict[str, str]:
    """Each .py file in ``folder`` (a remote-code model's configuration and modeling code): its hash."""
    if not os.path.isdir(folder):
        return {}
    return {f: file_hash(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".py")}


def loaded_code_fingerprint(model) -> dict[str, str]:
    """The code a remote-code model from the hub ran: the .py files beside its modeling module
    (transformers copies a repository's code files into one folder of its modules cache)."""
    import inspect

    try:
        return code_fingerprint(os.path.dirname(inspect.getfile(type(model))))
    except (TypeError, OSError):
        return {}


class HFGenerative(RanksBySimilarity, Model):
    def __init__(self, path: str, *, dtype: str = "float32", device: str | None = None,
                 device_map: str | None = None, revision: str | None = None, batch_size: int = 8,
                 max_new_tokens: int | None = None, prefix_reuse: bool = True, name: str | None = None,
                 preprocess: str = "timefoil", video_as: str = "auto", score: str = "auto",
                 choice_reading: str = "generate", trust_remote_code: bool = False, time_origin: str | None = None,
                 model=None, processor=None):
        torch = _torch()
        self.path, self.revision, self.dtype = path, revision, dtype
        self.trust_remote_code = bool(trust_remote_code)
        self.name = name or f"hf:{path}"
        self.batch_size = int(batch_size)
        self.max_new_tokens = int(max_new_tokens) if max_new_tokens else None
        if model is None:
            model, tokenizer = load_pretrained(path, dtype=dtype, device_map=device_map, revision=revision,
                                               trust_remote_code=self.trust_remote_code)
        else:
            tokenizer = getattr(processor, "tokenizer", processor)
            processor = processor if processor is not tokenizer else None
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model_type = getattr(model.config, "model_type", "")
        self.inputs = InputEncoder(path, model_type, tokenizer, vision=hasattr(model.config, "vision_config"),
                                   revision=revision, preprocess=preprocess, video_as=video_as, processor=processor,
                                   trust_remote_code=self.trust_remote_code, time_origin=time_origin)
        if processor is not None:
            processor.tokenizer.padding_side = "left"
        self.device = torch.device(device) if device else next(model.parameters()).device
        if device and not device_map:
            self.model.to(self.device)
        self.multimodal = self.inputs.vision
        if score not in ("auto", "conditional", "perplexity"):
            raise ValueError("score must be auto, conditional or perplexity")
        if choice_reading not in ("generate", "letters"):
            raise ValueError("choice_reading must be generate (the full greedy answer) or letters (the likeliest "
                             "option letter, one forward pass)")
        self.choice_reading = choice_reading
        plain_lm = not self.multimodal and not self.inputs.template
        self.score_mode = ("perplexity" if plain_lm else "conditional") if score == "auto" else score
        family = self.inputs.family if self.multimodal else None
        self.prefix_reuse_off = family.prefix_reuse_off if family and prefix_reuse else None
        self.prefix_reuse = bool(prefix_reuse) and self.prefix_reuse_off is None
        text_config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        self.sliding_window = "sliding_attention" in (getattr(text_config, "layer_types", None) or ())
        self._variants: dict[str, list[int]] = {}
        self.stats = {"forward_tokens": 0, "prefix_hits": 0}

    def fingerprint(self) -> dict:
        return {"name": "hf", "path": self.path, "revision": self.revision or getattr(
            self.model.config, "_commit_hash", None), "weights": weights_fingerprint(self.path),
                "dtype": self.dtype, "max_new_tokens": self.max_new_tokens, **self.inputs.fingerprint(),
                **({"score": "perplexity", "perplexity_rule": PERPLEXITY_RULE} if self.score_mode == "perplexity"
                   else {}),
                **({"choice_reading": "letters"} if self.choice_reading == "letters" else {}),
                **({"remote_code": code_fingerprint(self.path) if os.path.isdir(self.path)
                    else loaded_code_fingerprint(self.model)} if self.trust_remote_code else {})}

    @property
    def notes(self) -> dict:
        notes = {"preprocess_check": self.inputs.check} if self.inputs.check is not None else {}
        if self.prefix_reuse_off:  # answers come from the plain path, as with prefix_reuse=false: a note
            notes["prefix_reuse"] = f"off for {self.inputs.model_type}: {self.prefix_reuse_off}"
        return notes

    # -- prompts -------------------------------------------------------------------------
    def _prompt(self, request: Request, frames: Frames | None = None, caption: bool = False) -> tuple[str, str]:
        """(chat prompt ready for the answer, caption appended when the caption is scored)."""
        has_video = frames is not None
        if caption:
            instruction = SIMILARITY_INSTRUCTION if has_video else BLIND_SIMILARITY_INSTRUCTION
        else:
            instruction = request.text
        prompt = self.inputs.prompt(instruction, request.system, len(frames.array) if has_video else None)
        return prompt, (request.text if caption else "")

    def _encode(self, texts: list[str], frames: list | None):
        torch = _torch()
        batch = self.inputs.encode(texts, frames)
        return {k: v.to(self.device) if torch.is_tensor(v) else v for k, v in batch.items()}

    def variant_ids(self, words: Sequence[str]) -> list[int]:
        """Single-token ids of each word with and without a leading space."""
        key = "|".join(words)
        if key not in self._variants:
            ids = []
            for word in words:
                for text in (word, " " + word):
                    encoded = self.tokenizer.encode(text, add_special_tokens=False)
                    # a single token that decodes back to the word (never <unk>)
                    if (len(encoded) == 1 and encoded[0] not in ids
                            and self.tokenizer.decode(encoded).strip() == word):
                        ids.append(encoded[0])
            self._variants[key] = ids
        return self._variants[key]

    # -- answering: one method per request kind ---------------------------------------------
    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        if self.score_mode == "perplexity":
            return self._sentence_likelihoods(requests)
        return self._by_video(requests, frames, lambda group: [
            Answer(score=score) for _, score in self._rows(group, frames, caption=True)])

    def _sentence_likelihoods(self, requests: Sequence[Request]) -> list[Answer]:
        """Each caption alone, as plain text, scored by ViLMA's rule for its GPT-2/OPT rows
        (models/text/run.py, lines 84-102 of github.com/ilkerkesen/ViLMA at 746912b): the
        caption is tokenised with the tokenizer's own special tokens (none for GPT-2, a leading
        </s> for OPT; timefoil adds no start token of its own), tokens 2..L are predicted from
        their prefixes, and the summed cross-entropy is divided by L, the whole length, not by
        the L - 1 tokens scored. score = -sum / L (higher wins); perplexity = exp(sum / L). A
        one-token caption thus scores 0 (perplexity 1), as in the official script."""
        torch = _torch()
        answers = []
        with torch.inference_mode():
            for first in range(0, len(requests), self.batch_size):
                rows = [self.tokenizer(r.text)["input_ids"] for r in requests[first:first + self.batch_size]]
                width = max(1, max(len(row) for row in rows))
                ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for b, row in enumerate(rows):  # left padded, positions counted from each row's start
                    if row:
                        ids[b, width - len(row):] = torch.tensor(row)
                        mask[b, width - len(row):] = 1
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                    position_ids=positions.to(self.device)).logits.float()
                scored = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None].to(self.device))[..., 0]
                self.stats["forward_tokens"] += int(mask.sum())
                for b, row in enumerate(rows):
                    if not row:
                        answers.append(Answer(error="empty caption: no tokens to score"))
                        continue
                    log_likelihood = float(scored[b, width - len(row):].sum()) if len(row) > 1 else 0.0
                    score = log_likelihood / len(row)
                    answers.append(Answer(score=score, meta={"tokens": len(row), "perplexity": math.exp(-score)}))
        return answers

    def answer_entailment(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._by_video(requests, frames, lambda group: [
            self._yes_no(logprobs) for logprobs, _ in self._rows(group, frames, caption=False)])

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        """Option-letter probabilities from the first token, and the greedy answer generated on
        from the same forward pass to the end of its first line: a letter read off the first
        token alone would count "A man opens the door, so B" as A."""
        def group(batch: list[Request]) -> list[Answer]:
            if self.choice_reading == "letters":  # the likeliest letter: one forward pass, no generation
                rows = self._rows(batch, frames, caption=False)
                answers = [self._letters(r, logprobs, None) for r, (logprobs, _) in zip(batch, rows)]
                for answer in answers:
                    answer.raw = max(answer.probs, key=answer.probs.get) if answer.probs else None
                return answers
            rows, said = self._rows(batch, frames, caption=False, asks=self._asks(batch, first_line=True))
            return [self._said(self._letters(r, logprobs, None), answer)
                    for r, (logprobs, _), answer in zip(batch, rows, said)]

        return self._by_video(requests, frames, group)

    def answer_generation(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        def group(batch: list[Request]) -> list[Answer]:
            _, said = self._rows(batch, frames, caption=False, asks=self._asks(batch, first_line=False))
            return [self._said(Answer(), answer) for answer in said]

        return self._by_video(requests, frames, group)

    def _asks(self, requests: list[Request], first_line: bool) -> list[tuple[int, bool]]:
        """Each request's token budget and whether its answer ends with its first line (a
        choice asked for a letter: the line that names it decides; ``max_tokens`` stays the ceiling)."""
        return [(self.max_new_tokens or r.max_tokens, first_line) for r in requests]

    def _said(self, answer: Answer, generated: tuple[list[int], str]) -> Answer:
        tokens, why = generated
        answer.raw = self.tokenizer.decode(tokens, skip_special_tokens=True).strip()
        answer.meta = {**(answer.meta or {}), "stopped": why, "new_tokens": len(tokens)}
        return answer

    def _by_video(self, requests: Sequence[Request], frames: FrameSource, answer_group) -> list[Answer]:
        """``answer_group`` on each run of requests sharing a video (and its sampling)."""
        torch = _torch()
        out: list[Answer | None] = [None] * len(requests)
        groups: OrderedDict[tuple | None, list[int]] = OrderedDict()
        for i, request in enumerate(requests):
            video_key = (request.video.key(), str(request.sampling)) if request.video is not None else None
            groups.setdefault(video_key, []).append(i)
        with torch.inference_mode():
            for indices in groups.values():
                start = time.perf_counter()
                answers = answer_group([requests[i] for i in indices])
                for i, answer in zip(indices, answers):
                    answer.latency = (time.perf_counter() - start) / len(indices)
                    out[i] = answer
        return out  # type: ignore[return-value]

    def _video(self, request: Request, frames: FrameSource) -> Frames | None:
        if request.video is None or not self.multimodal:
            return None
        return self.inputs.timeline(frames(request.video, request.sampling), request.video.start)

    def _rows(self, requests: list[Request], frames: FrameSource, caption: bool,
              asks: Sequence[tuple[int, bool]] | None = None) -> Any:
        """Each request's row; with ``asks`` (budget, ends at first line) also its greedy answer,
        continued from the same forward pass: (rows, answers)."""
        video = self._video(requests[0], frames)
        prompts = [self._prompt(r, video, caption) for r in requests]
        said: list | None = [] if asks is not None else None
        if self.prefix_reuse and len(requests) > 1:
            rows = self._prefix_forward(prompts, video, asks, said)
        else:
            rows = []
            for start in range(0, len(prompts), self.batch_size):
                chunk = slice(start, start + self.batch_size)
                rows += self._plain_forward(prompts[chunk], video, asks[chunk] if asks else None, said)
        return rows if asks is None else (rows, said)

    def _continue(self, asks, said: list | None, state: Continuation) -> None:
        if asks:
            answers, fed = continue_greedy(self.model, self.tokenizer, state, [a[0] for a in asks],
                                           [a[1] for a in asks])
            said += answers
            self.stats["forward_tokens"] += fed

    # Each row: (log-probabilities of the next token after the prompt, caption log-likelihood)
    def _plain_forward(self, prompts: list[tuple[str, str]], video, asks=None,
                       said: list | None = None) -> list[tuple[Any, float | None]]:
        torch = _torch()
        texts = [p + c for p, c in prompts]
        batch = self._encode(texts, [video] * len(texts) if video is not None else None)
        batch["position_ids"] = self.inputs.positions(self.model, batch)
        captions = [len(self.tokenizer.encode(c, add_special_tokens=False)) if c else 0 for _, c in prompts]
        # left padded: every row ends at the batch's last token, so the last positions are every
        # row's (a caption's tokens and the one before them, or the next-token distribution)
        output = self.model(**batch, use_cache=bool(asks), **kept_logits(self.model, max(captions) + 1))
        logits = output.logits.float()
        self.stats["forward_tokens"] += int(batch["attention_mask"].sum())
        if asks:
            self._continue(asks, said, Continuation(logits[:, -1], cache_of(output), batch["attention_mask"],
                                                    batch["position_ids"][..., -1] + 1))
        logprobs = torch.log_softmax(logits, dim=-1)
        rows = []
        for b, (prompt, caption) in enumerate(prompts):
            n_caption = captions[b]
            if n_caption:
                ids = batch["input_ids"][b, -n_caption:]
                scores = logprobs[b, -n_caption - 1:-1].gather(-1, ids[:, None]).squeeze(-1)
                rows.append((None, float(scores.mean())))
            else:
                rows.append((logprobs[b, -1], None))
        return rows

    def _prefix_forward(self, prompts: list[tuple[str, str]], video, asks=None,
                        said: list | None = None) -> list[tuple[Any, float | None]]:
        """The shared token prefix (vision tokens and instruction) runs once; every suffix then
        runs, batched, on a copy of its KV cache, at the positions it has in its full sequence
        (for Qwen's 3-D rotary positions, the text after the video continues from the prefix's
        largest position). Exact: the same tokens at the same positions."""
        torch = _torch()
        encoded = [self._encode([p + c], [video] if video is not None else None) for p, c in prompts]
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
            rows = []
            for start in range(0, len(prompts), self.batch_size):
                chunk = slice(start, start + self.batch_size)
                rows += self._plain_forward(prompts[chunk], video, asks[chunk] if asks else None, said)
            return rows
        prefix_inputs = {k: v for k, v in encoded[0].items() if k not in ("input_ids", "attention_mask", *token_types)}
        prefix_inputs.update(input_ids=sequences[0][None, :shared], position_ids=positions[0][..., :shared],
                             attention_mask=torch.ones(1, shared, dtype=torch.long, device=self.device))
        # the prefix's tokens keep their types (Gemma 3's image tokens attend both ways within
        # an image); the suffix, text only, needs none
        prefix_inputs.update({k: types[:, :shared] for k, types in token_types.items()})
        cache = cache_of(self.model(**prefix_inputs, use_cache=True, **kept_logits(self.model, 1)))
        self.stats["forward_tokens"] += shared
        self.stats["prefix_hits"] += len(prompts) - 1
        rows: list[tuple[Any, float | None] | None] = [None] * len(prompts)
        answers: list = [None] * len(prompts)
        for chunk in self._suffix_chunks([len(s) - shared for s in sequences], bool(asks)):
            suffixes = [sequences[i][shared:] for i in chunk]
            width = max(len(s) for s in suffixes)
            pad = self.tokenizer.pad_token_id
            ids = torch.full((len(chunk), width), pad, dtype=torch.long, device=self.device)
            mask = torch.zeros((len(chunk), shared + width), dtype=torch.long, device=self.device)
            where = positions[0][..., :1].new_zeros(positions[0].shape[:-2] + (len(chunk), width))
            for b, (i, s) in enumerate(zip(chunk, suffixes)):
                ids[b, :len(s)] = s
                mask[b, :shared + len(s)] = 1
                where[..., b, :len(s)] = positions[i][..., 0, shared:]
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
                following = torch.stack([positions[i][..., 0, -1] + 1 for i in chunk], dim=-1)
                went_on: list = []
                self._continue([asks[i] for i in chunk], went_on,
                               Continuation(logits[torch.arange(len(chunk)), lasts].float(), cache_of(output), mask,
                                            following))
                for i, answer in zip(chunk, went_on):
                    answers[i] = answer
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            for b, i in enumerate(chunk):
                last = len(suffixes[b]) - 1
                n = captions[i]
                if n:  # positions last - n .. last - 1 are consecutive in ``read``
                    token_ids = suffixes[b][last - n + 1:last + 1]
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
        it generates, which would then see fewer real tokens than the plain path's."""
        order = list(range(len(lengths)))
        if generating and self.sliding_window:
            by_length: dict[int, list[int]] = {}
            for i in order:
                by_length.setdefault(lengths[i], []).append(i)
            groups = list(by_length.values())
        else:
            groups = [order]
        return [group[start:start + self.batch_size] for group in groups
                for start in range(0, len(group), self.batch_size)]

    def _yes_no(self, next_logprobs) -> Answer:
        probs = next_logprobs.exp()
        greedy = int(next_logprobs.argmax())
        yes_ids, no_ids = self.variant_ids(YES_WORDS), self.variant_ids(NO_WORDS)
        return Answer(raw=self.tokenizer.decode([greedy]).strip(),
                      probs={"yes": float(probs[yes_ids].sum()), "no": float(probs[no_ids].sum())},
                      meta={"yes_ids": yes_ids, "no_ids": no_ids, "first_token": greedy})

    def _letters(self, request: Request, next_logprobs, raw: str | None) -> Answer:
        probs = next_logprobs.exp()
        letters = {label: self.variant_ids((label,)) for label in request.labels}
        return Answer(raw=raw, probs={label: float(probs[ids].sum()) for label, ids in letters.items()},
                      meta={"letter_ids": letters, "first_token": int(next_logprobs.argmax())})


def _repeat_cache(cache, times: int):
    """A copy of a one-row KV cache repeated ``times`` times along the batch."""
    import copy

    repeated = copy.deepcopy(cache)
    if times > 1:
        repeated.batch_repeat_interleave(times)
    return repeated


def refuse_untrusted_code(path: str, config: dict, trust_remote_code: bool) -> None:
    """A model whose config names its own Python classes (``auto_map``: MiniCPM-V, Phi-3.5-Vision,
    InternLM-XComposer ship this way) runs that code when it loads: refused in one line unless
    the user said to trust it (transformers' own refusal runs over several lines)."""
    if config.get("auto_map") and not trust_remote_code:
        raise ValueError(f"{path} ships its own model code (auto_map in config.json), which would run on this "
                         "machine when it loads; pass --model-arg trust_remote_code=true to run it")


def load_pretrained(path: str, *, dtype: str = "float32", device_map: str | None = None,
                    revision: str | None = None, gguf_file: str | None = None, trust_remote_code: bool = False):
    """Model and tokenizer from a hub id or a folder (a video LLM's processor is not built
    here: timefoil makes its inputs itself, see hf_inputs)."""
    torch = _torch()
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PretrainedConfig

    from ..core.weights import quiet_transformers

    quiet_transformers()
    kwargs: dict[str, Any] = {"revision": revision} if revision else {}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if not gguf_file:  # the config's plain JSON, read before any of the model's own code could be imported
        refuse_untrusted_code(path, PretrainedConfig.get_config_dict(path, **kwargs)[0], trust_remote_code)
    if trust_remote_code:
        kwargs["trust_remote_code"] = True
    config = AutoConfig.from_pretrained(path, **kwargs)
    auto_map = getattr(config, "auto_map", None) or {}
    if hasattr(config, "vision_config") and "AutoModelForCausalLM" not in auto_map:
        from transformers import AutoModelForImageTextToText as model_class
    else:  # remote-code video LLMs (MiniCPM-V, Phi-3.5-Vision) register their model as a causal LM
        model_class = AutoModelForCausalLM
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    model = model_class.from_pretrained(path, dtype=getattr(torch, dtype), device_map=device_map, **kwargs)
    return model, tokenizer


__all__ = ["HFGenerative", "load_pretrained", "weights_fingerprint"]
