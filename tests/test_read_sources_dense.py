"""A source that ranks by embeddings only, beside the journal: asked once, re-ranked by words.

A ``RetrieverSource`` over LangChain's ``InMemoryVectorStore`` has only the vector store's
dense ranking. With several sources the read path asks it once per turn for
``ReadSettings.dense_candidates`` documents and re-ranks them by the words of the turn's
planned searches (the package's BM25 fused with the retriever's order), so a document
that shares the question's rare word but not its gist still reaches the pool.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._pooling import keyword_rerank
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.sources import RetrieverSource
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.types import SearchHit

NS = ("users", "ada")
QUESTION = "What did Ada say about the trip to Zanzibar with her sister?"
RARE = "Zanzibar"


class _Gist(Embeddings):
    """Every query points one way; a filler document close to it (each a little further
    than the one before), the document holding the rare word away from it: its dense rank
    is last, whatever the query. Counts the queries it embeds, and (``searches``) the
    searches of the vector store built with it (:class:`_Counted`): a query text searched
    again is searched by its kept vector, not embedded again."""

    def __init__(self) -> None:
        self.queries = 0
        self.searches = 0

    def _vector(self, text: str) -> list[float]:
        if RARE in text:
            return [0.0, 1.0]
        n = int(text.rsplit(" ", 1)[-1]) if text.rsplit(" ", 1)[-1].isdigit() else 0
        return [1.0, 0.001 * (n + 1)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return [1.0, 0.0]


class _Counted(InMemoryVectorStore):
    """LangChain's ``InMemoryVectorStore``, counting its searches in its embedder."""

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        self.embedding.searches += 1  # type: ignore[attr-defined]
        return super().similarity_search_with_score_by_vector(embedding, k, **kwargs)


def _documents(fillers: int = 80) -> list[Document]:
    docs = [
        Document(
            f"Ada talked about her sister and a trip, filler {i}",
            metadata={"id": f"f{i}", "date": "2024-03-01", "title": "chat"},
        )
        for i in range(fillers)
    ]
    docs.append(
        Document(
            f"Ada: we are flying to {RARE} in June",
            metadata={"id": "rare", "date": "2024-03-02", "title": "chat"},
        )
    )
    return docs


def _graph(embedder: _Gist, **settings: Any) -> Any:
    vectors = _Counted(embedder)
    vectors.add_documents(_documents())
    journal = InMemorySearchSource(
        [
            make_record(
                f"j{i}",
                f"Ada: the garden needs water, day {i}",
                namespace=NS,
                session=1,
                date=datetime(2024, 1, 1 + i),
                position=i,
            )
            for i in range(5)
        ]
    )
    return create_read_graph(
        sources={"memory": journal, "docs": RetrieverSource(vectors.as_retriever())},
        judge=ScriptedDecisionModel(answers=lambda *_: 0.8),
        settings=ReadSettings(**settings),
    )


def _view(graph: Any, question: str = QUESTION) -> Any:
    out = graph.invoke({"messages": [HumanMessage(question)]}, context=ReadContext(namespace=NS))
    return out["view"]


def test_keyword_rerank_brings_a_rare_word_match_forward() -> None:
    records = [
        make_record(f"d{i}", f"Ada: a trip with her sister {i}", namespace=NS, position=i)
        for i in range(30)
    ]
    records.append(make_record("z", f"Ada: flying to {RARE}", namespace=NS, position=30))
    hits = [SearchHit(r, i, 0.0, dense_rank=i) for i, r in enumerate(records)]
    out = keyword_rerank(hits, f"flying to {RARE}")
    assert out[0].record.id == "z"  # last by the retriever, first by its words
    assert out[0].dense_rank == 30 and out[0].bm25_rank == 0
    # a word every candidate shares counts little beside the rare one: z is fused up
    shared = [h.record.id for h in keyword_rerank(hits, f"trip to {RARE}")]
    assert shared.index("z") < 15
    assert [h.rank for h in out] == list(range(31))
    assert sorted(h.record.id for h in out) == sorted(r.id for r in records)
    assert keyword_rerank([], "anything") == []
    # no shared word: the retriever's order stands
    plain = keyword_rerank(hits[:5], "unrelated words")
    assert [h.record.id for h in plain] == [f"d{i}" for i in range(5)]
    assert all(h.bm25_rank is None for h in plain)


def test_a_dense_only_sources_candidates_are_reranked_by_words() -> None:
    embedder = _Gist()
    view = _view(_graph(embedder, dense_searches=1))
    docs = [r for r in view.records if r.source == "docs"]
    assert docs, "the document source fed the View"
    assert any(RARE in r.text for r in docs), "the rare word's document reached the View"
    docs_searches = [s for s in view.trace["searches"] if s.get("read_source") == "docs"]
    assert docs_searches[0]["origin"] == "message+once" and len(docs_searches) > 1
    # one call to the document source for the turn: the vector store searched once;
    # its other searches (keywords, entities, later rounds) re-ranked its candidates
    assert embedder.searches == 1 and embedder.queries == 1


def test_dense_searches_ask_the_source_once_per_planned_search_and_no_more() -> None:
    embedder = _Gist()
    view = _view(_graph(embedder, dense_searches=3))
    docs_searches = [s for s in view.trace["searches"] if s.get("read_source") == "docs"]
    asking = [s for s in docs_searches if s["origin"].endswith("+once")]
    assert len(asking) == 3 and embedder.searches == 3
    assert len(docs_searches) > 3  # later rounds were served from the candidates
    assert any(RARE in r.text for r in view.records)


def test_the_date_search_of_a_dense_only_source_is_served_within_its_dates() -> None:
    embedder = _Gist()
    view = _view(
        _graph(embedder, dense_searches=1), f"What did Ada say in March 2024 about {RARE}?"
    )
    dated = [s for s in view.trace["searches"] if s["origin"] == "date"]
    assert {s["read_source"] for s in dated} == {"memory", "docs"}
    assert embedder.searches == 1  # the date search asked nothing more of the vector store
    docs = [r for r in view.records if r.source == "docs"]
    assert docs and any(RARE in r.text for r in docs)


def test_without_dense_candidates_every_search_goes_and_the_rare_document_is_missed() -> None:
    embedder = _Gist()
    view = _view(_graph(embedder, dense_candidates=None))
    assert not any(RARE in r.text for r in view.records)
    docs = [s for s in view.trace["searches"] if s.get("read_source") == "docs"]
    assert embedder.searches >= len(docs) > 1  # every search (and page) searches the store
    texts = {s["query"] for s in docs}
    assert embedder.queries == len(texts) < len(docs)  # a text searched again: its kept vector


def test_a_retriever_that_ranks_by_words_is_not_reranked() -> None:
    vectors = InMemoryVectorStore(_Gist())
    assert RetrieverSource(vectors.as_retriever()).ranks_keywords is False
    assert RetrieverSource(vectors.as_retriever(), dense=False).ranks_keywords is True
    assert RetrieverSource(vectors.as_retriever(), keywords=True).ranks_keywords is True


def test_dense_candidates_must_be_positive() -> None:
    from mnemon_langgraph.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        ReadSettings(dense_candidates=0)


def test_a_page_served_from_the_candidates_is_the_same_with_bounds_that_hold_every_record() -> None:
    """A later page of the asking search and a page of another search, served from the
    candidates: without bounds only the page's own records are rebuilt; the page is the
    one the bounded walk (every record inside the bounds) gives, ranks and all."""
    from mnemon_langgraph.read._nodes_retrieve import RetrieveNode, _Served
    from mnemon_langgraph.read._pooling import record_to_dict
    from mnemon_langgraph.types import SearchFilters

    class _Node(RetrieveNode):
        def __init__(self, bounds: SearchFilters | None) -> None:
            self.settings = ReadSettings()
            self.sources = {}
            self.bounds = bounds

        def _search_kwargs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            got = super()._search_kwargs(*args, **kwargs)
            return got if self.bounds is None else {**got, "filters": self.bounds}

    records = [
        make_record(
            f"d{i}",
            f"Ada: note {i} about {'Zanzibar' if i % 7 == 0 else 'home'}",
            namespace=NS,
            session=1 + i // 10,
            date=datetime(2024, 1, 1 + i),
            position=i,
        )
        for i in range(30)
    ]
    cache = [
        {**record_to_dict(r), "dense_rank": i, "bm25_rank": None} for i, r in enumerate(records)
    ]
    searches = [
        {"index": 0, "query": "home", "read_source": "docs", "cache": cache, "rerank": "home"},
        {
            "index": 1,
            "query": "Zanzibar",
            "read_source": "docs",
            "over": "docs",
            "rerank": "Zanzibar",
        },
    ]
    everything = SearchFilters(session_from=1, session_to=99)
    for idx, offset in ((0, 20), (0, 0), (1, 0), (1, 5)):
        plain = _Node(None)._from_candidates(searches, idx, offset, (), None, _Served(NS))
        bounded = _Node(everything)._from_candidates(searches, idx, offset, (), None, _Served(NS))
        assert plain == bounded and plain
        assert [h.rank for h in plain] == list(range(offset, offset + len(plain)))
    first = _Node(None)._from_candidates(searches, 1, 0, (), None, _Served(NS))
    assert "Zanzibar" in first[0].record.text  # the other search's own words lead
