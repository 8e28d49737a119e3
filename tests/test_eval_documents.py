"""The evals' --documents-share and --distractors: a history split across a journal and a
document source (RetrieverSource over an InMemoryVectorStore)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
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
