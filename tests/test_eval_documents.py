"""The evals' --documents-share and --distractors: a history split across a journal and a
document source (RetrieverSource over an InMemoryVectorStore)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from _paths import REPO
from langchain_core.embeddings import DeterministicFakeEmbedding

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.eval.documents import (
    DISTRACTOR_PREFIX,
    DocumentSplit,
    documents_of,
    split_sessions,
)
from mnemon_langgraph.store.base import MnemonStore
from mnemon_langgraph.types import Message

EMB = DeterministicFakeEmbedding(size=384)
SAMPLE = REPO / "notebooks" / "data" / "allotment_year.json"


def _history(sessions: int = 10, turns: int = 3) -> list[Message]:
    return [
        Message(
            f"session {s} turn {t}: " + ("a long sentence of the turn. " * (40 if t == 1 else 1)),
            "user" if t % 2 == 0 else "assistant",
            role="user" if t % 2 == 0 else "assistant",
            id=f"D{s}:{t}",
            timestamp=datetime(2024, 1, s, 10, t),
            session=s,
        )
        for s in range(1, sessions + 1)
        for t in range(turns)
    ]


def test_the_split_is_seeded_by_history_and_takes_the_share_of_sessions() -> None:
    msgs = _history()
    journal, docs = split_sessions(msgs, 0.5, seed=0, key="q1")
    assert len({m.session for m in docs}) == 5 and len(journal) + len(docs) == len(msgs)
    assert {m.session for m in journal}.isdisjoint(m.session for m in docs)
    assert split_sessions(msgs, 0.5, seed=0, key="q1") == (journal, docs)
    others = [split_sessions(msgs, 0.5, seed=0, key=f"q{n}")[1] for n in range(2, 8)]
    assert any(o != docs for o in others)  # each history its own choice
    assert split_sessions(msgs, 0.0, seed=0, key="q1") == (msgs, [])
    assert split_sessions(msgs, 1.0, seed=0, key="q1") == ([], msgs)
    with pytest.raises(ConfigurationError):
        split_sessions(msgs, 1.5, seed=0, key="q1")


def test_one_dated_document_per_turn_at_its_journal_position() -> None:
    docs = documents_of(_history(sessions=2))
    assert len(docs) == 6
    first = docs[:3]
    assert [d.metadata["id"] for d in first] == ["D1:0", "D1:1", "D1:2"]
    assert {d.metadata["title"] for d in first} == {"session 1"}
    # turn 1 is long (several records), so turn 2 starts after its pieces
    assert [d.metadata["position"] for d in first][:2] == [0, 1]
    assert first[2].metadata["position"] > 2
    assert first[0].metadata["date"] == "2024-01-01T10:00:00"


def test_the_split_store_keeps_each_part_in_its_place(tmp_path: Path) -> None:
    msgs = _history()
    with MnemonStore(tmp_path / "j.db", EMB) as journal:
        split = DocumentSplit(journal, EMB, share=0.5, seed=3)
        split.ingest(("h", "1"), msgs, origin="test")
        in_journal = {m for r in journal.records(("h", "1")) for m in r.message_ids}
        _, moved = split_sessions(msgs, 0.5, seed=3, key="h/1")
        assert in_journal == {m.id for m in msgs} - {m.id for m in moved}
        assert split.documents(("h", "1")) == len(moved)
        # the document source answers for this history only, from the moved turns
        hits = split.source.search("session turn", namespace=("h", "1"), k=100)
        assert {h.record.message_ids[0] for h in hits} <= {m.id for m in moved}
        assert len({h.record.message_ids[0] for h in hits}) == len(moved)
        assert split.source.search("session", namespace=("h", "2")) == []
        # records(): both parts, ids as a two-source read graph pools them
        ids = {r.id.split(":", 1)[0] for r in split.records(("h", "1"))}
        assert ids == {"memory", "docs"}
        split.erase_namespace(("h", "1"), actor="test")
        assert split.documents(("h", "1")) == 0 and not journal.holds_namespace(("h", "1"))


def test_distractors_are_the_other_histories_with_ids_that_never_match(tmp_path: Path) -> None:
    mine, theirs = _history(sessions=2), _history(sessions=3)
    with MnemonStore(tmp_path / "j.db", EMB) as journal:
        split = DocumentSplit(journal, EMB, distractors={"26": mine, "30": theirs})
        split.ingest(("locomo", "26"), mine, origin="test")
        in_journal = {m for r in journal.records(("locomo", "26")) for m in r.message_ids}
        assert in_journal == {m.id for m in mine}  # the whole history in the journal
        hits = split.source.search("turn", namespace=("locomo", "26"), k=100)
        ids = {h.record.message_ids[0] for h in hits}
        assert ids and all(i.startswith(f"{DISTRACTOR_PREFIX}30/D") for i in ids)
    with pytest.raises(ConfigurationError):
        DocumentSplit(journal, EMB, share=0.5, distractors={"26": mine})


def test_the_ensemble_retriever_finds_a_turn_by_its_words(tmp_path: Path) -> None:
    """``--documents-retriever ensemble``: BM25Retriever + the vector store, read as a source
    that ranks by words (so the read path sends it every search, unreranked)."""
    msgs = _history()
    msgs[4] = Message(
        "we bought a Zanzibar teapot",
        "user",
        role="user",
        id=msgs[4].id,
        timestamp=msgs[4].timestamp,
        session=msgs[4].session,
    )
    with MnemonStore(tmp_path / "j.db", EMB) as journal:
        split = DocumentSplit(journal, EMB, share=1.0, retriever="ensemble")
        split.ingest(("h", "1"), msgs, origin="test")
        assert split.source.ranks_keywords is True
        retriever = split._histories[("h", "1")].source.retriever
        assert [type(r).__name__ for r in retriever.retrievers] == [
            "BM25Retriever",
            "VectorStoreRetriever",
        ]
        # BM25 ranks it first; the fake vectors rank it anywhere: equal-weight RRF of the two
        # puts it above every turn that is not within the first 11 of both rankings
        hits = split.source.search("Zanzibar", namespace=("h", "1"), k=100)
        ids = [h.record.message_ids[0] for h in hits]
        assert msgs[4].id in ids[:12]
        plain = DocumentSplit(journal, EMB, share=1.0)
        assert plain.source.ranks_keywords is False
    with pytest.raises(ConfigurationError):
        DocumentSplit(journal, EMB, share=0.5, retriever="faiss-hnsw")


def test_a_faiss_document_store_answers_as_the_in_memory_one(tmp_path: Path) -> None:
    """``--documents-store faiss``: LangChain community's FAISS (flat index) holds the
    documents; with normalised vectors its L2 order is the in-memory store's cosine order,
    so both sources return the same turns in the same order."""
    from langchain_community.vectorstores import FAISS

    from mnemon_langgraph.search.embeddings import default_embeddings

    emb = default_embeddings()
    msgs = _history(sessions=4)
    msgs[4] = Message(
        "we adopted a grey cat called Pepper",
        "user",
        role="user",
        id=msgs[4].id,
        timestamp=msgs[4].timestamp,
        session=msgs[4].session,
    )
    with MnemonStore(tmp_path / "j.db", emb) as journal:
        both = {}
        for kind in ("memory", "faiss"):
            split = DocumentSplit(journal, emb, share=1.0, vector_store=kind)
            split.ingest(("h", kind), msgs, origin="test")
            both[kind] = split
        vectors = both["faiss"]._histories[("h", "faiss")].vectors
        assert isinstance(vectors, FAISS) and vectors.index.ntotal == len(msgs)
        hits = {
            k: both[k].source.search("what pet did we get", namespace=("h", k), k=5) for k in both
        }
        ids = {k: [h.record.message_ids[0] for h in v] for k, v in hits.items()}
        assert ids["faiss"][0] == msgs[4].id and ids["faiss"] == ids["memory"]
        assert hits["faiss"][0].record.date == msgs[4].timestamp
        # records(): the FAISS history's documents as the read graph pools them
        docs = [r for r in both["faiss"].records(("h", "faiss")) if r.id.startswith("docs:")]
        assert {m for r in docs for m in r.message_ids} == {m.id for m in msgs}
    with pytest.raises(ConfigurationError, match="vector store"):
        DocumentSplit(journal, emb, share=0.5, vector_store="chroma")


# --- the command line ------------------------------------------------------------------------


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.integration  # an eval pipeline end to end
def test_longmemeval_documents_share_reads_both_stores(tmp_path: Path) -> None:
    from _longmemeval_fixture import write

    from mnemon_langgraph.cli import main

    write(tmp_path / "lme.json")
    args = ["eval", "longmemeval", str(tmp_path / "lme.json"), "--embeddings", "fake"]
    args += ["--no-embedding-cache", "--budget-curve", "12000", "--baseline-k", "3"]
    args += ["--no-progress", "--no-plots", "--documents-share", "0.5"]
    assert main([*args, "--out", str(tmp_path / "split")]) == 0
    rows = _rows(tmp_path / "split")
    by_source = [r["view_chars_by_source"] for r in rows if "view_chars_by_source" in r]
    assert by_source and all(set(s) <= {"memory", "docs"} for s in by_source)
    assert any(set(s) == {"memory", "docs"} for s in by_source)
    assert len(by_source) == len(rows)  # every View of a read of both stores says its shares
    summary = json.loads((tmp_path / "split" / "summary.json").read_text())
    assert "--documents-share 0.5 --documents-seed 0" in summary["metadata"]["command"]


@pytest.mark.integration  # an eval pipeline end to end
def test_locomo_distractors_are_other_conversations(tmp_path: Path) -> None:
    from mnemon_langgraph.cli import main

    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    files = []
    for name in ("mira", "other"):
        (tmp_path / f"{name}.json").write_text(json.dumps(sample), encoding="utf-8")
        files.append(str(tmp_path / f"{name}.json"))
    args = ["eval", "locomo", *files, "--conversations", "mira", "--limit-questions", "2"]
    args += ["--embeddings", "fake", "--no-progress", "--no-plots", "--distractors"]
    args += ["--documents-store", "faiss"]
    assert main([*args, "--out", str(tmp_path / "d")]) == 0
    rows = _rows(tmp_path / "d")
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert "--distractors --documents-store faiss" in summary["metadata"]["command"]
    assert rows and all(r["conversation"] == "mira" for r in rows)
    # both files hold the same turns: the distractors are the other file's, their ids
    # prefixed so that they never count as evidence of this conversation
    shown = [m for r in rows for m in r["view_message_ids"] if m.startswith(DISTRACTOR_PREFIX)]
    assert shown and all(m.startswith(f"{DISTRACTOR_PREFIX}other/D") for m in shown)
    assert any("distractors" in r.get("view_chars_by_source", {}) for r in rows)


@pytest.mark.integration  # an eval pipeline end to end
def test_beam_documents_share_reads_both_stores(tmp_path: Path) -> None:
    from test_beam import _release_tree

    from mnemon_langgraph.cli import main

    root = _release_tree(tmp_path / "beam", 2)
    args = ["eval", "beam", str(root), "--out", str(tmp_path / "out"), "--embeddings", "fake"]
    args += ["--no-embedding-cache", "--baseline-k", "3", "--no-progress", "--no-plots"]
    assert main([*args, "--documents-share", "0.5"]) == 0
    rows = _rows(tmp_path / "out")
    sources = [set(r["view_chars_by_source"]) for r in rows if "view_chars_by_source" in r]
    assert {"memory", "docs"} in sources
