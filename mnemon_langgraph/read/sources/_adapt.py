"""What the two adapters share: dates, sessions, templates and the journal's chunking.

:class:`~mnemon_langgraph.read.sources.retriever.RetrieverSource` and
:class:`~mnemon_langgraph.read.sources.basestore.BaseStoreSource` turn something that is not
a journal (a LangChain ``Document``, a LangGraph store item) into dated :class:`Record`\\ s.
Both cut long texts with the journal's own chunking (:func:`chunk_messages`, one message per
document or item, ``pack=False``), so a document reads in the View like a long message does.
"""

from __future__ import annotations

import functools
import logging
import string
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.records._chunking import (
    chunk_messages,
    normalize_text,
    split_text,
    stable_hash,
)
from mnemon_langgraph.search._fusion import reciprocal_rank
from mnemon_langgraph.types import (
    MAX_MESSAGE_CHARS,
    MAX_MESSAGE_ID_CHARS,
    MAX_SESSION,
    MAX_SPEAKER_CHARS,
    ROLES,
    Message,
    Namespace,
    Record,
    Role,
    SearchFilters,
    SearchHit,
    normalize_namespace,
)

__all__ = [
    "as_date",
    "check_fields",
    "check_namespace",
    "fill_template",
    "hits_of",
    "records_of_text",
    "session_of",
    "speaker_of",
    "template_names",
]

logger = logging.getLogger("mnemon_langgraph.read.sources")

_POSITION_STRIDE = 1 << 12
"""Positions left to the pieces of one document whose place in its group is unknown."""


def as_date(value: object, *, what: str) -> datetime | None:
    """A document's or item's date: a datetime, a date, an ISO 8601 string or epoch seconds.

    A value that is none of these (or out of range) leaves the record undated and is logged:
    one bad document must not fail every read of a shared collection.
    """
    if value is None or value == "":
        return None
    try:
        if isinstance(value, datetime):
            return value
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day)
        if isinstance(value, str):
            return datetime.fromisoformat(value.strip())
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        pass
    logger.warning("%s: %r is not a date (ISO 8601, datetime or epoch); left undated", what, value)
    return None


@functools.lru_cache(maxsize=4096)
def session_of(group: str) -> int:
    """A session number for a group of texts (a title, a document, a store item): the same
    group always gets the same number, different groups almost surely different ones.
    Kept per group: a collection's documents share few titles, and the hash is most of
    what cutting a short document costs."""
    return 1 + int(stable_hash("session", group), 16) % MAX_SESSION


def speaker_of(name: object, default: str) -> str:
    """A record's speaker: ``name`` on one line, cut to :data:`MAX_SPEAKER_CHARS`."""
    text = normalize_text(name) if isinstance(name, str) else ""
    if not text:
        return default
    return text if len(text) <= MAX_SPEAKER_CHARS else text[: MAX_SPEAKER_CHARS - 1] + "…"


def records_of_text(
    text: str,
    *,
    text_id: str,
    speaker: str,
    role: object,
    when: datetime | None,
    group: str,
    position: int | None,
    origin: str,
    max_chars: int,
) -> list[Record]:
    """The records of one document or item, cut as the journal cuts a long message.

    Records of one ``group`` share a session; ``position`` is where the first record sits
    in it (``None``: a place derived from ``text_id``, away from other documents, so two
    documents of one group are never taken for neighbours). A text longer than a message
    may be is first split into message-sized parts (the journal's :func:`split_text`).
    Record ids hash ``origin`` and ``text_id``, so they are the same on every call.
    """
    flat = normalize_text(text)
    if not flat:
        return []
    mid = text_id if len(text_id) <= MAX_MESSAGE_ID_CHARS - 8 else "h-" + stable_hash(text_id)
    session = session_of(group)
    if position is None:
        position = (int(stable_hash("position", text_id), 16) % (1 << 18)) * _POSITION_STRIDE
    parts = split_text(flat, MAX_MESSAGE_CHARS)
    messages = [
        Message(
            text=part,
            speaker=speaker,
            role=_role(role),
            id=mid if len(parts) == 1 else f"{mid}#{n}",
            timestamp=when,
            session=session,
        )
        for n, part in enumerate(parts)
    ]
    return chunk_messages(
        messages,
        namespace=(origin,),
        origin=origin,
        max_chars=max_chars,
        pack=False,
        first_positions={session: position},
    )


def _role(value: object) -> Role:
    return value if isinstance(value, str) and value in ROLES else "user"  # type: ignore[return-value]


def hits_of(
    records: Sequence[Record],
    *,
    k: int,
    offset: int,
    filters: SearchFilters | None,
    dense: bool,
) -> list[SearchHit]:
    """Hits ``offset .. offset + k`` of records already in their source's order (only the
    page's hits are made)."""
    kept = records if filters is None else [r for r in records if filters.accepts(r)]
    return [
        SearchHit(record, rank, reciprocal_rank(rank), None, rank)
        if dense
        else SearchHit(record, rank, reciprocal_rank(rank), rank, None)
        for rank, record in enumerate(kept[offset : offset + k], start=offset)
    ]


def template_names(value: object) -> set[str]:
    """The ``{field}`` names in the strings of a nested mapping/sequence template."""
    if isinstance(value, str):
        names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        bad = [n for n in names if not n.isidentifier()]
        if bad:
            raise ConfigurationError(
                f"template {value!r}: placeholder {{{bad[0]}}} must be a plain field name "
                "such as {user_id} (write {{ and }} for literal braces)"
            )
        return names
    if isinstance(value, Mapping):
        return set().union(*(template_names(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(template_names(v) for v in value))
    return set()


def fill_template(value: Any, fields: Mapping[str, str]) -> Any:
    """``value`` with every ``{field}`` of its strings filled from ``fields``.

    Raises:
        ConfigurationError: A field the template names is not among ``fields``.
    """
    if isinstance(value, str):
        missing = sorted(template_names(value) - set(fields))
        if missing:
            raise ConfigurationError(
                f"template {value!r} needs {missing[0]!r}, which the run does not give "
                f"(it gives {sorted(fields)})"
            )
        return value.format_map({k: str(v) for k, v in fields.items()})
    if isinstance(value, Mapping):
        return {k: fill_template(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_template(v, fields) for v in value]
    if isinstance(value, tuple):
        return tuple(fill_template(v, fields) for v in value)
    return value


def check_fields(fields: object) -> Mapping[str, str]:
    """``fields`` as a mapping of names to non-empty strings (what ``for_run`` takes)."""
    if not isinstance(fields, Mapping):
        raise InputError(f"for_run takes a mapping of run fields, got {type(fields).__name__}")
    for name, value in fields.items():
        if not isinstance(name, str) or not isinstance(value, str) or not value:
            raise InputError(f"run field {name!r} must be a non-empty string, got {value!r}")
    return fields


def check_namespace(namespace: object) -> Namespace:
    """The namespace a search was given, checked (a source with a template needs one)."""
    return normalize_namespace(namespace)  # type: ignore[arg-type]
