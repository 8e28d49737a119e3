"""The two writes of the consolidation job, written once for both item stores.

:func:`commit_folded_batch` (a batch's items and the watermark) and
:func:`record_batch_failure` (a failed batch, and with ``skip`` the watermark past it) decide
everything here — the watermark check, which links survive, which items are written, what
is counted — and call a few SQL steps of a :class:`BatchTransaction` that each item store
implements inside one transaction of its own database.

The algorithm is written once as a generator body that *yields* each SQL step (a
:class:`Step`) and gets its result back: the package's one rule for code that runs on a
blocking and on an async backend (``docs/design.md``, as the read nodes' bodies of
``read/_drive.py``). :func:`drive` runs a body with a sync transaction (SQLite, on the
calling thread), :func:`adrive` with an async one (psycopg's async connection on the
PostgreSQL store's loop): one algorithm, no copy per backend, and no event loop made for
a step that never waits.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

import numpy as np

from mnemon_langgraph.errors import JournalError
from mnemon_langgraph.items import IndexItem, ItemUpdate
from mnemon_langgraph.types import Namespace

__all__ = [
    "BatchTransaction",
    "BatchUsage",
    "Body",
    "Step",
    "adrive",
    "commit_folded_batch",
    "drive",
    "record_batch_failure",
]

T = TypeVar("T")

MAX_ERROR_CHARS = 2000
"""Longest failure text kept in the failures table."""


@dataclass(frozen=True, slots=True)
class BatchUsage:
    """Model calls and tokens one batch took (added to the namespace's running totals)."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Step:
    """One SQL step a body asks for: ``tx.<name>(*args)`` of its :class:`BatchTransaction`."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Body: TypeAlias = Generator[Step, Any, T]


def drive(body: Body[T], tx: Any) -> T:
    """Run ``body`` with a sync transaction (each step a plain call); its return value."""
    result: Any = None
    while True:
        try:
            step = body.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            result = getattr(tx, step.name)(*step.args, **step.kwargs)
        except BaseException:
            body.close()
            raise


async def adrive(body: Body[T], tx: Any) -> T:
    """Run ``body`` with an async transaction (each step awaited); its return value."""
    result: Any = None
    while True:
        try:
            step = body.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            result = await getattr(tx, step.name)(*step.args, **step.kwargs)
        except BaseException:
            body.close()
            raise


class BatchTransaction(Protocol):
    """The SQL steps of one write, all inside one open transaction of the item store.

    Written ``async def`` here (PostgreSQL's); SQLite's are the same methods as plain
    ``def`` (run by :func:`drive`)."""

    async def locked_watermark(self) -> int:
        """The namespace's watermark (0 before any run), held until the transaction ends."""
        ...

    async def existing_records(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` are records of the namespace that still exist."""
        ...

    async def insert_item(self, item: IndexItem, links: list[str], vector: Any) -> bool:
        """Insert ``item`` (a new ``seq``) linked to ``links``; False if its id exists."""
        ...

    async def update_item(self, update: ItemUpdate, links: list[str], vector: Any) -> bool:
        """Rewrite an item of the namespace (a new ``seq``) and add ``links``; False if the
        namespace has no such item."""
        ...

    async def upsert_failure(
        self, start: int, end: int, error: str, attempts: int, skip: bool
    ) -> None:
        """Record a failed batch; an unresolved row with the same start is updated (its
        attempts add up, the latest error is kept)."""
        ...

    async def advance(
        self,
        watermark: int | None,
        *,
        batches: int,
        added: int,
        updated: int,
        usage: BatchUsage,
    ) -> None:
        """Move the watermark (unless None) and add to the running totals."""
        ...

    async def resolve_failures(self, after: int, upto: int) -> None:
        """Mark failures of batches starting in ``(after, upto]`` resolved."""
        ...


def _row(vectors: np.ndarray | None, index: int) -> np.ndarray | None:
    return None if vectors is None else vectors[index]


def commit_folded_batch(
    namespace: Namespace,
    *,
    expected_watermark: int,
    new_watermark: int,
    new_items: Sequence[IndexItem],
    new_vectors: np.ndarray | None,
    updates: Sequence[ItemUpdate],
    update_vectors: np.ndarray | None,
    usage: BatchUsage,
) -> Body[tuple[int, int]]:
    """Write a folded batch's items and move the watermark (see ``ItemStore.commit_batch``).

    A body: run it with :func:`drive` or :func:`adrive` and the item store's transaction.

    Links to records deleted since the batch was read are dropped, and an item left with
    no link is not written (an item always cites a record behind it). An update keeps the
    item's old links and adds the surviving new ones.

    Returns:
        ``(items_added, items_updated)`` as written.

    Raises:
        JournalError: The watermark is no longer ``expected_watermark`` (another run moved
            it); the caller's transaction then writes nothing.
    """
    current = yield Step("locked_watermark")
    if current != expected_watermark:
        raise JournalError(
            f"the consolidation watermark of {namespace!r} moved from "
            f"{expected_watermark} to {current} during this run (another run?)"
        )
    wanted = {rid for it in new_items for rid in it.record_ids}
    wanted |= {rid for up in updates for rid in up.record_ids}
    alive = yield Step("existing_records", (sorted(wanted),))
    added = updated = 0
    for index, item in enumerate(new_items):
        links = [rid for rid in dict.fromkeys(item.record_ids) if rid in alive]
        if links and (yield Step("insert_item", (item, links, _row(new_vectors, index)))):
            added += 1
    for index, up in enumerate(updates):
        links = [rid for rid in dict.fromkeys(up.record_ids) if rid in alive]
        if (yield Step("update_item", (up, links, _row(update_vectors, index)))):
            updated += 1
    counts = {"batches": 1, "added": added, "updated": updated, "usage": usage}
    yield Step("advance", (new_watermark,), counts)
    yield Step("resolve_failures", (expected_watermark, new_watermark))
    return added, updated


def record_batch_failure(
    namespace: Namespace,
    *,
    batch_start_seq: int,
    batch_end_seq: int,
    error: str,
    attempts: int,
    skip: bool,
    expected_watermark: int,
    usage: BatchUsage,
) -> Body[None]:
    """Record a failed batch; with ``skip`` also move the watermark past it (a body, as
    :func:`commit_folded_batch`).

    Raises:
        JournalError: ``skip`` and the watermark is no longer ``expected_watermark``.
    """
    current = yield Step("locked_watermark")
    failure = (batch_start_seq, batch_end_seq, error[:MAX_ERROR_CHARS], attempts, skip)
    yield Step("upsert_failure", failure)
    if skip and current != expected_watermark:
        raise JournalError(f"the consolidation watermark of {namespace!r} moved during this run")
    watermark = batch_end_seq if skip else None
    yield Step("advance", (watermark,), {"batches": 0, "added": 0, "updated": 0, "usage": usage})
