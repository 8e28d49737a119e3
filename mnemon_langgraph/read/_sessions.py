"""Sessions dense with the first round's hits, searched again inside
(``ReadSettings.session_searches``).

In a long history other people's turns (or the user's own from other years) share a
question's words and gist, and the turns that answer it fall below the first pages of the
turn's searches. The sessions those pages come back to most often are what the question is
about; inside one such session the message's own search ranks its turns among far fewer
competitors, as it would in that session alone. So the first round counts, for each
session, the distinct records of the planned searches' first hits (their pages, or
``ReadSettings.session_depth`` hits when that is more) that fall in it; the
sessions with the most (at least :data:`MIN_HITS`) are each searched once more with the
latest message, kept to the session, and those records fill the first pool's places the
planned searches left (never past ``pool_size``: the judge sees no more records than
without it).

Nothing here reads dates or knows where a record came from: a session is the store's
``session`` number, within the source that returned it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.search._fusion import reciprocal_rank
from mnemon_langgraph.types import SearchHit

__all__ = ["MIN_HITS", "NEAREST", "SESSION", "dense_sessions", "interleave", "session_nearness"]

SESSION = "session"
"""Origin of a search kept to one dense session."""

MIN_HITS = 2
"""A session is dense when at least this many distinct records of the first pages fall in
it (one hit is any session's)."""


def dense_sessions(
    pages: Sequence[tuple[str | None, Sequence[SearchHit]]],
    most: int,
    least: int = MIN_HITS,
) -> list[tuple[str | None, int]]:
    """The ``(source, session)`` of at most ``most`` sessions holding the most distinct
    records among ``pages`` (``(source name or None, hits)`` each), at least ``least`` of
    them; ties by the summed reciprocal rank of those records' hits, then by the session
    seen first."""
    records: dict[tuple[str | None, int], set[str]] = {}
    weight: dict[tuple[str | None, int], float] = {}
    for name, hits in pages:
        for hit in hits:
            key = (name, hit.record.session)
            records.setdefault(key, set()).add(hit.record.id)
            weight[key] = weight.get(key, 0.0) + reciprocal_rank(hit.rank)
    seen = {key: i for i, key in enumerate(records)}
    ranked = sorted(records, key=lambda key: (-len(records[key]), -weight[key], seen[key]))
    return [key for key in ranked if len(records[key]) >= max(1, least)][: max(0, most)]


NEAREST = 3
"""A session's nearness to the message is the mean of its this many nearest records'."""


def session_nearness(source: Any, sessions: Sequence[int], message: str) -> dict[int, float]:
    """Session → the mean cosine of its :data:`NEAREST` records nearest to ``message``,
    from the vectors ``source`` stored for them (a :class:`~mnemon_langgraph.types.VectorSource`
    that is also a :class:`~mnemon_langgraph.types.JournalSource`; a record stored as several
    vectors counts its nearest). A session without stored vectors gets -1. A source error
    propagates (the caller keeps the count's order)."""
    query = np.asarray(source.query_vector(message), dtype=np.float64).ravel()
    norm = float(np.linalg.norm(query))
    query = query / norm if norm > 0 else query
    out: dict[int, float] = {}
    for session in sessions:
        ids = [r.id for r in source.session_records(None, session)]
        vectors = source.stored_vectors(None, ids).values()
        sims = sorted(
            (
                float((np.atleast_2d(np.asarray(v, dtype=np.float64)) @ query).max())
                for v in vectors
            ),
            reverse=True,
        )
        out[session] = float(np.mean(sims[:NEAREST])) if sims else -1.0
    return out


def interleave(pages: Sequence[Sequence[SearchHit]], taken: set[str], room: int) -> list[str]:
    """Record ids from ``pages`` (the dense sessions' searches, densest first) for ``room``
    places: each page's first record, then each one's second, and so on, skipping those in
    ``taken`` or already given."""
    out: list[str] = []
    depth = max((len(p) for p in pages), default=0)
    for i in range(depth):
        for page in pages:
            if len(out) >= room:
                return out
            if i < len(page):
                rid = page[i].record.id
                if rid not in taken and rid not in out:
                    out.append(rid)
    return out
