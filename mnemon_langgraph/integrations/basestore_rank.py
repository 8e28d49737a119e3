"""The pure half of :class:`~mnemon_langgraph.integrations.basestore.MnemonBaseStore`.

What to index of an item, whether a value passes a LangGraph filter, how items and records
are ranked together for a query (the package's BM25 and the store's vectors, fused by RRF) and
how a conversation record looks as a :class:`~langgraph.store.base.SearchItem`. No I/O:
both backends and both faces (``batch`` / ``abatch``) share it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langgraph.store.base import InvalidNamespaceError, SearchItem
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.search._bm25 import NO_DATE, BM25Index
from mnemon_langgraph.search._fusion import RRF_K, rrf_fuse
from mnemon_langgraph.search._text import terms, words
from mnemon_langgraph.store.kv_items import IndexSpec, KVRow
from mnemon_langgraph.types import Namespace, Record, normalize_namespace

__all__ = [
    "MAX_KEY_BYTES",
    "MAX_VALUE_DEPTH",
    "OPERATORS",
    "RECORD_KIND",
    "Candidate",
    "IndexSpec",
    "ItemRow",
    "check_depth",
    "check_filter",
    "check_key",
    "check_namespace",
    "dump_value",
    "indexed_texts",
    "matches",
    "rank_pool",
    "ranking_query",
    "reachable",
    "record_item",
    "record_value",
]

RECORD_KIND = "record"
"""``value["kind"]`` of a conversation record in search results (items carry their own value)."""

OPERATORS = frozenset(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"))
"""The filter operators LangGraph documents for ``BaseStore.search``."""


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

MAX_KEY_BYTES = 1024
"""Longest item key, in UTF-8 bytes. PostgreSQL keeps the key with the namespace in the
items' primary key, a B-tree whose entries hold at most about 2,700 bytes (with
:data:`~mnemon_langgraph.store._internal.contract.MAX_NAMESPACE_BYTES`, 1,536, they fit); the same
bound holds on SQLite, so a key is stored on both backends or refused on both."""

MAX_VALUE_DEPTH = 100
"""Deepest nesting of an item value (and of a search filter): a mapping holding a list
holding a mapping is 3 levels. Deeper values would overflow Python's recursion limit in
the JSON encoder and the indexer; :func:`check_depth` refuses them without recursing."""

ItemRow = KVRow
"""One stored key-value item (:class:`~mnemon_langgraph.store.kv_items.KVRow`)."""


# --- checks ---------------------------------------------------------------------------------


def reachable(namespace: Sequence[str]) -> bool:
    """Whether a mnemon namespace can be named through ``BaseStore`` (no ``.`` in a label).

    LangGraph refuses a label holding a period, so a journal namespace such as
    ``("users", "ada@example.com")`` is left out of ``list_namespaces`` and searches.
    """
    return all("." not in part for part in namespace)


def check_namespace(namespace: Any, *, allow_empty: bool = False) -> Namespace:
    """``namespace`` as a tuple, by LangGraph's label rules and the journal's.

    Raises:
        InvalidNamespaceError: Not a tuple of strings, a label with ``.`` or NUL, an empty
            label (LangGraph's error, a ``ValueError``).
        NamespaceError: A label the journal cannot hold (blank, over 512 characters, a lone
            surrogate).
    """
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise InvalidNamespaceError(
            f"namespace must be a tuple of strings, got {type(namespace).__name__}: {namespace!r}"
        )
    namespace = tuple(namespace)
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace!r}: labels are non-empty "
                "strings without '.' or NUL"
            )
    if not namespace:
        if allow_empty:
            return ()
        raise InvalidNamespaceError("namespace cannot be empty")
    return normalize_namespace(namespace)


def check_key(key: Any) -> str:
    """``key`` if it is a string the database can hold, else :class:`InputError` (NUL, a
    lone surrogate, more than :data:`MAX_KEY_BYTES` bytes of UTF-8)."""
    if not isinstance(key, str):
        raise InputError(f"item key must be a string, got {type(key).__name__}: {key!r:.200}")
    if "\x00" in key:
        raise InputError("item key must not contain NUL characters")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise InputError(f"item key is not valid Unicode text: {key!r:.200}") from None
    if size > MAX_KEY_BYTES:
        raise InputError(
            f"item key too long: {size:,} bytes of UTF-8, more than {MAX_KEY_BYTES:,} "
            f"({key[:40]!r}…)"
        )
    return key


def check_depth(value: Any, what: str = "item value") -> None:
    """Raise :class:`InputError` if ``value`` nests mappings and lists more than
    :data:`MAX_VALUE_DEPTH` levels deep (a cycle does too). Iterative: never recurses."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > MAX_VALUE_DEPTH:
            raise InputError(f"{what} is nested more than {MAX_VALUE_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


def dump_value(value: Any) -> str:
    """The stored form of a value: JSON (ASCII-escaped, so NUL and any text survive).

    Raises:
        InputError: Not a mapping with string keys, or not JSON-serializable (NaN included).
    """
    if not isinstance(value, Mapping):
        raise InputError(f"item value must be a mapping, got {type(value).__name__}")
    check_depth(value)
    if not all(isinstance(k, str) for k in value):
        raise InputError("item value keys must be strings")
    try:
        json.dumps(dict(value), allow_nan=False, ensure_ascii=False).encode("utf-8")
        return json.dumps(dict(value), allow_nan=False, separators=(",", ":"))
    except UnicodeEncodeError as exc:  # a lone surrogate: no index or database can hold it
        raise InputError(f"item value holds text that is not valid Unicode: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise InputError(f"item value is not JSON-serializable: {exc}") from exc


def check_filter(filter: Any) -> dict[str, Any]:
    """A LangGraph filter, checked: unknown ``$`` operators raise :class:`InputError`."""
    if filter is None:
        return {}
    if not isinstance(filter, Mapping):
        raise InputError(f"filter must be a mapping, got {type(filter).__name__}")
    check_depth(filter, "filter")

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if isinstance(k, str) and k.startswith("$") and k not in OPERATORS:
                    raise InputError(
                        f"unsupported filter operator {k!r}; use {', '.join(sorted(OPERATORS))}"
                    )
                walk(v)

    walk(filter)
    return dict(filter)


# --- filters --------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers as numbers (``1 == 1.0``), booleans only equal booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _order(a: Any, b: Any) -> int | None:
    """``-1/0/1`` comparing two numbers or two strings; ``None`` for any other pair."""
    if _is_number(a) and _is_number(b):
        x, y = float(a), float(b)
    elif isinstance(a, str) and isinstance(b, str):
        x, y = a, b  # type: ignore[assignment]
    else:
        return None
    return (x > y) - (x < y)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _equal(value, operand)
    if op == "$ne":
        return not _equal(value, operand)  # a missing field is "not equal", as in LangGraph
    order = _order(value, operand)
    if order is None:
        return False  # a missing field, or a string compared with a number
    return {"$gt": order > 0, "$gte": order >= 0, "$lt": order < 0, "$lte": order <= 0}[op]


def _condition(value: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_operator(value, op, operand) for op, operand in expected.items())
        if not isinstance(value, Mapping):
            return False
        return all(_condition(value.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(expected)
            and all(_condition(v, e) for v, e in zip(value, expected, strict=True))
        )
    return _equal(value, expected)


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Whether ``value`` passes a LangGraph filter (every field's condition must hold).

    ``{"field": x}`` and ``{"$eq": x}`` test equality (nested mappings field by field, lists
    element by element); ``$ne`` holds for a missing field; ``$gt/$gte/$lt/$lte`` compare
    numbers as numbers and strings as strings (so ISO dates order), and never hold for a
    missing field or a mix of the two.
    """
    return all(_condition(value.get(field), expected) for field, expected in filter.items())


# --- indexing -------------------------------------------------------------------------------


def _leaves(node: Any) -> list[str]:
    """Every string and number inside ``node``, in order (keys and JSON syntax left out)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, bool) or node is None:
        return []
    if isinstance(node, (int, float)):
        return [str(node)] if math.isfinite(node) else []
    if isinstance(node, Mapping):
        return [leaf for v in node.values() for leaf in _leaves(v)]
    if isinstance(node, (list, tuple)):
        return [leaf for v in node for leaf in _leaves(v)]
    return []


def indexed_texts(value: Mapping[str, Any], index: IndexSpec) -> list[str]:
    """The texts of ``value`` that are searchable under ``index`` (one vector each).

    ``"$"`` is the whole value: its strings and numbers joined, without field names or
    JSON syntax (BM25 should not match every item on the word ``content``). Other paths are
    LangGraph's (``"a.b"``, ``"list[*].text"``, ``"{a,b}"``), read by LangGraph's own
    :func:`~langgraph.store.base.embed.get_text_at_path`. Empty texts are dropped.
    """
    if index is False:
        return []
    texts: list[str] = []
    for path in index:
        if path == "$":
            found = [" ".join(_leaves(value))]
        else:
            found = get_text_at_path(dict(value), tokenize_path(path))
        texts.extend(t.replace("\x00", " ") for t in found if t and t.strip())
    return texts


# --- ranking --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """One thing a query may find: an item or a record, with what is searched of it.

    Attributes:
        text: Its searchable text (an item's indexed fields, a record as indexed).
        vectors: Its unit vectors (``n × dim``; one row for a record), ``None`` when unknown.
        result: What the search returns for it.
    """

    text: str
    vectors: np.ndarray | None
    result: SearchItem


def ranking_query(query: str, namespace: Sequence[str]) -> str:
    """``query`` without the words that name the searched ``namespace`` (``Ada`` of a search
    in ``("users", "ada")``), for ranking its items and records.

    Every candidate belongs to that namespace, so its name tells none of them apart; but key-
    value items are often written about the user by name ("Ada drinks sencha tea") while
    conversation records never name their own speaker ("I adopted a grey cat"), so the name
    would rank any item above the record that answers, lexically and in the embedding alike.
    Words are matched by their index terms (``Ada's`` is ``ada``); a query made only of such
    words is kept as it is.
    """
    names = {t for label in namespace for t in terms(label)}
    if not names:
        return query
    naming = {w for w in words(query) if (found := terms(w)) and set(found) <= names}
    if not naming:
        return query
    kept = [w for w in words(query) if w not in naming]
    return " ".join(kept) if kept else query


def rank_pool(
    pool: Sequence[Candidate], query: str, query_vector: np.ndarray | None, depth: int
) -> list[tuple[Candidate, float]]:
    """``pool`` ranked for ``query`` as one corpus: BM25 and cosine fused by RRF (k=60).

    Items and records compete on the same two rankings, as records do in the store's own
    search (:func:`~mnemon_langgraph.search._fusion.rrf_fuse` over the top ``depth`` of a
    BM25 ranking and of a dense ranking). BM25 is the package's
    :class:`~mnemon_langgraph.search._bm25.BM25Index` built over the pool (its statistics);
    a candidate's dense score is its best vector's cosine (unit vectors from the store's
    embedder). Ties keep pool order.
    """
    if not pool or depth <= 0:
        return []
    bm25 = BM25Index()
    seqs = list(range(1, len(pool) + 1))
    bm25.add(
        seqs, [str(s) for s in seqs], [c.text for c in pool], [1] * len(seqs),
        [NO_DATE] * len(seqs),
    )  # fmt: skip
    lexical, _ = bm25.search(query, depth)
    dense = [] if query_vector is None else _dense_ranking(pool, query_vector, depth)
    fused = rrf_fuse([[int(s) for s in lexical], dense], k=RRF_K)
    return [(pool[f.key - 1], f.score) for f in fused]


def _dense_ranking(pool: Sequence[Candidate], query_vector: np.ndarray, depth: int) -> list[int]:
    """1-based pool positions by best cosine with ``query_vector``, top ``depth``."""
    q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    owners, blocks = [], []
    for pos, c in enumerate(pool, start=1):
        v = c.vectors
        if v is not None and v.ndim == 2 and v.shape[1] == len(q) and len(v):
            owners.append(np.full(len(v), pos, dtype=np.int64))
            blocks.append(v)
    if not blocks:
        return []
    owner = np.concatenate(owners)
    sims = np.vstack(blocks).astype(np.float32, copy=False) @ q
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])  # owners are grouped
    best = np.maximum.reduceat(sims, starts)
    who = owner[starts]
    order = np.lexsort((who, -best))[:depth]  # ties: earlier in the pool first
    return [int(w) for w in who[order]]


# --- records as search items ----------------------------------------------------------------


def record_value(record: Record) -> dict[str, Any]:
    """A conversation record as a search result's value (``kind: "record"``).

    ``content`` is the record's text (what LangMem's tools read); ``date`` is ISO 8601 (UTC)
    or ``None``; ``message_ids``, ``speakers``, ``roles``, ``session`` and ``source`` come
    from the journal.
    """
    return {
        "kind": RECORD_KIND,
        "content": record.text,
        "date": record.date.replace(tzinfo=UTC).isoformat() if record.date else None,
        "session": record.session,
        "position": record.position,
        "speakers": list(record.speakers),
        "roles": list(record.roles),
        "message_ids": list(record.message_ids),
        "source": record.origin,
    }


def record_item(record: Record, score: float | None, value: dict[str, Any]) -> SearchItem:
    """The record as a :class:`SearchItem`: key is the record id, times are its date.

    A record has no put time, so ``created_at`` and ``updated_at`` are the conversation's
    date (the Unix epoch for an undated record, whose ``value["date"]`` is ``None``).
    """
    when = record.date.replace(tzinfo=UTC) if record.date else EPOCH
    return SearchItem(
        namespace=tuple(record.namespace),
        key=record.id,
        value=value,
        created_at=when,
        updated_at=when,
        score=score,
    )
