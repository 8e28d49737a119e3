"""Small in-memory backends for the read path: tests, demos, documents.

:class:`InMemorySearchSource` ranks records by shared words (a tiny BM25-like score) — no
embeddings, no files — and implements :class:`~mnemon_langgraph.types.SearchSource`.
:class:`InMemoryItemSource` implements :class:`~mnemon_langgraph.items.ItemSource` over a
list of :class:`~mnemon_langgraph.items.IndexItem`. Both are exact and deterministic;
use ``MnemonStore`` for real histories.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.search._text import terms
from mnemon_langgraph.types import Namespace, Record, Role, SearchFilters, SearchHit

__all__ = ["InMemoryItemSource", "InMemorySearchSource", "make_record"]


def _tokens(text: str) -> list[str]:
    # The BM25 index's terms (any script, stemmed, no stopwords), so these stand-ins rank
    # by the same words a MnemonStore would.
    return terms(text)


def make_record(
    rid: str,
    text: str,
    *,
    namespace: Namespace = ("test",),
    session: int = 1,
    date: datetime | None = None,
    position: int = 0,
    message_ids: Sequence[str] | None = None,
    seq: int = 0,
    roles: Sequence[Role] = (),
) -> Record:
    """A record with sensible defaults (speakers taken from ``speaker: text`` lines)."""
    speakers = tuple(
        dict.fromkeys(line.split(":", 1)[0].strip() for line in text.splitlines() if ":" in line)
    )
    return Record(
        id=rid,
        namespace=namespace,
        session=session,
        date=date,
        position=position,
        speakers=speakers,
        message_ids=tuple(message_ids if message_ids is not None else (f"{rid}:m0",)),
        text=text,
        seq=seq,
        roles=tuple(roles),
    )


class InMemorySearchSource:
    """Word-overlap search over records held in memory (a :class:`SearchSource`).

    Args:
        records: Records of any namespaces.
    """

    def __init__(self, records: Iterable[Record] = ()) -> None:
        self._records: list[Record] = []
        self._tokens: list[Counter[str]] = []
        self.calls: list[tuple[str, int, int]] = []
        # session_records() calls: (session, start, stop)
        self.reads: list[tuple[int, int, int | None]] = []
        self.add(records)

    def add(self, records: Iterable[Record]) -> None:
        """Add records."""
        for r in records:
            self._records.append(r)
            self._tokens.append(Counter(_tokens(r.render())))

    def search(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Hits ``offset .. offset + k`` ranked by IDF-weighted shared words."""
        self.calls.append((query, k, offset))
        q = set(_tokens(query))
        idx = [
            i
            for i, r in enumerate(self._records)
            if r.namespace == tuple(namespace) and (filters is None or filters.accepts(r))
        ]
        n = max(1, len(idx))
        df = Counter(w for i in idx for w in set(self._tokens[i]) if w in q)
        scored = []
        for i in idx:
            s = sum(math.log(1 + n / df[w]) for w in q if self._tokens[i].get(w))
            if s > 0:
                scored.append((s, i))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [
            SearchHit(self._records[i], rank, s, bm25_rank=rank)
            for rank, (s, i) in enumerate(scored)
        ][offset : offset + k]

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async :meth:`search`."""
        return self.search(query, namespace=namespace, k=k, offset=offset, filters=filters)

    def session_records(
        self,
        namespace: Namespace,
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Records of ``session`` with ``start <= position < stop`` inside ``filters``, in
        position order (a journal source)."""
        self.reads.append((session, start, stop))
        end = stop if stop is not None else math.inf
        return sorted(
            (
                r
                for r in self._records
                if r.namespace == tuple(namespace)
                and r.session == session
                and start <= r.position < end
                and (filters is None or filters.accepts(r))
            ),
            key=lambda r: (r.position, r.seq),
        )


class InMemoryItemSource:
    """An :class:`ItemSource` over a list of items (nearest = most shared words)."""

    def __init__(self, items: Iterable[IndexItem] = ()) -> None:
        self.items = list(items)

    def _ns(self, namespace: Namespace) -> list[IndexItem]:
        return [i for i in self.items if i.namespace == tuple(namespace)]

    def linked_items(self, namespace: Namespace, record_ids: Sequence[str]) -> list[IndexItem]:
        """Items linked to any of ``record_ids``."""
        ids = set(record_ids)
        return [i for i in self._ns(namespace) if ids.intersection(i.record_ids)]

    def nearest_items(self, query: str, *, namespace: Namespace, k: int = 12) -> list[IndexItem]:
        """The ``k`` items sharing most words with ``query``."""
        q = set(_tokens(query))
        scored = [
            (len(q & set(_tokens(i.render()))), n, i) for n, i in enumerate(self._ns(namespace))
        ]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [i for _, _, i in scored[:k]]

    def instructions(self, namespace: Namespace) -> list[IndexItem]:
        """Standing instructions, oldest first."""
        return sorted(
            (i for i in self._ns(namespace) if i.kind == "instruction"), key=lambda i: i.seq
        )

    def topics(self, namespace: Namespace) -> list[str]:
        """Topic names of the timelines."""
        return list(
            dict.fromkeys(i.topic for i in self._ns(namespace) if i.kind == "event" and i.topic)
        )

    def group(self, namespace: Namespace, item: IndexItem) -> list[IndexItem]:
        """The timeline or value history of ``item``, oldest first."""
        return sorted(
            (i for i in self._ns(namespace) if i.group_key == item.group_key),
            key=lambda i: (i.date or datetime.min, i.seq),
        )
