"""The process's context-copying thread pools: timed model calls, side-by-side calls, and
timed searches of read sources.

* :func:`shared_pool` runs sync model calls that have a timeout: the planner's, a judging
  wave's, the consolidation job's. A sync ``invoke`` cannot cancel a model call, so a
  timeout means: run the call in a worker and stop waiting for it. A call that hangs past
  its timeout keeps a worker until the provider gives up. Up to 64 workers, started only as
  calls need them, so that the turns of many users at once do not queue behind each other
  (a call waiting in the queue spends its own timeout).
* :func:`gather_pool` runs the independent calls of a node body's ``Gather`` (a turn's
  searches, side by side) under a sync ``invoke``. 32 workers, started only as calls need
  them: a turn gathers at most about nine calls, and the concurrent turns of a server on
  PostgreSQL, whose searches mostly wait on the database, must not queue behind a few.
* :func:`source_pool` runs the timed sync searches of a read graph of several sources
  (``read.sources.binding``): a source that hangs keeps its worker past the timeout, so these
  get their own 32 workers rather than taking the model calls'. A ``Gather`` starts such
  searches here directly (``Call.start``), not through :func:`gather_pool`.

Why pools that live for the process rather than one per call: a pool per call started a
thread per call (about a dozen per turn), and on a two-core machine starting and tearing
them down cost a read-path turn more than the searches gained by running side by side
(docs/results/log.md, "read path: one pool"). Both live here, in the read layer, so that
the planner and the node drivers (read) and the consolidation job (a higher layer) may use
them without an upward import.

``ContextThreadPoolExecutor`` copies the caller's context into the worker, so the run's
callbacks (tracing) see every call made in it under a sync ``invoke`` too. A forked child
(a pre-forking server) gets fresh pools: the parent's worker threads do not exist there.
"""

from __future__ import annotations

import os
import threading

from langchain_core.runnables.config import ContextThreadPoolExecutor

__all__ = ["gather_pool", "in_gather_worker", "shared_pool", "source_pool"]

_LOCK = threading.Lock()
_POOLS: dict[str, ContextThreadPoolExecutor] = {}
_SIZES = {"mnemon-call": 64, "mnemon-gather": 32, "mnemon-source": 32}
_LOCAL = threading.local()


def _pool(name: str) -> ContextThreadPoolExecutor:
    with _LOCK:
        pool = _POOLS.get(name)
        if pool is None:
            pool = _POOLS[name] = ContextThreadPoolExecutor(
                max_workers=_SIZES[name],
                thread_name_prefix=name,
                initializer=_mark_worker,
                initargs=(name,),
            )
        return pool


def _mark_worker(name: str) -> None:
    _LOCAL.pool = name


def shared_pool() -> ContextThreadPoolExecutor:
    """The process's one pool for timed sync model calls, created on first use."""
    return _pool("mnemon-call")


def gather_pool() -> ContextThreadPoolExecutor:
    """The process's one pool for a sync ``Gather``'s calls, created on first use."""
    return _pool("mnemon-gather")


def source_pool() -> ContextThreadPoolExecutor:
    """The process's one pool for timed searches of read sources, created on first use."""
    return _pool("mnemon-source")


def in_gather_worker() -> bool:
    """Whether this thread is one of :func:`gather_pool`'s workers.

    A call running there that gathers again must run its calls inline: queueing them behind
    its own (busy) pool could wait forever once every worker waits the same way.
    """
    return getattr(_LOCAL, "pool", None) == "mnemon-gather"


def _forget_pools() -> None:  # pragma: no cover - runs in a forked child
    global _LOCK
    _LOCK = threading.Lock()
    _POOLS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)
