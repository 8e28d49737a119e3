"""Core data types shared by every part of mnemon-langgraph.

A :class:`Message` is what arrives (from LangChain messages, JSONL, a LoCoMo file or a
transcript). A :class:`Record` is what the journal keeps: a chunk of at most about 600
characters of ``speaker: text`` lines, headed by its session number and date (paper
§4.1, "Records"). A :class:`SearchHit` is one record returned by a search, with the
ranks it got from each retriever. :class:`SearchSource` is the small boundary the read
path needs from a store ("search → dated records", paper §3) so that other stores can
feed the same View.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from mnemon_langgraph.errors import NamespaceError

__all__ = [
    "Message",
    "Namespace",
    "Record",
    "Role",
    "SearchFilters",
    "SearchHit",
    "SearchSource",
    "as_naive_utc",
    "normalize_namespace",
]

Namespace: TypeAlias = tuple[str, ...]
"""A namespace shaped like a LangGraph store namespace, e.g. ``("users", "ada@example.com")``."""

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]
"""Who a message came from. Both speakers of a human-to-human conversation are ``user``."""

_MAX_NAMESPACE_PART = 512


def normalize_namespace(namespace: str | Sequence[str]) -> Namespace:
    """Return ``namespace`` as a tuple of strings, or raise :class:`NamespaceError`.

    A plain string is a one-part namespace (``"ada@example.com"`` → ``("ada@example.com",)``);
    it is *not* split on dots or slashes, so user ids such as e-mail addresses work as they
    are. Parts must be non-empty strings without NUL characters, at most 512 characters each.

    Args:
        namespace: A string or a sequence of strings.

    Returns:
        The namespace as a tuple.

    Raises:
        NamespaceError: If the namespace is empty or a part is not a usable string.
    """
    parts: tuple[object, ...] = (
        (namespace,) if isinstance(namespace, str) else tuple(namespace)  # type: ignore[arg-type]
    )
    if not parts:
        raise NamespaceError("namespace must have at least one part, got an empty tuple")
    for part in parts:
        if not isinstance(part, str):
            raise NamespaceError(
                f"namespace parts must be strings, got {type(part).__name__}: {part!r}"
            )
        if not part.strip():
            raise NamespaceError(f"namespace parts must be non-empty, got {parts!r}")
        if "\x00" in part:
            raise NamespaceError("namespace parts must not contain NUL characters")
        try:
            part.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate cannot be stored or indexed
            raise NamespaceError(f"namespace part is not valid Unicode text: {part!r}") from exc
        if len(part) > _MAX_NAMESPACE_PART:
            raise NamespaceError(
                f"namespace part longer than {_MAX_NAMESPACE_PART} characters: {part[:40]!r}…"
            )
    return tuple(str(part) for part in parts)


def as_naive_utc(value: datetime | None) -> datetime | None:
    """Return ``value`` as a naive datetime in UTC (naive values are taken as UTC already).

    Sources disagree: LoCoMo and transcripts give local wall-clock dates without a zone,
    epoch and ``Z`` timestamps are aware. Comparing the two raises ``TypeError``, so every
    date the package stores or compares goes through this one rule.
    """
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(UTC).replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class Message:
    """One incoming message, before it is chunked into records.

    Attributes:
        text: The message's text (a shared image's caption is appended by the loaders).
        speaker: Display name written before the text in a record (``"Caroline"``, ``"user"``).
        role: Who sent it; consolidation keeps ``user`` messages whole and trims others.
        id: Stable id of the message in its source (LoCoMo ``dia_id``, a LangChain message id).
            When ``None``, the ingester derives a content hash so re-ingesting is idempotent.
        timestamp: When it was said, if known.
        session: Session number, if the source has sessions (1-based).
    """

    text: str
    speaker: str
    role: Role = "user"
    id: str | None = None
    timestamp: datetime | None = None
    session: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", as_naive_utc(self.timestamp))


@dataclass(frozen=True, slots=True)
class Record:
    """A raw, dated chunk of conversation as the journal keeps it.

    Attributes:
        id: Stable id (derived from namespace, source and message ids, so re-ingesting
            the same messages yields the same id).
        namespace: The namespace the record belongs to.
        seq: Journal sequence number: strictly increasing across the whole journal; the
            watermark later jobs read from. ``0`` for a record not yet written.
        source: Where it came from (a file name, ``"langchain"``, ``"chat"`` …).
        session: Session number (1-based).
        date: Date and time of the session (or of the first message), if known.
        position: Order of the record within its session (0-based).
        speakers: Distinct speakers in the record, in order of appearance.
        message_ids: Ids of the messages the record's text came from.
        text: ``speaker: text`` lines, without the header.
        roles: Role of each speaker line's message, parallel to the lines in ``text``.
    """

    id: str
    namespace: Namespace
    session: int
    date: datetime | None
    position: int
    speakers: tuple[str, ...]
    message_ids: tuple[str, ...]
    text: str
    source: str = ""
    seq: int = 0
    roles: tuple[Role, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "date", as_naive_utc(self.date))

    @property
    def header(self) -> str:
        """``Session N — YYYY-MM-DD HH:MM`` (date omitted when unknown)."""
        if self.date is None:
            return f"Session {self.session}"
        stamp = (
            self.date.strftime("%Y-%m-%d %H:%M")
            if (self.date.hour or self.date.minute)
            else self.date.strftime("%Y-%m-%d")
        )
        return f"Session {self.session} — {stamp}"

    def render(self) -> str:
        """The record as indexed and shown: its header line, then its text."""
        return f"[{self.header}]\n{self.text}"


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Optional restrictions applied to a search (all bounds inclusive)."""

    date_from: datetime | None = None
    date_to: datetime | None = None
    session_from: int | None = None
    session_to: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "date_from", as_naive_utc(self.date_from))
        object.__setattr__(self, "date_to", as_naive_utc(self.date_to))

    def accepts(self, record: Record) -> bool:
        """Whether ``record`` passes every bound that is set."""
        if self.session_from is not None and record.session < self.session_from:
            return False
        if self.session_to is not None and record.session > self.session_to:
            return False
        if self.date_from is not None or self.date_to is not None:
            if record.date is None:
                return False
            if self.date_from is not None and record.date < self.date_from:
                return False
            if self.date_to is not None and record.date > self.date_to:
                return False
        return True


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One record returned by a hybrid search.

    Attributes:
        record: The record.
        rank: 0-based position in the fused ranking of this search (before paging).
        score: Fused reciprocal-rank score, ``Σ 1 / (k + rank)`` over the retrievers.
        bm25_rank: 0-based rank in the BM25 ranking, ``None`` if BM25 did not return it.
        dense_rank: 0-based rank in the embedding ranking, ``None`` if it was not returned.
    """

    record: Record
    rank: int
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None


@runtime_checkable
class SearchSource(Protocol):
    """What the read path needs from a store: search → dated records.

    Implementations must never return a record of another namespace.
    """

    def search(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Return hits ``offset .. offset + k`` of the fused ranking for ``query``."""
        ...

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async form of :meth:`search`."""
        ...
