"""An ingest's records, decided again under the namespace's write lock.

Both backends draft an ingest without the lock (which messages are new, the next position
of each session, the records, their vectors: embedding is the slow part and must not hold
the lock), then take the lock and decide again: the message ids already stored and each
session's next position are read *under the lock*, the records re-cut from the messages
still new, and the vectors embedded before are reused for every record of the same text
(a record's text does not depend on its position). So overlapping writers, in threads,
processes or on several hosts, never store a message id twice and give one session's
records unique positions in the order they commit; only text that another writer's
overlap re-cut differently is embedded under the lock.

A unique constraint on ``(namespace, message_id)`` cannot do this: one long message is
cut into several records that all name it, so message ids repeat across records by design.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mnemon_langgraph.types import Record

__all__ = ["reuse_vectors"]


def reuse_vectors(
    records: Sequence[Record],
    drafted: Sequence[Record],
    vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
) -> np.ndarray:
    """Vector rows for ``records``: the drafted row of the same text, else newly embedded.

    Args:
        records: The records decided under the lock.
        drafted: The records drafted before it, parallel to the rows of ``vectors``.
        vectors: Their vectors.
        embed: Embeds the texts no drafted record had (called only if there are any).
    """
    by_text = {rec.text: vectors[i] for i, rec in enumerate(drafted)}
    missing = list(dict.fromkeys(r.text for r in records if r.text not in by_text))
    if missing:
        by_text.update(zip(missing, embed(missing), strict=True))
    if not records:
        return np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), dtype=np.float32)
    return np.stack([np.asarray(by_text[r.text], dtype=np.float32) for r in records])
