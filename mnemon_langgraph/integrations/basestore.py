"""``MnemonBaseStore``: the memory as a LangGraph ``BaseStore``.

``MnemonBaseStore(store)`` wraps a :class:`~mnemon_langgraph.store.MnemonStore` of either
backend so it can be passed wherever LangGraph expects a store: ``graph.compile(store=...)``,
``create_agent(store=...)``, ``get_store()`` and ``runtime.store`` in nodes, tools and
middleware, and LangMem's memory tools.

* ``put`` / ``get`` / ``delete`` keep key-value items (a LangMem memory, a profile) in the
  store's own database, beside the records (``store.kv()``,
  :mod:`~mnemon_langgraph.store.kv_items`).
* ``search(prefix, query=...)`` ranks the items *and the conversation records* of every
  namespace under ``prefix`` as one pool: the store's hybrid search picks each namespace's
  best records, then items (their indexed fields) and records are ranked together by BM25
  and the store's vectors, fused by RRF (:mod:`.basestore_rank`).
  A record's value has ``kind: "record"``, its text as ``content``, its ``date`` and
  ``message_ids``; items keep the value they were put with. Without a query, ``search``
  lists items only (newest first): there is nothing to rank records by.

Namespaces are the journal's: the tuple ``("users", "ada")`` is the namespace the
other surfaces write records to for user ``ada``. LangGraph forbids ``.`` in a label, so a
journal namespace such as ``("users", "ada@example.com")`` cannot be named here (it is
left out of listings and searches).

TTL is LangGraph's (``supports_ttl = True``; :mod:`.basestore_ttl`): ``MnemonBaseStore(store,
ttl={"default_ttl": 60, "refresh_on_read": True, "sweep_interval_minutes": 5})``,
``put(..., ttl=minutes)``, ``get`` / ``search(..., refresh_ttl=...)``. Expired items are
always left out of ``get``, ``search`` and ``list_namespaces`` (the check is in each
backend's SQL), and :meth:`MnemonBaseStore.sweep_ttl` or the background sweeper
(:meth:`MnemonBaseStore.start_ttl_sweeper`) deletes them with erase's no-residue guarantee,
through the store's checked ``sweep_expired_items``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from mnemon_langgraph.errors import (
    ConfigurationError,
    InputError,
    ModelCallError,
    RuntimeMnemonError,
)
from mnemon_langgraph.integrations.basestore_rank import (
    RECORD_KIND,
    Candidate,
    IndexSpec,
    KVRow,
    check_filter,
    check_key,
    check_namespace,
    dump_value,
    indexed_texts,
    matches,
    rank_pool,
    ranking_query,
    reachable,
    record_item,
    record_value,
)
from mnemon_langgraph.integrations.basestore_ttl import (
    DEFAULT_SWEEP_MINUTES,
    TTLSweeper,
    check_clock_time,
    check_ttl,
    check_ttl_config,
    server_ttl_config,
)
from mnemon_langgraph.read.namespaces import run_actor
from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.search._fusion import CANDIDATE_DEPTH
from mnemon_langgraph.search._vectors import normalize_rows
from mnemon_langgraph.store._internal.contract import (
    MAX_NAMESPACE_BYTES,
    check_erasable,
    check_namespace_size,
)
from mnemon_langgraph.store.kv_items import KVAudit, KVItems, KVWrite
from mnemon_langgraph.store.postgres._engine import LoopThread
from mnemon_langgraph.types import Namespace, Record, check_count, normalize_namespace

if TYPE_CHECKING:
    from mnemon_langgraph.store import MnemonStore

__all__ = [
    "RECORD_SCAN",
    "ItemAudit",
    "MnemonBaseStore",
    "base_store_from_env",
    "check_exported_items",
]

ItemAudit = KVAudit
"""One audited deletion of the BaseStore's items (:class:`~mnemon_langgraph.store.kv_items.KVAudit`;
LangGraph calls a key-value entry an item)."""

_Put = tuple[
    Namespace,
    str,
    Mapping[str, Any] | None,
    IndexSpec,
    tuple[datetime, datetime] | None,
    tuple[float | None, datetime | None],
]
"""A checked put: namespace, key, value (``None``: delete), index spec, restored times,
``(ttl minutes, restored expiry)``."""

RECORD_SCAN = 1000
"""Most records of one namespace a filtered search looks through for matches (best first)."""


class MnemonBaseStore(BaseStore):
    """A LangGraph ``BaseStore`` over a :class:`~mnemon_langgraph.store.MnemonStore`.

    One async implementation serves both faces: :meth:`abatch` runs it on the caller's
    event loop; :meth:`batch` runs it on this object's own event-loop thread and waits, so
    sync calls work inside and outside a running loop. Thread-safe.

    Args:
        store: The store (SQLite file or PostgreSQL URL). It is not closed by
            :meth:`close`: whoever opened it closes it.
        index: The fields made searchable when ``put`` is given no ``index``: LangGraph
            field paths (``["content"]``, ``["facts[*].text"]``), ``["$"]`` for the whole
            value (the default) or ``False`` for none.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, for a ``put`` that gives
            no ``ttl``), ``refresh_on_read`` (default ``True``) and
            ``sweep_interval_minutes`` (the background sweeper's; default 5). Expired items
            are always left out of reads (``omit_expired: false`` is refused).
        clock: What *now* is (a callable returning a timezone-aware ``datetime``; default
            the wall clock in UTC): every expiry is computed and checked against it.

    Raises:
        ConfigurationError: The store is neither backend (or an in-memory SQLite journal),
            or a bad ``index`` or ``ttl``.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: MnemonStore,
        *,
        index: IndexSpec = ("$",),
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        from mnemon_langgraph.store import EmbeddedStore, is_postgres_url

        self.store = store
        self.index: IndexSpec = _check_index(index)
        self.ttl_config = check_ttl_config(ttl)
        self._clock = clock or _wall_clock
        self._sweeper = TTLSweeper(self.asweep_ttl)
        self._loop = LoopThread()
        self._closed = False
        self._items: KVItems
        try:
            if isinstance(store, EmbeddedStore) and str(store.path) == ":memory:":
                raise ConfigurationError("MnemonBaseStore needs a journal file, not ':memory:'")
            if not isinstance(store, EmbeddedStore) and not is_postgres_url(
                getattr(store, "url", None)
            ):
                raise ConfigurationError(
                    f"MnemonBaseStore needs a MnemonStore, got {type(store).__name__}"
                )
            self._items = store.kv()  # the key-value items, in the store's own database
        except BaseException:
            self._loop.stop()
            raise

    def __repr__(self) -> str:
        return f"MnemonBaseStore({getattr(self.store, 'path', '?')!s})"

    def __enter__(self) -> MnemonBaseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MnemonBaseStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stop a sweeper started on this loop (waiting for it), then :meth:`close`."""
        if self._sweeper.loop() is asyncio.get_running_loop():
            await self.stop_ttl_sweeper()
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Stop this object's loop thread; the wrapped store (which holds the key-value
        items, ``store.kv()``) stays open. Idempotent."""
        if self._closed:
            return
        if self._sweeper.running and self._sweeper.loop() is self._loop.loop:
            self._loop.run(self._sweeper.stop(), timeout=30)  # started on this object's loop
        self._sweeper.signal_stop()  # a sweeper on the caller's loop ends after its sweep
        self._closed = True
        self._items.close()
        self._loop.stop()

    # -- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (a put is seen by a later get of the same batch).

        Every op is checked, and every put's fields embedded, before anything is written:
        a bad op or a failing embedder leaves the store as it was.
        """
        self._check_open()
        return self._loop.run(self._run(list(ops), run_actor("basestore")))

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeMnemonError("this MnemonBaseStore is closed")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`, on the caller's event loop (PostgreSQL: native async)."""
        return await self._run(list(ops), run_actor("basestore"))

    async def _run(self, ops: list[Op], actor: str = "basestore") -> list[Result]:
        self._check_open()
        for op in ops:
            _check_op(op, self.index)
        writes = await self._writes(ops)
        now = self._now()  # one instant for the whole batch
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, PutOp):
                j = i
                while j < len(ops) and isinstance(ops[j], PutOp):
                    j += 1
                await self._items.write([writes[k] for k in range(i, j)], actor=actor, now=now)
                i = j
                continue
            if isinstance(op, GetOp):
                row = await self._items.get(normalize_namespace(op.namespace), op.key, now)
                if row is not None and op.refresh_ttl:
                    await self._items.refresh([row], now)
                results[i] = None if row is None else _item(row)
            elif isinstance(op, SearchOp):
                results[i] = await self._search(op, now)
            elif isinstance(op, ListNamespacesOp):
                results[i] = await self._list(op, now)
            i += 1
        return results

    # -- writes ---------------------------------------------------------------------------------

    async def _writes(self, ops: Sequence[Op]) -> dict[int, KVWrite]:
        """The :class:`KVWrite` of each put op, by position."""
        puts: dict[int, _Put] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                spec = self.index if op.index is None else op.index
                ttl = (check_ttl(op.ttl), None)
                puts[i] = (normalize_namespace(op.namespace), op.key, op.value, spec, None, ttl)
        return await self._prepare(puts)

    async def _prepare(self, puts: dict[int, _Put]) -> dict[int, KVWrite]:
        """Writes for checked puts, every indexed field embedded in one call."""
        texts_of = {i: indexed_texts(p[2], p[3]) for i, p in puts.items() if p[2] is not None}
        texts = [t for ts in texts_of.values() for t in ts]
        vectors = await asyncio.to_thread(self._embed, texts) if texts else None
        writes: dict[int, KVWrite] = {}
        start = 0
        for i, (ns, key, value, spec, stamp, (ttl, expires)) in puts.items():
            if value is None:
                writes[i] = KVWrite(ns, key, None)
                continue
            ts = texts_of[i]
            rows = vectors[start : start + len(ts)] if vectors is not None and ts else None
            start += len(ts)
            fields = json.dumps(False if spec is False else list(spec))
            text = "\n".join(ts)
            writes[i] = KVWrite(ns, key, dump_value(value), text, rows, fields, stamp, ttl, expires)
        return writes

    def _embed(self, texts: list[str]) -> np.ndarray:
        try:
            raw = self.store.embeddings.embed_documents(texts)
        except Exception as exc:
            raise ModelCallError(f"embedding model failed on item fields: {exc}") from exc
        vecs = np.asarray(raw, dtype=np.float32)
        if vecs.shape != (len(texts), self.store.dimension) or not np.isfinite(vecs).all():
            raise ModelCallError(
                f"embedding model returned shape {vecs.shape} (expected "
                f"({len(texts)}, {self.store.dimension}), finite values)"
            )
        return normalize_rows(vecs)

    # -- search ---------------------------------------------------------------------------------

    async def _search(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        prefix = check_namespace(op.namespace_prefix, allow_empty=True)
        wanted = check_filter(op.filter)
        rows = [r for r in await self._items.under(prefix, now) if matches(r.value, wanted)]
        if not op.query:
            rows.sort(key=lambda r: (-r.updated_at.timestamp(), r.namespace, r.key))
            page = rows[op.offset : op.offset + op.limit]
            if op.refresh_ttl:
                await self._items.refresh(page, now)
            return [_search_item(r, None) for r in page]
        ranking = ranking_query(op.query, prefix)  # the user's own name decides nothing
        query_vector = await asyncio.to_thread(self.store.query_vector, ranking)
        need = op.offset + op.limit
        item_pool = [(Candidate(r.text, r.vectors, _search_item(r, None)), r) for r in rows]
        item_pool = [(c, r) for c, r in item_pool if r.text]
        row_of = {id(c): r for c, r in item_pool}
        pool = [c for c, _ in item_pool]
        pool.extend(await self._record_candidates(prefix, op.query, wanted, need))
        ranked = rank_pool(pool, ranking, query_vector, max(CANDIDATE_DEPTH, need))
        top = ranked[op.offset : need]
        if op.refresh_ttl:  # the items returned (records have no TTL)
            await self._items.refresh([row_of[id(c)] for c, _ in top if id(c) in row_of], now)
        return [_scored(c.result, score) for c, score in top]

    async def _record_candidates(
        self, prefix: Namespace, query: str, wanted: dict[str, Any], need: int
    ) -> list[Candidate]:
        """The best ``need`` records passing ``wanted`` of each namespace under ``prefix``.

        Found by the store's hybrid search, then ranked with the items as one pool (their
        stored vectors, their indexed text), so an item and a record compete on one scale.
        """
        kind = {"kind": wanted["kind"]} if "kind" in wanted else {}
        if need <= 0 or not matches({"kind": RECORD_KIND}, kind):
            return []  # the filter's kind rules records out: no search needed
        every = await self.store.anamespaces()
        spaces = [ns for ns in every if tuple(ns[: len(prefix)]) == prefix and reachable(ns)]
        found = await asyncio.gather(
            *(self._namespace_hits(ns, query, wanted, need) for ns in spaces)
        )
        return [c for hits in found for c in hits]

    async def _namespace_hits(
        self, ns: Namespace, query: str, wanted: dict[str, Any], need: int
    ) -> list[Candidate]:
        page = max(need, 20) if wanted else need
        kept: list[tuple[Record, dict[str, Any]]] = []
        offset = 0
        while len(kept) < need and offset < RECORD_SCAN:
            hits = await self.store.asearch(query, namespace=ns, k=page, offset=offset)
            for hit in hits:
                value = record_value(hit.record)
                if matches(value, wanted):
                    kept.append((hit.record, value))
            if len(hits) < page:
                break
            offset += page
        kept = kept[:need]
        ids = [record.id for record, _ in kept]
        vectors = await self.store.astored_vectors(ns, ids) if ids else {}
        return [
            Candidate(
                record.render(),
                None if vectors.get(record.id) is None else np.atleast_2d(vectors[record.id]),
                record_item(record, None, value),
            )
            for record, value in kept
        ]

    # -- namespaces -----------------------------------------------------------------------------

    async def _list(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        spaces = set(await self._items.namespaces(now))
        spaces.update(ns for ns in await asyncio.to_thread(self.store.namespaces) if reachable(ns))
        conditions = op.match_conditions or ()
        chosen = [ns for ns in spaces if all(_match(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- TTL ------------------------------------------------------------------------------------

    def _now(self) -> datetime:
        return check_clock_time(self._clock()).astimezone(UTC)

    def sweep_ttl(self) -> int:
        """Delete the items expired by now (this store's clock), leaving no residue; one
        ``expire_items`` audit row per namespace (keys, never values). Returns how many.

        Through the store's checked ``sweep_expired_items``; what the background sweeper
        runs (:meth:`start_ttl_sweeper`)."""
        self._check_open()
        return self._loop.run(self.asweep_ttl())

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        self._check_open()
        return int(await self.store.asweep_expired_items(now=self._now(), actor="ttl"))

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Start deleting expired items in the background, as LangGraph's stores do: a task
        on the running event loop that sweeps at once, then every ``sweep_interval_minutes``
        (default the ``ttl`` config's ``sweep_interval_minutes``, else 5). Without a ``ttl``
        config and an interval, nothing starts (a finished task is returned, as LangGraph's
        ``AsyncPostgresStore`` does). Calling it again returns the running task."""
        self._check_open()
        config = self.ttl_config or {}
        if sweep_interval_minutes is None and not self.ttl_config:
            return asyncio.get_running_loop().create_task(asyncio.sleep(0))
        minutes = check_ttl(
            sweep_interval_minutes or config.get("sweep_interval_minutes"),
            what="sweep_interval_minutes",
        )
        return self._sweeper.start(minutes or DEFAULT_SWEEP_MINUTES)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the background sweeper (on the loop that started it) and wait at most
        ``timeout`` seconds: ``True`` once stopped or if none ran, ``False`` on a timeout."""
        return await self._sweeper.stop(timeout)

    # -- erase and audit ------------------------------------------------------------------------

    def erase_namespace(
        self, namespace: str | Sequence[str], *, actor: str = "api"
    ) -> dict[str, int]:
        """Erase a namespace: its items, then its records (both audited).

        Exactly that namespace (not the ones under it), like
        :meth:`~mnemon_langgraph.store.MnemonStore.erase_namespace`. Items go first, so an
        interrupted erase leaves records that a second run removes.

        Returns:
            ``{"items": ..., "records": ...}`` erased.
        """
        self._check_open()
        return self._loop.run(self.aerase_namespace(namespace, actor=run_actor(actor)))

    async def aerase_namespace(
        self, namespace: str | Sequence[str], *, actor: str = "api"
    ) -> dict[str, int]:
        """Async :meth:`erase_namespace`."""
        self._check_open()
        ns = normalize_namespace(namespace)
        if len(namespace_key(ns).encode("utf-8")) > MAX_NAMESPACE_BYTES:  # rare: look first
            held = any(r.namespace == ns for r in await self._items.under(ns, None))
            held = held or await asyncio.to_thread(self.store.holds_namespace, ns)
            check_erasable(ns, lambda _: held)
        actor = run_actor(actor)
        items = await self._items.erase(ns, actor=actor)
        records = await asyncio.to_thread(self.store.erase_namespace, ns, actor=actor)
        return {"items": items, "records": int(records)}

    # -- moving items -------------------------------------------------------------------------

    def export_items(self, namespace: str | Sequence[str]) -> list[dict[str, Any]]:
        """The items of exactly ``namespace`` as JSON-ready dicts, by key.

        Each is ``{"namespace", "key", "value", "index", "created_at", "updated_at"}``
        (``index``: what was searchable; times ISO 8601 UTC), and for an item with a TTL
        also ``"ttl"`` (minutes) and ``"expires_at"``; expired items are left out.
        :meth:`import_items` takes them back, on either backend.
        """
        self._check_open()
        return self._loop.run(self.aexport_items(namespace))

    async def aexport_items(self, namespace: str | Sequence[str]) -> list[dict[str, Any]]:
        """Async :meth:`export_items`."""
        self._check_open()
        ns = check_namespace(normalize_namespace(namespace))
        rows = [r for r in await self._items.under(ns, self._now()) if r.namespace == ns]
        return [_exported(r) for r in rows]

    def import_items(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Write exported items back, times included; returns how many.

        Idempotent (an item with the same namespace and key is replaced); every row is
        checked, and every indexed field embedded, before anything is written. The write
        runs on the calling thread, so it joins a ``store.transaction()`` held there
        (``mnemon import`` writes records, index items and these in one transaction).

        Raises:
            InputError: A malformed row (the message names its position); nothing written.
        """
        self._check_open()
        actor = run_actor("import")
        writes = self._loop.run(self._import_writes(rows))
        self._items.write_here(writes, actor=actor)
        return len(writes)

    async def aimport_items(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Async :meth:`import_items`."""
        writes = await self._import_writes(rows)
        await self._items.write(writes, actor=run_actor("import"))
        return len(writes)

    async def _import_writes(self, rows: Iterable[Mapping[str, Any]]) -> list[KVWrite]:
        """The checked and embedded writes of exported rows (nothing written)."""
        self._check_open()
        puts = {n: _import_row(n, row, self.index) for n, row in enumerate(rows)}
        return list((await self._prepare(puts)).values())

    def audit_log(self, namespace: str | Sequence[str] | None = None) -> list[KVAudit]:
        """Audited deletions of items (deletes, erases, TTL sweeps and retention runs), oldest
        first.

        Records' deletions are in the store's own ``audit_log``.
        """
        ns = None if namespace is None else normalize_namespace(namespace)
        self._check_open()
        return self._loop.run(self._items.audit_log(ns))


@contextmanager
def base_store_from_env(environ: Mapping[str, str] | None = None) -> Iterator[MnemonBaseStore]:
    """A :class:`MnemonBaseStore` over the store at ``MNEMON_DB``, both closed on exit.

    For a LangGraph server (``langgraph dev``, Studio), whose own store then is this memory:
    in ``langgraph.json``, ``"store": {"path":
    "mnemon_langgraph.integrations.basestore.base_store_from_env"}``. ``MNEMON_DB`` is read
    as by the server's graphs (:func:`~mnemon_langgraph.integrations.studio.store_from_env`).
    ``MNEMON_RETENTION`` (``"30d"``, :mod:`~mnemon_langgraph.integrations.retention_schedule`)
    also applies a retention policy on a schedule while the store is open.

    The store's ``ttl`` (LangGraph's ``TTLConfig``: ``"store": {"path": ..., "ttl":
    {"default_ttl": 1440, "sweep_interval_minutes": 10}}``) is read from ``LANGGRAPH_STORE``,
    where the server puts ``langgraph.json``'s ``store``; with one, the TTL sweeper runs on
    the store's own loop thread until the server closes the store (the server hands a
    custom store no TTL and skips its own sweeper).
    """
    from mnemon_langgraph.integrations.retention_schedule import retention_schedule_from_env
    from mnemon_langgraph.integrations.studio import store_from_env

    ttl = server_ttl_config(os.environ if environ is None else environ)
    store = store_from_env(environ)
    try:
        with (
            retention_schedule_from_env(store, environ),
            MnemonBaseStore(store, ttl=ttl) as base,
        ):
            if ttl:  # the server starts no sweeper for a custom store: this one runs its own
                base._loop.run(base.start_ttl_sweeper())  # on the store's own loop thread
            yield base
    finally:
        store.close()


# --- helpers ------------------------------------------------------------------------------------


def _check_index(index: Any) -> IndexSpec:
    if index is False:
        return False
    if isinstance(index, str) or not isinstance(index, Sequence):
        raise ConfigurationError(f"index must be False or a list of field paths, got {index!r}")
    if not all(isinstance(p, str) and p for p in index):
        raise ConfigurationError(f"index field paths must be non-empty strings, got {index!r}")
    return tuple(index)


def _check_op(op: Any, default_index: IndexSpec) -> None:
    """Raise for an op that cannot run, before any op of the batch runs."""
    if isinstance(op, GetOp):
        check_namespace(op.namespace)
        check_key(op.key)
    elif isinstance(op, PutOp):
        ns = check_namespace(op.namespace)
        if op.value is not None:  # a delete may remove what an older version stored
            _check_writable(ns)
        elif ns[0] == "langgraph":
            raise InvalidNamespaceError(f'root label "langgraph" is reserved: {ns!r}')
        check_key(op.key)
        check_ttl(op.ttl)
        if op.value is not None:
            _check_value(op.value)
            if op.index is not None:
                _check_index(op.index)
    elif isinstance(op, SearchOp):
        check_namespace(op.namespace_prefix, allow_empty=True)
        check_filter(op.filter)
        check_count(op.limit, what="limit")
        check_count(op.offset, what="offset")
        if op.query is not None and not isinstance(op.query, str):
            raise InputError(f"query must be a string, got {type(op.query).__name__}")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_namespace(tuple(p for p in condition.path if p != "*"), allow_empty=True)
            if condition.match_type not in ("prefix", "suffix"):
                raise InputError(f"unknown match type {condition.match_type!r}")
        if op.max_depth is not None:
            check_count(op.max_depth, what="max_depth", minimum=1)
        check_count(op.limit, what="limit")
        check_count(op.offset, what="offset")
    else:
        raise InputError(f"unknown store operation {type(op).__name__}")


def _check_writable(ns: Namespace) -> Namespace:
    """``ns`` if items may be written there: not under LangGraph's reserved root, and
    short enough to store on either backend (:func:`check_namespace_size`)."""
    if ns[0] == "langgraph":
        raise InvalidNamespaceError(f'root label "langgraph" is reserved: {ns!r}')
    return check_namespace_size(ns)


def _check_value(value: Any) -> None:
    dump_value(value)
    if value.get("kind") == RECORD_KIND:
        raise InputError(
            f'value["kind"] == {RECORD_KIND!r} marks conversation records in search '
            "results; give the item another kind"
        )


def check_exported_items(rows: Iterable[Any]) -> None:
    """Check rows as :meth:`MnemonBaseStore.import_items` would, without any store (no I/O).

    Raises:
        InputError: A malformed row (the message names its position).
    """
    for n, row in enumerate(rows):
        _import_row(n, row, ("$",))


def _import_row(n: int, row: Any, default_index: IndexSpec) -> _Put:
    """A checked put restoring an exported item (see ``export_items``)."""
    try:
        if not isinstance(row, Mapping):
            raise InputError(f"expected an object, got {type(row).__name__}")
        ns = _check_writable(check_namespace(tuple(row.get("namespace") or ())))
        key = check_key(row.get("key"))
        value = row.get("value")
        _check_value(value)
        spec = _check_index(row["index"]) if "index" in row else default_index
        created, updated = (_instant(row.get(f), f) for f in ("created_at", "updated_at"))
        ttl = check_ttl(row.get("ttl"))
        expires = None if ttl is None else _instant(row.get("expires_at"), "expires_at")
    except (InputError, InvalidNamespaceError, ConfigurationError) as exc:
        raise InputError(f"item {n}: {exc}") from exc
    return ns, key, value, spec, (created, updated), (ttl, expires)


def _instant(value: Any, name: str) -> datetime:
    if not isinstance(value, str):
        raise InputError(f"{name} must be an ISO 8601 string, got {value!r}")
    try:
        when = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InputError(f"{name} is not an ISO 8601 time: {value!r}") from exc
    try:
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+05:00 is before year 1 in UTC
        raise InputError(f"{name} is out of range in UTC (years 1..9999): {value!r}") from None


def _match(condition: MatchCondition, ns: Namespace) -> bool:
    """LangGraph's namespace match: whole labels, ``"*"`` matching any one label."""
    path = tuple(condition.path)
    if len(ns) < len(path):
        return False
    part = ns[: len(path)] if condition.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p == "*" or p == label for p, label in zip(path, part, strict=True))


def _wall_clock() -> datetime:
    return datetime.now(UTC)


def _exported(r: KVRow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": list(r.namespace),
        "key": r.key,
        "value": r.value,
        "index": False if r.fields is False else list(r.fields),
        "created_at": r.created_at.isoformat(),
        "updated_at": r.updated_at.isoformat(),
    }
    if r.ttl_minutes is not None and r.expires_at is not None:
        out.update(ttl=r.ttl_minutes, expires_at=r.expires_at.isoformat())
    return out


def _item(row: KVRow) -> Item:
    return Item(
        value=row.value,
        key=row.key,
        namespace=row.namespace,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _scored(item: SearchItem, score: float) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _search_item(row: KVRow, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=row.namespace,
        key=row.key,
        value=row.value,
        created_at=row.created_at,
        updated_at=row.updated_at,
        score=score,
    )
