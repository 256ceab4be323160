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
Suffix chunks and decoding steps run eager or compiled (``compiled``: ``compile=auto`` compiles
on a CUDA GPU). Video inputs come from ``hf_inputs`` (timefoil's own preprocessing unless
``preprocess=official``); ``video_as=images`` shows the sampled frames as a list of images.
"""
from __future__ import annotations

import math
import os
import time
from collections import OrderedDict
from typing import Any, Sequence

from ..requests import Answer, Request
from ...video.frames import Frames
from ..base import FrameSource, Model, RanksBySimilarity
from .compiled import Forwards
from .decoding import DecodeQueue
from .greedy import Continuation, Row, cache_of, continue_greedy, kept_logits
from .hf_inputs import InputEncoder
from .context import refuse_past_context
from .hf_loading import code_fingerprint, load_pretrained, loaded_code_fingerprint, takes_vision, weights_fingerprint
from .hf_open import ROWS, WHY_NO_PREFIX, WHY_ONE_ROW, generate_alone, model_inputs
from . import sync_free
from .float_logits import float32_logits
from .hf_ahead import PreparesAhead
from .hf_prefix import PrefixReuse
from .placement import dtype_name, place, ran_on
from .row_budget import RowCost
from ..video_inputs import _torch
from ...core.options import checked_count

SIMILARITY_INSTRUCTION = "Describe the video."
BLIND_SIMILARITY_INSTRUCTION = "Describe a video in one sentence."
# Named in the fingerprint, so answers cached under the earlier rule (a start token added, the
# mean over the caption's tokens) are not reused.
PERPLEXITY_RULE = "vilma-run.py: tokenizer's own special tokens, tokens 2..L, summed cross-entropy / L"
YES_WORDS, NO_WORDS = ("Yes", "yes", "YES"), ("No", "no", "NO")
PLAIN_ROWS = 8  # prompts a plain forward, where batch_size is not given
CALL_REQUESTS = 24  # requests a call with prefix reuse, where batch_size is not given: 6 videos of 4 captions


class HFGenerative(PrefixReuse, PreparesAhead, RanksBySimilarity, Model):
    weights_memo_dir: str | None = None  # the cache folder keeping its weights' hashes (load_model sets it)

    def __init__(self, path: str, *, dtype: str = "auto", device: str | None = None,
                 device_map: str | None = None, attention: str = "auto", revision: str | None = None,
                 batch_size: int | None = None,
                 max_new_tokens: int | None = None, prefix_reuse: bool = True, name: str | None = None,
                 preprocess: str = "auto", video_as: str = "auto", score: str = "auto",
                 choice_reading: str = "generate", trust_remote_code: bool = False, time_origin: str | None = None,
                 decode_batching: bool = True, decode_rows: int = 32, decode_cache_mib: int = 4096,
                 compile: str = "auto", pixels: str = "host", model=None, processor=None):
        torch = _torch()
        self.path, self.revision = path, revision
        self.trust_remote_code = bool(trust_remote_code)
        self.name = name or f"hf:{path}"
        # None: suffix rows a forward from the memory budget (row_budget), the runner's calls of
        # CALL_REQUESTS requests; given: a cap on both and the plain path's rows a forward
        self.rows_cap = checked_count("batch_size", batch_size, optional=True)
        self.max_new_tokens = checked_count("max_new_tokens", max_new_tokens, optional=True)
        self.decode_rows = checked_count("decode_rows", decode_rows)
        self.decode_cache_mib = checked_count("decode_cache_mib", decode_cache_mib)
        placed = place(device=device, device_map=device_map, dtype=dtype, attention=attention)
        if model is None:
            model, tokenizer = load_pretrained(path, dtype=placed.dtype, device_map=placed.device_map,
                                               revision=revision, trust_remote_code=self.trust_remote_code,
                                               attention=placed.attention, device=placed.device)
        else:
            tokenizer = getattr(processor, "tokenizer", processor)
            processor = processor if processor is not tokenizer else None
        self.model = model.eval()
        self.float_logits = float32_logits(self.model)  # p(yes) read from float32 logits (float_logits)
        self.devices = {p.device for p in self.model.parameters()}  # where a forward's memory comes from
        self.row_cost = RowCost.of(self.model.config, next(self.model.parameters()).element_size())
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model_type = getattr(model.config, "model_type", "")
        self.inputs = InputEncoder(path, model_type, tokenizer, vision=takes_vision(model.config),
                                   revision=revision, preprocess=preprocess, video_as=video_as, processor=processor,
                                   trust_remote_code=self.trust_remote_code, time_origin=time_origin)
        if processor is not None:
            processor.tokenizer.padding_side = "left"
        # inputs go where the first layers are (a device_map may spread the rest over GPUs)
        self.device = next(model.parameters()).device
        if device_map is None and self.device != torch.device(placed.device):  # a model handed over
            self.model.to(placed.device)
            self.device = torch.device(placed.device)
        if pixels not in ("host", "device"):
            raise ValueError("pixels must be host (built exactly, off the answering thread) or device (on the GPU, "
                             "within two uint8 levels of the host's)")
        # on a CPU the host path is the device's: exact, at the same cost
        self.inputs.pixel_device = self.device if pixels == "device" and self.device.type == "cuda" else None
        self.dtype = dtype_name(self.model)  # what "auto" came to: the fingerprint names the precision
        # where the logits come out: with a device_map over several GPUs, the last one (indexes
        # into the logits are made there, not on the inputs' device)
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        self.logits_device = head.weight.device if head is not None else self.device
        # suffix chunks and decoding steps: eager, or compiled (auto: on a CUDA GPU)
        self.forwards = Forwards(self.model, self.device, compile)
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
        if self.inputs.open:  # the open path (hf_open): unpadded prompts, the model's own positions
            self.batch_size = ROWS
            self.prefix_reuse_off = WHY_NO_PREFIX if prefix_reuse else None
        self.prefix_reuse = bool(prefix_reuse) and self.prefix_reuse_off is None
        text_config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        layer_types = getattr(text_config, "layer_types", None) or ()
        self.sliding_window = "sliding_attention" in layer_types
        # linear-attention layers (Qwen3.5's gated delta) fold every token into one state per row,
        # pads after a row's last token included
        self.recurrent = "linear_attention" in layer_types
        self._variants: dict[str, list[int]] = {}
        # prefix_forwards: prefixes run (one a video); host_encodes: prompts encoded whole (pixels
        # and positions); cache_copies: prefix caches copied whole (a layer of an unknown kind)
        # prepared_ahead: videos whose encoding the decode-ahead thread had ready
        # suffix_forwards: forwards over suffixes on prefix caches (one a call's videos where memory allows)
        self.stats = {"forward_tokens": 0, "prefix_hits": 0, "prefix_forwards": 0, "suffix_forwards": 0,
                      "host_encodes": 0, "cache_copies": 0, "prepared_ahead": 0}
        self._ahead = OrderedDict()  # prompts -> (frames, encoding made ahead): see hf_ahead
        self.decode_batching = bool(decode_batching)
        self._decoding: DecodeQueue | None = None  # during an answering call: its rows' shared decode steps
        self.decode_off: str | None = None

    def fingerprint(self) -> dict:
        return {"name": "hf", "path": self.path, "revision": self.revision or getattr(
            self.model.config, "_commit_hash", None),
                "weights": weights_fingerprint(self.path, self.weights_memo_dir),
                "dtype": self.dtype, "max_new_tokens": self.max_new_tokens, **self.inputs.fingerprint(),
                **({"logits": "float32"} if self.float_logits else {}),
                **({"score": "perplexity", "perplexity_rule": PERPLEXITY_RULE} if self.score_mode == "perplexity"
                   else {}),
                **({"choice_reading": "letters"} if self.choice_reading == "letters" else {}),
                **({"remote_code": code_fingerprint(self.path) if os.path.isdir(self.path)
                    else loaded_code_fingerprint(self.model)} if self.trust_remote_code else {})}

    @property
    def decodes_ahead(self) -> bool:
        """On every device the coming videos decode, and their pixels are built, on the runner's
        decode-ahead workers while this batch is answered (hf_ahead)."""
        return True

    @property
    def whole_videos(self) -> bool:
        """A video's prompts in one call: its prefix runs once, its suffixes in as few forwards as
        memory allows."""
        return self.prefix_reuse

    @property
    def batch_size(self) -> int:
        """Requests a call of the runner (whole videos packed while they fit; a video with more
        is a call of its own): ``batch_size`` where given, else CALL_REQUESTS with prefix reuse
        (several small videos' suffixes share a forward) and PLAIN_ROWS without."""
        return self.rows_cap or (CALL_REQUESTS if self.prefix_reuse else PLAIN_ROWS)

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.rows_cap = value

    @property
    def plain_rows(self) -> int:
        """Prompts a plain forward: each carries its whole video, so a fixed few unless given."""
        return self.rows_cap or PLAIN_ROWS

    @property
    def notes(self) -> dict:
        notes = {"ran_on": {**ran_on(self.model, self.device), "forward": self.forwards.ran}}
        if self.forwards.failed:
            notes["ran_on"]["compile_failed"] = self.forwards.failed
        if not self.multimodal:  # a text LM is shown no frames, --blind or not: a reader is told so
            notes["text_only"] = True
        if self.inputs.check is not None:
            notes["preprocess_check"] = self.inputs.check
        if self.prefix_reuse_off:  # answers come from the plain path, as with prefix_reuse=false: a note
            notes["prefix_reuse"] = f"off for {self.inputs.model_type}: {self.prefix_reuse_off}"
        if self.inputs.open:
            notes["open_path"] = f"{self.inputs.model_type} shown through its own processor, {WHY_ONE_ROW}"
        if self.decode_off:  # answers decoded group by group, as with decode_batching=false
            notes["decode_batching"] = f"off for {self.inputs.model_type}: {self.decode_off}"
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
        return self._on_device(self.inputs.encode(texts, frames))

    def _on_device(self, batch: dict) -> dict:
        """A batch made on the host, on the model's device. To a GPU each tensor goes from pinned
        memory without waiting: the copy is queued behind what the GPU is still doing, and the
        host goes on to the next batch (a copy from pageable memory holds both up)."""
        torch = _torch()
        kept = sync_free.host_inputs(self.model)  # read on the host only: no copy, and no read of the device
        sent = dict(batch) if self.device.type == "cpu" else {
            k: v.pin_memory().to(self.device, non_blocking=True)
            if torch.is_tensor(v) and v.device.type == "cpu" and k not in kept else v for k, v in batch.items()}
        # the count the placeholder check compares, made here on the host
        sync_free.note_host_ids(self.model, batch.get("input_ids"), sent.get("input_ids"))
        return sent

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
        return self._by_video(requests, frames, lambda group, rows, said: [Answer(score=score) for score in rows_read(
            [score for _, score in rows])], caption=True)

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
            for first in range(0, len(requests), self.plain_rows):
                rows = [self.tokenizer(r.text)["input_ids"] for r in requests[first:first + self.plain_rows]]
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
        return self._by_video(requests, frames, lambda group, rows, said: self._yes_nos(
            [logprobs for logprobs, _ in rows]))

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        """Option-letter probabilities from the first token, and the greedy answer generated on
        from the same forward pass to the end of its first line: a letter read off the first
        token alone would count "A man opens the door, so B" as A."""
        if self.choice_reading == "letters":  # the likeliest letter: one forward pass, no generation
            def letters(group: list[Request], rows: list, said) -> list[Answer]:
                answers = self._letters(group, [logprobs for logprobs, _ in rows])
                for answer in answers:
                    answer.raw = max(answer.probs, key=answer.probs.get) if answer.probs else None
                return answers

            return self._by_video(requests, frames, letters)
        return self._by_video(requests, frames, lambda group, rows, said: [
            self._said(letters, answer) for letters, answer in zip(
                self._letters(group, [logprobs for logprobs, _ in rows]), said)],
            asks=lambda group: self._asks(group, first_line=True))

    def answer_generation(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._by_video(requests, frames, lambda group, rows, said: [self._said(Answer(), a) for a in said],
                              asks=lambda group: self._asks(group, first_line=False))

    def _asks(self, requests: list[Request], first_line: bool) -> list[tuple[int, bool]]:
        """Each request's token budget and whether its answer ends with its first line (a
        choice asked for a letter: the line that names it decides; ``max_tokens`` stays the ceiling)."""
        return [(self.max_new_tokens or r.max_tokens, first_line) for r in requests]

    def _said(self, answer: Answer, generated: tuple[list[int], str] | Row) -> Answer:
        if isinstance(generated, Row):  # decoded beside other groups' rows: filled in when it stops
            def fill(row: Row) -> None:
                self._said(answer, (row.tokens, row.why))
                answer.latency = (answer.latency or 0.0) + row.seconds
            generated.when_done(fill)
            return answer
        tokens, why = generated
        answer.raw = self.tokenizer.decode(tokens, skip_special_tokens=True).strip()
        answer.meta = {**(answer.meta or {}), "stopped": why, "new_tokens": len(tokens)}
        return answer

    def _by_video(self, requests: Sequence[Request], frames: FrameSource, read, caption: bool = False,
                  asks=None) -> list[Answer]:
        """The answers of each run of requests sharing a video (and its sampling): the rows of
        every run made (``_group_rows``: each video's prefix once, the call's suffixes in as
        few forwards as memory allows), then each run's read by ``read(requests, rows,
        answers)``; ``asks(requests)``: each request's token budget where answers are generated."""
        torch = _torch()
        out: list[Answer | None] = [None] * len(requests)
        groups: OrderedDict[tuple | None, list[int]] = OrderedDict()
        for i, request in enumerate(requests):
            video_key = (request.video.key(), str(request.sampling)) if request.video is not None else None
            groups.setdefault(video_key, []).append(i)
        # set anew by every call: rows that ask for answers join this call's shared decode steps
        queue = self._decoding = DecodeQueue(
            self.model, self.tokenizer, rows=self.decode_rows, cache_bytes=self.decode_cache_mib << 20,
            sliding_window=self.sliding_window, forward=self.forwards.step) if self.decode_batching else None
        with torch.inference_mode():
            start, decoding = time.perf_counter(), queue.seconds if queue else 0.0
            batches = [[requests[i] for i in indices] for indices in groups.values()]
            made = self._rows([(batch, self._video(batch[0], frames)) for batch in batches], caption,
                              [asks(batch) for batch in batches] if asks else None)
            for indices, batch, (rows, said) in zip(groups.values(), batches, made):
                for i, answer in zip(indices, read(batch, rows, said)):
                    out[i] = answer
            # a row's latency: its share of the call's forwards, plus its share of each decode step
            spent = time.perf_counter() - start - ((queue.seconds - decoding) if queue else 0.0)
            for answer in out:
                answer.latency = (answer.latency or 0.0) + spent / len(requests)
            if queue:
                queue.finish()
                self.stats["forward_tokens"] += queue.fed
                self.decode_off = self.decode_off or queue.off
        return out  # type: ignore[return-value]

    def _video(self, request: Request, frames: FrameSource) -> Frames | None:
        if request.video is None or not self.multimodal:
            return None
        return self.inputs.timeline(frames(request.video, request.sampling), request.video.start)

    def _rows(self, groups: list[tuple[list[Request], Frames | None]], caption: bool,
              asks: list[list[tuple[int, bool]]] | None = None) -> list[tuple[list, list | None]]:
        """Each group's (rows, answers): every request's row and, with ``asks`` (each group's
        budgets and whether its answers end at their first line), its greedy answer continued
        from the same forward pass (else None)."""
        return self._group_rows([([self._prompt(r, video, caption) for r in group], video, asks[g] if asks else None)
                                 for g, (group, video) in enumerate(groups)])

    def _plain_rows(self, prompts: list[tuple[str, str]], video, asks=None, said: list | None = None) -> list:
        """The plain forward in batches of ``plain_rows``."""
        rows = []
        for start in range(0, len(prompts), self.plain_rows):
            chunk = slice(start, start + self.plain_rows)
            rows += self._plain_forward(prompts[chunk], video, asks[chunk] if asks else None, said)
        return rows

    def _continue(self, asks, said: list | None, state: Continuation) -> None:
        if asks and self._decoding is not None:
            said += self._decoding.admit(state, [a[0] for a in asks], [a[1] for a in asks])
        elif asks:
            answers, fed = continue_greedy(self.model, self.tokenizer, state, [a[0] for a in asks],
                                           [a[1] for a in asks], self.forwards.step)
            said += answers
            self.stats["forward_tokens"] += fed

    # Each row: (log-probabilities of the next token after the prompt, caption log-likelihood)
    def _plain_forward(self, prompts: list[tuple[str, str]], video, asks=None,
                       said: list | None = None) -> list[tuple[Any, float | None]]:
        torch = _torch()
        texts = [p + c for p, c in prompts]
        batch = self.inputs.encode(texts, [video] * len(texts) if video is not None else None)
        # positions are index arithmetic: worked out on the host, they cross with the batch
        positions = self.inputs.positions(self.model, batch)
        if positions is None:  # the open path: one prompt, positions the model's own
            return self._open_forward(self._on_device(batch), prompts, asks, said)
        refuse_past_context(self.model, batch["attention_mask"].sum(-1).tolist())
        batch = self._on_device({**batch, "position_ids": positions})
        captions = self._caption_lengths(prompts)
        # left padded: every row ends at the batch's last token, so the last positions are every
        # row's (a caption's tokens and the one before them, or the next-token distribution)
        output = self.model(**batch, use_cache=bool(asks), **kept_logits(self.model, max(captions) + 1))
        logits = output.logits.float()
        self.stats["forward_tokens"] += int(batch["attention_mask"].sum())
        if asks:
            self._continue(asks, said, Continuation(logits[:, -1], cache_of(output), batch["attention_mask"],
                                                    batch["position_ids"][..., -1] + 1))
        return self._read_rows(torch.log_softmax(logits, dim=-1), batch["input_ids"], captions)

    def _caption_lengths(self, prompts: list[tuple[str, str]]) -> list[int]:
        return [len(self.tokenizer.encode(c, add_special_tokens=False)) if c else 0 for _, c in prompts]

    @staticmethod
    def _read_rows(logprobs, input_ids, captions: list[int]) -> list[tuple[Any, float | None]]:
        """Each row's next-token log-probabilities, or its caption's mean token log-likelihood
        (rows end at the batch's last token: its caption's tokens and the one before them)."""
        rows = []
        for b, n_caption in enumerate(captions):
            if n_caption:
                ids = input_ids[b, -n_caption:]
                scores = logprobs[b, -n_caption - 1:-1].gather(-1, ids[:, None]).squeeze(-1)
                rows.append((None, scores.mean()))
            else:
                rows.append((logprobs[b, -1], None))
        return rows

    def _open_forward(self, batch: dict, prompts: list[tuple[str, str]], asks=None,
                      said: list | None = None) -> list[tuple[Any, float | None]]:
        """One prompt on the open path: the forward (or, for an answer, the model's own
        generate) on exactly what its processor returned, positions left to the model."""
        torch = _torch()
        refuse_past_context(self.model, [int(batch["input_ids"].shape[1])])
        inputs = model_inputs(self.model, batch)
        self.stats["forward_tokens"] += int(batch["input_ids"].shape[1])
        if asks:
            first, answer, fed = generate_alone(self.model, self.tokenizer, inputs, *asks[0])
            said.append(answer)
            self.stats["forward_tokens"] += fed
            return [(torch.log_softmax(first, dim=-1), None)]
        captions = self._caption_lengths(prompts)
        logits = self.model(**inputs, **kept_logits(self.model, captions[0] + 1)).logits
        return self._read_rows(torch.log_softmax(logits.float(), -1), batch["input_ids"], captions)

    def _yes_no(self, next_logprobs) -> Answer:
        return self._yes_nos([next_logprobs])[0]

    def _yes_nos(self, rows: list) -> list[Answer]:
        """Each row's Yes and No probabilities and likeliest token, read off the device at once
        (a float() a row would wait on a GPU three times a caption)."""
        torch = _torch()
        logprobs = torch.stack(rows)
        probs = logprobs.exp()
        yes_ids, no_ids = self.variant_ids(YES_WORDS), self.variant_ids(NO_WORDS)
        read = torch.stack([probs[:, yes_ids].sum(-1).double(), probs[:, no_ids].sum(-1).double(),
                            logprobs.argmax(-1).double()], dim=-1).tolist()
        return [Answer(raw=self.tokenizer.decode([int(greedy)]).strip(), probs={"yes": yes, "no": no},
                       meta={"yes_ids": yes_ids, "no_ids": no_ids, "first_token": int(greedy)})
                for yes, no, greedy in read]

    def _letters(self, requests: Sequence[Request], rows: list) -> list[Answer]:
        """Each row's option-letter probabilities (each letter's single-token variants summed)
        and likeliest token, read off the device at once."""
        torch = _torch()
        letters = [{label: self.variant_ids((label,)) for label in request.labels} for request in requests]
        columns = sorted({i for request in letters for ids in request.values() for i in ids})
        logprobs = torch.stack(rows)
        read = torch.cat([logprobs[:, columns].exp().double(), logprobs.argmax(-1, keepdim=True).double()],
                         dim=-1).tolist()
        where = {token: k for k, token in enumerate(columns)}
        return [Answer(probs={label: sum(values[where[i]] for i in ids) for label, ids in request.items()},
                       meta={"letter_ids": request, "first_token": int(values[-1])})
                for request, values in zip(letters, read)]


def rows_read(scores: list) -> list[float | None]:
    """Scores still on the device (0-d tensors), read at once: one wait for the device a group."""
    torch = _torch()
    present = [i for i, score in enumerate(scores) if score is not None]
    read = torch.stack([scores[i] for i in present]).double().tolist() if present else []
    out: list[float | None] = [None] * len(scores)
    for i, value in zip(present, read):
        out[i] = value
    return out


__all__ = ["HFGenerative", "rows_read"]
