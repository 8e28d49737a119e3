"""The store keeps recent query vectors: a turn's repeated search texts embed once.

Real embedded store (SQLite journal, BM25, FAISS) with the counting hash embedder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _search_fakes import HashEmbeddings

from mnemon_langgraph.errors import ModelCallError
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.base import QUERY_VECTORS_KEPT
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
        NS, [Message(t, "Ada", id=f"m{i}") for i, t in enumerate(texts)], source="c", pack=False
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
        vec = store._embed_query("garden")
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
