"""A bounded, thread-safe cache of query vectors that computes each text once at a time.

Why not ``functools.lru_cache`` (what the store used before): it is thread-safe but does not
share a computation in flight. A read-path turn's ``Gather`` starts a planned search and the
same text's session-bounded search side by side, so both missed the cache and both called
the embedding model (docs/results/log.md, "Read path: one pool, one embedding per text in
flight"). Here the second caller waits for the first one's vector instead.

:func:`query_embedding` keeps what an embedder object returned for a query text, shared by
everything that embeds queries with that object: the store's own query vectors are made
from it, and a read source over a LangChain vector store built with the same embedder
(``RetrieverSource``) searches by it instead of embedding the same text again.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from mnemon_langgraph.records._content_caches import register_content_cache

__all__ = ["SingleFlightCache", "query_embedding", "query_embeddings_of"]

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

    def peek(self, key: str) -> V | None:
        """The kept value of ``key`` without computing it (``None``: not kept)."""
        with self._lock:
            return self._done.get(key)


QUERY_EMBEDDINGS_KEPT = 256
"""Query texts whose embedding :func:`query_embedding` keeps per embedder."""

_BY_EMBEDDER: dict[int, tuple[weakref.ref[Any], SingleFlightCache[tuple[float, ...]]]] = {}
_BY_EMBEDDER_LOCK = threading.Lock()


def _forget_query_embeddings() -> None:
    with _BY_EMBEDDER_LOCK:
        caches = [cache for _, cache in _BY_EMBEDDER.values()]
    for cache in caches:
        cache.clear()


register_content_cache(_forget_query_embeddings)  # a query may quote deleted text


def query_embeddings_of(embeddings: Any) -> SingleFlightCache[tuple[float, ...]] | None:
    """The kept query embeddings of one embedder object (``None``: it cannot be referred to
    weakly, so nothing is kept for it).

    Everything that embeds a query with the same embedder object shares these: a journal
    and a vector store built with one embedder embed each query text of a turn once, not
    once each. The value is ``embeddings.embed_query(text)`` as a tuple (what the model
    returned, unconverted, so a caller gets exactly what its own call would have)."""
    key = id(embeddings)
    got = _BY_EMBEDDER.get(key)
    if got is not None and got[0]() is embeddings:
        return got[1]
    try:
        ref = weakref.ref(embeddings)
    except TypeError:
        return None

    def compute(text: str) -> tuple[float, ...]:
        model = ref()  # weakly: the kept vectors never keep an embedder alive
        if model is None:
            raise ReferenceError("the embedder is gone")
        return tuple(model.embed_query(text))

    with _BY_EMBEDDER_LOCK:
        got = _BY_EMBEDDER.get(key)
        if got is not None and got[0]() is embeddings:
            return got[1]
        for dead in [k for k, (r, _) in _BY_EMBEDDER.items() if r() is None]:
            del _BY_EMBEDDER[dead]
        cache: SingleFlightCache[tuple[float, ...]] = SingleFlightCache(
            compute, QUERY_EMBEDDINGS_KEPT
        )
        _BY_EMBEDDER[key] = (ref, cache)
    return cache


def query_embedding(embeddings: Any, text: str) -> tuple[float, ...]:
    """``tuple(embeddings.embed_query(text))``, computed once for every caller while kept
    (:func:`query_embeddings_of`; an embedder that cannot be kept is called every time)."""
    cache = query_embeddings_of(embeddings)
    return tuple(embeddings.embed_query(text)) if cache is None else cache(text)
