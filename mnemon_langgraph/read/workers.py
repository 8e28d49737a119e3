"""One shared, context-copying thread pool for the timeouts of sync model calls.

A sync ``invoke`` cannot cancel a model call, so a timeout means: run the call in a worker
and stop waiting for it. Starting a pool per call would cost a thread start each time and
leave pools behind when calls hang; one pool for the process bounds that. It lives here,
in the read layer, so that both the planner (read) and the consolidation job (a higher
layer) may use it without an upward import.
"""

from __future__ import annotations

import threading

from langchain_core.runnables.config import ContextThreadPoolExecutor

__all__ = ["shared_pool"]

# ContextThreadPoolExecutor copies the caller's context into the worker, so the run's
# callbacks (tracing) see every model call made in it under a sync ``invoke`` too. A call
# that hangs past its timeout keeps a worker until the provider gives up.
_POOL: ContextThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def shared_pool() -> ContextThreadPoolExecutor:
    """The process's one pool for timed sync model calls, created on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ContextThreadPoolExecutor(max_workers=16, thread_name_prefix="mnemon-call")
        return _POOL
