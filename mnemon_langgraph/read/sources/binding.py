"""Named read sources and their binding to one run (the read-source contract).

A read graph reads one or more **named sources** (``create_read_graph(sources=...)``).
Each is any :class:`~mnemon_langgraph.types.SearchSource`; the read graph honours these
optional attributes:

* ``namespace_template``: absent: the source is the user's own journal and is searched in
  the run's namespace; a tuple such as ``("teams", "{team_id}")``: filled from the run's
  fields (the authenticated user's only under LangGraph auth:
  :func:`~mnemon_langgraph.read.namespaces.fill_source_namespace`); ``None``: the source
  names no namespace and is shared by all users (it is passed the run's namespace, which
  it ignores).
* ``for_run(fields)``: a source whose query depends on the run returns a bound copy
  (:func:`~mnemon_langgraph.read.namespaces.run_fields`).
* ``pages``: ``False``: ``offset`` is not supported; each page is one larger request from
  the top (``k = offset + page``), the records before the page dropped here.
* ``filters_dates``: ``False``: the source ignores date bounds; the read path asks it once
  for :data:`~mnemon_langgraph.read.settings.LOOKAHEAD` times the page without bounds and
  keeps the records inside them itself (records without a date are left out, as the stores
  do).
* ``timeout_s``: seconds this source's search may take (else ``ReadSettings.source_timeout_s``).
* ``ranks_keywords``: ``False``: the source ranks by embeddings only (a vector store's
  retriever); with several sources it is asked once per turn for more candidates, which the
  read path re-ranks by the query's words (``ReadSettings.dense_candidates``).

With several sources, a pooled record's id is qualified by its source's name
(:func:`qualify_id`: ``"docs:doc-7"``), so everything the read path keys on a record id
(dedup, judgments, evidence, the View's placement) tells sources apart even where their ids
collide, and its source's name travels in the pool entry's ``read_source``. With one source
nothing is qualified and the read path is as it always was.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemon_langgraph.errors import ConfigurationError, NamespaceAccessError
from mnemon_langgraph.read._workers import source_pool
from mnemon_langgraph.read.namespaces import fill_source_namespace, run_fields
from mnemon_langgraph.read.settings import LOOKAHEAD
from mnemon_langgraph.types import (
    JournalSource,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    SearchSource,
    TermStatsSource,
    VectorSource,
)

__all__ = [
    "DEFAULT_SOURCE",
    "SOURCE_ID_SEPARATOR",
    "BoundSource",
    "asearch_sources",
    "bind",
    "dense_only",
    "is_own",
    "named_sources",
    "offered",
    "qualify_id",
    "qualify_record",
    "search_sources",
    "source_namespace",
    "split_id",
]

DEFAULT_SOURCE = "memory"
"""The name of the one source of ``create_read_graph(source=...)``."""

SOURCE_ID_SEPARATOR = ":"
"""Between a source's name and a record id in a qualified id; never in a source's name, so
a qualified id splits back into exactly one (name, id)."""

_MAX_NAME = 64
_ABSENT = object()


def named_sources(
    source: SearchSource | None, sources: Mapping[str, SearchSource] | None
) -> dict[str, SearchSource]:
    """The read graph's sources by name: ``sources``, or ``{"memory": source}``.

    Raises:
        ConfigurationError: Both or neither given, no source, a name that is not a
            non-empty string of at most 64 characters without ``:``, or a source without
            ``search`` and ``asearch``.
    """
    if source is not None and sources is not None:
        raise ConfigurationError(
            "create_read_graph: pass source= (one source) or sources= (named sources), not both"
        )
    if sources is None:
        if source is None:
            raise ConfigurationError("create_read_graph needs source= or sources=")
        sources = {DEFAULT_SOURCE: source}
    if not isinstance(sources, Mapping) or not sources:
        raise ConfigurationError(
            "sources= must be a non-empty mapping of names to search sources, e.g. "
            "{'memory': store, 'docs': RetrieverSource(retriever)}"
        )
    out: dict[str, SearchSource] = {}
    for name, src in sources.items():
        if not isinstance(name, str) or not name.strip() or len(name) > _MAX_NAME:
            raise ConfigurationError(
                f"a source's name must be a non-empty string of at most {_MAX_NAME} "
                f"characters, got {name!r}"
            )
        if SOURCE_ID_SEPARATOR in name or any(ord(c) < 32 for c in name):
            raise ConfigurationError(
                f"a source's name must not hold {SOURCE_ID_SEPARATOR!r} or control "
                f"characters, got {name!r}"
            )
        if not callable(getattr(src, "search", None)) or not callable(
            getattr(src, "asearch", None)
        ):
            raise ConfigurationError(
                f"source {name!r} ({type(src).__name__}) is not a SearchSource: it needs "
                "search() and asearch() (mnemon_langgraph.types.SearchSource)"
            )
        out[name] = src
    return out


def is_own(source: Any) -> bool:
    """Whether ``source`` is the user's own memory (it declares no ``namespace_template``)."""
    return getattr(source, "namespace_template", _ABSENT) is _ABSENT


def dense_only(source: Any) -> bool:
    """Whether ``source`` ranks by embeddings only (it declares ``ranks_keywords = False``)."""
    return getattr(source, "ranks_keywords", True) is False


def template_of(source: Any) -> tuple[str, ...] | None:
    """A source's namespace template (``None``: shared by all users; own sources: ``None``)."""
    template = getattr(source, "namespace_template", None)
    return None if template is None else tuple(template)


def source_namespace(
    source: Any, namespace: Namespace, context: Any, config: Mapping[str, Any] | None
) -> Namespace:
    """The namespace ``source`` is searched in for a run whose own namespace is ``namespace``:
    that one for the user's own memory and for a source shared by all users (which ignores
    it), else its template filled from the run
    (:func:`~mnemon_langgraph.read.namespaces.fill_source_namespace`).

    Raises:
        ConfigurationError: A template field the run lacks.
        NamespaceAccessError: Under authentication, the run names another value of a field.
    """
    template = template_of(source)
    if is_own(source) or template is None:
        return tuple(namespace)
    return fill_source_namespace(template, context=context, config=config)


def search_sources(
    sources: Mapping[str, Any],
    query: str,
    *,
    namespace: Namespace,
    k: int,
    context: Any = None,
    config: Mapping[str, Any] | None = None,
    timeout_s: float | None = 10.0,
) -> list[tuple[str, SearchHit]]:
    """One hybrid search over every source (a memory tool's ``search_memory``): each source
    bound to the run and searched for its top ``k``, the lists interleaved by rank (each
    source's best first), the first ``k`` kept, with each hit's source name. A source that
    cannot be bound (a field the run lacks), fails or times out is left out.

    Raises:
        NamespaceAccessError: Under authentication, the run names another team (etc.).
    """
    lists = []
    for bound in _bound_all(sources, namespace, context, config, timeout_s):
        try:
            lists.append((bound.name, bound.search(query, k=k)))
        except Exception:  # one source never fails the search: the others answer
            continue
    return _interleave(lists, k)


async def asearch_sources(
    sources: Mapping[str, Any],
    query: str,
    *,
    namespace: Namespace,
    k: int,
    context: Any = None,
    config: Mapping[str, Any] | None = None,
    timeout_s: float | None = 10.0,
) -> list[tuple[str, SearchHit]]:
    """Async :func:`search_sources` (the sources searched side by side)."""
    bound = _bound_all(sources, namespace, context, config, timeout_s)
    got = await asyncio.gather(*(b.asearch(query, k=k) for b in bound), return_exceptions=True)
    lists = [(b.name, hits) for b, hits in zip(bound, got, strict=True) if isinstance(hits, list)]
    return _interleave(lists, k)


def _bound_all(
    sources: Mapping[str, Any],
    namespace: Namespace,
    context: Any,
    config: Mapping[str, Any] | None,
    timeout_s: float | None,
) -> list[BoundSource]:
    fields: dict[str, str] | None = None
    out = []
    for name, src in sources.items():
        try:
            ns = source_namespace(src, namespace, context, config)
        except NamespaceAccessError:
            raise
        except ConfigurationError:
            continue  # a field this run lacks: the source is not read
        if callable(getattr(src, "for_run", None)) and fields is None:
            fields = run_fields(context, config)
        out.append(bind(name, src, ns, fields, timeout_s=timeout_s))
    return out


def bind(
    name: str,
    source: Any,
    namespace: Namespace,
    fields: Mapping[str, str] | None,
    *,
    timeout_s: float | None,
    qualify: bool = False,
) -> BoundSource:
    """``source`` bound to one run: ``for_run(fields)`` where it has one; its own
    ``timeout_s`` before the default ``timeout_s`` (``None``: no timeout at all)."""
    for_run = getattr(source, "for_run", None)
    if callable(for_run):
        source = for_run(dict(fields or {}))
    if timeout_s is not None:
        timeout_s = getattr(source, "timeout_s", None) or timeout_s
    return BoundSource(name, source, namespace, qualify=qualify, timeout_s=timeout_s)


def _interleave(
    lists: Sequence[tuple[str, Sequence[SearchHit]]], k: int
) -> list[tuple[str, SearchHit]]:
    ranked = [
        (i, j, name, hit) for j, (name, hits) in enumerate(lists) for i, hit in enumerate(hits)
    ]
    return [(name, hit) for _, _, name, hit in sorted(ranked, key=lambda t: (t[0], t[1]))][:k]


def qualify_id(name: str, record_id: str) -> str:
    """A record id as a read graph of several sources keys it: ``"<source>:<id>"``."""
    return f"{name}{SOURCE_ID_SEPARATOR}{record_id}"


def split_id(qualified: str) -> tuple[str, str]:
    """``(source name, record id)`` of a :func:`qualify_id` id (source names hold no ``:``)."""
    name, _, record_id = qualified.partition(SOURCE_ID_SEPARATOR)
    return name, record_id


def qualify_record(name: str, record: Record) -> Record:
    """``record`` with its id qualified by ``name``.

    Kept by the record object first (a source that keeps its records, like a document
    source's converted documents, returns the same objects turn after turn: found without
    hashing every field), then by the record's value."""
    key = (name, id(record))
    got = _BY_OBJECT.get(key)
    if got is not None and got[0] is record:
        return got[1]
    try:
        made = _qualified(name, record)
    except TypeError:  # a field that cannot be hashed (a list a source put there)
        return dataclasses.replace(record, id=qualify_id(name, record.id))
    if len(_BY_OBJECT) >= _KEPT_OBJECTS:
        _BY_OBJECT.clear()  # bounded; the records' values stay kept by _qualified
    # the entry holds the record itself, so its id names no other object while kept
    _BY_OBJECT[key] = (record, made)
    return made


_KEPT_OBJECTS = 8192
_BY_OBJECT: dict[tuple[str, int], tuple[Record, Record]] = {}


@functools.lru_cache(maxsize=8192, typed=True)
def _qualified(name: str, record: Record) -> Record:
    """:func:`qualify_record`, kept by the record's value: a document source returns the
    same records turn after turn (and a record is immutable, so a kept copy is the one
    ``replace`` would make)."""
    return dataclasses.replace(record, id=qualify_id(name, record.id))


def _qualified_hits(name: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` with their records' ids qualified by ``name``: :func:`_qualified_hit` of
    each, written out (every hit of every search of a graph of several sources), the
    records kept by object looked up here first."""
    out: list[SearchHit] = []
    append = out.append
    kept = _BY_OBJECT.get
    for hit in hits:
        record = hit.record
        got = kept((name, id(record)))
        made = got[1] if got is not None and got[0] is record else qualify_record(name, record)
        append(SearchHit(made, hit.rank, hit.score, hit.bm25_rank, hit.dense_rank))
    return out


def _qualified_hit(name: str, hit: SearchHit) -> SearchHit:
    """``hit`` with its record's id qualified by ``name`` (every field of the hit kept;
    built directly: ``dataclasses.replace`` costs more than the rest of a search's
    bookkeeping)."""
    return SearchHit(
        qualify_record(name, hit.record),
        hit.rank,
        hit.score,
        bm25_rank=hit.bm25_rank,
        dense_rank=hit.dense_rank,
    )


@dataclass(frozen=True)
class BoundSource:
    """One named source bound to one run: its namespace, capabilities and timeout.

    Its :meth:`search` / :meth:`asearch` take the read path's page request and hide what the
    source lacks (paging, date filters); with ``qualify`` its records' ids come back
    qualified by ``name``.

    Attributes:
        name: The source's name in ``sources=``.
        source: The source (after ``for_run``).
        namespace: The namespace it is searched in.
        qualify: Whether record ids are qualified (several sources).
        timeout_s: Seconds a search may take (``None``: no limit).
    """

    name: str
    source: Any
    namespace: Namespace
    qualify: bool = False
    timeout_s: float | None = None

    @property
    def own(self) -> bool:
        """Whether the source is the user's own memory."""
        return is_own(self.source)

    @property
    def pages(self) -> bool:
        """Whether the source takes ``offset``."""
        return bool(getattr(self.source, "pages", True))

    @property
    def filters_dates(self) -> bool:
        """Whether the source applies date bounds itself."""
        return bool(getattr(self.source, "filters_dates", True))

    def is_journal(self) -> bool:
        """Whether the source reads a session's records by position."""
        return capability_flags(self.source)[2]

    def _request(
        self, k: int, offset: int, filters: SearchFilters | None
    ) -> tuple[dict[str, Any], int, bool]:
        """The call's keyword arguments, the hits to drop from its top, and whether the read
        path filters (date bounds the source ignores)."""
        ours = filters is not None and not self.filters_dates
        bounds = {} if filters is None else {"filters": filters}
        if ours:
            # asks once for more, without bounds, and keeps what is inside them
            return {"k": (offset + k) * LOOKAHEAD, "offset": 0}, offset, True
        if not self.pages and offset:
            return {"k": offset + k, "offset": 0, **bounds}, offset, False
        return {"k": k, "offset": offset, **bounds}, 0, False

    def _finish(
        self, hits: Sequence[SearchHit], k: int, drop: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        out = list(hits)
        if filters is not None:
            out = [h for h in out if filters.accepts(h.record)]
        out = out[drop : drop + k] if drop or filters is not None else out
        if self.qualify:
            out = _qualified_hits(self.name, out)
        return out

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"source {self.name!r} gave no answer within {self.timeout_s} s")

    def search(
        self, query: str, *, k: int, offset: int = 0, filters: SearchFilters | None = None
    ) -> list[SearchHit]:
        """One page of the source's ranking for ``query`` (sync)."""
        if self.timeout_s is not None:
            return self.start_search(query, k=k, offset=offset, filters=filters)()
        kwargs, drop, ours = self._request(k, offset, filters)
        hits = self.source.search(query, namespace=self.namespace, **kwargs)
        return self._finish(hits, k, drop, filters if ours else None)

    def start_search(
        self, query: str, *, k: int, offset: int = 0, filters: SearchFilters | None = None
    ) -> Callable[[], list[SearchHit]]:
        """:meth:`search` of a source with a timeout, started: the call runs in the
        process's timed-search pool (a sync call cannot be cancelled: it is no longer waited
        for past the timeout, read/_workers.py); the returned wait gives its page, or raises
        ``TimeoutError`` once ``timeout_s`` has passed since the start."""
        if self.timeout_s is None:
            raise ConfigurationError("start_search needs a source with a timeout")
        kwargs, drop, ours = self._request(k, offset, filters)
        call = {"namespace": self.namespace, **kwargs}
        future = source_pool().submit(self.source.search, query, **call)
        deadline = time.monotonic() + self.timeout_s

        def wait() -> list[SearchHit]:
            try:
                hits = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except concurrent.futures.TimeoutError:
                raise self._timed_out() from None
            return self._finish(hits, k, drop, filters if ours else None)

        return wait

    async def asearch(
        self, query: str, *, k: int, offset: int = 0, filters: SearchFilters | None = None
    ) -> list[SearchHit]:
        """One page of the source's ranking for ``query`` (async)."""
        kwargs, drop, ours = self._request(k, offset, filters)
        call = {"namespace": self.namespace, **kwargs}
        try:
            hits = await asyncio.wait_for(self.source.asearch(query, **call), self.timeout_s)
        except TimeoutError:
            raise self._timed_out() from None
        return self._finish(hits, k, drop, filters if ours else None)

    # --- the optional capabilities, with qualified ids ------------------------------------

    def session_records(
        self,
        namespace: Any,
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """The source's records of ``session`` (its own namespace; ``namespace`` unused;
        ``filters`` passed on only when given, as :class:`JournalSource` allows)."""
        bounds = {} if filters is None else {"filters": filters}
        got = self.source.session_records(self.namespace, session, start=start, stop=stop, **bounds)
        return [qualify_record(self.name, r) if self.qualify else r for r in got]

    async def asession_records(
        self,
        namespace: Any,
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Async :meth:`session_records` (the source's own, else in a thread)."""
        read = getattr(self.source, "asession_records", None)
        if read is None:
            return await asyncio.to_thread(
                self.session_records, namespace, session, start=start, stop=stop, filters=filters
            )
        bounds = {} if filters is None else {"filters": filters}
        got = await read(self.namespace, session, start=start, stop=stop, **bounds)
        return [qualify_record(self.name, r) if self.qualify else r for r in got]

    def query_vector(self, query: str) -> Any:
        """The source's unit vector of ``query``."""
        return self.source.query_vector(query)

    def stored_vectors(self, namespace: Any, ids: Sequence[str]) -> Mapping[str, Any]:
        """The source's stored vectors of these (qualified) ids, keyed as given."""
        raw = {split_id(i)[1] if self.qualify else i: i for i in ids}
        got = self.source.stored_vectors(self.namespace, list(raw))
        return {raw[rid]: vec for rid, vec in got.items() if rid in raw}

    def term_statistics(
        self, namespace: Any, terms: Sequence[str]
    ) -> tuple[int, Mapping[str, int]]:
        """The source's word counts in its own namespace."""
        return self.source.term_statistics(self.namespace, terms)

    def capabilities(self) -> Any:
        """An object offering exactly the capabilities the source offers, ids qualified."""
        return _Capabilities(self)


class _Capabilities:
    """A :class:`BoundSource` seen through the capability protocols the source offers only:
    ``isinstance(x, VectorSource)`` holds exactly when it holds for the source."""

    def __init__(self, bound: BoundSource) -> None:
        self._bound = bound
        vectors, term_stats, journal = self.offers = capability_flags(bound.source)
        if vectors:
            self.query_vector = bound.query_vector
            self.stored_vectors = bound.stored_vectors
        if term_stats:
            self.term_statistics = bound.term_statistics
        if journal:
            self.session_records = bound.session_records
            self.asession_records = bound.asession_records


def offered(source: Any) -> tuple[bool, bool, bool]:
    """:func:`capability_flags` of ``source``; of a bound source's capabilities
    (:meth:`BoundSource.capabilities`, a new object each time) its source's, without
    ``typing``'s runtime protocol checks, which walk every member of the protocol."""
    if type(source) is _Capabilities:
        return source.offers
    return capability_flags(source)


_FLAGS: OrderedDict[int, tuple[weakref.ref[Any], tuple[bool, bool, bool]]] = OrderedDict()
_FLAGS_LOCK = threading.Lock()


def capability_flags(source: Any) -> tuple[bool, bool, bool]:
    """Whether ``source`` is a :class:`VectorSource`, a :class:`TermStatsSource` and a
    :class:`JournalSource`, found once per source object (while it lives): a turn binds each
    source many times, and ``typing``'s runtime protocol checks walk every member of the
    protocol on each call. A source is taken to keep the methods it offers while it lives."""
    key = id(source)
    got = _FLAGS.get(key)
    if got is not None and got[0]() is source:
        return got[1]
    flags = (
        isinstance(source, VectorSource),
        isinstance(source, TermStatsSource),
        isinstance(source, JournalSource),
    )
    try:
        ref = weakref.ref(source)
    except TypeError:  # not weakly referable: checked on every call
        return flags
    with _FLAGS_LOCK:
        _FLAGS[key] = (ref, flags)
        while len(_FLAGS) > 256:
            _FLAGS.popitem(last=False)
    return flags
