"""The local judge weighs the question's words by their rarity in the memory (issue 12).

The pool a judge call sees was retrieved *by* the question's words, so inside it those words
look common and a rare word of the question that no pooled record holds takes most of the IDF
mass. The read path sends the namespace's own counts (``state["memory"]``: records and
document frequencies from the store's BM25 index) and the local judge computes IDF from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage
from pydantic import PrivateAttr

from mnemon_langgraph.judges._features import FEATURES, idf_of_docs, idf_of_memory, terms
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import (
    Proposition,
    build_question,
    question_id,
    without_evidence,
)
from mnemon_langgraph.read._evidence import EvidenceBuilder
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.search._bm25 import BM25Index, tokenize
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message, TermStatsSource
from tests._search_fakes import HashEmbeddings

NS = ("ada",)
TALK = [
    ("Ada", "I painted the harbour at dawn with watercolours."),
    ("Bo", "My band played a gig at the harbour on Friday."),
    ("Ada", "I am learning to bake sourdough bread this month."),
    ("Bo", "We booked a trip to Lisbon for the autumn holidays."),
    ("Ada", "Pixel the cat slept on my sourdough starter, sadly."),
    ("Bo", "The gig went well, we sold every ticket."),
]


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MnemonStore(tmp_path / "m.sqlite", embeddings=HashEmbeddings(dim=48))
    msgs = [
        Message(id=f"m{i}", speaker=sp, text=t, session=1 + i // 2)
        for i, (sp, t) in enumerate(TALK)
    ]
    s.ingest(NS, msgs, origin="test")
    yield s
    s.close()


def test_bm25_document_frequencies_count_live_documents() -> None:
    index = BM25Index()
    texts = ["red apples and pears", "green apples", "red wine"]
    index.add([1, 2, 3], ["a", "b", "c"], texts, [1, 1, 1], [0, 0, 0])
    apple, red, pear = tokenize("apples red pears")
    assert index.document_frequencies([apple, red, pear, "zzz"]) == {
        apple: 2,
        red: 2,
        pear: 1,
        "zzz": 0,
    }
    index.remove([1])  # a deleted document no longer counts
    assert index.document_frequencies([apple, pear]) == {apple: 1, pear: 0}


def test_store_counts_the_query_words_over_the_whole_namespace(store: Any) -> None:
    assert isinstance(store, TermStatsSource)
    records = list(store.records(NS))
    built = EvidenceBuilder(store).memory_terms(NS, ["Where did Ada paint the harbour?"], [])
    assert built is not None and built["records"] == len(records)
    for term, df in built["df"].items():
        assert df == sum(term in set(terms(r.text)) for r in records)
    assert built["df"][terms("paint")[0]] == 1
    # a source that cannot count sends nothing (the judge keeps the pool's counts)
    assert EvidenceBuilder(object()).memory_terms(NS, ["paint"], []) is None


def test_idf_of_memory_uses_the_memorys_counts_and_ignores_bad_input() -> None:
    pool = {"paint": 0.1, "": 2.0}
    got = idf_of_memory({"records": 1000, "df": {"paint": 4, "subject": 0}}, pool)
    assert got["paint"] == pytest.approx(np.log(1 + (1000 - 4 + 0.5) / 4.5))
    assert got["subject"] > got["paint"] > pool["paint"]
    for bad in (None, {"records": 0, "df": {}}, {"records": 10, "df": {"paint": 11}}, "x"):
        assert idf_of_memory(bad, pool)["paint"] == pool["paint"]


def _state(memory: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every pooled record says 'paint' (the pool was found by it); none says 'subject'."""
    state: dict[str, Any] = {
        "messages": [{"role": "user", "text": "Which subject did Bo paint?"}],
        "needs": [],
        "records": [
            {"id": "r0", "header": "Session 1", "text": "Bo: I paint boats, I paint the sea."},
            {"id": "r1", "header": "Session 2", "text": "Bo: Paint is expensive, paint dries."},
            {"id": "r2", "header": "Session 3", "text": "Bo: I paint and paint, every day."},
            {"id": "r3", "header": "Session 4", "text": "Bo: We sailed to the island."},
        ],
    }
    if memory is not None:
        state["memory"] = memory
    return state


class _Rows(LocalDecisionModel):
    _rows: list[np.ndarray] = PrivateAttr(default_factory=list)
    _states: list[Mapping[str, Any]] = PrivateAttr(default_factory=list)

    def _classify(self, state: Any, questions: dict[str, Any]) -> Any:
        self._states.append(state)
        return super()._classify(state, questions)

    def observe(self, group: Proposition, docs: Any, rows: np.ndarray) -> None:
        self._rows.append(rows)


def _lex(memory_idf: bool, memory: Mapping[str, Any] | None) -> tuple[np.ndarray, list[float]]:
    # calibration=None: p = σ(score) exactly, so p shows the lexical evidence alone
    judge = _Rows(lexical_only=True, memory_idf=memory_idf, calibration=None)
    ids = ["r0", "r1", "r2", "r3"]
    qs = {question_id(r, Proposition.NEEDED): build_question(Proposition.NEEDED, r) for r in ids}
    answers = judge._classify(_state(memory), qs).answers
    rows = judge._rows[-1]
    ps = [float(answers[q].noul) for q in qs]
    assert ps == pytest.approx(list(judge.scorer.probabilities(rows)), abs=1e-12)
    return rows[:, FEATURES.index("lex")], ps


def test_a_word_rare_in_memory_counts_though_every_pooled_record_holds_it() -> None:
    subject, paint = terms("subject paint")
    memory = {"records": 500, "df": {subject: 2, paint: 6, "bo": 300}}
    pool_lex, _ = _lex(False, memory)
    memory_lex, memory_p = _lex(True, memory)
    assert pool_lex[:3].max() < 0.3  # the pool's IDF: 'paint' is everywhere, 'subject' rules
    assert memory_lex[:3].min() > 2 * pool_lex[:3].max()
    # r3 holds only the speaker's name, common in the memory: it weighs less, not more
    assert memory_lex[3] < pool_lex[3]
    assert min(memory_p[:3]) > memory_p[3]


def test_without_memory_counts_the_judge_keeps_the_pools_idf() -> None:
    """Negative control: the gain above comes from ``state["memory"]``, not from the flag."""
    assert list(_lex(True, None)[0]) == pytest.approx(list(_lex(False, None)[0]))
    docs_idf = idf_of_docs([])
    assert idf_of_memory(None, docs_idf) == docs_idf


def test_read_graph_sends_the_memory_counts_to_the_local_judge_only(store: Any) -> None:
    judge = _Rows(embeddings=store.embeddings, memory_idf=True)
    graph = create_read_graph(source=store, judge=judge)
    graph.invoke(
        {"messages": [HumanMessage("Where did Ada paint at dawn?")]},
        context=ReadContext(namespace="ada"),
    )
    assert judge._states, "the judge was never called"
    n = len(list(store.records(NS)))
    for state in judge._states:
        memory = state["memory"]
        assert memory["records"] == n
        assert memory["df"][terms("paint")[0]] == 1
        assert "memory" not in without_evidence(state)  # text judges never see the numbers
