"""A RetrieverSource over a similarity vector store searches by the query's kept vector.

A journal and a LangChain vector store built with the same embedder object embed each query
text once between them; the documents found are exactly those ``retriever.invoke`` finds.
Real FAISS (community) and ``InMemoryVectorStore``, a real SQLite journal, and the counting
hash embedder (whose many equal vectors make ties, where an inexact search would differ).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from _search_fakes import HashEmbeddings
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore, VectorStoreRetriever

from mnemon_langgraph.read.sources import RetrieverSource
from mnemon_langgraph.records._content_caches import forget_cached_content
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

pytest.importorskip("faiss")
FAISS = pytest.importorskip("langchain_community.vectorstores").FAISS

NS = ("users", "ada")
WORDS = [
    *("garden", "ocean", "pepper", "beagle", "wedding", "leeds"),
    *("nurse", "bike", "socks", "dawn", "rain", "tea"),
]


def _docs(seed: int, n: int = 60) -> list[Document]:
    rng = random.Random(seed)
    return [
        Document(
            " ".join(rng.choices(WORDS, k=rng.randint(1, 4))),
            metadata={"id": f"d{i}", "title": f"t{i % 5}", "date": "2024-05-0" + str(1 + i % 9)},
        )
        for i in range(n)
    ]


def _store(kind: str, docs: list[Document], emb: HashEmbeddings) -> Any:
    if kind == "faiss":
        return FAISS.from_documents(docs, emb)
    store = InMemoryVectorStore(emb)
    store.add_documents(docs)
    return store


def _ids(hits: list[Any]) -> list[str]:
    return [h.record.id for h in hits]


class Seen(BaseCallbackHandler):
    """A tracer stand-in: records every retriever run it sees."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.queries.append(query)


@pytest.mark.parametrize("kind", ["faiss", "memory"])
def test_the_same_hits_as_the_retriever_on_random_queries(kind: str) -> None:
    emb = HashEmbeddings()
    rng = random.Random(7)
    asked: set[str] = set()
    for seed in range(4):
        store = _store(kind, _docs(seed), emb)
        source = RetrieverSource(store.as_retriever())
        for _ in range(12):
            query = " ".join(rng.choices([*WORDS, "zebra"], k=rng.randint(1, 3)))
            k, offset = rng.randint(1, 30), rng.choice([0, 0, 3, 10])
            before = emb.queries
            got = source.search(query, k=k, offset=offset)
            plain = source._hits(store.as_retriever().invoke(query, k=offset + k), k, offset, None)
            assert got and _ids(got) == _ids(plain)
            assert [(h.rank, h.score) for h in got] == [(h.rank, h.score) for h in plain]
            # invoke embeds every time; the source only a text it has not seen
            assert emb.queries - before == 1 + (query not in asked)
            asked.add(query)


def test_a_journal_and_a_vector_store_on_one_embedder_embed_a_query_once(tmp_path: Path) -> None:
    emb = HashEmbeddings()
    journal = MnemonStore(tmp_path / "j.db", emb)
    journal.ingest(NS, [Message("the garden needs rain", "Ada", id="m1")], origin="c")
    source = RetrieverSource(FAISS.from_documents(_docs(1), emb).as_retriever())
    assert journal.search("garden rain", namespace=NS, k=2)
    assert emb.queries == 1
    assert source.search("garden rain", k=5) and emb.queries == 1  # the journal's vector
    assert source.search("ocean tea", k=5) and emb.queries == 2  # a new text is embedded
    assert journal.search("ocean tea", namespace=NS, k=2) is not None and emb.queries == 2
    journal.close()


def test_async_search_uses_a_kept_vector_and_finds_the_same() -> None:
    emb = HashEmbeddings()
    store = _store("faiss", _docs(2), emb)
    source = RetrieverSource(store.as_retriever())
    first = asyncio.run(source.asearch("pepper socks", k=8))  # nothing kept: ainvoke embeds
    assert emb.queries == 1
    sync = source.search("pepper socks", k=8)
    assert emb.queries == 2  # the sync face keeps what it embeds
    again = asyncio.run(source.asearch("pepper socks", k=8))
    assert emb.queries == 2 and _ids(first) == _ids(sync) == _ids(again) and first


def test_a_traced_run_still_invokes_the_retriever() -> None:
    emb = HashEmbeddings()
    retriever = _store("faiss", _docs(3), emb).as_retriever()
    source = RetrieverSource(retriever)
    seen = Seen()
    plain = source.search("garden tea", k=6)
    assert emb.queries == 1
    # a handler in the run's config (as a tracer is) sees the retriever's run
    got = RunnableLambda(lambda q: source.search(q, k=6)).invoke(
        "garden tea", config={"callbacks": [seen]}
    )
    assert seen.queries == ["garden tea"] and _ids(got) == _ids(plain)
    assert emb.queries == 2  # the retriever embedded, as it always did


@pytest.mark.parametrize("case", ["mmr", "threshold", "subclass"])
def test_other_retrievers_are_invoked(case: str) -> None:
    emb = HashEmbeddings()
    store = _store("faiss", _docs(4), emb)
    calls: list[str] = []

    class Logged(VectorStoreRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: Any, **kwargs: Any
        ) -> list[Document]:
            calls.append(query)
            return super()._get_relevant_documents(query, run_manager=run_manager, **kwargs)

    if case == "subclass":
        retriever: Any = Logged(vectorstore=store)
    elif case == "mmr":
        retriever = store.as_retriever(search_type="mmr")
    else:
        retriever = store.as_retriever(
            search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.1}
        )
    source = RetrieverSource(retriever)
    for _ in range(2):
        source.search("garden", k=4)
    assert emb.queries == 2  # embedded by the store on each call: never by a kept vector
    assert calls == (["garden", "garden"] if case == "subclass" else [])


def test_a_deletion_forgets_the_kept_query_vectors() -> None:
    emb = HashEmbeddings()
    source = RetrieverSource(_store("faiss", _docs(5), emb).as_retriever())
    source.search("wedding leeds", k=3)
    source.search("wedding leeds", k=3)
    assert emb.queries == 1
    forget_cached_content()  # what erasing records calls: a query may quote deleted text
    source.search("wedding leeds", k=3)
    assert emb.queries == 2


def test_the_kept_vectors_never_keep_an_embedder_alive() -> None:
    import gc
    import weakref

    emb = HashEmbeddings()
    source = RetrieverSource(_store("faiss", _docs(6), emb).as_retriever())
    source.search("rain", k=2)
    gone = weakref.ref(emb)
    del source, emb
    gc.collect()
    assert gone() is None
