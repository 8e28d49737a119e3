"""Index items: the consolidated overlay that points back to records (paper §4.1).

Consolidation folds the journal into three kinds of items, each linked to the ids of the
records it came from: events on **topic timelines**, dated **value histories** of things
that can change, and **standing instructions** and preferences. Items never replace
records. The read path reaches them only through the small :class:`ItemSource` protocol,
so it works (with an empty index) before any consolidation has run; the consolidation job
writes them through :class:`ItemStore`, which each backend's item store implements.

A store gives its item store by ``store.item_store()``: each backend keeps its own in its
folder (``store/embedded/_items.py``, ``store/postgres/_items.py``), and both run the one write
algorithm of ``store/_internal/item_commit.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from mnemon_langgraph.types import Namespace, Record

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "IndexItem",
    "ItemKind",
    "ItemSource",
    "ItemStore",
    "ItemUpdate",
    "item_dict",
]

ItemKind: TypeAlias = Literal["event", "value", "instruction"]

RETENTION_NOTE = "[Some of the records this came from were removed by retention.]"
"""The note retention appends to an item that kept other links (``store.apply_retention``:
it lost the removed links and the text quoting them)."""


@dataclass(frozen=True, slots=True)
class IndexItem:
    """One consolidated item.

    Attributes:
        id: Stable id.
        namespace: Namespace it belongs to (never shown to another namespace).
        kind: ``event`` (on a topic timeline), ``value`` (in a value history) or
            ``instruction`` (a standing instruction or preference).
        text: What happened / the value / the instruction, in one short sentence.
        record_ids: Ids of the records it came from (never empty for a stored item).
        topic: Timeline name, for events.
        subject: What the value is about (``"Caroline"``), for values.
        attribute: Which property changed (``"home city"``), for values.
        value: The value itself, for values.
        date: When it happened or became true, if known.
        contradicts: For values: it contradicts an earlier value of the same attribute.
        seq: Write order (higher is more recent).
    """

    id: str
    namespace: Namespace
    kind: ItemKind
    text: str
    record_ids: tuple[str, ...]
    topic: str | None = None
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None
    date: datetime | None = None
    contradicts: bool = False
    seq: int = 0

    @property
    def trimmed(self) -> bool:
        """Retention removed some of the records it came from (its text ends with
        :data:`RETENTION_NOTE`); a value item's line says so too."""
        return self.text.endswith(RETENTION_NOTE)

    @property
    def group_key(self) -> tuple[str, ...]:
        """Key of the timeline or value history the item belongs to."""
        if self.kind == "event":
            return ("event", (self.topic or "").casefold())
        if self.kind == "value":
            return ("value", (self.subject or "").casefold(), (self.attribute or "").casefold())
        return ("instruction",)

    def render(self) -> str:
        """One line, as the View shows it."""
        day = self.date.strftime("%Y-%m-%d") if self.date else "undated"
        if self.kind == "event":
            return f"{day}: {self.text}"
        if self.kind == "value":
            mark = " (contradicts an earlier value)" if self.contradicts else ""
            if self.trimmed:
                mark += " (some of its records were removed by retention)"
            return f"{day}: {self.subject} — {self.attribute} = {self.value}{mark}"
        return self.text


@dataclass(frozen=True, slots=True)
class ItemUpdate:
    """A fold's change to an existing item: new text and (optionally) more links.

    Attributes:
        item_id: The item to update.
        text: Its new text.
        record_ids: Records of the batch the new text came from (linked to the item).
    """

    item_id: str
    text: str
    record_ids: tuple[str, ...] = ()


@runtime_checkable
class ItemSource(Protocol):
    """What the read path needs from the consolidated index."""

    def linked_items(self, namespace: Namespace, record_ids: Sequence[str]) -> list[IndexItem]:
        """Items linked to any of ``record_ids``."""
        ...

    def nearest_items(self, query: str, *, namespace: Namespace, k: int = 12) -> list[IndexItem]:
        """The ``k`` items whose embeddings are nearest to ``query``."""
        ...

    def instructions(self, namespace: Namespace) -> list[IndexItem]:
        """Every standing instruction and preference, oldest first."""
        ...

    def topics(self, namespace: Namespace) -> list[str]:
        """Names of every topic timeline, for the one-line directory."""
        ...

    def group(self, namespace: Namespace, item: IndexItem) -> list[IndexItem]:
        """The whole timeline or value history ``item`` belongs to, oldest first."""
        ...


@runtime_checkable
class ItemStore(ItemSource, Protocol):
    """What the consolidation job needs from the consolidated index: the read side
    (:class:`ItemSource`), the records still to fold, and the batch writes.

    Both writes are one transaction each and check the watermark the batch was read from,
    so a crash or a second job never folds the same records twice.
    """

    def records_after(self, namespace: Namespace, after_seq: int) -> Iterator[Record]:
        """Records of ``namespace`` with ``seq > after_seq`` in seq order (the next batch)."""
        ...

    def watermark(self, namespace: Namespace) -> int:
        """The last record ``seq`` folded into the index of ``namespace`` (0 before any)."""
        ...

    def context_items(self, namespace: Namespace) -> list[IndexItem]:
        """Every item of ``namespace`` without its links, in write order."""
        ...

    def get_items(self, namespace: Namespace, ids: Sequence[str]) -> list[IndexItem]:
        """The items of ``namespace`` with the given ids (unknown ids are left out)."""
        ...

    def all_items(self, namespace: Namespace, kind: ItemKind | None = None) -> list[IndexItem]:
        """Every item of ``namespace`` (of one ``kind`` if given), in write order."""
        ...

    def embed_items(self, items: Sequence[IndexItem]) -> np.ndarray:
        """Unit-length float32 embeddings of ``items``, one row each."""
        ...

    def commit_batch(
        self,
        namespace: Namespace,
        *,
        expected_watermark: int,
        new_watermark: int,
        new_items: Sequence[IndexItem],
        new_vectors: np.ndarray | None,
        updates: Sequence[ItemUpdate] = (),
        update_vectors: np.ndarray | None = None,
        model_calls: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> tuple[int, int]:
        """Write a folded batch's items and move the watermark in one transaction;
        ``(items_added, items_updated)`` as written."""
        ...

    def record_failure(
        self,
        namespace: Namespace,
        *,
        batch_start_seq: int,
        batch_end_seq: int,
        error: str,
        attempts: int,
        skip: bool,
        expected_watermark: int,
        model_calls: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        """Record that a batch failed; with ``skip`` also move the watermark past it."""
        ...

    def drop_index(self, namespace: Namespace) -> int:
        """Delete the items, failures and watermark of ``namespace``; items deleted."""
        ...

    def close(self) -> None:
        """Release what the item store opened itself (the store stays open)."""
        ...


def item_dict(item: IndexItem) -> dict[str, Any]:
    """``item`` as JSON-ready data: one spelling for every export (``store.export``, the
    JSONL transfer format), with the ids of the records it came from, sorted."""
    from mnemon_langgraph.types import as_naive_utc

    date = as_naive_utc(item.date)
    return {
        "namespace": list(item.namespace),
        "id": item.id,
        "kind": item.kind,
        "text": item.text,
        "record_ids": sorted(item.record_ids),
        "topic": item.topic,
        "subject": item.subject,
        "attribute": item.attribute,
        "value": item.value,
        "date": None if date is None else date.isoformat(),
        "contradicts": bool(item.contradicts),
    }
