"""A RetrieverSource's documents → records and hits: the batched conversion is the plain
per-document one on random documents.

The plain formula: each document's id (its ``id_key`` metadata, else ``Document.id``, else
a hash of its title and text), a document seen twice counted once, each converted alone
(``_convert``); hits numbered from the top of the filtered records, the page cut after.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import FakeEmbeddings
from langchain_core.vectorstores import InMemoryVectorStore

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.read.sources import RetrieverSource
from mnemon_langgraph.read.sources import retriever as retriever_module
from mnemon_langgraph.read.sources._adapt import hits_of, session_of
from mnemon_langgraph.records._chunking import stable_hash
from mnemon_langgraph.search._fusion import reciprocal_rank
from mnemon_langgraph.types import MAX_SESSION, SearchFilters, SearchHit

WORDS = ["garden", "ocean", "pepper", "beagle", "wedding", "leeds", "nurse", "rain"]


def _source() -> RetrieverSource:
    """A source whose retriever is never searched here (only its documents converted)."""
    return RetrieverSource(
        InMemoryVectorStore(FakeEmbeddings(size=4)).as_retriever(), position_key="position"
    )


def _doc(rng: random.Random, n: int) -> Document:
    meta: dict[str, Any] = {}
    pick = rng.random
    if pick() < 0.7:
        meta["id"] = rng.choice([f"d{n % 9}", "", None, n % 5])
    if pick() < 0.7:
        meta["title"] = rng.choice(["t1", "t2", "  ", None, ["a", "list"]])
    if pick() < 0.5:
        meta["position"] = rng.choice([0, 3, -1, True, "2"])
    if pick() < 0.6:
        meta["speaker"] = rng.choice(["Ada", "Bo", "", None])
    if pick() < 0.4:
        meta["role"] = rng.choice(["user", "assistant", "robot"])
    if pick() < 0.7:
        meta["date"] = rng.choice(["2024-05-01", "2024-05-02T10:00", "not a date", 1.7e9])
    text = " ".join(rng.choices(WORDS, k=rng.randint(0, 6)))
    if pick() < 0.1:
        text = " ".join(rng.choices(WORDS, k=900))  # cut into several records
    return Document(text, metadata=meta, id=rng.choice([None, f"v{n % 7}"]))


def _plain(source: RetrieverSource, docs: list[Document]) -> list[Any]:
    out: list[Any] = []
    seen: set[str] = set()
    for doc in docs:
        meta = doc.metadata or {}
        given = meta.get("id")
        if given is None or given == "":
            given = doc.id
        if given is None or given == "":
            doc_id = "c-" + stable_hash(meta.get("title"), doc.page_content)
        else:
            doc_id = str(given)
        if doc_id in seen:
            continue
        seen.add(doc_id)
        out.extend(source._convert(doc, doc_id))
    return out


def test_records_are_the_plain_conversion_on_random_documents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retriever_module, "CONVERTED_DOCUMENTS", 12)  # eviction too
    rng = random.Random(45)
    source = _source()
    for _ in range(60):
        docs = [_doc(rng, rng.randint(0, 30)) for _ in range(rng.randint(0, 25))]
        expected = _plain(source, docs)
        assert source.records(docs) == expected
        assert source.records(docs) == expected  # the kept conversions, again
        assert len(source._converted) <= 12
    assert any(source.records([_doc(rng, 1)]) for _ in range(20))  # not all empty


def test_a_non_document_is_refused() -> None:
    with pytest.raises(InputError):
        _source().records([Document("fine"), "not a document"])  # type: ignore[list-item]


def _plain_hits(records: list[Any], k: int, offset: int, filters: Any, dense: bool) -> list[Any]:
    kept = [r for r in records if filters is None or filters.accepts(r)]
    return [
        SearchHit(
            r,
            rank,
            reciprocal_rank(rank),
            bm25_rank=None if dense else rank,
            dense_rank=rank if dense else None,
        )
        for rank, r in enumerate(kept)
    ][offset : offset + k]


def test_hits_are_the_plain_page_on_random_records() -> None:
    rng = random.Random(48)
    source = _source()
    docs = [_doc(rng, n) for n in range(40)]
    records = source.records(docs)
    assert records
    for _ in range(200):
        pool = rng.sample(records, rng.randint(0, len(records)))
        k, offset, dense = rng.randint(1, 30), rng.randint(0, 30), rng.random() < 0.5
        filters = rng.choice(
            [
                None,
                SearchFilters(date_from=datetime(2024, 5, 2)),
                SearchFilters(session_from=1, session_to=MAX_SESSION // 2),
            ]
        )
        got = hits_of(pool, k=k, offset=offset, filters=filters, dense=dense)
        assert got == _plain_hits(pool, k, offset, filters, dense)


def test_a_groups_session_is_the_hash_of_its_name() -> None:
    for group in ["t:session 1", "d:x", "t:" + "é" * 50, "t:session 1"]:
        assert session_of(group) == 1 + int(stable_hash("session", group), 16) % MAX_SESSION
