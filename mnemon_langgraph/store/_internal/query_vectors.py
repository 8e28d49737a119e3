"""A bounded, thread-safe cache of query vectors that computes each text once at a time.

Why not ``functools.lru_cache`` (what the store used before): it is thread-safe but does not
share a computation in flight. A read-path turn's ``Gather`` starts a planned search and the
same text's session-bounded search side by side, so both missed the cache and both called
the embedding model (docs/results/log.md, "Read path: one pool, one embedding per text in
flight"). Here the second caller waits for the first one's vector instead.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

__all__ = ["SingleFlightCache"]

V = TypeVar("V")


class SingleFlightCache(Generic[V]):
    """``compute(key)`` memoised for the ``maxsize`` most recently used keys.

    A key being computed is computed once: callers that ask meanwhile wait for that result
    (or get the same exception). A failed computation is not kept, so the next call tries
    again. ``maxsize == 0`` keeps nothing and shares nothing: every call computes.
    """

    def __init__(self, compute: Callable[[str], V], maxsize: int) -> None:
        if maxsize < 0:
            raise ValueError(f"maxsize must be >= 0, got {maxsize}")
        self._compute = compute
        self._maxsize = maxsize
        self._done: OrderedDict[str, V] = OrderedDict()
        self._running: dict[str, Future[V]] = {}
        self._lock = threading.Lock()
        self._generation = 0  # bumped by clear(): a result computed before is not kept

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)

    def clear(self) -> None:
        """Forget every kept value; a computation in flight still answers its callers but
        is not kept."""
        with self._lock:
            self._done.clear()
            self._running.clear()
            self._generation += 1

    def __call__(self, key: str) -> V:
        if self._maxsize == 0:
            return self._compute(key)
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            future = self._running.get(key)
            owner = future is None
            if future is None:
                future = self._running[key] = Future()
            generation = self._generation
        if not owner:
            return future.result()  # the owner's value, or its exception raised here
        try:
            value = self._compute(key)
        except BaseException as exc:
            with self._lock:
                if self._running.get(key) is future:
                    del self._running[key]
            future.set_exception(exc)
            raise
        with self._lock:
            if self._running.get(key) is future:
                del self._running[key]
            if generation == self._generation:
                self._done[key] = value
                while len(self._done) > self._maxsize:
                    self._done.popitem(last=False)
        future.set_result(value)
        return value
