"""The content-addressed embedding cache (CachedEmbeddings): hits, model identity, the store."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.search.embeddings import (
    CachedEmbeddings,
    MiniLMEmbeddings,
    cache_identity,
    default_embedding_cache_path,
    embedding_identity,
)


class CountingFake(Embeddings):
    """A deterministic embedder that counts the texts it embeds (and can be renamed)."""

    def __init__(self, size: int = 8, name: str = "counting-fake") -> None:
        self.inner = DeterministicFakeEmbedding(size=size)
        self.model_name = name
        self.dimension = size
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += texts
        return [np.asarray(v, dtype=np.float32).tolist() for v in self.inner.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return np.asarray(self.inner.embed_query(text), dtype=np.float32).tolist()


def test_second_pass_embeds_nothing_new(tmp_path: Path) -> None:
    inner = CountingFake()
    cache = CachedEmbeddings(inner, tmp_path / "c.sqlite")
    texts = ["alpha beta", "gamma", "alpha beta", "delta"]
    first = cache.embed_documents(texts)
    assert inner.documents == ["alpha beta", "gamma", "delta"]  # the repeat embedded once
    assert (cache.misses, cache.hits) == (3, 1)
    assert first[0] == first[2]
    again = cache.embed_documents(["delta", "gamma", "alpha beta"])
    assert len(inner.documents) == 3  # nothing new
    assert again == [first[3], first[1], first[0]]
    assert (cache.misses, cache.hits) == (3, 4)
    assert cache.entries() == 3
    cache.close()


def test_cache_is_reused_by_another_process_run(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    a = CachedEmbeddings(CountingFake(), path)
    vecs = a.embed_documents(["one", "two"])
    a.close()
    inner = CountingFake()
    b = CachedEmbeddings(inner, path)
    assert b.embed_documents(["two", "one"]) == [vecs[1], vecs[0]]
    assert inner.documents == [] and b.misses == 0 and b.hits == 2
    b.close()


def test_model_identity_separates_entries(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    a = CachedEmbeddings(CountingFake(name="model-a"), path)
    a.embed_documents(["shared text"])
    other = CountingFake(name="model-b")
    b = CachedEmbeddings(other, path)
    b.embed_documents(["shared text"])
    assert other.documents == ["shared text"]  # a different model never reads a's vector
    assert a.entries() == 1 and b.entries() == 1
    with sqlite3.connect(path) as db:
        (n,) = db.execute("SELECT COUNT(*) FROM vectors").fetchone()
    assert n == 2
    a.close()
    b.close()


def test_minilm_identity_includes_token_limit_and_recipe() -> None:
    short, default = MiniLMEmbeddings(max_tokens=64), MiniLMEmbeddings()
    assert embedding_identity(short) == embedding_identity(default)  # same journal name
    assert cache_identity(short) != cache_identity(default)  # but different vectors
    assert "recipe=" in cache_identity(default)


def test_queries_are_keyed_apart_from_documents(tmp_path: Path) -> None:
    inner = CountingFake()
    cache = CachedEmbeddings(inner, tmp_path / "c.sqlite")
    cache.embed_documents(["same words"])
    q1 = cache.embed_query("same words")
    q2 = cache.embed_query("same words")
    assert inner.queries == ["same words"]  # embedded as a query once, then cached
    assert q1 == q2
    off = CachedEmbeddings(CountingFake(), tmp_path / "d.sqlite", cache_queries=False)
    off.embed_query("x")
    off.embed_query("x")
    assert off.embeddings.queries == ["x", "x"]  # type: ignore[attr-defined]
    assert asyncio.run(cache.aembed_query("same words")) == q1
    assert asyncio.run(cache.aembed_documents(["same words"])) == cache.embed_documents(
        ["same words"]
    )


def test_wrapper_reports_the_wrapped_identity_and_refuses_double_wrap(tmp_path: Path) -> None:
    inner = DeterministicFakeEmbedding(size=16)
    cache = CachedEmbeddings(inner, tmp_path / "c.sqlite")
    assert embedding_identity(cache) == embedding_identity(inner)
    with pytest.raises(ConfigurationError):
        CachedEmbeddings(cache, tmp_path / "c.sqlite")  # type: ignore[arg-type]


def test_unwritable_cache_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigurationError, match="embedding cache"):
        CachedEmbeddings(CountingFake(), blocker / "c.sqlite")


def test_default_path_follows_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_CACHE_DIR", str(tmp_path / "cachedir"))
    assert default_embedding_cache_path() == tmp_path / "cachedir" / "embeddings.sqlite"


def test_a_store_over_the_cache_embeds_a_repeated_history_once(tmp_path: Path) -> None:
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    inner = CountingFake(size=384)
    cache = CachedEmbeddings(inner, tmp_path / "c.sqlite")
    store = MnemonStore(tmp_path / "j.sqlite", embeddings=cache)
    history = [
        Message(f"turn number {i} about gardening", speaker="user", id=f"m{i}") for i in range(6)
    ]
    try:
        store.ingest(("a",), history, origin="s")
        embedded = len(inner.documents)
        assert embedded > 0
        store.ingest(("b",), history, origin="s")  # the same texts, another namespace
        assert len(inner.documents) == embedded
        hits = store.search("gardening", namespace=("b",), k=3)
        assert hits  # the cached vectors are searchable
    finally:
        store.close()
        cache.close()
