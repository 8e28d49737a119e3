"""The store keeps recent query vectors: a turn's repeated search texts embed once.

Real embedded store (SQLite journal, BM25, FAISS) with the counting hash embedder.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _search_fakes import HashEmbeddings

from mnemon_langgraph.errors import ModelCallError
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store._internal.embedding_face import QUERY_VECTORS_KEPT
from mnemon_langgraph.store._internal.query_vectors import SingleFlightCache
from mnemon_langgraph.types import Message

NS = ("users", "ada")


class FlakyEmbeddings(HashEmbeddings):
    """Fails on its first query, then answers: a failure must not be remembered."""

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        if self.queries == 1:
            raise RuntimeError("model endpoint down")
        return self._vec(text)


def _store(tmp_path: Path, emb: HashEmbeddings) -> MnemonStore:
    store = MnemonStore(tmp_path / "j.db", emb)
    texts = ["the garden needs water", "ocean swim at dawn", "garden party on sunday"]
    store.ingest(
        NS, [Message(t, "Ada", id=f"m{i}") for i, t in enumerate(texts)], origin="c", pack=False
    )
    return store


def test_a_repeated_query_text_is_embedded_once(tmp_path: Path) -> None:
    emb = HashEmbeddings()
    with _store(tmp_path, emb) as store:
        first = store.search("garden", namespace=NS, k=2)
        again = store.search("garden", namespace=NS, k=2, offset=1)  # a later page
        assert emb.queries == 1
        assert len(first) == 2 and again[0].record.id == first[1].record.id  # same ranking
        store.search("ocean", namespace=NS, k=2)
        assert emb.queries == 2  # another text is embedded (fails if nothing is asked)
        vec = store.query_vector("garden")
        assert emb.queries == 2 and not vec.flags.writeable  # shared, so never mutable
        with pytest.raises(ValueError):
            vec[0] = 1.0


def test_a_failed_query_embedding_is_not_kept(tmp_path: Path) -> None:
    emb = FlakyEmbeddings()
    with _store(tmp_path, emb) as store:
        with pytest.raises(ModelCallError):
            store.search("garden", namespace=NS, k=2)
        hits = store.search("garden", namespace=NS, k=2)
        assert emb.queries == 2 and hits  # asked again, and answered


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    emb = HashEmbeddings()
    with _store(tmp_path, emb) as store:
        for i in range(QUERY_VECTORS_KEPT + 1):
            store.search(f"garden {i}", namespace=NS, k=1)
        store.search("garden 0", namespace=NS, k=1)  # the oldest was let go
        assert emb.queries == QUERY_VECTORS_KEPT + 2


class GatedEmbeddings(HashEmbeddings):
    """Holds every query embedding until ``release`` is set: a call stays in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.started = threading.Event()

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        self.started.set()
        assert self.release.wait(timeout=10)
        return self._vec(text)


def test_searches_side_by_side_embed_one_text_once(tmp_path: Path) -> None:
    """A turn's planned search and its session-bounded twin start together."""
    emb = GatedEmbeddings()
    with _store(tmp_path, emb) as store:
        with ThreadPoolExecutor(4) as pool:
            first = pool.submit(store.search, "garden", namespace=NS, k=2)
            assert emb.started.wait(timeout=10)  # the first call is inside the model now
            others = [pool.submit(store.search, "garden", namespace=NS, k=1) for _ in range(3)]
            time.sleep(0.3)  # let the others reach the cache while the first one waits
            emb.release.set()
            hits = [first.result(timeout=10)] + [f.result(timeout=10) for f in others]
        assert emb.queries == 1
        assert all(h and h[0].record.id == hits[0][0].record.id for h in hits)


def test_callers_waiting_on_a_failed_embedding_get_its_error_and_it_is_not_kept() -> None:
    calls: list[str] = []
    gate = threading.Event()

    def compute(key: str) -> str:
        calls.append(key)
        if len(calls) == 1:
            assert gate.wait(timeout=10)
            raise ModelCallError("model endpoint down")
        return key.upper()

    cache: SingleFlightCache[str] = SingleFlightCache(compute, 4)
    with ThreadPoolExecutor(2) as pool:
        owner = pool.submit(cache, "garden")
        while not calls:
            time.sleep(0.01)
        waiter = pool.submit(cache, "garden")
        time.sleep(0.2)
        gate.set()
        for future in (owner, waiter):
            with pytest.raises(ModelCallError):
                future.result(timeout=10)
    assert calls == ["garden"] and len(cache) == 0  # one failed call, nothing kept
    assert cache("garden") == "GARDEN" and calls == ["garden", "garden"]


def test_the_single_flight_cache_keeps_the_most_recently_used() -> None:
    calls: list[str] = []
    cache: SingleFlightCache[str] = SingleFlightCache(lambda k: calls.append(k) or k, 2)
    for key in ("a", "b", "a", "c", "a", "b"):  # "b" is the least recent when "c" arrives
        cache(key)
    assert calls == ["a", "b", "c", "b"] and len(cache) == 2
    none: SingleFlightCache[str] = SingleFlightCache(lambda k: calls.append(k) or k, 0)
    none("z")
    none("z")
    assert calls[-2:] == ["z", "z"] and len(none) == 0
    with pytest.raises(ValueError, match="maxsize"):
        SingleFlightCache(str, -1)
