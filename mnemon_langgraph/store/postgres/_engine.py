"""The PostgreSQL engine of a store: its event-loop thread, its connection pool, plumbing.

**One async core.** Every operation of the store is one coroutine using psycopg's async API
over a ``psycopg_pool.AsyncConnectionPool``. The pool lives on one event loop in a daemon
thread owned by the engine; sync callers submit a coroutine there and wait
(:meth:`PostgresEngine.run`), async callers submit it and ``await`` without blocking their
own loop (:meth:`PostgresEngine.submit`). So sync and async paths are the same code and the
pool is never used from two loops (which psycopg forbids). In the shape of
langchain-postgres' ``PGEngine``.

Importing this module needs only the standard library (:func:`redact` serves the CLI
without psycopg); the driver is imported when an engine is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import re
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError
from mnemon_langgraph.records.schema import ns_to_key
from mnemon_langgraph.types import Namespace

__all__ = ["SPARE_WAIT_S", "LoopThread", "PostgresEngine", "import_driver", "redact"]

T = TypeVar("T")

SPARE_WAIT_S = 0.002  # the longest a search waits for a second connection (then: one)
_NS_LOCK = 0x4D4E  # first key of the per-namespace advisory lock

_HELD: contextvars.ContextVar[tuple[Any, Any] | None] = contextvars.ContextVar(
    "mnemon_held_connection", default=None
)
"""``(engine, connection)`` of the :meth:`PostgresEngine.transaction` open in this context.

A context variable, because a sync caller's coroutine runs on the engine's loop thread: the
loop runs each submitted coroutine in a copy of the submitting thread's (or task's) context
(``call_soon_threadsafe`` copies it), so the coroutines of the thread that opened the
transaction, and only those, see it."""

_URL_PASSWORD = re.compile(r"(://[^:@/\s]*):[^/\s]*@")
_QUERY_PASSWORD = re.compile(r"([?&][^=&#\s]*password=)[^&#\s]*", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` (or a text naming one) without its passwords, for output and error messages.

    The one redaction of the package (the CLI uses it for every ``--db`` it prints): the
    password of a URL's userinfo and of any ``…password=`` query parameter (``password``,
    ``sslpassword``) become ``***``. Text without ``://`` (a journal's file path) is returned
    as is. Only the standard library is used, so redacting never needs psycopg.
    """
    if "://" not in url:
        return url
    return _QUERY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1:***@", url))


class LoopThread:
    """An event loop in a daemon thread: where an async core and its pool live, and where a
    sync face waits for it (the PostgreSQL store; the BaseStore's item tables)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for it (from any other thread), at most
        ``timeout`` seconds (``TimeoutError``; ``None``: as long as it takes)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a sync method was called from its own event-loop thread")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def run_coroutine(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Start ``coro`` on the loop (in a copy of the caller's context); its future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def submit(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on the loop, from any event loop (or the loop itself)."""
        if threading.current_thread() is self.thread:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


@contextlib.asynccontextmanager
async def _borrowed(conn: Any) -> AsyncIterator[Any]:
    """``async with`` over a connection someone else holds (and returns to the pool)."""
    yield conn


class _PoolState:
    """What the exit hook closes: the pool, once :meth:`PostgresEngine.open_pool` made it,
    and the background tasks :meth:`PostgresEngine.spawn` started and that still run."""

    def __init__(self) -> None:
        self.pool: Any = None
        self.tasks: set[asyncio.Task[Any]] = set()


async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel the background tasks still running and wait for them to unwind (their
    connections go back to the pool before it closes)."""
    running = list(tasks)
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


_CLOSE_TIMEOUT_S = 10.0  # the longest closing waits for the pool's connections and workers


def _shutdown(loop: LoopThread, state: _PoolState) -> None:
    """Close the pool on its loop, then stop the loop thread (the engine's finalizer).

    Runs at most once per engine (``weakref.finalize``): from :meth:`PostgresEngine.close`,
    from the garbage collector, or from ``atexit`` while the daemon thread still runs. Run on
    the loop's own thread (the last reference dropped inside a coroutine) it cannot wait for
    the loop, so it schedules the close and the stop there instead.
    """
    pool, state.pool = state.pool, None

    async def close() -> None:
        await _cancel(state.tasks)
        if pool is not None:
            await pool.close(timeout=_CLOSE_TIMEOUT_S)

    if threading.current_thread() is loop.thread:

        async def close_then_stop() -> None:
            await close()
            loop.loop.stop()

        loop.loop.create_task(close_then_stop())
        return
    if (pool is not None or state.tasks) and loop.thread.is_alive():
        future = asyncio.run_coroutine_threadsafe(close(), loop.loop)
        try:
            future.result(timeout=2 * _CLOSE_TIMEOUT_S)
        except Exception:  # closing is best effort: the server may be gone already
            future.cancel()
    loop.stop()


def import_driver() -> tuple[Any, Any, Any]:
    """``(psycopg, psycopg_pool, register_vector_async)``, or the package's one-line error."""
    try:
        import psycopg
        import psycopg_pool
        from pgvector.psycopg import register_vector_async
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "a postgresql:// store", exc.name or "psycopg", "postgres"
        ) from exc
    return psycopg, psycopg_pool, register_vector_async


class PostgresEngine:
    """The loop thread, the pool and the few database helpers every part of the store uses.

    Args:
        url: A ``postgresql://`` connection string.
        pool_size: Most connections this process opens.

    Raises:
        MissingDependencyError: psycopg / psycopg_pool / pgvector are not installed.
    """

    def __init__(self, url: str, *, pool_size: int = 8) -> None:
        self.psycopg, pool_mod, self._register_vector = import_driver()
        self.url = url
        self.path = redact(url)
        self.error: type[Exception] = self.psycopg.Error
        self._pool_cls = pool_mod.AsyncConnectionPool
        self._pool_timeout = pool_mod.PoolTimeout
        self._pool_size = max(1, int(pool_size))
        self._loop = LoopThread()
        self._state = _PoolState()
        # Closes the pool on the loop and stops the thread when the engine is closed, is
        # garbage collected or the interpreter exits, whichever comes first, once: a store
        # never closed would otherwise leave the pool's worker tasks pending when the daemon
        # thread dies, and asyncio prints "Task was destroyed but it is pending!" at exit.
        # The callback holds the loop and the state, never the engine itself.
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._state)

    # -- running coroutines -------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the engine's loop and wait for it (sync callers)."""
        return self._loop.run(coro)

    async def submit(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the engine's loop without blocking the caller's loop."""
        return await self._loop.submit(coro)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Start ``coro`` as a background task on the engine's loop (call on that loop), in
        a fresh context (not the caller's, which may hold a connection in a transaction).
        Closing the engine, by :meth:`close`, the collector or the interpreter's exit,
        cancels it first, so no task is left pending when the loop stops."""
        tasks = self._state.tasks
        loop = asyncio.get_running_loop()
        task = loop.create_task(coro, context=contextvars.Context())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return task

    # -- lifecycle ----------------------------------------------------------------------

    async def connect(self, *, autocommit: bool = False) -> Any:
        """A connection of its own (outside the pool: setup, ``VACUUM``)."""
        try:
            return await self.psycopg.AsyncConnection.connect(self.url, autocommit=autocommit)
        except self.psycopg.OperationalError as exc:
            raise ConfigurationError(
                f"cannot connect to PostgreSQL at {self.path}: {exc}".strip()
            ) from exc

    async def open_pool(self) -> None:
        """Open the pool (pgvector types registered, autocommit: writes open transactions)."""

        register = self._register_vector  # not ``self``: the pool must not keep the engine
        # alive (its timers live on the running loop), or a store never closed is never
        # collected and its finalizer waits for the interpreter's exit

        async def configure(conn: Any) -> None:
            await register(conn)
            await conn.set_autocommit(True)  # reads need no transaction; writes open one

        self.pool = self._pool_cls(
            self.url, min_size=1, max_size=self._pool_size, open=False, configure=configure
        )
        try:
            await self.pool.open(wait=True, timeout=30)
        except Exception as exc:
            raise ConfigurationError(f"cannot open a pool to {self.path}: {exc}") from exc

    @property
    def pool(self) -> Any:
        """The connection pool (``None`` before :meth:`open_pool`)."""
        return self._state.pool

    @pool.setter
    def pool(self, value: Any) -> None:
        self._state.pool = value

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` (or the exit hook) has closed the pool and the loop."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Close the pool and stop the loop thread (closing twice is harmless).

        Also run by itself when the engine is garbage collected or at interpreter exit.
        """
        self._finalizer()

    def stop(self) -> None:
        """Stop the loop thread of an engine whose pool never opened."""
        self._finalizer()

    # -- connections and reads ----------------------------------------------------------

    def connection(self) -> Any:
        """``async with engine.connection() as conn``: a pooled connection (autocommit), or
        the connection of the :meth:`transaction` open in this context (its
        ``conn.transaction()`` blocks then become savepoints of that transaction)."""
        held = self._held()
        if held is not None:
            return _borrowed(held)
        return self.pool.connection()

    def _held(self) -> Any:
        held = _HELD.get()
        return held[1] if held is not None and held[0] is self else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction that every coroutine this thread runs on the engine joins.

        A connection is taken from the pool and a transaction opened on it; until the
        block ends, :meth:`connection` (and so every write and read of the store's parts)
        gives that connection to the coroutines submitted from this thread, whose own
        ``conn.transaction()`` blocks become savepoints. The block's end commits; an
        exception rolls everything back (and is raised). Nested use joins the outer one.
        A process killed meanwhile leaves nothing: the server rolls back a connection that
        drops. Other threads and processes see none of it before the commit.
        """
        if self._held() is not None:
            yield
            return
        ready: Future[tuple[Any, asyncio.Future[bool]]] = Future()
        holding = self._loop.run_coroutine(self._hold(ready))
        try:
            conn, outcome = ready.result()  # the holder's error (pool, server) if it failed
        except BaseException:
            holding.cancel()
            raise
        token = _HELD.set((self, conn))
        try:
            yield
        except BaseException:
            self._loop.loop.call_soon_threadsafe(outcome.set_result, False)
            with contextlib.suppress(Exception):  # the block's error is the one to raise
                holding.result()
            raise
        finally:
            _HELD.reset(token)
        self._loop.loop.call_soon_threadsafe(outcome.set_result, True)
        holding.result()  # the COMMIT's error, if any

    async def _hold(self, ready: Future[tuple[Any, asyncio.Future[bool]]]) -> None:
        """Hold a pooled connection in a transaction until :meth:`transaction` says commit
        (``True``) or roll back (``False``)."""
        try:
            async with self.pool.connection() as conn, conn.transaction():
                outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
                ready.set_result((conn, outcome))
                if not await outcome:
                    raise self.psycopg.Rollback()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    @contextlib.asynccontextmanager
    async def spare_connection(self) -> AsyncIterator[Any]:
        """A second pooled connection if one is free now, else ``None``; never waits longer
        than :data:`SPARE_WAIT_S` (the pool may grow meanwhile). Always ``None`` inside a
        :meth:`transaction` (its one connection is the only one).

        The hybrid search runs its two rankings at once only on a spare connection, so a
        busy pool never makes a search queue for a second one (docs/results). A search
        holds its first connection while it asks, so waiting here could deadlock a full
        pool; it does not wait.
        """
        if self._held() is not None:
            yield None
            return
        try:
            conn = await self.pool.getconn(timeout=SPARE_WAIT_S)
        except self._pool_timeout:
            yield None
            return
        try:
            yield conn
        finally:
            await self.pool.putconn(conn)

    async def read(self, sql: str, params: Any = None, *, binary: bool = False) -> list[Any]:
        """All rows of one read query on a pooled connection (or the held one); ``binary``
        asks for the result in PostgreSQL's binary format (vectors arrive as bytes that
        pgvector's loader wraps without parsing text)."""
        async with self.connection() as conn:
            cur = await conn.execute(sql, params, binary=binary)
            return list(await cur.fetchall())

    async def scalar(self, sql: str, params: Any = None) -> Any:
        """The first column of the first row of one read query (``None``: no row)."""
        rows = await self.read(sql, params)
        return rows[0][0] if rows else None

    # -- namespace ids and locks --------------------------------------------------------

    @staticmethod
    async def nsid(conn: Any, ns: Namespace, *, create: bool = False) -> int | None:
        """The ``nsid`` of ``ns`` (``None`` if unknown and not ``create``)."""
        key = ns_to_key(ns)
        if create:
            await conn.execute(
                "INSERT INTO mnemon_namespaces(namespace) VALUES (%s) "
                "ON CONFLICT (namespace) DO NOTHING",
                (key,),
            )
        cur = await conn.execute("SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (key,))
        row = await cur.fetchone()
        return None if row is None else int(row[0])

    @staticmethod
    async def lock_namespace(conn: Any, ns: Namespace) -> None:
        """Serialise writers of one namespace until the transaction ends (any host)."""
        await conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_NS_LOCK, ns_to_key(ns))
        )

    @staticmethod
    async def keyed_tables(conn: Any) -> list[str]:
        """Every other mnemon table keyed by the namespace's text (``namespace`` column): the
        key-value items a :class:`~mnemon_langgraph.integrations.MnemonBaseStore` keeps. The
        audit tables are left out: they are append-only."""
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'namespace' "
            "AND table_schema = current_schema() AND table_name LIKE 'mnemon%%' "
            "AND table_name NOT IN ('mnemon_namespaces', 'mnemon_audit')"
        )
        names = sorted(r[0] for r in await cur.fetchall() if "audit" not in r[0])
        return ['"' + n.replace('"', '""') + '"' for n in names]

    @staticmethod
    async def nsid_tables(conn: Any) -> list[str]:
        """Every mnemon table with an ``nsid`` column, records first (so cascades run)."""
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'nsid' "
            "AND table_schema = current_schema() AND table_name LIKE 'mnemon%%' "
            "AND table_name <> 'mnemon_namespaces'"
        )
        names = sorted(r[0] for r in await cur.fetchall())
        names.sort(key=lambda t: t != "mnemon_records")
        return ['"' + n.replace('"', '""') + '"' for n in names]
