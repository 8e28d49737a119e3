"""The consolidated index, kept in the journal's own SQLite file (paper §4.1).

:class:`EmbeddedItemStore` implements :class:`~mnemon_langgraph.items.ItemSource` for the read
path and :class:`~mnemon_langgraph.items.ItemStore` for the consolidation job (its two writes
are :mod:`~mnemon_langgraph.store._internal.item_commit`'s, shared with PostgreSQL). Its tables
live beside the journal's ``records`` table so that deletion reaches them without any code
of ours running:

* ``items`` — one row per item, with a ``namespace`` column (so the journal's
  ``erase_namespace``, which deletes every row of every table with such a column, leaves no
  item behind), its fields and its embedding (float32 BLOB, unit length);
* ``item_links(item_id, record_id)`` — ``record_id REFERENCES records(id) ON DELETE
  CASCADE``: deleting a record deletes its links, and the trigger ``item_links_orphan``
  deletes an item left with no link and writes an audit row for it in the journal's
  ``audit`` table, in the same transaction as the deletion;
* ``consolidation_state(namespace, watermark, …)`` — the last ``seq`` folded, moved in the
  same transaction as the batch's items, with running totals;
* ``consolidation_failures(namespace, batch_start_seq, batch_end_seq, error, attempts, at)``.

Nearest-item search is brute-force cosine over the namespace's stored vectors with numpy:
an index holds a few items per batch of ~10,000 characters, so even a 10M-token history has
tens of thousands of items, and one matrix-vector product over them takes milliseconds; an
approximate index would add a derived file to keep in step with deletions for no gain.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import (
    ConfigurationError,
    EmbeddingMismatchError,
    JournalError,
    SchemaVersionError,
    deprecated_names,
)
from mnemon_langgraph.items import IndexItem, ItemKind, ItemUpdate
from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.store._internal.item_commit import (
    BatchUsage,
    commit_folded_batch,
    drive,
    record_batch_failure,
)
from mnemon_langgraph.store._internal.item_rows import (
    FailureRow,
    IndexStatus,
    embed_index_items,
    group_key_text,
)
from mnemon_langgraph.store.embedded._item_schema import (
    ITEM_COLUMNS,
    SCHEMA_SQL,
    SCHEMA_VERSION,
    split_sql,
)
from mnemon_langgraph.types import Namespace, Record, normalize_namespace

__all__ = ["EmbeddedItemStore", "recorded_model"]

# the class's name before the key-value items moved beside it, for one release
__getattr__ = deprecated_names(__name__, {"SQLiteItemStore": "EmbeddedItemStore"})


logger = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def recorded_model(journal: Any) -> str | None:
    """The embedding model name ``journal`` records, or None (none yet, or no such record).

    The default embedder must follow it: a journal written with the legacy MiniLM variant
    keeps that variant for its items too, or the items and the records' queries would be
    embedded by different models.
    """
    getter = getattr(journal, "embedding_model", None)
    recorded = getter() if callable(getter) else None
    return str(recorded[0]) if recorded else None


class EmbeddedItemStore:
    """The consolidated index in the journal's SQLite file; an :class:`ItemSource`.

    Args:
        journal: The :class:`~mnemon_langgraph.store.embedded._journal.Journal` whose file holds the
            index. Writes go through ``journal.transaction()`` (so they share the journal's
            write lock); reads use a connection of the store's own (WAL lets them run beside
            writers).
        embeddings: Embeds items as they are written and queries of :meth:`nearest_items`.
            Defaults to the package's offline default embedder. The store remembers the
            embedder's name and dimension and refuses another
            (:class:`~mnemon_langgraph.errors.EmbeddingMismatchError`); call
            :meth:`drop_index` and rebuild to change it.
    """

    def __init__(self, journal: Any, embeddings: Embeddings | None = None) -> None:
        from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity

        self.journal = journal
        self.embeddings: Embeddings = (
            embeddings if embeddings is not None else default_embeddings(recorded_model(journal))
        )
        self._identity = embedding_identity(self.embeddings)
        self._lock = threading.RLock()
        self._vector_cache: dict[str, tuple[tuple[int, int], list[str], np.ndarray]] = {}
        path = self._journal_path(journal)
        self.read_only = bool(getattr(journal, "read_only", False))
        target, uri = str(path), False
        if self.read_only:
            target, uri = f"{path.resolve().as_uri()}?mode=ro", True
        try:
            self._conn = sqlite3.connect(
                target, check_same_thread=False, isolation_level=None, timeout=30.0, uri=uri
            )
            self._conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:  # pragma: no cover - the journal opened the same file
            raise JournalError(f"cannot open the index in {path}: {exc}") from exc
        if self.read_only:
            self._check_read_only()
        else:
            self._ensure_schema()

    @classmethod
    def of_store(cls, store: Any, embeddings: Embeddings | None = None) -> EmbeddedItemStore:
        """The index beside an embedded ``MnemonStore``'s records (``store.item_store()``).

        Args:
            store: An :class:`~mnemon_langgraph.store.embedded.EmbeddedStore`.
            embeddings: Embeds the items; default the store's embedder.
        """
        return cls(store.journal, embeddings if embeddings is not None else store.embeddings)

    # --- setup ---------------------------------------------------------------------

    @staticmethod
    def _journal_path(journal: Any) -> Path:
        for attr in ("path", "db_path", "_path"):
            value = getattr(journal, attr, None)
            if value is not None:
                return Path(value)
        raise ConfigurationError("EmbeddedItemStore needs a Journal with a `path` attribute")

    def _check_read_only(self) -> None:
        """Read-only journal: use its index tables, or an empty in-memory index if none."""
        found = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='consolidation_meta'"
        ).fetchone()
        if found:
            row = self._conn.execute(
                "SELECT value FROM consolidation_meta WHERE key='schema_version'"
            ).fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"the index tables have schema version {row[0]}; this version of "
                    f"mnemon-langgraph understands up to {SCHEMA_VERSION}"
                )
            return
        self._conn.close()
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute("CREATE TABLE records (id TEXT PRIMARY KEY)")
        self._conn.execute(
            "CREATE TABLE audit (at, actor, action, namespace, count, record_ids, "
            "message_ids, reason)"
        )
        for statement in split_sql(SCHEMA_SQL):
            self._conn.execute(statement)

    def _ensure_schema(self) -> None:
        with self.journal.transaction() as conn:
            has_meta = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='consolidation_meta'"
            ).fetchone()
            if has_meta:
                row = conn.execute(
                    "SELECT value FROM consolidation_meta WHERE key='schema_version'"
                ).fetchone()
                if row is not None and int(row[0]) > SCHEMA_VERSION:
                    raise SchemaVersionError(
                        f"the index tables have schema version {row[0]}; this version of "
                        f"mnemon-langgraph understands up to {SCHEMA_VERSION}"
                    )
            # (executescript would COMMIT the journal's transaction: run statements one by one)
            for statement in split_sql(SCHEMA_SQL):
                conn.execute(statement)
            conn.execute(
                "INSERT OR IGNORE INTO consolidation_meta (key, value) "
                "VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            name, dim = self._identity
            stored = dict(
                conn.execute(
                    "SELECT key, value FROM consolidation_meta "
                    "WHERE key IN ('embedding_model', 'embedding_dim')"
                ).fetchall()
            )
            has_items = conn.execute("SELECT 1 FROM items LIMIT 1").fetchone() is not None
            if (
                stored
                and has_items
                and (
                    stored.get("embedding_model") != name or stored.get("embedding_dim") != str(dim)
                )
            ):
                raise EmbeddingMismatchError(
                    f"the index was embedded with {stored.get('embedding_model')} "
                    f"({stored.get('embedding_dim')} dims), not {name} ({dim} dims); "
                    "drop the index and consolidate again to change the embedder"
                )
            conn.execute(
                "INSERT OR REPLACE INTO consolidation_meta (key, value) "
                "VALUES ('embedding_model', ?), ('embedding_dim', ?)",
                (name, str(dim)),
            )

    def close(self) -> None:
        """Close the store's read connection (the journal stays open)."""
        with self._lock:
            self._conn.close()

    # --- namespace encoding ----------------------------------------------------------

    @staticmethod
    def _ns(namespace: Namespace | str | Sequence[str]) -> str:
        return namespace_key(namespace)

    # --- reads (ItemSource) ------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def _items(
        self, where: str, params: Sequence[Any], order: str = "seq", *, links_too: bool = True
    ) -> list[IndexItem]:
        rows = self._query(
            f"SELECT {ITEM_COLUMNS} FROM items WHERE {where} ORDER BY {order}", params
        )
        if not rows:
            return []
        links: dict[str, list[str]] = {}
        ids = [row[0] for row in rows] if links_too else []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for item_id, record_id in self._query(
                f"SELECT item_id, record_id FROM item_links WHERE item_id IN ({marks}) "
                "ORDER BY record_id",
                chunk,
            ):
                links.setdefault(item_id, []).append(record_id)
        out: list[IndexItem] = []
        for row in rows:
            (item_id, _ns, kind, text, topic, subject, attribute, value, date, contra, seq) = row
            out.append(
                IndexItem(
                    id=item_id,
                    namespace=self._decoded_ns(_ns),
                    kind=kind,
                    text=text,
                    record_ids=tuple(sorted(links.get(item_id, []))),
                    topic=topic,
                    subject=subject,
                    attribute=attribute,
                    value=value,
                    date=datetime.fromisoformat(date) if date else None,
                    contradicts=bool(contra),
                    seq=int(seq),
                )
            )
        return out

    @staticmethod
    def _decoded_ns(key: str) -> Namespace:
        return tuple(json.loads(key))

    def get_items(self, namespace: Namespace, ids: Sequence[str]) -> list[IndexItem]:
        """The items of ``namespace`` with the given ids (unknown ids are left out)."""
        ns = self._ns(namespace)
        out: list[IndexItem] = []
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(self._items(f"namespace = ? AND id IN ({marks})", [ns, *chunk]))
        return sorted(out, key=lambda item: item.seq)

    def foreign_ids(self, namespace: Namespace, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are items of another namespace (an item id is unique in the
        store, so an import must not write such an id into ``namespace``)."""
        ns = self._ns(namespace)
        found: set[str] = set()
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id FROM items WHERE namespace <> ? AND id IN ({marks})"
            found.update(row[0] for row in self._query(sql, [ns, *chunk]))
        return found

    def all_items(self, namespace: Namespace, kind: ItemKind | None = None) -> list[IndexItem]:
        """Every item of ``namespace`` (of one ``kind`` if given), in write order."""
        if kind is None:
            return self._items("namespace = ?", [self._ns(namespace)])
        return self._items("namespace = ? AND kind = ?", [self._ns(namespace), kind])

    def context_items(self, namespace: Namespace) -> list[IndexItem]:
        """Every item of ``namespace`` without its links (``record_ids`` empty), in write
        order: what a fold's context selection needs, read cheaply."""
        return self._items("namespace = ?", [self._ns(namespace)], links_too=False)

    def count(self, namespace: Namespace) -> int:
        """Number of items in ``namespace``."""
        return int(
            self._query("SELECT COUNT(*) FROM items WHERE namespace = ?", [self._ns(namespace)])[0][
                0
            ]
        )

    def linked_items(self, namespace: Namespace, record_ids: Sequence[str]) -> list[IndexItem]:
        """Items of ``namespace`` linked to any of ``record_ids``, in write order."""
        ns = self._ns(namespace)
        ids = list(dict.fromkeys(record_ids))
        found: list[str] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.extend(
                row[0]
                for row in self._query(
                    f"SELECT DISTINCT item_id FROM item_links WHERE record_id IN ({marks})", chunk
                )
            )
        if not found:
            return []
        return [item for item in self.get_items(namespace, found) if self._ns(item.namespace) == ns]

    def nearest_items(self, query: str, *, namespace: Namespace, k: int = 12) -> list[IndexItem]:
        """The ``k`` items of ``namespace`` whose embeddings are nearest ``query`` (cosine)."""
        if k <= 0 or not query.strip():
            return []
        ns = self._ns(namespace)
        ids, matrix = self._vectors(ns)
        if not ids:
            return []
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        if q.shape[0] != matrix.shape[1]:
            raise EmbeddingMismatchError(
                f"query embedding has {q.shape[0]} dims, the index {matrix.shape[1]}"
            )
        norm = float(np.linalg.norm(q)) or 1.0
        scores = matrix @ (q / norm)
        top = np.argsort(-scores, kind="stable")[:k]
        chosen = [ids[i] for i in top]
        by_id = {item.id: item for item in self.get_items(namespace, chosen)}
        return [by_id[i] for i in chosen if i in by_id]

    def _vectors(self, ns: str) -> tuple[list[str], np.ndarray]:
        version_row = self._query(
            "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM items WHERE namespace = ?", [ns]
        )[0]
        version = (int(version_row[0]), int(version_row[1]))
        cached = self._vector_cache.get(ns)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        rows = self._query(
            "SELECT id, embedding FROM items WHERE namespace = ? AND embedding IS NOT NULL "
            "ORDER BY seq",
            [ns],
        )
        ids, matrix = _healthy_vectors(rows, self._identity[1], ns)
        self._vector_cache[ns] = (version, ids, matrix)
        return ids, matrix

    def instructions(self, namespace: Namespace) -> list[IndexItem]:
        """Every standing instruction and preference of ``namespace``, oldest first."""
        return self.all_items(namespace, "instruction")

    def topics(self, namespace: Namespace) -> list[str]:
        """Names of every topic timeline of ``namespace``, in order of first appearance."""
        rows = self._query(
            "SELECT topic, MIN(seq) AS first FROM items WHERE namespace = ? AND kind = 'event' "
            "GROUP BY group_key ORDER BY first",
            [self._ns(namespace)],
        )
        return [row[0] for row in rows if row[0]]

    def group(self, namespace: Namespace, item: IndexItem) -> list[IndexItem]:
        """The whole timeline or value history of ``item``, oldest first (by date, then seq)."""
        items = self._items(
            "namespace = ? AND kind = ? AND group_key = ?",
            [self._ns(namespace), item.kind, group_key_text(item)],
        )
        return sorted(items, key=lambda it: (it.date is None, it.date or datetime.min, it.seq))

    def state(self, namespace: Namespace) -> IndexStatus:
        """Watermark and running totals of ``namespace`` (zeros before any run)."""
        ns = normalize_namespace(namespace)
        row = self._query(
            "SELECT watermark, batches, items_added, items_updated, model_calls, input_tokens, "
            "output_tokens FROM consolidation_state WHERE namespace = ?",
            [self._ns(ns)],
        )
        if not row:
            return IndexStatus(namespace=ns)
        return IndexStatus(ns, *(int(v) for v in row[0]))

    def watermark(self, namespace: Namespace) -> int:
        """The last journal ``seq`` folded into the index of ``namespace``."""
        return self.state(namespace).watermark

    def records_after(self, namespace: Namespace, after_seq: int) -> Iterator[Record]:
        """The journal's records of ``namespace`` with ``seq > after_seq``, in seq order."""
        ns = normalize_namespace(namespace)  # the item store's own boundary
        records: Iterator[Record] = self.journal.records(ns, after_seq=after_seq)
        return records

    def failures(self, namespace: Namespace, *, unresolved_only: bool = False) -> list[FailureRow]:
        """Recorded batch failures of ``namespace``, oldest first."""
        ns = normalize_namespace(namespace)
        sql = (
            "SELECT batch_start_seq, batch_end_seq, error, attempts, at, skipped, resolved "
            "FROM consolidation_failures WHERE namespace = ?"
        )
        if unresolved_only:
            sql += " AND resolved = 0"
        rows = self._query(sql + " ORDER BY id", [self._ns(ns)])
        return [
            FailureRow(ns, int(a), int(b), str(e), int(n), str(at), bool(s), bool(r))
            for a, b, e, n, at, s, r in rows
        ]

    # --- writes (the consolidation job) ------------------------------------------------

    def embed_items(self, items: Sequence[IndexItem]) -> np.ndarray:
        """Unit-length float32 embeddings of ``items`` (one row each)."""
        return embed_index_items(self.embeddings, items, self._identity[1])

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

        Links to records that no longer exist (deleted since the batch was read) are
        dropped, and an item left with no link is not written.

        Args:
            namespace: The namespace.
            expected_watermark: The watermark the batch was read from. If another run has
                moved it meanwhile, nothing is written and :class:`JournalError` is raised,
                so two runs never fold the same batch twice.
            new_watermark: ``seq`` of the batch's last record.
            new_items: Items to add (their ``seq`` is assigned here).
            new_vectors: Their embeddings, one row each (from :meth:`embed_items`).
            updates: Changes to existing items of the namespace.
            update_vectors: Embeddings of the updated items (one row per update).
            model_calls: Model calls the batch took (added to the running totals).
            input_tokens: Input tokens the batch took.
            output_tokens: Output tokens the batch took.

        Returns:
            ``(items_added, items_updated)`` as actually written.

        Raises:
            JournalError: If the watermark moved under this run.
        """
        with self.journal.transaction() as conn:
            return drive(
                commit_folded_batch(
                    normalize_namespace(namespace),
                    expected_watermark=expected_watermark,
                    new_watermark=new_watermark,
                    new_items=new_items,
                    new_vectors=new_vectors,
                    updates=updates,
                    update_vectors=update_vectors,
                    usage=BatchUsage(model_calls, input_tokens, output_tokens),
                ),
                _SQLiteBatch(conn, self._ns(namespace)),
            )

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
        """Record that a batch failed; with ``skip`` also move the watermark past it.

        Both happen in one transaction. A batch that failed before (same start) has its
        row updated: attempts add up, the latest error is kept.
        """
        with self.journal.transaction() as conn:
            drive(
                record_batch_failure(
                    normalize_namespace(namespace),
                    batch_start_seq=batch_start_seq,
                    batch_end_seq=batch_end_seq,
                    error=error,
                    attempts=attempts,
                    skip=skip,
                    expected_watermark=expected_watermark,
                    usage=BatchUsage(model_calls, input_tokens, output_tokens),
                ),
                _SQLiteBatch(conn, self._ns(namespace)),
            )

    def drop_index(self, namespace: Namespace) -> int:
        """Delete every item, link, failure and the watermark of ``namespace``.

        The next consolidation run then rebuilds the index from the records. Records are
        untouched, and nothing is audited: the index is derived data (the orphan trigger does
        not fire here, as each item is gone before its links).

        Returns:
            Number of items deleted.
        """
        ns = self._ns(namespace)
        with self.journal.transaction() as conn:
            n = conn.execute("DELETE FROM items WHERE namespace = ?", (ns,)).rowcount
            conn.execute("DELETE FROM consolidation_state WHERE namespace = ?", (ns,))
            conn.execute("DELETE FROM consolidation_failures WHERE namespace = ?", (ns,))
        self._vector_cache.pop(ns, None)
        return int(n)


class _SQLiteBatch:
    """The SQL steps of :mod:`~mnemon_langgraph.store._internal.item_commit` on SQLite.

    Runs inside the caller's journal transaction (``BEGIN IMMEDIATE`` holds the write lock,
    so the watermark read stays true until the commit). Plain calls, run by
    :func:`~mnemon_langgraph.store._internal.item_commit.drive`.
    """

    def __init__(self, conn: sqlite3.Connection, ns: str) -> None:
        self.conn = conn
        self.ns = ns
        self.now = _now()
        self._seq: int | None = None

    def _next_seq(self) -> int:
        if self._seq is None:
            row = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM items").fetchone()
            self._seq = int(row[0])
        self._seq += 1
        return self._seq

    def locked_watermark(self) -> int:
        self.conn.execute(
            "INSERT INTO consolidation_state (namespace, watermark, updated_at) "
            "VALUES (?, 0, ?) ON CONFLICT(namespace) DO NOTHING",
            (self.ns, self.now),
        )
        row = self.conn.execute(
            "SELECT watermark FROM consolidation_state WHERE namespace = ?", (self.ns,)
        ).fetchone()
        return int(row[0])

    def existing_records(self, ids: list[str]) -> set[str]:
        alive: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            alive.update(
                row[0]
                for row in self.conn.execute(
                    f"SELECT id FROM records WHERE namespace = ? AND id IN ({marks})",
                    [self.ns, *chunk],
                )
            )
        return alive

    def insert_item(self, item: IndexItem, links: list[str], vector: Any) -> bool:
        if self.conn.execute("SELECT 1 FROM items WHERE id = ?", (item.id,)).fetchone():
            return False
        self.conn.execute(
            "INSERT INTO items (id, namespace, kind, text, topic, subject, attribute, "
            "value, group_key, date, contradicts, seq, embedding, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.id,
                self.ns,
                item.kind,
                item.text,
                item.topic,
                item.subject,
                item.attribute,
                item.value,
                group_key_text(item),
                item.date.isoformat() if item.date else None,
                int(item.contradicts),
                self._next_seq(),
                None if vector is None else np.asarray(vector, dtype=np.float32).tobytes(),
                self.now,
                self.now,
            ),
        )
        self._link(item.id, links)
        return True

    def update_item(self, update: ItemUpdate, links: list[str], vector: Any) -> bool:
        exists = self.conn.execute(
            "SELECT 1 FROM items WHERE id = ? AND namespace = ?", (update.item_id, self.ns)
        ).fetchone()
        if not exists:
            return False
        self.conn.execute(
            "UPDATE items SET text = ?, seq = ?, updated_at = ?, "
            "embedding = COALESCE(?, embedding) WHERE id = ?",
            (
                update.text,
                self._next_seq(),
                self.now,
                None if vector is None else np.asarray(vector, dtype=np.float32).tobytes(),
                update.item_id,
            ),
        )
        self._link(update.item_id, links)
        return True

    def _link(self, item_id: str, record_ids: Iterable[str]) -> None:
        self.conn.executemany(
            "INSERT OR IGNORE INTO item_links (item_id, record_id) VALUES (?, ?)",
            [(item_id, rid) for rid in record_ids],
        )

    def upsert_failure(self, start: int, end: int, error: str, attempts: int, skip: bool) -> None:
        row = self.conn.execute(
            "SELECT id FROM consolidation_failures WHERE namespace = ? "
            "AND batch_start_seq = ? AND resolved = 0 ORDER BY id DESC LIMIT 1",
            (self.ns, start),
        ).fetchone()
        if row:
            self.conn.execute(
                "UPDATE consolidation_failures SET batch_end_seq = ?, error = ?, "
                "attempts = attempts + ?, at = ?, skipped = ? WHERE id = ?",
                (end, error, attempts, self.now, int(skip), row[0]),
            )
            return
        self.conn.execute(
            "INSERT INTO consolidation_failures (namespace, batch_start_seq, "
            "batch_end_seq, error, attempts, at, skipped) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.ns, start, end, error, attempts, self.now, int(skip)),
        )

    def advance(
        self,
        watermark: int | None,
        *,
        batches: int,
        added: int,
        updated: int,
        usage: BatchUsage,
    ) -> None:
        self.conn.execute(
            "UPDATE consolidation_state SET watermark = COALESCE(?, watermark), "
            "batches = batches + ?, items_added = items_added + ?, "
            "items_updated = items_updated + ?, model_calls = model_calls + ?, "
            "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
            "updated_at = ? WHERE namespace = ?",
            (
                watermark,
                batches,
                added,
                updated,
                usage.model_calls,
                usage.input_tokens,
                usage.output_tokens,
                self.now,
                self.ns,
            ),
        )

    def resolve_failures(self, after: int, upto: int) -> None:
        self.conn.execute(
            "UPDATE consolidation_failures SET resolved = 1 WHERE namespace = ? "
            "AND batch_start_seq > ? AND batch_start_seq <= ?",
            (self.ns, after, upto),
        )


def _healthy_vectors(rows: Sequence[Any], dim: int, ns: str) -> tuple[list[str], np.ndarray]:
    """``(ids, matrix)`` of the stored item vectors ``rows`` (id, blob) that hold ``dim``
    finite float32 values. A damaged one (another length, a NaN or an infinity) is left out
    and logged, as record search leaves out a damaged vector: the item is still reached
    through its records, and the search still answers with the others."""
    ids: list[str] = []
    vectors: list[np.ndarray] = []
    for item_id, blob in rows:
        vec = np.frombuffer(blob, dtype=np.float32) if len(blob) == dim * 4 else None
        if vec is None or not np.isfinite(vec).all():
            logger.warning(
                "item %s of namespace %s: its stored vector is damaged (%d bytes for %d "
                "float32 values, or not finite); left out of the nearest-item search",
                item_id, ns, len(blob), dim,
            )  # fmt: skip
            continue
        ids.append(item_id)
        vectors.append(vec)
    matrix = np.stack(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
    return ids, matrix
