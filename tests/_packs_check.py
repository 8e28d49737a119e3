"""What every pack of a PostgreSQL store must satisfy (``store.postgres.impact``, "Impact
postings").

Shared by the packs tests and the migration test.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnemon_langgraph.store.postgres._impact import PackPart


def check_packs(url: str) -> dict[str, int]:
    """Assert the packs' invariants on the database at ``url``; return ``{term: packed}``.

    For every term with a pack: its parts hold exactly its postings with ``seq <= upto``
    (no deleted record's, none twice), ``packed`` counts them, the postings above ``upto``
    number ``df - packed``; inside a part impacts fall, each part's ``low`` is at most its
    impacts and at least every impact of the parts after it; only the final part is
    ``last``. No pack belongs to a term without a ``mnemon_terms`` row or ``packed`` 0.
    """
    import psycopg

    out: dict[str, int] = {}
    with psycopg.connect(url) as conn:
        terms = conn.execute(
            "SELECT term, df, packed, upto FROM mnemon_terms WHERE packed > 0 ORDER BY term"
        ).fetchall()
        orphans = conn.execute(
            "SELECT count(*) FROM mnemon_packs p LEFT JOIN mnemon_terms t USING (term) "
            "WHERE t.term IS NULL OR t.packed = 0"
        ).fetchone()
        assert orphans is not None and orphans[0] == 0, orphans
        for term, df, packed, upto in terms:
            rows = conn.execute(
                "SELECT part, low, last, seqs, imps FROM mnemon_packs WHERE term = %s "
                "ORDER BY part",
                (term,),
            ).fetchall()
            _check_parts(term, [(r[0], PackPart.from_row(*r[1:])) for r in rows])
            held = np.concatenate([PackPart.from_row(*r[1:]).seqs for r in rows])
            postings = conn.execute(
                "SELECT seq, seq <= %s FROM mnemon_postings WHERE term = %s", (upto, term)
            ).fetchall()
            below = sorted(s for s, inside in postings if inside)
            assert sorted(held.tolist()) == below, term  # none deleted, none twice, none lost
            assert packed == len(held) and df - packed == len(postings) - len(below), term
            out[term] = packed
    return out


def _check_parts(term: str, parts: list[tuple[int, Any]]) -> None:
    assert [i for i, _ in parts] == list(range(len(parts))), term
    assert [p.last for _, p in parts] == [False] * (len(parts) - 1) + [True], term
    for j, (_, part) in enumerate(parts):
        imps = part.impacts.astype(np.float64)
        assert np.all(np.diff(imps) <= 0), term  # highest impact first
        assert not len(imps) or part.low <= imps.min() + 1e-9, term
        for _, later in parts[j + 1 :]:
            assert not len(later.impacts) or later.impacts.max() <= part.low + 1e-9, term
