"""Retention that erases: what both backends share (policy, receipt, choice, trimming).

``store.apply_retention(namespace, older_than=..., keep_last=None)`` removes the records
whose *conversation date* is older than ``now - older_than`` (the newest ``keep_last`` dated
records stay whatever their age; undated records are never removed by age and are counted
in the receipt), with their message ids, vectors and BM25 statistics, the consolidated items
linked only to them, the text that items keeping other links quote from them, and the
key-value items under the namespace last written before the cut-off. It is one transaction
with one audit row (ids and counts, never text), then the same scrub as an erase (the SQLite
WAL checkpointed with ``secure_delete`` on; PostgreSQL ``VACUUM``). A namespace under a legal
hold (``store.hold(namespace)``) is skipped and the receipt says so.

This module holds what the two backends' hooks (``store/embedded/_retention.py``,
``store/postgres/_retention.py``) share, so they choose and trim the same way.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.items import RETENTION_NOTE
from mnemon_langgraph.search._text import terms
from mnemon_langgraph.types import Namespace

__all__ = [
    "REDACTED_ERROR",
    "RETENTION_NOTE",
    "FailureRow",
    "ItemChange",
    "RecordStub",
    "RetentionPlan",
    "RetentionReceipt",
    "audit_reason",
    "check_keep_last",
    "check_now",
    "check_older_than",
    "choose_records",
    "failures_touching",
    "parse_age",
    "plan_items",
    "quotes_removed",
    "trim_quoted",
]


_AGE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_MAX_AGE = timedelta(days=365 * 1000)


def parse_age(value: str) -> timedelta:
    """``"30d"`` → 30 days (units ``s``, ``m``, ``h``, ``d``, ``w``).

    Raises:
        InputError: Not a whole number followed by one of the units.
    """
    match = _AGE.match(value) if isinstance(value, str) else None
    if match is None:
        raise InputError(
            f"an age is a whole number and a unit (s, m, h, d, w), like 30d; got {value!r}"
        )
    return timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})


def check_older_than(value: object) -> timedelta:
    """A positive ``timedelta`` (or an age like ``"30d"``), at most a thousand years."""
    age = parse_age(value) if isinstance(value, str) else value
    if not isinstance(age, timedelta) or not timedelta(0) < age <= _MAX_AGE:
        raise InputError(
            f"older_than must be a positive timedelta or an age like 30d, not {value!r}"
        )
    return age


def check_keep_last(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**62:
        raise InputError(f"keep_last must be None or a whole number >= 0, not {value!r}")
    return value


def check_now(value: object) -> datetime:
    """The run's clock: ``None`` (now) or a ``datetime`` (naive is UTC), as aware UTC."""
    if value is None:
        return datetime.now(UTC)
    if not isinstance(value, datetime):
        raise InputError(f"now must be a datetime or None, not {type(value).__name__}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class RecordStub:
    """What the choice reads of a record: id, write order, conversation date, message ids."""

    id: str
    seq: int
    date: datetime | None  # naive UTC, as records store it
    message_ids: tuple[str, ...]


def choose_records(
    records: Iterable[RecordStub], cutoff: datetime, keep_last: int | None
) -> tuple[list[RecordStub], int, int]:
    """The records a policy removes: ``(removed, undated_kept, kept_by_keep_last)``.

    A record goes when its conversation date is before ``cutoff`` (naive UTC), unless it is
    among the ``keep_last`` newest dated records (by date, then write order). Undated records
    never go. A message stays whole: a record that shares a message with a kept record is
    kept too (a message split over records, or packed with a newer one).
    """
    rows = list(records)
    dated = sorted((r for r in rows if r.date is not None), key=lambda r: (r.date, r.seq))
    protected = {r.id for r in dated[len(dated) - keep_last :]} if keep_last else set()
    old = {r.id for r in dated if r.date < cutoff}  # type: ignore[operator]
    remove = old - protected
    while True:
        kept_messages = {m for r in rows if r.id not in remove for m in r.message_ids}
        shared = {r.id for r in rows if r.id in remove and kept_messages & set(r.message_ids)}
        if not shared:
            break
        remove -= shared
    removed = sorted((r for r in rows if r.id in remove), key=lambda r: r.seq)
    undated = sum(r.date is None for r in rows)
    return removed, undated, len(old & protected)


def _sentences(text: str) -> list[str]:
    return [s for s in re.findall(r"[^.!?;\n]+[.!?;]*", text) if s.strip()]


def _only_removed(removed: Sequence[str], kept: Sequence[str]) -> set[str]:
    return {t for r in removed for t in terms(r)} - {t for k in kept for t in terms(k)}


def trim_quoted(text: str, removed: Sequence[str], kept: Sequence[str]) -> str | None:
    """``text`` without the sentences that quote the removed records.

    A sentence quotes them when it holds a word (a BM25 term) found in one of ``removed``
    and in none of ``kept`` (the item's other linked records): what only the removed
    records said goes with them. ``None``: every sentence did (nothing of it is left).
    """
    only_removed = _only_removed(removed, kept)
    body = text.replace(RETENTION_NOTE, "").strip()
    left = [s.strip() for s in _sentences(body) if not set(terms(s)) & only_removed]
    return " ".join(left) if left else None


def quotes_removed(label: str, removed: Sequence[str], kept: Sequence[str]) -> bool:
    """Whether ``label`` holds a word only the removed records said (see :func:`trim_quoted`)."""
    return bool(set(terms(label)) & _only_removed(removed, kept))


@dataclass(frozen=True, slots=True)
class ItemChange:
    """What retention does to one consolidated item linked to a removed record.

    Attributes:
        id: The item.
        text: Its new text (``None``: the item is removed).
        lost_links: How many of its links go.
    """

    id: str
    text: str | None
    lost_links: int


def plan_items(
    items: Mapping[str, tuple[str, Sequence[str | None], set[str]]],
    removed_ids: set[str],
    texts: Mapping[str, str],
) -> list[ItemChange]:
    """Per item linked to a removed record: removed, or trimmed and marked.

    Args:
        items: ``item id -> (text, labels, every linked record id)``; the labels are its
            value, topic, subject and attribute (``None`` where it has none).
        removed_ids: The records retention removes.
        texts: Text of every record linked to these items.

    An item whose links all go is removed; so is one whose text holds nothing left once
    what only the removed records said is cut, or one whose value or label holds a word
    only the removed records said. The others keep their other links, lose the quoted
    sentences and get :data:`RETENTION_NOTE`.
    """
    out: list[ItemChange] = []
    for item_id, (text, labels, links) in sorted(items.items()):
        lost = links & removed_ids
        kept = sorted(links - removed_ids)
        gone = [texts.get(r, "") for r in sorted(lost)]
        stay = [texts.get(r, "") for r in kept]
        new = trim_quoted(text, gone, stay) if kept else None
        if new is None or any(v and quotes_removed(v, gone, stay) for v in labels):
            out.append(ItemChange(item_id, None, len(lost)))
        else:
            out.append(ItemChange(item_id, f"{new} {RETENTION_NOTE}", len(lost)))
    return out


@dataclass(frozen=True, slots=True)
class FailureRow:
    """A consolidation failure row: its id and the seq range of the batch it covers."""

    id: int
    start: int
    end: int


def failures_touching(failures: Iterable[FailureRow], removed: Sequence[RecordStub]) -> list[int]:
    """Ids of the failure rows whose batch holds a removed record: their error message (the
    model's, which may quote the batch) is redacted, the row (and its retry state) kept."""
    seqs = sorted(r.seq for r in removed)
    out = []
    for f in failures:
        at = bisect.bisect_left(seqs, f.start)
        if at < len(seqs) and seqs[at] <= f.end:
            out.append(f.id)
    return sorted(out)


REDACTED_ERROR = "[error message removed by retention: it may have quoted removed records]"
"""What a redacted consolidation failure's ``error`` says."""


@dataclass(frozen=True, slots=True)
class RetentionPlan:
    """What one run removes, decided inside its transaction (the hooks fill it)."""

    records: list[RecordStub]
    undated_kept: int
    kept_by_keep_last: int
    items: list[ItemChange] = field(default_factory=list)
    kv_keys: list[tuple[str, str]] = field(default_factory=list)  # (stored namespace, key)
    failures: list[int] = field(default_factory=list)  # consolidation failure rows redacted
    messages: int = 0
    vectors: int = 0


@dataclass(frozen=True, slots=True)
class RetentionReceipt:
    """What a retention run removed (or, with ``dry_run``, would remove).

    Attributes:
        namespace: The namespace.
        older_than: The policy's age.
        keep_last: The policy's newest dated records kept whatever their age (``None``: none).
        cutoff: Records dated before this (UTC) go; key-value items written before it too.
        dry_run: Nothing was removed.
        held: The namespace is under a legal hold: skipped, nothing removed.
        records: Records removed (with their vectors and BM25 statistics).
        messages: Message ids removed (message rows).
        vectors: Stored vectors removed.
        items_removed: Consolidated items removed (linked only to removed records, or
            nothing of their text left once the removed records' words were cut).
        items_trimmed: Items that kept other links: lost the removed links and the text
            quoting them, and say so (:data:`RETENTION_NOTE`).
        kv_items: Key-value items under the namespace last written before the cut-off.
        failures_redacted: Consolidation failure rows of batches that held a removed record:
            their error message (the model's, which may quote the batch) is replaced.
        undated_kept: Undated records (never removed by age).
        kept_by_keep_last: Records older than the cut-off kept by ``keep_last``.
        record_ids: Ids of the removed records (also in the audit row).
        message_ids: Ids of the removed messages (also in the audit row).
    """

    namespace: Namespace
    older_than: timedelta
    keep_last: int | None
    cutoff: datetime
    dry_run: bool = False
    held: bool = False
    records: int = 0
    messages: int = 0
    vectors: int = 0
    items_removed: int = 0
    items_trimmed: int = 0
    kv_items: int = 0
    failures_redacted: int = 0
    undated_kept: int = 0
    kept_by_keep_last: int = 0
    record_ids: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        """Removed (or to remove) per kind."""
        return {
            "records": self.records,
            "messages": self.messages,
            "vectors": self.vectors,
            "items_removed": self.items_removed,
            "items_trimmed": self.items_trimmed,
            "kv_items": self.kv_items,
            "failures_redacted": self.failures_redacted,
        }

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the CLI's ``--json``); ids left out, counts and policy in."""
        return {
            "namespace": list(self.namespace),
            "older_than_seconds": int(self.older_than.total_seconds()),
            "keep_last": self.keep_last,
            "cutoff": self.cutoff.isoformat(),
            "dry_run": self.dry_run,
            "held": self.held,
            **self.counts,
            "undated_kept": self.undated_kept,
            "kept_by_keep_last": self.kept_by_keep_last,
        }

    @classmethod
    def of_plan(
        cls, plan: RetentionPlan, *, namespace: Namespace, policy: tuple[timedelta, int | None],
        cutoff: datetime, dry_run: bool,
    ) -> RetentionReceipt:  # fmt: skip
        removed = [c for c in plan.items if c.text is None]
        return cls(
            namespace=namespace,
            older_than=policy[0],
            keep_last=policy[1],
            cutoff=cutoff,
            dry_run=dry_run,
            records=len(plan.records),
            messages=plan.messages,
            vectors=plan.vectors,
            items_removed=len(removed),
            items_trimmed=len(plan.items) - len(removed),
            kv_items=len(plan.kv_keys),
            failures_redacted=len(plan.failures),
            undated_kept=plan.undated_kept,
            kept_by_keep_last=plan.kept_by_keep_last,
            record_ids=tuple(r.id for r in plan.records),
            message_ids=tuple(sorted({m for r in plan.records for m in r.message_ids})),
        )


def audit_reason(receipt: RetentionReceipt, tables: Mapping[str, int]) -> str:
    """The audit row's reason: the policy, the cut-off and the counts per table (JSON, no
    text of any record or item)."""
    return json.dumps(
        {
            "policy": {
                "older_than_seconds": int(receipt.older_than.total_seconds()),
                "keep_last": receipt.keep_last,
            },
            "cutoff": receipt.cutoff.isoformat(),
            "tables": dict(sorted(tables.items())),
        },
        separators=(",", ":"),
    )
