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

import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from mnemon_langgraph.errors import InputError, NamespaceError

__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_MESSAGE_ID_CHARS",
    "MAX_SESSION",
    "MAX_SPEAKER_CHARS",
    "NOT_GIVEN",
    "ROLES",
    "JournalSource",
    "Message",
    "Namespace",
    "Record",
    "Role",
    "SearchFilters",
    "SearchHit",
    "SearchSource",
    "TermStatsSource",
    "VectorSource",
    "as_naive_utc",
    "check_count",
    "check_session",
    "normalize_namespace",
    "origin_label",
]


class _NotGiven:
    """The default of a keyword argument the caller may leave out (``None`` is a value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()
"""A keyword argument left out: how :func:`origin_label` tells ``source=None`` (a bad label,
an ``InputError`` later) from no ``source`` at all."""


def origin_label(origin: str, source: str, *, where: str, default: str = NOT_GIVEN) -> str:
    """The ingest label of a call that may still name it ``source=`` (its old name, kept for
    one release with a ``DeprecationWarning``; "source" now means a store the read path
    searches). ``default``: the label when neither is given (:data:`NOT_GIVEN`: one is
    required). The value is returned as given: the caller's checks judge it.

    Raises:
        TypeError: Both names given, or neither and no default.
    """
    if source is not NOT_GIVEN:
        if origin is not NOT_GIVEN and origin != default:
            raise TypeError(f"{where}: pass origin= only (source= is its deprecated old name)")
        warnings.warn(
            f"{where}(source=...) is deprecated: pass origin=... (the ingest label)",
            DeprecationWarning,
            stacklevel=3,
        )
        return source
    if origin is NOT_GIVEN:
        if default is NOT_GIVEN:
            raise TypeError(f"{where}() missing the required keyword argument 'origin'")
        return default
    return origin


Namespace: TypeAlias = tuple[str, ...]
"""A namespace shaped like a LangGraph store namespace, e.g. ``("users", "ada@example.com")``."""

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]
"""Who a message came from. Both speakers of a human-to-human conversation are ``user``."""

_MAX_NAMESPACE_PART = 512

ROLES: frozenset[str] = frozenset(("user", "assistant", "system", "tool"))
"""The values :data:`Role` allows (checked at run time by :class:`Message`)."""

MAX_SESSION = 2**31 - 1
"""Largest session number: every index stores sessions as int32 (BM25 filters, SQLite)."""

MAX_SPEAKER_CHARS = 100
"""Longest speaker name. Every record line repeats its speaker, so an unbounded name
would multiply the bytes one message costs (docs/results/log.md, "Records and the
journal")."""

MAX_MESSAGE_ID_CHARS = 512
"""Longest message id (characters). Both backends index message ids (PostgreSQL's B-tree
holds an entry of at most about 2,700 bytes; 512 characters are at most 2,048 bytes of
UTF-8), so one bound holds on both; a longer id is an :class:`InputError`, never cut."""

MAX_MESSAGE_CHARS = 100_000
"""Longest message text accepted anywhere (a longer one is an :class:`InputError`, never
truncated: split it yourself, e.g. into paragraphs)."""


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
    if isinstance(namespace, str):
        parts: tuple[object, ...] = (namespace,)
    elif isinstance(namespace, Sequence):
        parts = tuple(namespace)
    else:
        raise NamespaceError(
            "namespace must be a string or a tuple of strings, "
            f"got {type(namespace).__name__}: {namespace!r}"
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

    Raises:
        InputError: ``value`` is not a datetime, or its UTC time falls outside years
            1..9999 (e.g. ``0001-01-01T00:00+05:00``).
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InputError(f"expected a datetime, got {type(value).__name__}: {value!r}")
    if value.tzinfo is None:
        return value
    try:
        return value.astimezone(UTC).replace(tzinfo=None)
    except (OverflowError, ValueError) as exc:
        raise InputError(
            f"date {value.isoformat()} is out of range in UTC (years 1..9999)"
        ) from exc


def check_session(value: object, *, what: str = "session") -> int:
    """Return ``value`` if it is a usable session number, else raise :class:`InputError`.

    One rule for every entry point (API, JSONL, transcripts, LoCoMo, LangChain): a real
    ``int`` (not a bool, not ``"3"``) in ``1..MAX_SESSION``, the range every index holds.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer, got {type(value).__name__}: {value!r}")
    if not 1 <= value <= MAX_SESSION:
        raise InputError(f"{what} must be between 1 and {MAX_SESSION}, got {value}")
    return value


def check_count(value: object, *, what: str, minimum: int = 0) -> int:
    """Return ``value`` if it is an ``int`` ≥ ``minimum`` (not a bool/float), else raise.

    Raises:
        InputError: Naming ``what`` (e.g. ``"k"``) and the value.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer, got {type(value).__name__}: {value!r}")
    if value < minimum:
        raise InputError(f"{what} must be at least {minimum}, got {value}")
    return value


def _check_message(msg: Message) -> None:
    """The one validation rule of a message (see :class:`Message`)."""
    if not isinstance(msg.text, str):
        raise InputError(f"message text must be a string, got {type(msg.text).__name__}")
    if len(msg.text) > MAX_MESSAGE_CHARS:
        raise InputError(
            f"message {msg.id!r} has {len(msg.text):,} characters, more than "
            f"{MAX_MESSAGE_CHARS:,}; split it (e.g. into paragraphs) before storing it"
        )
    if not isinstance(msg.speaker, str):
        raise InputError(f"speaker must be a string, got {type(msg.speaker).__name__}")
    if len(msg.speaker) > MAX_SPEAKER_CHARS:
        raise InputError(
            f"speaker name has {len(msg.speaker):,} characters, more than {MAX_SPEAKER_CHARS}: "
            f"{msg.speaker[:40]!r}…"
        )
    if msg.role not in ROLES:
        raise InputError(f"role must be one of {sorted(ROLES)}, got {msg.role!r}")
    if msg.id is not None and not isinstance(msg.id, str):
        raise InputError(f"message id must be a string, got {type(msg.id).__name__}")
    if msg.id is not None and len(msg.id) > MAX_MESSAGE_ID_CHARS:
        raise InputError(
            f"message id has {len(msg.id):,} characters, more than {MAX_MESSAGE_ID_CHARS}: "
            f"{msg.id[:40]!r}…"
        )
    if msg.session is not None:
        check_session(msg.session)


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
        session: Session number, if the source has sessions (``1..MAX_SESSION``).

    Raises:
        InputError: On construction, for a value no index could hold: a session that is
            not an int in ``1..MAX_SESSION``, a role outside :data:`ROLES`, a speaker
            longer than :data:`MAX_SPEAKER_CHARS`, text longer than
            :data:`MAX_MESSAGE_CHARS`, a date outside years 1..9999 in UTC. Every loader
            builds messages, so this is the one rule for every entry point.
    """

    text: str
    speaker: str
    role: Role = "user"
    id: str | None = None
    timestamp: datetime | None = None
    session: int | None = None

    def __post_init__(self) -> None:
        _check_message(self)
        object.__setattr__(self, "timestamp", as_naive_utc(self.timestamp))


@dataclass(frozen=True, slots=True)
class Record:
    """A raw, dated chunk of conversation as the journal keeps it.

    Attributes:
        id: Stable id (derived from namespace, origin and message ids, so re-ingesting
            the same messages yields the same id).
        namespace: The namespace the record belongs to.
        seq: Journal sequence number: strictly increasing across the whole journal; the
            watermark later jobs read from. ``0`` for a record not yet written.
        origin: The ingest label: where it came from (a file name, ``"langchain"``,
            ``"chat"`` …). ``source`` is its old name, a read-only alias that warns.
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
    origin: str = ""
    seq: int = 0
    roles: tuple[Role, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "date", as_naive_utc(self.date))

    @property
    def source(self) -> str:
        """Deprecated: the ingest label's old name (:attr:`origin`), kept for one release."""
        warnings.warn(
            "Record.source is deprecated: read Record.origin (the ingest label)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.origin

    @property
    def header(self) -> str:
        """``Session N — YYYY-MM-DD HH:MM`` (date omitted when unknown)."""
        return _header(self.session, self.date)

    def render(self) -> str:
        """The record as indexed and shown: its header line, then its text."""
        return f"[{self.header}]\n{self.text}"


@functools.lru_cache(maxsize=8192, typed=True)
def _header(session: int, date: datetime | None) -> str:
    """:attr:`Record.header`, kept per session and date: a turn renders the same records'
    headers many times (pages, pool entries, the View), and ``strftime`` is slow."""
    if date is None:
        return f"Session {session}"
    stamp = (
        date.strftime("%Y-%m-%d %H:%M") if (date.hour or date.minute) else date.strftime("%Y-%m-%d")
    )
    return f"Session {session} — {stamp}"


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
        for name in ("session_from", "session_to"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InputError(f"{name} must be an integer, got {value!r}")

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


@runtime_checkable
class VectorSource(Protocol):
    """A search source that can hand back the vectors it stored for its records.

    The read path's evidence (:class:`~mnemon_langgraph.read._evidence.EvidenceBuilder`)
    compares them with the turn's query texts instead of embedding pooled records again.
    Both store backends are vector sources; a plain retriever wrapped as a
    :class:`SearchSource` need not be (its records then get rank evidence only).
    """

    def query_vector(self, query: str) -> Any:
        """The unit vector of a query text, as the source's dense search embeds it.

        Raises:
            ModelCallError: The embedder failed (the read path then sends ranks only).
        """
        ...

    def stored_vectors(
        self, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> Mapping[str, Any]:
        """Unit vectors of these records by id (unknown ids are left out)."""
        ...


@runtime_checkable
class JournalSource(Protocol):
    """A search source that can read the records of one session by their position in it.

    The read path reads the few records just before an assistant's reply to find the
    user's turn it answers, and the first records of a session to find the turn that opens
    it (:mod:`mnemon_langgraph.read._questions`). Positions, not ``seq``: one journal serves
    many users, and their writes interleave in ``seq``. Both store backends are journal
    sources; a plain retriever wrapped as a :class:`SearchSource` need not be (those turns
    must then be pooled to be found).
    """

    def session_records(
        self,
        namespace: str | Sequence[str],
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Records of ``session`` in ``namespace`` with ``start <= position < stop``
        (``stop`` ``None``: to the session's end), in position order. ``filters`` (optional
        to support; the read path passes it only for an as-of View and drops records outside
        it): only the records inside its bounds."""
        ...


@runtime_checkable
class TermStatsSource(Protocol):
    """A search source that can say how common words are in a namespace's records.

    The read path sends these counts to System 1 (``state["memory"]``) so the local judge
    weighs the question's words by their rarity in the **memory**, not in the pool it judges:
    the pool was retrieved *by* those words, so within it the asked-about words look common
    and unrelated rare words of the question take over. The embedded store answers from its
    BM25 index; a source without this keeps the pool's counts.
    """

    def term_statistics(
        self, namespace: str | Sequence[str], terms: Sequence[str]
    ) -> tuple[int, Mapping[str, int]]:
        """``(records, {term: records holding it})`` for already-tokenized ``terms``."""
        ...
