"""Tests of MnemonRetriever, including LangChain's standard retriever suite."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _search_fakes import HashEmbeddings
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from mnemon_langgraph.integrations.retriever import MnemonRetriever
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message, SearchFilters

NS = ("users", "ada")
_TEXTS = [
    "I adopted a beagle called Pepper",
    "My sister's wedding moved to September",
    "I moved from Leeds to Rotterdam",
    "I am a nurse on a paediatric ward",
    "Pepper steals socks from the laundry",
    "I cycle six kilometres to work",
]


def _make_store(path: Path) -> MnemonStore:
    store = MnemonStore(path, HashEmbeddings())
    msgs = [Message(t, "Ada", id=f"m{i}", session=1 + i // 3) for i, t in enumerate(_TEXTS)]
    store.ingest(NS, msgs, origin="chat", pack=False)
    return store


_SHARED: dict[str, Any] = {}


def _shared_store() -> MnemonStore:
    """One store for the standard suite, made on first use (not at import)."""
    if "store" not in _SHARED:
        _SHARED["tmp"] = tempfile.TemporaryDirectory(prefix="mnemon-retriever-")
        _SHARED["store"] = _make_store(Path(_SHARED["tmp"].name) / "standard.db")
    return _SHARED["store"]


class TestMnemonRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[MnemonRetriever]:
        return MnemonRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": _shared_store(), "namespace": NS}

    @property
    def retriever_query_example(self) -> str:
        return "where does Pepper the beagle live?"


@pytest.fixture
def store(tmp_path: Path) -> MnemonStore:
    s = _make_store(tmp_path / "j.db")
    yield s
    s.close()


def test_documents_have_rendered_text_and_metadata(store: MnemonStore) -> None:
    retriever = MnemonRetriever(store=store, namespace=NS, k=2)
    docs = retriever.invoke("beagle Pepper")
    assert len(docs) == 2 and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.page_content.startswith("[Session 1")
    assert "beagle" in top.page_content
    meta = top.metadata
    assert meta["id"] == top.id and meta["message_ids"] == ["m0"]
    assert meta["session"] == 1 and meta["date"] is None
    assert meta["bm25_rank"] == 0 and meta["rank"] == 0
    assert isinstance(meta["score"], float) and meta["score"] > 0
    assert "dense_rank" in meta


def test_per_call_k_offset_and_filters(store: MnemonStore) -> None:
    retriever = MnemonRetriever(store=store, namespace="users/ada-other")
    assert retriever.invoke("beagle") == []  # another namespace: nothing
    retriever = MnemonRetriever(store=store, namespace=list(NS), k=4)
    assert len(retriever.invoke("Pepper", k=1)) == 1
    all_docs = retriever.invoke("Pepper", k=6)
    second = retriever.invoke("Pepper", k=2, offset=2)
    assert [d.id for d in second] == [d.id for d in all_docs[2:4]]
    only2 = retriever.invoke("Pepper", k=6, filters=SearchFilters(session_from=2))
    assert only2 and all(d.metadata["session"] == 2 for d in only2)


def test_async_matches_sync(store: MnemonStore) -> None:
    retriever = MnemonRetriever(store=store, namespace=NS, k=3)
    sync = retriever.invoke("Rotterdam Leeds")
    got = asyncio.run(retriever.ainvoke("Rotterdam Leeds"))
    assert [d.id for d in got] == [d.id for d in sync] and len(got) == 3


def test_store_must_be_a_search_source() -> None:
    with pytest.raises(ValueError):
        MnemonRetriever(store=object(), namespace=NS)
