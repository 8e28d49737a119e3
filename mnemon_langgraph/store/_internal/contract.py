"""The store contract's shared rules: result types, bounds and the argument checks.

Every public method of every backend (sync and async face) checks its arguments with these
functions before anything is read or written, so a bad argument is the same
:class:`~mnemon_langgraph.errors.InputError` on every backend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mnemon_langgraph.errors import InputError, NamespaceError
from mnemon_langgraph.records._chunking import derive_message_id
from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.types import (
    Message,
    Namespace,
    Record,
    SearchFilters,
    check_count,
    normalize_namespace,
)

__all__ = [
    "MAX_NAMESPACE_BYTES",
    "MAX_PAGE",
    "MAX_SEQ",
    "RECORD_PAGE",
    "IngestBatch",
    "IngestResult",
    "check_bounded",
    "check_erasable",
    "check_filters",
    "check_ids",
    "check_ingest",
    "check_namespace_size",
    "check_positions",
    "check_prefix",
    "check_search",
    "check_text",
    "check_unicode",
    "check_watermark",
    "fresh_messages",
    "sessions_of",
    "written_result",
]

MAX_PAGE = 1_000_000
"""Largest ``k`` and ``offset`` a search accepts (far above any page the read path asks
for; it keeps ``offset + k`` a valid SQL ``LIMIT`` on every backend)."""
MAX_SEQ = 2**63 - 1
"""Largest ``after_seq`` / ``limit`` of :meth:`MnemonStore.records` (a 64-bit integer)."""
MAX_NAMESPACE_BYTES = 1536
"""Largest stored form of a namespace written to (its parts as a compact JSON array, in
UTF-8 bytes): two parts of 512 ASCII characters fit, six do not. PostgreSQL keeps the
stored form in B-tree indexes (``mnemon_namespaces``, the audit tables, with the key in
the key-value items' primary key), whose entries hold at most about 2,700 bytes; 1,536
bytes plus a 1,024-byte item key fit with room to spare. SQLite holds more, but the same
bound is checked on both backends, so an input is stored on both or refused on both."""

RECORD_PAGE = 1000
"""Records one page of ``records`` / ``arecords`` reads (every backend, both faces)."""


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What an ingest wrote.

    Attributes:
        records_written: Records appended to the journal.
        messages_written: Messages that went into those records.
        messages_skipped: Messages already in the journal (same id), left alone.
        record_ids: Ids of the records written, in order.
    """

    records_written: int
    messages_written: int
    messages_skipped: int
    record_ids: tuple[str, ...] = field(default=())


def check_unicode(namespace: Namespace, source: str, messages: Sequence[Message]) -> None:
    """Raise :class:`InputError` for text that cannot be stored: lone surrogates, NUL.

    Lone surrogates come from ``json.loads`` of ``"\\ud800"`` escapes or badly decoded input;
    the database, the embedder and the hashers would otherwise fail on them with a bare
    ``UnicodeEncodeError`` halfway through an ingest. NUL (U+0000, e.g. in binary tool
    output) is valid Unicode, but PostgreSQL's ``text`` cannot hold it; both backends refuse
    it here, before anything is written, so the same input behaves the same on either (and
    a namespace part may not hold it either, :func:`~mnemon_langgraph.types.normalize_namespace`).
    """

    def check(value: object, what: str) -> None:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"{what} is not valid Unicode (a lone surrogate at position {exc.start})"
                ) from None
            if "\x00" in value:
                raise InputError(
                    f"{what} contains a NUL character (U+0000) at position "
                    f"{value.index(chr(0))}; remove or escape it (PostgreSQL cannot store it)"
                )

    for part in namespace:
        check(part, f"namespace part {part!r}")
    check(source, "source")
    for i, m in enumerate(messages):
        for name in ("text", "speaker", "id"):
            check(getattr(m, name, None), f"message {i} ({name})")


# =======================================================================================
# The argument checks of the contract (every backend, every surface, the same rule).
# =======================================================================================


@dataclass(frozen=True, slots=True)
class IngestBatch:
    """Messages of one ingest after the shared preamble: checked, every one with an id."""

    given: int
    messages: list[Message]

    def result(self, written: Sequence[Record]) -> IngestResult:
        """What the ingest wrote: a message is skipped unless a record written holds it
        (already stored, given twice, or stored first by a concurrent writer)."""
        done = written_result(written)
        return dataclasses.replace(done, messages_skipped=self.given - done.messages_written)


def written_result(written: Sequence[Record]) -> IngestResult:
    """:class:`IngestResult` of the records ``written`` (nothing skipped)."""
    return IngestResult(
        records_written=len(written),
        messages_written=len({mid for r in written for mid in r.message_ids}),
        messages_skipped=0,
        record_ids=tuple(r.id for r in written),
    )


def check_text(value: object, what: str) -> str:
    """``value`` if it is a string, else :class:`InputError` naming ``what``."""
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string, got {type(value).__name__}: {value!r}"[:200])
    return value


def check_bounded(value: object, what: str, maximum: int = MAX_PAGE) -> int:
    """``value`` if it is an ``int`` in ``0 .. maximum`` (not a bool), else :class:`InputError`."""
    check_count(value, what=what)
    assert isinstance(value, int)
    if value > maximum:
        raise InputError(f"{what} must be at most {maximum:,}, got {value}")
    return value


def check_positions(start: object, stop: object) -> tuple[int, int]:
    """A session's positions ``start .. stop - 1`` as ``(start, stop)``: each an ``int`` in
    ``0 .. MAX_SEQ`` (not a bool); ``stop`` ``None`` is the session's end (:data:`MAX_SEQ`)."""
    first = check_bounded(start, "start", MAX_SEQ)
    last = MAX_SEQ if stop is None else check_bounded(stop, "stop", MAX_SEQ)
    return first, last


def check_watermark(after_seq: object) -> int:
    """``after_seq`` as a watermark: an ``int`` of at most :data:`MAX_SEQ` (not a bool);
    a negative one is ``0`` (every record)."""
    if isinstance(after_seq, bool) or not isinstance(after_seq, int):
        got = f"{type(after_seq).__name__}: {after_seq!r}"
        raise InputError(f"after_seq must be an integer, got {got}"[:200])
    if after_seq > MAX_SEQ:
        raise InputError(f"after_seq must be at most {MAX_SEQ:,}, got {after_seq}")
    return max(0, after_seq)


def check_ids(ids: object, what: str = "ids") -> tuple[str, ...]:
    """Ids as a de-duplicated tuple of strings; one string is one id (not its characters).

    The one rule for ids at the store's boundary (every operation that takes ids, the
    per-user ``delete`` included): a lone string is accepted as one id, since it can only
    mean that id (it is never split into characters), and refusing it broke calls that
    name one record.

    Raises:
        InputError: ``ids`` is not a string or an iterable of strings.
    """
    if isinstance(ids, str):
        return (ids,)
    if isinstance(ids, bytes | bytearray | Mapping) or not isinstance(ids, Iterable):
        got = f"{type(ids).__name__}: {ids!r}"
        raise InputError(f"{what} must be a list of strings, got {got}"[:200])
    out = tuple(dict.fromkeys(ids))
    for value in out:
        if not isinstance(value, str):
            raise InputError(f"{what} must be strings, got {type(value).__name__}: {value!r}"[:200])
    return out


def check_ingest(
    namespace: object,
    messages: object,
    source: object,
    pack: object,
    progress: object,
) -> tuple[Namespace, IngestBatch]:
    """The shared ingest preamble: check every argument and give each message its id.

    A message without an id gets :func:`~mnemon_langgraph.records._chunking.derive_message_id`
    (source, index in the call, speaker and text), so the same input ingested twice is
    written once.

    Raises:
        NamespaceError: An unusable namespace.
        InputError: ``messages`` is not an iterable of :class:`Message`, ``source`` is not
            a string, ``pack`` not a bool, ``progress`` not callable, or text cannot be
            stored (:func:`check_unicode`).
    """
    ns = check_namespace_size(normalize_namespace(namespace))  # type: ignore[arg-type]
    check_text(source, "source")
    assert isinstance(source, str)
    if not isinstance(pack, bool):
        raise InputError(f"pack must be True or False, got {type(pack).__name__}: {pack!r}")
    if progress is not None and not callable(progress):
        raise InputError(f"progress must be callable, got {type(progress).__name__}")
    if isinstance(messages, str | bytes | Message | Mapping) or not isinstance(messages, Iterable):
        raise InputError(
            f"messages must be a list of Message objects, got {type(messages).__name__}"
        )
    given = list(messages)
    for i, m in enumerate(given):
        if not isinstance(m, Message):
            raise InputError(
                f"message {i} is a {type(m).__name__}, not a Message (chat messages, tuples "
                "and dicts go through add_messages)"
            )
    check_unicode(ns, source, given)
    with_ids = [
        m
        if m.id is not None
        else dataclasses.replace(m, id=derive_message_id(m, source=source, index=i))
        for i, m in enumerate(given)
    ]
    return ns, IngestBatch(len(given), with_ids)


def check_search(
    query: object, namespace: object, k: object, offset: object, filters: object
) -> Namespace:
    """The search arguments' one rule; returns the normalised namespace.

    Raises:
        NamespaceError: An unusable namespace.
        InputError: ``query`` is not a string of valid Unicode, ``k`` or ``offset`` is not
            an integer in ``0 ..`` :data:`MAX_PAGE`, ``filters`` is not a ``SearchFilters``.
    """
    ns = normalize_namespace(namespace)  # type: ignore[arg-type]
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"query is not valid Unicode text (a lone surrogate at position {exc.start})"
        ) from None
    check_bounded(k, "k")
    check_bounded(offset, "offset")
    check_filters(filters)
    return ns


def check_filters(filters: object) -> SearchFilters | None:
    """``filters`` of a search or a records read: a ``SearchFilters`` or ``None``.

    Raises:
        InputError: Anything else.
    """
    if filters is not None and not isinstance(filters, SearchFilters):
        raise InputError(f"filters must be a SearchFilters or None, got {type(filters).__name__}")
    return filters


def fresh_messages(messages: Sequence[Message], known: set[str]) -> list[Message]:
    """The messages whose ids are not in ``known`` (the ones an ingest writes)."""
    return [m for m in messages if m.id not in known]


def sessions_of(messages: Sequence[Message]) -> set[int]:
    """The sessions ``messages`` belong to (no session: session 1)."""
    return {m.session if m.session is not None else 1 for m in messages}


def check_prefix(prefix: object, limit: object) -> bool:
    """Check ``match_record_ids``' arguments; whether any id can match (no record id holds
    a non-printable character: ids are "r-" and hex)."""
    if not isinstance(prefix, str):
        raise InputError(f"prefix must be a string, got {type(prefix).__name__}")
    check_bounded(limit, "limit")
    return bool(prefix) and prefix.isprintable() and limit != 0


def check_namespace_size(namespace: Namespace) -> Namespace:
    """``namespace`` (normalised) if its stored form fits :data:`MAX_NAMESPACE_BYTES`.

    Checked wherever a namespace is written to (ingest, the key-value items' ``put``, an
    import), not where one is read: a longer namespace cannot hold anything.

    Raises:
        NamespaceError: The stored form is longer than :data:`MAX_NAMESPACE_BYTES` bytes.
    """
    size = len(namespace_key(namespace).encode("utf-8"))
    if size > MAX_NAMESPACE_BYTES:
        raise NamespaceError(
            f"namespace too long to store: its parts take {size:,} bytes as a JSON array "
            f"(UTF-8), more than {MAX_NAMESPACE_BYTES:,} ({len(namespace)} parts; "
            "use fewer or shorter parts, e.g. a user id rather than a profile)"
        )
    return namespace


def check_erasable(namespace: Namespace, holds: Callable[[Namespace], bool]) -> Namespace:
    """``namespace`` if an erase of it can be audited on every backend.

    A namespace over :data:`MAX_NAMESPACE_BYTES` holds nothing on PostgreSQL (its audit
    row could not be indexed either) and only what an older version stored on SQLite; its
    erase goes ahead when ``holds(namespace)`` says something is there (so old data can
    always be erased), else it is refused as on ingest.

    Raises:
        NamespaceError: Too long to store, and nothing is stored under it.
    """
    try:
        return check_namespace_size(namespace)
    except NamespaceError:
        if holds(namespace):
            return namespace
        raise
