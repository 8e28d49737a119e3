"""Excerpts: a record's best lines, for a View whose budget holds few whole records.

A record is a few consecutive turns of one session (up to ~600 characters), and the View
shows records whole. Under a tight budget that makes the View a handful of records: a
2,000-character View holds two or three, so an answer in the fourth record is lost even
when System 1 ranked it fourth. With ``ReadSettings.excerpt_slots`` set, a record longer
than ``budget / excerpt_slots`` characters shows only its best lines — the lines that share
the rarest words with the turn's message and needs, and a ``…`` where lines were left
out — so the same budget shows more of System 1's ranking.
Under a budget that holds ``excerpt_slots`` whole records nothing changes.

The functions are pure and read no store: the weights come from the pooled records' own
lines, so an excerpt depends only on the turn's text and its pool. Every line of a record
is one piece of one message (``records.chunking``), so the lines shown name the message
ids shown, and the View's ``message_ids`` are exactly what the agent reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Literal

from mnemon_langgraph.search._formula import idf as bm25_idf
from mnemon_langgraph.search._text import terms

__all__ = ["GAP", "Lead", "excerpt", "focus_weights", "line_scores"]

GAP = "…"
"""The line that stands for lines left out of an excerpt (it costs two characters)."""

Lead = Literal["best", "start", "end"]
"""Which lines an excerpt keeps when none shares a word with the focus: ``start`` for a
record that continues the one before it, ``end`` for one that leads into the next,
``best`` (the first lines) otherwise."""


def focus_weights(focus: Iterable[str], lines: Iterable[str]) -> dict[str, float]:
    """Weight of each index term of the ``focus`` texts: its inverse document frequency over
    ``lines`` (the pooled records' lines, each a document).

    BM25's IDF (:func:`mnemon_langgraph.search._formula.idf`) with each line a document. A
    term no line holds weighs nothing: it cannot pick a line.
    """
    wanted = {t for text in focus for t in terms(text)}
    if not wanted:
        return {}
    df: Counter[str] = Counter()
    n = 0
    for line in lines:
        n += 1
        df.update(wanted.intersection(terms(line)))
    return {t: bm25_idf(n, df[t]) for t in wanted if df[t]}


def line_scores(lines: Sequence[str], weights: Mapping[str, float]) -> list[float]:
    """Each line's score: the summed weights of the distinct focus terms it holds."""
    return [sum(weights.get(t, 0.0) for t in set(terms(line))) for line in lines]


def _size(lines: Sequence[str], kept: Sequence[int]) -> int:
    """Characters of the excerpt text of ``kept`` (sorted), gap lines included."""
    if not kept:
        return 0
    gaps = (kept[0] > 0) + (kept[-1] < len(lines) - 1)
    gaps += sum(1 for a, b in pairwise(kept) if b > a + 1)
    parts = len(kept) + gaps
    return sum(len(lines[i]) for i in kept) + gaps * len(GAP) + parts - 1


def excerpt(
    lines: Sequence[str], scores: Sequence[float], cap: int, lead: Lead = "best"
) -> list[int]:
    """Indices (in order) of the lines an excerpt of at most ``cap`` characters keeps.

    Lines are taken best score first (ties: the earlier line; with no score above zero, in
    ``lead`` order), each while the excerpt, gap lines included, stays within ``cap``. The
    first line taken is kept even when it alone is longer than ``cap``: an excerpt is never
    empty. All the lines when the whole record fits.
    """
    if not lines:
        return []
    if len("\n".join(lines)) <= cap:
        return list(range(len(lines)))
    if any(s > 0 for s in scores):
        order = sorted(range(len(lines)), key=lambda i: (-scores[i], i))
    elif lead == "end":
        order = list(range(len(lines) - 1, -1, -1))
    else:
        order = list(range(len(lines)))
    kept = [order[0]]
    for i in order[1:]:
        trial = sorted([*kept, i])
        if _size(lines, trial) <= cap:
            kept = trial
    return kept


def excerpt_text(lines: Sequence[str], kept: Sequence[int]) -> str:
    """The text of an excerpt: the kept lines, and :data:`GAP` where lines were left out."""
    out: list[str] = []
    nxt = 0
    for i in kept:
        if i > nxt:
            out.append(GAP)
        out.append(lines[i])
        nxt = i + 1
    if nxt < len(lines):
        out.append(GAP)
    return "\n".join(out)
