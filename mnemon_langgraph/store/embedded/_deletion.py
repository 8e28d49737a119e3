"""Deletion half of the journal: delete by record or message id, erase, audit.

:class:`Deletions` is a helper object the :class:`~mnemon_langgraph.store.embedded._journal.Journal`
owns and delegates to (composition, not a mixin: it calls the journal it is given, so
nothing has to be re-declared for the type checker). Every deletion is a real SQL
``DELETE`` (so ``ON DELETE CASCADE`` reaches other tables) and writes its audit row in the
same transaction. Audit rows hold ids and counts, never the deleted text, and are never
changed or deleted afterwards (not even by an erase of their namespace).

:meth:`Deletions.delete_messages` can also write the records that replace the deleted
ones (the other messages of packed records) in that same transaction, so a crash or a
failing embedder never loses a message nobody asked to delete.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mnemon_langgraph.errors import MnemonError, RuntimeMnemonError
from mnemon_langgraph.records._survivors import SurvivorRun, kept_ranges, survivor_runs
from mnemon_langgraph.records.schema import (
    AuditEntry,
    ns_from_key,
    ns_to_key,
    rebuild_messages,
)
from mnemon_langgraph.store.embedded._schema import (
    RECORD_COLUMNS,
    chunks,
    dumps,
    now_iso,
    row_to_record,
)
from mnemon_langgraph.types import Message, Namespace, Record

if TYPE_CHECKING:
    from collections.abc import Iterable
    from contextlib import AbstractContextManager

__all__ = ["PRESENT_IDS_SQL", "Deletions", "ReplaceSurvivors"]

PRESENT_IDS_SQL = "SELECT id FROM records WHERE id IN ({marks}) AND +namespace = ? ORDER BY seq"
"""Which of the ids to delete a namespace holds. ``+namespace`` keeps the namespace index out
of the plan: one primary-key lookup per id (as ``Journal.get_records``), not a namespace scan —
without it a deletion of a few records scanned every record of the namespace."""

ReplaceSurvivors = Callable[
    [list[Message], Mapping[int, int]], tuple[Sequence[Record], np.ndarray | None]
]
"""``replace(survivors, first_positions) -> (records, vectors | None)``: see
``Deletions.delete_messages``."""


class DeletingJournal(Protocol):
    """What :class:`Deletions` uses of its journal (a
    :class:`~mnemon_langgraph.store.embedded._journal.Journal`, which owns it): named here so
    that this module never imports the journal module, which imports it."""

    @property
    def _conn(self) -> sqlite3.Connection: ...

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def checkpoint(self) -> None: ...

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]: ...

    def _check_append(
        self, ns: Namespace, records: Sequence[Record], vectors: np.ndarray | None
    ) -> list[bytes] | None: ...

    def _append_in(
        self,
        conn: sqlite3.Connection,
        ns: Namespace,
        records: Sequence[Record],
        blobs: list[bytes] | None,
        *,
        keep_positions: bool = False,
    ) -> list[Record]: ...


class Deletions:
    """Deletion, erase and audit operations on one journal.

    Args:
        journal: The journal whose rows are deleted. Its storage-internal ``_read``,
            ``_check_append`` and ``_append_in`` are used on purpose: they are the one
            read and write path of the journal, and this class is part of the same
            ``storage`` package (not an outside caller).
    """

    def __init__(self, journal: DeletingJournal) -> None:
        self._journal = journal

    def generation(self, namespace: Namespace) -> int:
        """A number that grows with every deletion in ``namespace`` (``0`` before any).

        It is the id of the namespace's latest audit row, so it keeps growing even across
        an erase. Derived indexes store it and rebuild when it changed.
        """
        row = self._journal._read(
            "SELECT MAX(id) FROM audit WHERE namespace = ?", (ns_to_key(namespace),)
        )[0]
        return int(row[0] or 0)

    # -- deleting ------------------------------------------------------------------------

    def _audit(
        self,
        conn: sqlite3.Connection,
        *,
        actor: str,
        action: str,
        key: str,
        count: int,
        record_ids: Sequence[str] = (),
        message_ids: Sequence[str] = (),
        reason: str = "",
    ) -> None:
        conn.execute(
            "INSERT INTO audit(at, actor, action, namespace, count, record_ids, message_ids, "
            "reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                now_iso(),
                str(actor),
                action,
                key,
                int(count),
                dumps(list(record_ids)),
                dumps(list(message_ids)),
                str(reason),
            ),
        )

    @staticmethod
    def _delete_ids(conn: sqlite3.Connection, key: str, ids: Sequence[str]) -> list[str]:
        deleted: list[str] = []
        for part in chunks(list(dict.fromkeys(ids))):
            marks = ",".join("?" * len(part))
            rows = conn.execute(PRESENT_IDS_SQL.format(marks=marks), [*part, key]).fetchall()
            present = [r[0] for r in rows]
            if present:
                marks = ",".join("?" * len(present))
                conn.execute(f"DELETE FROM records WHERE id IN ({marks})", present)
                deleted.extend(present)
        return deleted

    def delete_records(
        self,
        namespace: Namespace,
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        """Delete records (and, through foreign keys, everything that references them).

        Also removes their ``messages`` rows, so those messages can be ingested again. The
        deletion and its audit row are one transaction.

        Returns:
            Ids actually deleted (ids not in the namespace are ignored).
        """
        key = ns_to_key(namespace)
        with self._journal.transaction() as conn:
            deleted = self._delete_ids(conn, key, ids)
            if deleted:
                self._audit(
                    conn,
                    actor=actor,
                    action="delete_records",
                    key=key,
                    count=len(deleted),
                    record_ids=deleted,
                    reason=reason,
                )
        return deleted

    def delete_messages(
        self,
        namespace: Namespace,
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        replace: ReplaceSurvivors | None = None,
    ) -> tuple[list[str], list[Message]]:
        """Delete every record that holds any part of the given messages.

        A record may also hold other messages (packed short turns), and a long message may
        be split over several records. So that nothing else is lost, every record holding
        a part of an affected message is deleted too (transitively), and the *other*
        messages of those records are returned whole.

        Without ``replace`` the caller must ingest the survivors again itself — in a later
        transaction, so a crash in between loses them. With ``replace`` the journal calls
        ``replace(survivors, first_positions)`` *inside* the deletion's transaction (after
        the old records are gone), once per run of deleted records
        (:mod:`~mnemon_langgraph.records._survivors`), and appends the records it returns,
        with their vectors, through the same code path as :meth:`append`, at the
        positions they were chunked at: the survivors keep their place in the session
        (``first_positions`` is the place of the records they replace; later records
        move down only if the survivors need more records than they had). The deletion,
        its audit row and the new records commit together or not at all. ``replace`` runs
        while the journal's write lock is held, so it should be quick (embedding a few
        records is); it is not called when there are no survivors.

        Args:
            namespace: The namespace.
            message_ids: Messages to delete (unknown ids are ignored).
            actor: Who deletes (audit).
            reason: Why (audit).
            replace: Optional ``replace(survivors, first_positions) -> (records, vectors
                or None)``: the survivors chunked from ``first_positions`` on (``session ->
                position``); the records must belong to ``namespace``, ``vectors`` is
                ``(len(records), dim)``, as for :meth:`append`.

        Returns:
            ``(deleted_record_ids, surviving_messages)``. Surviving messages keep their id,
            speaker, role and session; their timestamp is their record's date; a message
            split over records is rejoined with single spaces.

        Raises:
            InputError: ``replace`` returned records or vectors :meth:`append` refuses.
            MnemonError: ``replace`` raised it (e.g. ``ModelCallError``); re-raised as is.
            RuntimeMnemonError: ``replace`` raised any other exception (chained).
            In every case nothing was deleted and no audit row was written.
        """
        ns = namespace
        key = ns_to_key(ns)
        targets = set(message_ids)
        with self._journal.transaction() as conn:
            records = self._affected_records(conn, key, targets)
            survivors = rebuild_messages(records, exclude=targets)
            deleted = self._delete_ids(conn, key, [r.id for r in records])
            if deleted:
                self._audit(
                    conn,
                    actor=actor,
                    action="delete_messages",
                    key=key,
                    count=len(deleted),
                    record_ids=deleted,
                    # only ids that were stored: a caller's unknown "id" (any string) never
                    # reaches the trail, which outlives an erase
                    message_ids=sorted(targets & {m for r in records for m in r.message_ids}),
                    reason=reason,
                )
            if survivors and replace is not None:
                kept = _kept_positions(conn, key, records)
                shift: dict[int, int] = {}
                for run in survivor_runs(records, targets, kept):
                    self._replace_in(conn, ns, run, replace, shift)
        return deleted, survivors

    @staticmethod
    def _affected_records(conn: sqlite3.Connection, key: str, targets: set[str]) -> list[Record]:
        """Every record holding a part of ``targets``, closed over shared messages.

        A record packed with another message, and that message's other records, are
        affected too (transitively), so the survivors can be rebuilt whole. Ordered by
        ``(session, position, seq)``.
        """
        pending = list(targets)
        seen_msgs: set[str] = set(pending)
        record_ids: set[str] = set()
        while pending:
            next_msgs: list[str] = []
            for part in chunks(pending):
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT DISTINCT record_id FROM messages WHERE namespace = ? "
                    f"AND message_id IN ({marks})",
                    [key, *part],
                ).fetchall()
                new_records = [r[0] for r in rows if r[0] not in record_ids]
                record_ids.update(new_records)
                for mid in _message_ids_of(conn, new_records):
                    if mid not in seen_msgs:
                        seen_msgs.add(mid)
                        next_msgs.append(mid)
            pending = next_msgs
        records: list[Record] = []
        for part in chunks(sorted(record_ids)):
            marks = ",".join("?" * len(part))
            records.extend(
                row_to_record(row)
                for row in conn.execute(
                    f"SELECT {RECORD_COLUMNS} FROM records WHERE id IN ({marks})", list(part)
                )
            )
        records.sort(key=lambda r: (r.session, r.position, r.seq))
        return records

    def _replace_in(
        self,
        conn: sqlite3.Connection,
        ns: Namespace,
        run: SurvivorRun,
        replace: ReplaceSurvivors,
        shift: dict[int, int],
    ) -> list[Record]:
        """Call ``replace`` for one run and append what it returns at the run's place.

        Inside the caller's transaction. ``shift`` (session -> positions the session's later
        records moved down so far) is updated when the run needs more room than it had.
        """
        moved = shift.get(run.session, 0)
        first = run.first + moved
        try:
            records, vectors = replace(list(run.messages), {run.session: first})
        except MnemonError:
            raise
        except Exception as exc:
            raise RuntimeMnemonError(
                f"re-writing the {len(run.messages)} surviving messages failed: {exc}; "
                "nothing was deleted"
            ) from exc
        blobs = self._journal._check_append(ns, records, vectors)
        end = max((r.position + 1 for r in records if r.session == run.session), default=first)
        if run.limit is not None and end > run.limit + moved:
            extra = end - (run.limit + moved)
            conn.execute(
                "UPDATE records SET position = position + ? WHERE namespace = ? AND session = ? "
                "AND position >= ?",
                (extra, ns_to_key(ns), run.session, run.limit + moved),
            )
            shift[run.session] = moved + extra
        return self._journal._append_in(conn, ns, records, blobs, keep_positions=True)

    @staticmethod
    def _namespace_tables(conn: sqlite3.Connection) -> list[str]:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        out = []
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            cols = {r[1] for r in conn.execute(f"PRAGMA table_info({quoted})")}
            if "namespace" in cols:
                out.append(quoted)
        return out

    def holds(self, namespace: Namespace) -> bool:
        """Whether any table but ``audit`` has a row of ``namespace`` (what erase removes)."""
        key = ns_to_key(namespace)
        conn = self._journal._conn
        for table in self._namespace_tables(conn):
            if table == '"audit"':
                continue
            if conn.execute(
                f"SELECT 1 FROM {table} WHERE namespace = ? LIMIT 1", (key,)
            ).fetchone():
                return True
        return False

    def erase_namespace(self, namespace: Namespace, *, actor: str = "api") -> int:
        """Erase a namespace: every row of it in every table with a ``namespace`` column.

        Covers tables added later by other modules (found through ``sqlite_master``).
        The audit trail is append-only: earlier audit rows of the namespace stay as they
        were (they hold ids, counts and reasons, never record text), and one more row
        records that an erase happened, when, by whom, of which namespace and how many
        records. Runs with ``secure_delete`` on and checkpoints the WAL afterwards, so the
        erased text does not linger in the file.

        Returns:
            Number of records erased.
        """
        key = ns_to_key(namespace)
        with self._journal.transaction() as conn:
            conn.execute("PRAGMA defer_foreign_keys = ON")
            count = int(
                conn.execute("SELECT COUNT(*) FROM records WHERE namespace = ?", (key,)).fetchone()[
                    0
                ]
            )
            tables = [t for t in self._namespace_tables(conn) if t != '"audit"']
            # Items first: their links go with them, so the orphan trigger of consolidation
            # audits no "delete_item" for what the erase itself removes (its one row says
            # it). Records last: ON DELETE CASCADE still reaches rows without a namespace
            # column (foreign keys are checked at commit, defer_foreign_keys).
            tables.sort(key=lambda t: (t != '"items"', t == '"records"'))
            for table in tables:
                conn.execute(f"DELETE FROM {table} WHERE namespace = ?", (key,))
            self._audit(conn, actor=actor, action="erase_namespace", key=key, count=count)
        self._journal.checkpoint()
        return count

    def audit_log(self, namespace: Namespace | None = None) -> list[AuditEntry]:
        """Audited deletions, oldest first, of one namespace or of all."""
        sql = (
            "SELECT id, at, actor, action, namespace, count, record_ids, message_ids, reason "
            "FROM audit"
        )
        params: tuple[Any, ...] = ()
        if namespace is not None:
            sql += " WHERE namespace = ?"
            params = (ns_to_key(namespace),)
        rows = self._journal._read(sql + " ORDER BY id", params)
        return [
            AuditEntry(
                id=r[0],
                at=datetime.fromisoformat(r[1]),
                actor=r[2],
                action=r[3],
                namespace=ns_from_key(r[4]),
                count=r[5],
                record_ids=tuple(json.loads(r[6])),
                message_ids=tuple(json.loads(r[7])),
                reason=r[8],
            )
            for r in rows
        ]


def _kept_positions(
    conn: sqlite3.Connection, key: str, deleted: Sequence[Record]
) -> dict[int, list[int]]:
    """Per session of ``deleted``: the kept records' positions between its lowest and highest
    deleted position, and the first one above (see :func:`~.survivors.kept_ranges`)."""
    out: dict[int, list[int]] = {}
    for session, (low, high) in kept_ranges(deleted).items():
        rows = conn.execute(
            "SELECT position FROM records WHERE namespace = ? AND session = ? "
            "AND position > ? AND position <= ? ORDER BY position",
            (key, session, low, high),
        ).fetchall()
        above = conn.execute(
            "SELECT MIN(position) FROM records WHERE namespace = ? AND session = ? "
            "AND position > ?",
            (key, session, high),
        ).fetchone()[0]
        out[session] = [int(r[0]) for r in rows] + ([int(above)] if above is not None else [])
    return out


def _message_ids_of(conn: sqlite3.Connection, record_ids: Sequence[str]) -> list[str]:
    """Message ids held by ``record_ids`` (in the ``messages`` table)."""
    out: list[str] = []
    for part in chunks(list(record_ids)):
        marks = ",".join("?" * len(part))
        out.extend(
            r[0]
            for r in conn.execute(
                f"SELECT message_id FROM messages WHERE record_id IN ({marks})", list(part)
            )
        )
    return out
