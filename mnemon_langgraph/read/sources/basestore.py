"""Any LangGraph ``BaseStore`` as a read source: store items become dated records.

:class:`BaseStoreSource` reads the items of one namespace of a LangGraph store — memories
written by LangMem's tools, by ``MnemonBaseStore`` users or by an application's own
``store.put`` — so the View judges them beside the conversation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import BaseStore, SearchItem

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.read.memory import InMemorySearchSource
from mnemon_langgraph.read.namespaces import template_fields
from mnemon_langgraph.read.sources._adapt import (
    as_date,
    check_namespace,
    hits_of,
    records_of_text,
    speaker_of,
)
from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS, check_record_chars, stable_hash
from mnemon_langgraph.types import Namespace, Record, SearchFilters, SearchHit, check_count

__all__ = ["BaseStoreSource"]

logger = logging.getLogger("mnemon_langgraph.read.sources")

_TEXT_FIELDS = ("text", "content")
"""Where an item's text is looked for when ``text_fields`` is not given (LangMem writes
``{"content": ...}``)."""


class BaseStoreSource:
    """The items of one namespace of a LangGraph ``BaseStore``, read as dated records.

    ``namespace`` is a template the read graph fills from each run (``("memories",
    "{user_id}")``, the namespace LangMem's examples use); it is this source's
    ``namespace_template``, and each search reads the namespace it is given — the filled
    template — and the namespaces below it (``BaseStore.search`` takes a prefix), never
    another: an item outside it is dropped even if the store returns one.

    Each item is one session of records (cut as the journal cuts a long message), dated by
    the item's ``updated_at``; its text is ``text_fields`` of the value joined by spaces, or
    else the value's ``text`` or ``content`` field, or else the whole value as JSON. Record
    ids hash the item's namespace, key and ``updated_at``: the same on every call until the
    item changes.

    Ranking: ``store.search(namespace, query=...)``. A store with a vector index (an
    ``InMemoryStore(index=...)``, ``MnemonBaseStore``, ``PostgresStore`` with an index)
    ranks semantically. A store without one returns items unranked (no scores); then this
    source reads up to ``scan_limit`` items of the namespace and ranks them by the words
    they share with the query (the BM25 terms of :class:`InMemorySearchSource`), so items
    sharing no word with the query are not found.

    ``pages`` is ``True`` (paged by asking the store for ``offset + k`` items);
    ``filters_dates`` is ``False``: a store cannot filter by ``updated_at``, so date bounds
    are applied to the items returned (the read path then asks for more once).

    Args:
        store: Any LangGraph ``BaseStore``.
        namespace: The namespace template (each ``{field}`` in a part of its own).
        text_fields: Fields of the item's value that hold its text.
        filter: An exact-match filter on the items' values, passed to ``store.search``.
        speaker: The speaker shown before each item's text.
        origin: The records' ingest label.
        record_chars: Longest record, as a journal's ``record_chars``.
        scan_limit: Most items read from a store without a vector index.

    Raises:
        ConfigurationError: ``store`` is not a ``BaseStore`` or an argument cannot work.
    """

    pages = True
    filters_dates = False

    def __init__(
        self,
        store: BaseStore,
        namespace: Sequence[str] = ("memories", "{user_id}"),
        *,
        text_fields: Sequence[str] | None = None,
        filter: Mapping[str, Any] | None = None,
        speaker: str = "memory",
        origin: str = "memory",
        record_chars: int = DEFAULT_MAX_CHARS,
        scan_limit: int = 1_000,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"BaseStoreSource takes a LangGraph BaseStore, got {type(store).__name__}"
            )
        if isinstance(namespace, str) or not namespace:
            raise ConfigurationError(
                f"namespace must be a non-empty tuple of strings, got {namespace!r}"
            )
        template_fields(tuple(namespace))  # raises on a bad placeholder
        if isinstance(text_fields, str):
            raise ConfigurationError("text_fields is a sequence of field names, not a string")
        if not isinstance(origin, str) or not origin.strip():
            raise ConfigurationError(f"origin must be a non-empty string, got {origin!r}")
        self.store = store
        self.namespace_template: Namespace = tuple(str(p) for p in namespace)
        self.text_fields = tuple(text_fields) if text_fields else None
        self.filter = dict(filter) if filter else None
        self.speaker = speaker_of(speaker, "memory")
        self.origin = origin
        self.record_chars = check_record_chars(record_chars)
        self.scan_limit = check_count(scan_limit, what="scan_limit", minimum=1)

    def __repr__(self) -> str:
        return f"BaseStoreSource({type(self.store).__name__}, {self.namespace_template!r})"

    def search(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Hits ``offset .. offset + k`` for ``query`` among the items of ``namespace``.

        Raises:
            NamespaceError: ``namespace`` is not a filled namespace.
            InputError: ``k`` or ``offset`` is not a usable count.
        """
        ns = self._check(query, namespace, k, offset)
        items = self.store.search(ns, query=query, filter=self.filter, limit=offset + k)
        if _unranked(items):
            items = self.store.search(ns, filter=self.filter, limit=self.scan_limit)
            return self._scanned(query, ns, items, k, offset, filters)
        return hits_of(self._records(ns, items), k=k, offset=offset, filters=filters, dense=True)

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async :meth:`search` (the store's ``asearch``)."""
        ns = self._check(query, namespace, k, offset)
        items = await self.store.asearch(ns, query=query, filter=self.filter, limit=offset + k)
        if _unranked(items):
            items = await self.store.asearch(ns, filter=self.filter, limit=self.scan_limit)
            return self._scanned(query, ns, items, k, offset, filters)
        return hits_of(self._records(ns, items), k=k, offset=offset, filters=filters, dense=True)

    def _check(self, query: str, namespace: Namespace, k: int, offset: int) -> Namespace:
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        check_count(k, what="k", minimum=1)
        check_count(offset, what="offset")
        return check_namespace(namespace)

    def _scanned(
        self,
        query: str,
        ns: Namespace,
        items: Sequence[SearchItem],
        k: int,
        offset: int,
        filters: SearchFilters | None,
    ) -> list[SearchHit]:
        """Word-overlap ranking of a store without a vector index."""
        found = InMemorySearchSource(self._records(ns, items)).search(
            query, namespace=(self.origin,), k=k, offset=offset, filters=filters
        )
        return found

    def _records(self, ns: Namespace, items: Sequence[SearchItem]) -> list[Record]:
        out: list[Record] = []
        for item in items:
            if tuple(item.namespace[: len(ns)]) != ns:
                logger.error(
                    "%r returned an item of %r for a search of %r; dropped",
                    type(self.store).__name__,
                    item.namespace,
                    ns,
                )
                continue
            out.extend(self.records_of(item))
        return out

    def records_of(self, item: SearchItem) -> list[Record]:
        """The records of one store item (none when it holds no text)."""
        stamp = item.updated_at.isoformat() if item.updated_at else ""
        item_id = "item-" + stable_hash(list(item.namespace), item.key, stamp, length=24)
        return records_of_text(
            self._text(item.value),
            text_id=item_id,
            speaker=self.speaker,
            role="user",
            when=as_date(item.updated_at, what=f"item {item.key!r}"),
            group=item_id,
            position=0,
            origin=self.origin,
            max_chars=self.record_chars,
        )

    def _text(self, value: Mapping[str, Any]) -> str:
        if not isinstance(value, Mapping):
            return _as_text(value)
        if self.text_fields is not None:
            parts = [value.get(f) for f in self.text_fields]
        else:
            found = [f for f in _TEXT_FIELDS if value.get(f) not in (None, "")]
            parts = [value[found[0]]] if found else [value]
        return " ".join(_as_text(p) for p in parts if p not in (None, ""))


def _unranked(items: Sequence[SearchItem]) -> bool:
    """The store ignored the query (no vector index): its items carry no scores."""
    return bool(items) and all(item.score is None for item in items)


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
