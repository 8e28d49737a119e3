"""Upper bounds of BM25 scores from one byte per document and term, for exact top-``k``.

A query whose every remaining term is in most documents leaves MaxScore nothing to prune:
every document is a candidate and its partial score must be summed. These functions make
that pass cheap and keep the answer exact, by the two-level scheme of WAND (Broder, Carmel,
Herscovici, Soffer and Zien 2003, "Efficient query evaluation using a two-level retrieval
process"): a cheap *upper bound* of every document's score first, then the full evaluation
only of the documents whose bound reaches the threshold ``theta`` (the ``k``-th exact score
known so far). The bounds come from impacts quantised to 8 bits per posting (Anh, de Kretser
and Moffat 2001, "Vector-space ranking with effective early termination"), rounded *up*
here so that they never fall below the real value:

* :func:`impact_codes` — a term's ``tf / (tf + norm)`` per document as ``ceil(255 · x / top)``
  (one ``uint8`` per document, 0 where the term is absent);
* :func:`code_weights` — the query's per-term weights (``idf · top / 255``) as small
  integers ``W`` rounded up, so that ``Σ W · code`` fits 16 bits and times ``unit`` bounds
  ``Σ idf · impact`` from above;
* :func:`sum_codes` — that integer sum over every document (vectorised adds of bytes);
* :func:`sample_level` — a level of the bounds that about ``want`` documents reach, read
  off a strided sample (no sort of every document's bound).

The caller (:meth:`~._maxscore.MaxScore._bounded`) scores the documents above the sampled
level exactly to get ``theta``, then scores exactly every document whose bound reaches
``theta``; rankings, scores and ties are those of scoring every document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["CODE_MAX", "code_weights", "impact_codes", "sample_level", "sum_codes"]

CODE_MAX = 255
"""The largest code: a term's largest impact."""


def impact_codes(docs: np.ndarray, impacts: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    """One ``uint8`` per document: ``ceil(CODE_MAX · impact / top)`` where the term is, else 0.

    Args:
        docs: Document positions of the term's postings (below ``n``).
        impacts: Their ``tf / (tf + norm)`` (float32, > 0).
        n: How many documents the codes cover.

    Returns:
        ``(codes, top)``; ``codes[d] · top / CODE_MAX >= impacts`` at ``d`` (up to float64
        rounding, about 1e-16 relative).
    """
    codes = np.zeros(n, dtype=np.uint8)
    if not len(docs):
        return codes, 0.0
    top = float(impacts.max())
    scaled = np.ceil(impacts.astype(np.float64) * (CODE_MAX / top))
    codes[docs] = np.clip(scaled, 1, CODE_MAX).astype(np.uint8)
    return codes, top


def code_weights(per_code: Sequence[float]) -> tuple[np.ndarray, float]:
    """Integer weights ``W`` and a ``unit`` with ``W[t] · unit >= per_code[t]`` for every term.

    ``per_code[t]`` is what one code step of term ``t`` is worth (its ``idf · top /
    CODE_MAX``). The largest weight is ``65535 // (CODE_MAX · terms)``, so the sum of every
    term's ``W · code`` fits a ``uint16``; the others are rounded up (coarser the more terms).

    Raises:
        ValueError: With more than 257 terms (a weight would be below 1) or a value ≤ 0.
    """
    values = np.asarray(per_code, dtype=np.float64)
    top_weight = np.iinfo(np.uint16).max // (CODE_MAX * max(1, len(values)))
    if top_weight < 1 or not len(values) or values.min() <= 0:
        raise ValueError("code_weights needs 1 to 257 positive values")
    largest = float(values.max())
    weights = np.minimum(np.ceil(values * (top_weight / largest)), top_weight)
    return weights.astype(np.uint16), largest / top_weight


def sum_codes(codes: Sequence[np.ndarray], weights: np.ndarray, n: int) -> np.ndarray:
    """``Σ_t weights[t] · codes[t]`` per document, as ``uint16`` (no overflow: see
    :func:`code_weights`)."""
    total = np.zeros(n, dtype=np.uint16)
    scratch = np.empty(n, dtype=np.uint16)
    for code, weight in zip(codes, weights.tolist(), strict=True):
        if weight == 1:
            np.add(total, code, out=total, casting="unsafe")
        else:
            np.multiply(code, np.uint16(weight), out=scratch, casting="unsafe")
            np.add(total, scratch, out=total)
    return total


def sample_level(bounds: np.ndarray, want: int, sample: int = 32_768) -> float:
    """A level that about ``want`` of ``bounds`` reach, from every ``len / sample``-th value.

    Exact (the ``want``-th largest) when ``bounds`` holds at most ``sample`` values. Only a
    guess otherwise: the caller counts the documents at or above it and asks again with
    ``sample=len(bounds)`` (exact) if they are too few.
    """
    n = len(bounds)
    if want <= 0 or not n:
        return math.inf
    step = max(1, n // max(1, sample))
    picked = bounds[::step]
    rank = min(len(picked), max(1, -(-want // step)))
    return float(np.partition(picked, len(picked) - rank)[len(picked) - rank])
