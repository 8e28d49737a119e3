"""The consolidated index in PostgreSQL: :class:`PostgresItemStore`, beside ``EmbeddedItemStore``.

Same interface and the same guarantees as
:class:`~mnemon_langgraph.store.embedded._items.EmbeddedItemStore`, in the database of a
:class:`~mnemon_langgraph.store.postgres.PostgresStore` (its pool, its loop), which builds it
(``store.item_store()``) and which it reaches through :class:`ItemHost`:

* ``mnemon_items`` (with ``nsid``, so an erase reaches them), ``mnemon_item_links``
  (``record_id REFERENCES mnemon_records ON DELETE CASCADE``) and a trigger that deletes an
  item left without links and writes a ``delete_item`` audit row, in the deleting
  transaction;
* ``mnemon_consolidation_state``: the watermark, moved in the same transaction as the batch's
  items. :meth:`PostgresItemStore.commit_batch` reads it ``FOR UPDATE``: a second job on the
  same namespace waits for the first to commit, then finds the watermark moved and writes
  nothing (``JournalError``), so two jobs never fold the same records twice;
* ``mnemon_consolidation_failures``.

Nearest-item search is brute-force cosine in numpy, as in the SQLite store (a few items per
10,000 characters of history; see that module for the reasoning).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.items import IndexItem, ItemKind, ItemUpdate
from mnemon_langgraph.store._internal.item_commit import (
    BatchUsage,
    adrive,
    commit_folded_batch,
    record_batch_failure,
)
from mnemon_langgraph.store._internal.item_rows import (
    FailureRow,
    IndexStatus,
    embed_index_items,
    group_key_text,
)
from mnemon_langgraph.types import Namespace, Record, normalize_namespace

__all__ = ["ItemHost", "PostgresItemStore"]

T = TypeVar("T")


class ItemHost(Protocol):
    """What the item store uses of its :class:`~mnemon_langgraph.store.postgres.PostgresStore`.

    A protocol, not the class: the facade (``store.py``) builds the item store, so this
    module may not import it (``tests/test_layering.py``, the PostgreSQL parts' order).
    """

    @property
    def embeddings(self) -> Embeddings: ...

    @property
    def dimension(self) -> int: ...

    def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...

    def _connection(self) -> Any: ...

    async def _fetch(self, sql: str, params: Any = None) -> list[Any]: ...

    def _key(self, namespace: str | Sequence[str]) -> str: ...

    async def _namespace_id(self, conn: Any, ns: Namespace, *, create: bool = False) -> Any: ...

    def records(
        self, namespace: str | Sequence[str], *, after_seq: int = 0, limit: int | None = None
    ) -> Iterator[Record]: ...


_DDL = [
    "CREATE SEQUENCE IF NOT EXISTS mnemon_item_seq",
    """CREATE TABLE IF NOT EXISTS mnemon_items (
        id text PRIMARY KEY,
        nsid bigint NOT NULL,
        kind text NOT NULL CHECK (kind IN ('event', 'value', 'instruction')),
        text text NOT NULL,
        topic text, subject text, attribute text, value text,
        group_key text NOT NULL,
        date timestamp,
        contradicts boolean NOT NULL DEFAULT false,
        seq bigint NOT NULL,
        embedding real[],
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now())""",
    "CREATE INDEX IF NOT EXISTS mnemon_items_kind ON mnemon_items (nsid, kind, seq)",
    "CREATE INDEX IF NOT EXISTS mnemon_items_group ON mnemon_items (nsid, group_key, seq)",
    """CREATE TABLE IF NOT EXISTS mnemon_item_links (
        item_id text NOT NULL REFERENCES mnemon_items(id) ON DELETE CASCADE,
        record_id text NOT NULL REFERENCES mnemon_records(id) ON DELETE CASCADE,
        nsid bigint NOT NULL,
        PRIMARY KEY (item_id, record_id))""",
    "CREATE INDEX IF NOT EXISTS mnemon_item_links_record ON mnemon_item_links (record_id)",
    """CREATE TABLE IF NOT EXISTS mnemon_consolidation_state (
        nsid bigint PRIMARY KEY,
        watermark bigint NOT NULL DEFAULT 0,
        batches bigint NOT NULL DEFAULT 0,
        items_added bigint NOT NULL DEFAULT 0,
        items_updated bigint NOT NULL DEFAULT 0,
        model_calls bigint NOT NULL DEFAULT 0,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS mnemon_consolidation_failures (
        id bigserial PRIMARY KEY,
        nsid bigint NOT NULL,
        batch_start_seq bigint NOT NULL,
        batch_end_seq bigint NOT NULL,
        error text NOT NULL,
        attempts integer NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        skipped boolean NOT NULL DEFAULT false,
        resolved boolean NOT NULL DEFAULT false)""",
    """CREATE OR REPLACE FUNCTION mnemon_item_links_orphan() RETURNS trigger AS $$
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM mnemon_item_links WHERE item_id = OLD.item_id)
           AND EXISTS (SELECT 1 FROM mnemon_items WHERE id = OLD.item_id) THEN
            INSERT INTO mnemon_audit (actor, action, namespace, count, record_ids, reason)
            SELECT 'consolidation', 'delete_item', n.namespace, 1,
                   jsonb_build_array(OLD.record_id),
                   'index item ' || OLD.item_id || ' lost its last linked record'
            FROM mnemon_items i JOIN mnemon_namespaces n ON n.nsid = i.nsid
            WHERE i.id = OLD.item_id;
            DELETE FROM mnemon_items WHERE id = OLD.item_id;
        END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS mnemon_item_links_orphan ON mnemon_item_links",
    "CREATE TRIGGER mnemon_item_links_orphan AFTER DELETE ON mnemon_item_links "
    "FOR EACH ROW EXECUTE FUNCTION mnemon_item_links_orphan()",
]

_COLUMNS = "id, kind, text, topic, subject, attribute, value, date, contradicts, seq"


class PostgresItemStore:
    """The consolidated index in PostgreSQL; an :class:`~mnemon_langgraph.items.ItemSource`.

    Built by ``store.item_store()``; implements :class:`~mnemon_langgraph.items.ItemStore`.

    Args:
        store: The :class:`~mnemon_langgraph.store.postgres.PostgresStore` whose database
            holds the index (and the records :meth:`records_after` reads).
        embeddings: Embeds items and queries; default the store's embedder.
    """

    def __init__(self, store: ItemHost, embeddings: Embeddings | None = None) -> None:
        self.store = store
        self.embeddings = embeddings if embeddings is not None else store.embeddings
        self.dimension = store.dimension
        self.read_only = False
        store._run(self._setup())

    async def _setup(self) -> None:
        async with self.store._connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (0x4D4E4954,))
            for statement in _DDL:
                await conn.execute(statement)

    def close(self) -> None:
        """Nothing to close: the store owns the connections."""

    # --- reads ---------------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> list[Any]:
        return self.store._run(self.store._fetch(sql, params))

    def _items(
        self, namespace: Namespace, where: str, params: dict[str, Any], *, links: bool = True
    ) -> list[IndexItem]:
        ns = normalize_namespace(namespace)
        params = {**params, "ns": self.store._key(ns)}
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM mnemon_items WHERE nsid = (SELECT nsid FROM "
            f"mnemon_namespaces WHERE namespace = %(ns)s) AND {where} ORDER BY seq",
            params,
        )
        linked: dict[str, list[str]] = {}
        if links and rows:
            for item_id, record_id in self._rows(
                "SELECT item_id, record_id FROM mnemon_item_links WHERE item_id = ANY(%s) "
                "ORDER BY record_id",
                ([r[0] for r in rows],),
            ):
                linked.setdefault(item_id, []).append(record_id)
        return [
            IndexItem(
                id=r[0],
                namespace=ns,
                kind=r[1],
                text=r[2],
                record_ids=tuple(sorted(linked.get(r[0], []))),
                topic=r[3],
                subject=r[4],
                attribute=r[5],
                value=r[6],
                date=r[7],
                contradicts=bool(r[8]),
                seq=int(r[9]),
            )
            for r in rows
        ]

    def get_items(self, namespace: Namespace, ids: Sequence[str]) -> list[IndexItem]:
        """The items of ``namespace`` with the given ids (unknown ids are left out)."""
        return self._items(namespace, "id = ANY(%(ids)s)", {"ids": list(dict.fromkeys(ids))})

    def foreign_ids(self, namespace: Namespace, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are items of another namespace (an item id is unique in the
        store, so an import must not write such an id into ``namespace``)."""
        rows = self._rows(
            "SELECT i.id FROM mnemon_items i JOIN mnemon_namespaces n ON n.nsid = i.nsid "
            "WHERE i.id = ANY(%s) AND n.namespace <> %s",
            (list(dict.fromkeys(ids)), self.store._key(normalize_namespace(namespace))),
        )
        return {row[0] for row in rows}

    def all_items(self, namespace: Namespace, kind: ItemKind | None = None) -> list[IndexItem]:
        """Every item of ``namespace`` (of one ``kind`` if given), in write order."""
        if kind is None:
            return self._items(namespace, "true", {})
        return self._items(namespace, "kind = %(kind)s", {"kind": kind})

    def context_items(self, namespace: Namespace) -> list[IndexItem]:
        """Every item of ``namespace`` without its links, in write order (cheap)."""
        return self._items(namespace, "true", {}, links=False)

    def count(self, namespace: Namespace) -> int:
        """Number of items in ``namespace``."""
        rows = self._rows(
            "SELECT count(*) FROM mnemon_items i JOIN mnemon_namespaces n ON n.nsid = i.nsid "
            "WHERE n.namespace = %s",
            (self.store._key(namespace),),
        )
        return int(rows[0][0])

    def linked_items(self, namespace: Namespace, record_ids: Sequence[str]) -> list[IndexItem]:
        """Items of ``namespace`` linked to any of ``record_ids``, in write order."""
        return self._items(
            namespace,
            "id IN (SELECT item_id FROM mnemon_item_links WHERE record_id = ANY(%(rids)s))",
            {"rids": list(dict.fromkeys(record_ids))},
        )

    def nearest_items(self, query: str, *, namespace: Namespace, k: int = 12) -> list[IndexItem]:
        """The ``k`` items of ``namespace`` whose embeddings are nearest ``query`` (cosine)."""
        if k <= 0 or not query.strip():
            return []
        rows = self._rows(
            "SELECT i.id, i.embedding FROM mnemon_items i JOIN mnemon_namespaces n "
            "ON n.nsid = i.nsid WHERE n.namespace = %s AND i.embedding IS NOT NULL "
            "ORDER BY i.seq",
            (self.store._key(namespace),),
        )
        if not rows:
            return []
        matrix = np.asarray([r[1] for r in rows], dtype=np.float32)
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        scores = matrix @ (q / (float(np.linalg.norm(q)) or 1.0))
        chosen = [rows[i][0] for i in np.argsort(-scores, kind="stable")[:k]]
        by_id = {item.id: item for item in self.get_items(namespace, chosen)}
        return [by_id[i] for i in chosen if i in by_id]

    def instructions(self, namespace: Namespace) -> list[IndexItem]:
        """Every standing instruction and preference of ``namespace``, oldest first."""
        return self.all_items(namespace, "instruction")

    def topics(self, namespace: Namespace) -> list[str]:
        """Names of every topic timeline of ``namespace``, in order of first appearance."""
        rows = self._rows(
            "SELECT min(i.topic), min(i.seq) AS first FROM mnemon_items i JOIN "
            "mnemon_namespaces n ON n.nsid = i.nsid WHERE n.namespace = %s AND "
            "i.kind = 'event' GROUP BY i.group_key ORDER BY first",
            (self.store._key(namespace),),
        )
        return [r[0] for r in rows if r[0]]

    def group(self, namespace: Namespace, item: IndexItem) -> list[IndexItem]:
        """The whole timeline or value history of ``item``, oldest first (by date, then seq)."""
        items = self._items(
            namespace,
            "kind = %(kind)s AND group_key = %(g)s",
            {"kind": item.kind, "g": group_key_text(item)},
        )
        return sorted(items, key=lambda it: (it.date is None, it.date or datetime.min, it.seq))

    def state(self, namespace: Namespace) -> IndexStatus:
        """Watermark and running totals of ``namespace`` (zeros before any run)."""
        ns = normalize_namespace(namespace)
        rows = self._rows(
            "SELECT watermark, batches, items_added, items_updated, model_calls, input_tokens, "
            "output_tokens FROM mnemon_consolidation_state s JOIN mnemon_namespaces n "
            "ON n.nsid = s.nsid WHERE n.namespace = %s",
            (self.store._key(ns),),
        )
        return IndexStatus(ns, *(int(v) for v in rows[0])) if rows else IndexStatus(namespace=ns)

    def watermark(self, namespace: Namespace) -> int:
        """The last record ``seq`` folded into the index of ``namespace``."""
        return self.state(namespace).watermark

    def records_after(self, namespace: Namespace, after_seq: int) -> Iterator[Record]:
        """The store's records of ``namespace`` with ``seq > after_seq``, in seq order."""
        return self.store.records(namespace, after_seq=after_seq)

    def failures(self, namespace: Namespace, *, unresolved_only: bool = False) -> list[FailureRow]:
        """Recorded batch failures of ``namespace``, oldest first."""
        ns = normalize_namespace(namespace)
        rows = self._rows(
            "SELECT batch_start_seq, batch_end_seq, error, attempts, at, skipped, resolved "
            "FROM mnemon_consolidation_failures f JOIN mnemon_namespaces n ON n.nsid = f.nsid "
            "WHERE n.namespace = %s"
            + (" AND NOT resolved" if unresolved_only else "")
            + " ORDER BY f.id",
            (self.store._key(ns),),
        )
        return [
            FailureRow(ns, int(a), int(b), str(e), int(n), at.astimezone(UTC).isoformat(), s, r)
            for a, b, e, n, at, s, r in rows
        ]

    # --- writes --------------------------------------------------------------------------

    def embed_items(self, items: Sequence[IndexItem]) -> np.ndarray:
        """Unit-length float32 embeddings of ``items`` (one row each)."""
        return embed_index_items(self.embeddings, items, self.dimension)

    def commit_batch(
        self,
        namespace: Namespace,
        *,
        expected_watermark: int,
        new_watermark: int,
        new_items: Sequence[IndexItem],
        new_vectors: np.ndarray | None,
        updates: Sequence[ItemUpdate] = (),
        update_vectors: np.ndarray | None = None,
        model_calls: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> tuple[int, int]:
        """Write a folded batch's items and move the watermark, in ONE transaction.

        Same contract as ``EmbeddedItemStore.commit_batch`` (one algorithm,
        :func:`~mnemon_langgraph.store._internal.item_commit.commit_folded_batch`). The watermark
        is read ``FOR UPDATE``: a second job on the namespace waits for this one to commit.

        Raises:
            JournalError: If the watermark moved under this run (another job).
        """
        ns = normalize_namespace(namespace)

        async def commit(tx: _PostgresBatch) -> tuple[int, int]:
            body = commit_folded_batch(
                ns,
                expected_watermark=expected_watermark,
                new_watermark=new_watermark,
                new_items=list(new_items),
                new_vectors=new_vectors,
                updates=list(updates),
                update_vectors=update_vectors,
                usage=BatchUsage(model_calls, input_tokens, output_tokens),
            )
            return await adrive(body, tx)

        return self.store._run(self._in_transaction(ns, commit))

    def record_failure(
        self,
        namespace: Namespace,
        *,
        batch_start_seq: int,
        batch_end_seq: int,
        error: str,
        attempts: int,
        skip: bool,
        expected_watermark: int,
        model_calls: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        """Record that a batch failed; with ``skip`` also move the watermark past it."""
        ns = normalize_namespace(namespace)

        async def record(tx: _PostgresBatch) -> None:
            body = record_batch_failure(
                ns,
                batch_start_seq=batch_start_seq,
                batch_end_seq=batch_end_seq,
                error=error,
                attempts=attempts,
                skip=skip,
                expected_watermark=expected_watermark,
                usage=BatchUsage(model_calls, input_tokens, output_tokens),
            )
            await adrive(body, tx)

        self.store._run(self._in_transaction(ns, record))

    async def _in_transaction(
        self, ns: Namespace, body: Callable[[_PostgresBatch], Awaitable[T]]
    ) -> T:
        async with self.store._connection() as conn, conn.transaction():
            nsid = await self.store._namespace_id(conn, ns, create=True)
            return await body(_PostgresBatch(conn, nsid))

    def drop_index(self, namespace: Namespace) -> int:
        """Delete every item, link, failure and the watermark of ``namespace``."""
        return self.store._run(self._drop(normalize_namespace(namespace)))

    async def _drop(self, ns: Namespace) -> int:
        async with self.store._connection() as conn, conn.transaction():
            nsid = await self.store._namespace_id(conn, ns)
            if nsid is None:
                return 0
            # items first: their links go by cascade, and the orphan trigger finds no item
            cur = await conn.execute("DELETE FROM mnemon_items WHERE nsid = %s", (nsid,))
            n = cur.rowcount
            await conn.execute("DELETE FROM mnemon_consolidation_state WHERE nsid = %s", (nsid,))
            await conn.execute("DELETE FROM mnemon_consolidation_failures WHERE nsid = %s", (nsid,))
        return int(n)


class _PostgresBatch:
    """The SQL steps of :mod:`~mnemon_langgraph.store._internal.item_commit` on PostgreSQL, inside
    one transaction of the store's pool."""

    def __init__(self, conn: Any, nsid: int) -> None:
        self.conn = conn
        self.nsid = nsid

    async def locked_watermark(self) -> int:
        await self.conn.execute(
            "INSERT INTO mnemon_consolidation_state (nsid) VALUES (%s) ON CONFLICT DO NOTHING",
            (self.nsid,),
        )
        cur = await self.conn.execute(
            "SELECT watermark FROM mnemon_consolidation_state WHERE nsid = %s FOR UPDATE",
            (self.nsid,),
        )
        row = await cur.fetchone()
        return int(row[0])

    async def existing_records(self, ids: list[str]) -> set[str]:
        cur = await self.conn.execute(
            "SELECT id FROM mnemon_records WHERE nsid = %s AND id = ANY(%s)", (self.nsid, ids)
        )
        return {r[0] for r in await cur.fetchall()}

    async def insert_item(self, item: IndexItem, links: list[str], vector: Any) -> bool:
        cur = await self.conn.execute(
            "INSERT INTO mnemon_items (id, nsid, kind, text, topic, subject, attribute, "
            "value, group_key, date, contradicts, seq, embedding) VALUES (%s, %s, %s, "
            "%s, %s, %s, %s, %s, %s, %s, %s, nextval('mnemon_item_seq'), %s) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (item.id, self.nsid, item.kind, item.text, item.topic, item.subject,
             item.attribute, item.value, group_key_text(item), item.date,
             bool(item.contradicts), _vector(vector)),
        )  # fmt: skip
        if await cur.fetchone() is None:
            return False
        await self._link(item.id, links)
        return True

    async def update_item(self, update: ItemUpdate, links: list[str], vector: Any) -> bool:
        cur = await self.conn.execute(
            "UPDATE mnemon_items SET text = %s, seq = nextval('mnemon_item_seq'), "
            "updated_at = now(), embedding = COALESCE(%s, embedding) "
            "WHERE id = %s AND nsid = %s RETURNING id",
            (update.text, _vector(vector), update.item_id, self.nsid),
        )
        if await cur.fetchone() is None:
            return False
        await self._link(update.item_id, links)
        return True

    async def _link(self, item_id: str, record_ids: list[str]) -> None:
        if record_ids:
            await self.conn.execute(
                "INSERT INTO mnemon_item_links (item_id, record_id, nsid) "
                "SELECT %s, r, %s FROM unnest(%s::text[]) AS r ON CONFLICT DO NOTHING",
                (item_id, self.nsid, record_ids),
            )

    async def upsert_failure(
        self, start: int, end: int, error: str, attempts: int, skip: bool
    ) -> None:
        cur = await self.conn.execute(
            "UPDATE mnemon_consolidation_failures SET batch_end_seq = %s, error = %s, "
            "attempts = attempts + %s, at = now(), skipped = %s WHERE id = (SELECT id "
            "FROM mnemon_consolidation_failures WHERE nsid = %s AND batch_start_seq = %s "
            "AND NOT resolved ORDER BY id DESC LIMIT 1) RETURNING id",
            (end, error, attempts, skip, self.nsid, start),
        )
        if await cur.fetchone() is None:
            await self.conn.execute(
                "INSERT INTO mnemon_consolidation_failures (nsid, batch_start_seq, "
                "batch_end_seq, error, attempts, skipped) VALUES (%s, %s, %s, %s, %s, %s)",
                (self.nsid, start, end, error, attempts, skip),
            )

    async def advance(
        self,
        watermark: int | None,
        *,
        batches: int,
        added: int,
        updated: int,
        usage: BatchUsage,
    ) -> None:
        await self.conn.execute(
            "UPDATE mnemon_consolidation_state SET watermark = COALESCE(%s, watermark), "
            "batches = batches + %s, items_added = items_added + %s, "
            "items_updated = items_updated + %s, model_calls = model_calls + %s, "
            "input_tokens = input_tokens + %s, output_tokens = output_tokens + %s, "
            "updated_at = now() WHERE nsid = %s",
            (watermark, batches, added, updated, usage.model_calls, usage.input_tokens,
             usage.output_tokens, self.nsid),
        )  # fmt: skip

    async def resolve_failures(self, after: int, upto: int) -> None:
        await self.conn.execute(
            "UPDATE mnemon_consolidation_failures SET resolved = true WHERE nsid = %s "
            "AND batch_start_seq > %s AND batch_start_seq <= %s",
            (self.nsid, after, upto),
        )


def _vector(row: Any) -> list[float] | None:
    return None if row is None else np.asarray(row, dtype=np.float32).tolist()
