"""Index items: the consolidated overlay that points back to records (paper §4.1).

Consolidation folds the journal into three kinds of items, each linked to the ids of the
records it came from: events on **topic timelines**, dated **value histories** of things
that can change, and **standing instructions** and preferences. Items never replace
records. The read path reaches them only through the small :class:`ItemSource` protocol,
so it works (with an empty index) before any consolidation has run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from mnemon_langgraph.types import Namespace

__all__ = ["IndexItem", "ItemKind", "ItemSource"]

ItemKind: TypeAlias = Literal["event", "value", "instruction"]


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
            return f"{day}: {self.subject} — {self.attribute} = {self.value}{mark}"
        return self.text


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
