"""The journal: durable, append-only, namespaced storage of records (one SQLite file).

The journal is the source of truth (paper §4.1). Every derived structure — the BM25 and
vector indexes, consolidated items — can be rebuilt from it. It keeps:

* ``records``: one row per :class:`~mnemon_langgraph.types.Record`, ``id TEXT PRIMARY KEY``
  and a ``seq`` that strictly increases across the whole journal (never reused, even after
  deletions), so later jobs can read "everything after seq N";
* ``messages``: which message ids of a namespace are already stored (ingesting the same
  messages twice creates no duplicates);
* ``vectors``: one float32 embedding per record, so index rebuilds never re-embed;
* ``meta``: schema version, the embedding model name and dimension, the seq counter;
* ``audit``: who deleted what and when — ids and counts only, never the deleted text;
  append-only (triggers refuse any ``UPDATE`` or ``DELETE`` of its rows, an erase included).

Other tables (consolidation's items) may live in the same file and reference
``records(id) ON DELETE CASCADE``: foreign keys are enforced on every connection and
deletions are real ``DELETE`` statements. :meth:`Journal.erase_namespace` deletes every row
of a namespace in *every* table but ``audit`` that has a ``namespace`` column (found through
``sqlite_master``), with ``secure_delete`` on and a WAL checkpoint afterwards, so erased
text does not linger in free pages.

Namespaces are stored as compact JSON arrays of strings, so e-mail addresses, slashes and
any Unicode work as namespace parts.

Concurrency: SQLite in WAL mode; each thread gets its own connection (readers never block
the writer and see a consistent snapshot); writes take the write lock with
``BEGIN IMMEDIATE`` and wait up to ``busy_timeout`` seconds before raising
:class:`~mnemon_langgraph.errors.JournalLockedError`. Each append and each deletion is one
transaction: it commits whole or not at all.

Three roles, three classes: the SQLite file itself (connections, transactions, schema
migrations, the embedding model) is :class:`~._journal_file.JournalFile`, which
:class:`Journal` extends with the records (append, read); deletion, erase and the audit
trail are :class:`~._deletion.Deletions`, which the journal owns and delegates to.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.errors import (
    EmbeddingMismatchError,
    InputError,
    JournalError,
)
from mnemon_langgraph.records.schema import (
    AuditEntry,
    namespace_key,
    ns_from_key,
    ns_to_key,
    record_lines,
)
from mnemon_langgraph.store._internal.contract import RECORD_PAGE
from mnemon_langgraph.store.embedded._deletion import Deletions, ReplaceSurvivors
from mnemon_langgraph.store.embedded._journal_file import JournalFile
from mnemon_langgraph.store.embedded._schema import (
    RECORD_COLUMNS,
    SCHEMA_VERSION,
    chunks,
    dumps,
    now_iso,
    replace_seq,
    row_to_record,
)
from mnemon_langgraph.types import (
    MAX_SESSION,
    Message,
    Namespace,
    Record,
    SearchFilters,
    check_count,
    check_session,
)

__all__ = ["SCHEMA_VERSION", "AuditEntry", "Journal", "namespace_key", "record_lines"]

# The page fetch of every search. Without the unary ``+`` SQLite plans ``namespace = ?`` through
# records_ns_seq / records_ns_session and scans the whole namespace (most of a search at 100k
# records: docs/results/log.md); ``+namespace`` keeps that term out of index selection, so the
# plan is one primary-key lookup per id and the namespace is only checked on the rows found.
GET_RECORDS_SQL = f"SELECT {RECORD_COLUMNS} FROM records WHERE id IN ({{marks}}) AND +namespace = ?"


class Journal(JournalFile):
    """Durable, append-only, namespaced store of records in one SQLite file.

    Safe to share between threads (one connection per thread) and processes (WAL). Opened
    with the arguments of :class:`JournalFile` (``path``, ``busy_timeout``, ``read_only``),
    which also says what opening raises.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0, read_only: bool = False
    ) -> None:
        self._deletions = Deletions(self)
        super().__init__(path, busy_timeout=busy_timeout, read_only=read_only)

    # -- writing -------------------------------------------------------------------------

    def append(
        self,
        namespace: Namespace,
        records: Sequence[Record],
        vectors: np.ndarray | None = None,
    ) -> list[Record]:
        """Append records (and optionally their vectors) in one transaction.

        Records whose id is already stored are skipped (idempotent re-ingest).

        Args:
            namespace: Namespace every record must belong to.
            records: Records to write (``seq`` is ignored and assigned here).
            vectors: Optional ``(len(records), dim)`` array, row ``i`` for ``records[i]``.
                The journal's embedding model must be set (:meth:`ensure_embedding_model`)
                and its dimension must match.

        Returns:
            The records actually written, with ``seq`` set, in input order.

        Raises:
            InputError: A record of another namespace, or vectors of the wrong shape.
            EmbeddingMismatchError: Vectors whose dimension differs from the journal's.
        """
        blobs = self._check_append(namespace, records, vectors)
        with self.transaction() as conn:
            return self._append_in(conn, namespace, records, blobs)

    def _check_append(
        self, ns: Namespace, records: Sequence[Record], vectors: np.ndarray | None
    ) -> list[bytes] | None:
        """Validate records and vectors for :meth:`_append_in`; returns the vector blobs.

        Raises:
            InputError: A record of another namespace or without message ids, or vectors
                of the wrong shape (or before the embedding model is set).
            EmbeddingMismatchError: Vectors whose dimension differs from the journal's.
        """
        for rec in records:
            if tuple(rec.namespace) != ns:
                raise InputError(
                    f"record {rec.id} belongs to namespace {rec.namespace!r}, not {ns!r}"
                )
            if not rec.message_ids:
                raise InputError(f"record {rec.id} has no message ids")
            check_session(rec.session, what=f"record {rec.id} session")
            check_count(rec.position, what=f"record {rec.id} position")
            if rec.position > MAX_SESSION:
                raise InputError(f"record {rec.id} position {rec.position} is out of range")
        if vectors is None:
            return None
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(records):
            raise InputError(
                f"vectors must have shape ({len(records)}, dim), got {tuple(arr.shape)}"
            )
        model = self.embedding_model()
        if model is None:
            raise InputError("call ensure_embedding_model(name, dim) before appending vectors")
        if arr.shape[1] != model[1]:
            raise EmbeddingMismatchError(
                f"journal {self.path} holds {model[1]}-dimensional vectors of {model[0]!r}; "
                f"got {arr.shape[1]}-dimensional vectors"
            )
        return [np.ascontiguousarray(row).tobytes() for row in arr]

    def _append_in(
        self,
        conn: sqlite3.Connection,
        ns: Namespace,
        records: Sequence[Record],
        blobs: list[bytes] | None,
        *,
        keep_positions: bool = False,
    ) -> list[Record]:
        """Write checked records (see :meth:`_check_append`) inside an open transaction.

        The one write path of records, their ``messages`` rows, vectors and the seq
        counter, shared by :meth:`append` and ``delete_messages(..., replace=...)``.
        ``keep_positions`` writes the records at the positions they carry (the survivors
        of a message deletion, put back where their records were) instead of after the
        session's stored records.
        """
        key = ns_to_key(ns)
        written: list[Record] = []
        now = now_iso()
        last = int(conn.execute("SELECT value FROM meta WHERE key = 'last_seq'").fetchone()[0])
        seen: set[str] = set()
        fresh: list[tuple[int, Record]] = []
        for i, rec in enumerate(records):
            if rec.id in seen:
                continue
            seen.add(rec.id)
            if conn.execute("SELECT 1 FROM records WHERE id = ?", (rec.id,)).fetchone():
                continue
            fresh.append((i, rec))
        placed = fresh if keep_positions else self._rebase_positions(conn, key, fresh)
        for i, rec in placed:
            last += 1
            conn.execute(
                f"INSERT INTO records ({RECORD_COLUMNS}, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rec.id,
                    last,
                    key,
                    rec.origin,
                    int(rec.session),
                    rec.date.isoformat() if rec.date else None,
                    int(rec.position),
                    dumps(list(rec.speakers)),
                    dumps(list(rec.message_ids)),
                    dumps(list(rec.roles)),
                    rec.text,
                    now,
                ),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO messages(namespace, message_id, record_id) VALUES (?, ?, ?)",
                [(key, mid, rec.id) for mid in dict.fromkeys(rec.message_ids)],
            )
            if blobs is not None:
                conn.execute(
                    "INSERT INTO vectors(record_id, namespace, vector) VALUES (?, ?, ?)",
                    (rec.id, key, blobs[i]),
                )
            written.append(replace_seq(rec, last))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'last_seq'", (str(last),))
        return written

    @staticmethod
    def _rebase_positions(
        conn: sqlite3.Connection, key: str, fresh: list[tuple[int, Record]]
    ) -> list[tuple[int, Record]]:
        """Shift positions so each session's new records follow its stored ones.

        Callers compute positions (:meth:`next_position`) before the write lock is taken,
        so two processes appending to one session could pick the same ones. Re-reading
        the session's highest position here, under ``BEGIN IMMEDIATE``, keeps
        ``(session, position)`` unique and ordered whatever ran in between.
        """
        lowest: dict[int, int] = {}
        for _, rec in fresh:
            lowest[rec.session] = min(rec.position, lowest.get(rec.session, rec.position))
        shift: dict[int, int] = {}
        for session, low in lowest.items():
            row = conn.execute(
                "SELECT MAX(position) FROM records WHERE namespace = ? AND session = ?",
                (key, session),
            ).fetchone()
            start = 0 if row[0] is None else int(row[0]) + 1
            shift[session] = max(0, start - low)
        return [
            (i, dataclasses.replace(rec, position=rec.position + shift[rec.session]))
            if shift[rec.session]
            else (i, rec)
            for i, rec in fresh
        ]

    def put_vectors(self, namespace: Namespace, ids: Sequence[str], vectors: np.ndarray) -> int:
        """Store (or replace) vectors of existing records, e.g. those appended without any.

        Args:
            namespace: Namespace of the records.
            ids: Record ids, parallel to the rows of ``vectors``.
            vectors: ``(len(ids), dim)`` array in the journal's embedding dimension.

        Returns:
            Number of vectors stored (ids not in the namespace are ignored).
        """
        key = ns_to_key(namespace)
        arr = np.asarray(vectors, dtype=np.float32)
        model = self.embedding_model()
        if model is None:
            raise InputError("call ensure_embedding_model(name, dim) before storing vectors")
        if arr.ndim != 2 or arr.shape[0] != len(ids) or arr.shape[1] != model[1]:
            raise InputError(
                f"vectors must have shape ({len(ids)}, {model[1]}), got {tuple(arr.shape)}"
            )
        stored = 0
        with self.transaction() as conn:
            for rid, row in zip(ids, arr, strict=True):
                if not conn.execute(
                    "SELECT 1 FROM records WHERE id = ? AND namespace = ?", (rid, key)
                ).fetchone():
                    continue
                conn.execute(
                    "INSERT INTO vectors(record_id, namespace, vector) VALUES (?, ?, ?) "
                    "ON CONFLICT(record_id) DO UPDATE SET vector = excluded.vector",
                    (rid, key, np.ascontiguousarray(row).tobytes()),
                )
                stored += 1
        return stored

    # -- reading -------------------------------------------------------------------------

    def known_message_ids(self, namespace: Namespace, ids: Iterable[str]) -> set[str]:
        """The subset of ``ids`` already stored in ``namespace``."""
        key = ns_to_key(namespace)
        wanted = list(ids)
        found: set[str] = set()
        for part in chunks(wanted):
            marks = ",".join("?" * len(part))
            rows = self._read(
                f"SELECT DISTINCT message_id FROM messages WHERE namespace = ? "
                f"AND message_id IN ({marks})",
                [key, *part],
            )
            found.update(r[0] for r in rows)
        return found

    def records(
        self,
        namespace: Namespace,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> Iterator[Record]:
        """Records of ``namespace`` with ``seq > after_seq`` that pass ``filters`` (bounds in
        the query), in seq order.

        Reads in pages, so it is safe to write to the journal while iterating.
        """
        key = ns_to_key(namespace)
        last = int(after_seq)
        left = limit
        page = RECORD_PAGE
        where, bounds = _filter_sql(filters)
        while left is None or left > 0:
            size = page if left is None else min(page, left)
            rows = self._read(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE namespace = ? AND seq > ?{where} "
                "ORDER BY seq LIMIT ?",
                (key, last, *bounds, size),
            )
            for row in rows:
                yield row_to_record(row)
            if len(rows) < size:
                return
            last = rows[-1][1]
            if left is not None:
                left -= len(rows)

    def session_records(
        self,
        namespace: Namespace,
        session: int,
        start: int,
        stop: int,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Records of ``session`` with ``start <= position < stop`` inside ``filters``, in
        position order (the ``records_ns_session`` index)."""
        bounds, params = _filter_sql(filters)
        rows = self._read(
            f"SELECT {RECORD_COLUMNS} FROM records WHERE namespace = ? AND session = ? "
            f"AND position >= ? AND position < ?{bounds} ORDER BY position, seq",
            (ns_to_key(namespace), int(session), int(start), int(stop), *params),
        )
        return [row_to_record(row) for row in rows]

    def match_record_ids(self, namespace: Namespace, prefix: str, limit: int = 2) -> list[str]:
        """Ids of ``namespace``'s records that start with ``prefix`` (at most ``limit``).

        The View shows a record's id shortened (``view.SHORT_ID_CHARS``); this finds the
        record again. ``prefix`` is matched literally — a half-open range over the primary
        key (SQLite compares text by bytes), so no ``LIKE`` wildcard can widen it.
        """
        key = ns_to_key(namespace)
        rows = self._read(
            "SELECT id FROM records WHERE id >= ? AND id < ? AND namespace = ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\U0010ffff", key, int(limit)),
        )
        return [r[0] for r in rows]

    def get_records(self, namespace: Namespace, ids: Sequence[str]) -> list[Record]:
        """Records of ``namespace`` with the given ids, in the order of ``ids``.

        Ids not stored in that namespace are left out.
        """
        key = ns_to_key(namespace)
        found: dict[str, Record] = {}
        wanted = list(ids)
        for part in chunks(wanted):
            for row in self._read(
                GET_RECORDS_SQL.format(marks=",".join("?" * len(part))), [*part, key]
            ):
                found[row[0]] = row_to_record(row)
        return [found[i] for i in wanted if i in found]

    def get_vectors(self, namespace: Namespace, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given records of ``namespace`` (float32, as written).

        The read path compares pooled records with the query through these, so a pooled
        record is never embedded again. Ids without a vector (or of another namespace) are
        left out.
        """
        key = ns_to_key(namespace)
        model = self.embedding_model()
        if model is None:
            return {}
        found: dict[str, np.ndarray] = {}
        for part in chunks(list(ids)):
            marks = ",".join("?" * len(part))
            for rid, blob in self._read(
                f"SELECT record_id, vector FROM vectors WHERE record_id IN ({marks}) "
                "AND +namespace = ?",
                [*part, key],
            ):
                found[rid] = np.frombuffer(blob, dtype=np.float32).copy()
        return {rid: vec for rid, vec in found.items() if vec.shape == (model[1],)}

    def iter_vectors(
        self, namespace: Namespace, *, after_seq: int = 0, batch: int = 4096
    ) -> Iterator[tuple[list[str], np.ndarray]]:
        """Stored vectors of ``namespace`` in seq order, ``batch`` at a time.

        Yields:
            ``(record_ids, array)`` with ``array.shape == (len(record_ids), dim)``, float32.
            Records without a vector are skipped.
        """
        key = ns_to_key(namespace)
        model = self.embedding_model()
        if model is None:
            return
        dim = model[1]
        last = int(after_seq)
        while True:
            rows = self._read(
                "SELECT r.id, r.seq, v.vector FROM vectors v JOIN records r ON r.id = v.record_id "
                "WHERE r.namespace = ? AND r.seq > ? ORDER BY r.seq LIMIT ?",
                (key, last, int(batch)),
            )
            if not rows:
                return
            _check_vector_rows(rows, dim, namespace)
            arr = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(-1, dim)
            yield [r[0] for r in rows], arr.copy()
            if len(rows) < batch:
                return
            last = rows[-1][1]

    def count(self, namespace: Namespace) -> int:
        """Number of records in ``namespace``."""
        return int(
            self._read("SELECT COUNT(*) FROM records WHERE namespace = ?", (ns_to_key(namespace),))[
                0
            ][0]
        )

    def max_seq(self, namespace: Namespace) -> int:
        """Highest seq of ``namespace`` (``0`` when empty)."""
        row = self._read(
            "SELECT MAX(seq) FROM records WHERE namespace = ?", (ns_to_key(namespace),)
        )[0]
        return int(row[0] or 0)

    def last_seq(self) -> int:
        """Highest seq ever assigned in this journal (any namespace, deleted or not)."""
        row = self._read("SELECT value FROM meta WHERE key = 'last_seq'")
        return int(row[0][0]) if row else 0

    def namespaces(self) -> list[Namespace]:
        """Every namespace that holds at least one record, sorted."""
        rows = self._read("SELECT DISTINCT namespace FROM records")
        return sorted(ns_from_key(r[0]) for r in rows)

    def next_position(self, namespace: Namespace, session: int) -> int:
        """Position the next record of ``session`` should get (one past the highest)."""
        row = self._read(
            "SELECT MAX(position) FROM records WHERE namespace = ? AND session = ?",
            (ns_to_key(namespace), int(session)),
        )[0]
        return 0 if row[0] is None else int(row[0]) + 1

    # -- deleting (delegated to deletion.Deletions) --------------------------------

    def generation(self, namespace: Namespace) -> int:
        """A number that grows with every deletion in ``namespace`` (see :class:`Deletions`)."""
        return self._deletions.generation(namespace)

    def delete_records(
        self,
        namespace: Namespace,
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        """Delete records and what references them; see :meth:`Deletions.delete_records`."""
        return self._deletions.delete_records(namespace, ids, actor=actor, reason=reason)

    def delete_messages(
        self,
        namespace: Namespace,
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        replace: ReplaceSurvivors | None = None,
    ) -> tuple[list[str], list[Message]]:
        """Delete every record holding the messages; see :meth:`Deletions.delete_messages`."""
        return self._deletions.delete_messages(
            namespace, message_ids, actor=actor, reason=reason, replace=replace
        )

    def erase_namespace(self, namespace: Namespace, *, actor: str = "api") -> int:
        """Erase every row of a namespace; see :meth:`Deletions.erase_namespace`."""
        return self._deletions.erase_namespace(namespace, actor=actor)

    def holds_namespace(self, namespace: Namespace) -> bool:
        """Whether the journal has any row of ``namespace`` (records, items, state …)."""
        return self._deletions.holds(namespace)

    def audit_log(self, namespace: Namespace | None = None) -> list[AuditEntry]:
        """Audited deletions, oldest first; see :meth:`Deletions.audit_log`."""
        return self._deletions.audit_log(namespace)


def _check_vector_rows(rows: Sequence[Any], dim: int, namespace: Any) -> None:
    """Raise :class:`JournalError` naming the first stored vector (``rows``: id, seq, blob)
    that is not ``dim`` float32s: a damaged row, which ``mnemon doctor`` re-embeds."""
    for rid, _seq, blob in rows:
        if len(blob) != dim * 4:
            raise JournalError(
                f"the stored vector of record {rid} (namespace {list(namespace)!r}) holds "
                f"{len(blob)} bytes, not {dim} float32 values ({dim * 4} bytes): the journal "
                "is damaged there; run `mnemon doctor --db <journal>` to re-embed it"
            )


def _filter_sql(filters: SearchFilters | None) -> tuple[str, list[Any]]:
    """SQL conditions on ``records`` for ``filters`` (inclusive bounds, as
    :meth:`SearchFilters.accepts`) and their parameters. Dates are stored as naive-UTC ISO
    text (``datetime.isoformat``), which compares in time order; a record without a date
    passes no date bound."""
    if filters is None:
        return "", []
    out: list[str] = []
    params: list[Any] = []
    for op, session in ((">=", filters.session_from), ("<=", filters.session_to)):
        if session is not None:
            out.append(f"session {op} ?")
            params.append(int(session))
    for op, day in ((">=", filters.date_from), ("<=", filters.date_to)):
        if day is not None:
            out.append(f"date {op} ?")
            params.append(day.isoformat())
    if filters.date_from is not None or filters.date_to is not None:
        out.append("date IS NOT NULL")
    return "".join(f" AND {c}" for c in out), params
