"""A record's likeness to its need's earlier positives reaches the local judge (issue 12).

A record found by following a positive (the reply to it, the same event told later) often
shares nothing with the question's words; the read path therefore sends, per need, its best
stored-vector cosine with the records the need accepted in earlier rounds
(``evidence.sim.positives``), and the local judge lets ``positive_weight × positive`` stand in
for its likeness to the query. Every p stays a strictly increasing function of one score.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage
from pydantic import PrivateAttr

from mnemon_langgraph.judges.features import FEATURES, Doc
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import Proposition, build_question, question_id
from mnemon_langgraph.read.evidence import EvidenceBuilder
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import PoolRecord, ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message
from tests._search_fakes import HashEmbeddings

NS = ("ada",)
TALK = [
    ("Ada", "I adopted a grey cat called Pixel last spring."),
    ("Bo", "Lovely! Does Pixel like the garden?"),
    ("Ada", "She hunts moths in the garden every evening."),
    ("Bo", "My band played a gig at the harbour on Friday."),
    ("Ada", "I am learning to bake sourdough bread this month."),
    ("Bo", "We booked a trip to Lisbon for the autumn holidays."),
    ("Ada", "Pixel the cat slept on my sourdough starter, sadly."),
    ("Bo", "The harbour gig went well, we sold every ticket."),
    ("Ada", "Pixel caught a moth on the garden wall at dusk."),
    ("Bo", "Lisbon was sunny and the trams were packed."),
    ("Ada", "The sourdough loaf came out flat again."),
    ("Bo", "Our band will record an album in the winter."),
]


class _Spy(LocalDecisionModel):
    """The local judge, keeping every state it was asked about and its feature rows."""

    _states: list[Mapping[str, Any]] = PrivateAttr(default_factory=list)
    _rows: list[np.ndarray] = PrivateAttr(default_factory=list)

    def _classify(self, state: Any, questions: dict[str, Any]) -> Any:
        self._states.append(state)
        return super()._classify(state, questions)

    def observe(self, group: Proposition, docs: Any, rows: np.ndarray) -> None:
        self._rows.append(rows)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MnemonStore(tmp_path / "p.sqlite", embeddings=HashEmbeddings(dim=48))
    msgs = [
        Message(id=f"m{i}", speaker=sp, text=t, session=1 + i // 2)
        for i, (sp, t) in enumerate(TALK)
    ]
    s.ingest(NS, msgs, source="test")
    yield s
    s.close()


def _pool(ids: list[str]) -> list[PoolRecord]:
    return [
        PoolRecord(id=rid, found=[[0, i]], bm25_rank=i, dense_rank=i) for i, rid in enumerate(ids)
    ]


def test_evidence_carries_each_records_best_cosine_with_each_needs_positives(store: Any) -> None:
    ids = [r.id for r in store.records(NS)]
    vec = store.stored_vectors(NS, ids)
    builder = EvidenceBuilder(store)
    pool = _pool(ids[:3])
    built, _ = builder.build(
        NS, pool, ["tell me about the cat"], ["cat", "bread"], [[ids[0], ids[5]], []]
    )
    for rid in ids[1:3]:
        want = max(float(vec[rid] @ vec[ids[0]]), float(vec[rid] @ vec[ids[5]]))
        got = built[rid]["sim"]["positives"]
        assert got[0] == pytest.approx(want, abs=1e-4)
        assert got[1] is None  # a need without positives has no such evidence
    # a positive is never compared with itself (it would score 1)
    assert built[ids[0]]["sim"]["positives"][0] == pytest.approx(
        float(vec[ids[0]] @ vec[ids[5]]), abs=1e-4
    )
    # without positives (round 1) nothing is added
    first, _ = builder.build(NS, pool, ["tell me about the cat"], ["cat", "bread"])
    assert all("positives" not in first[rid]["sim"] for rid in ids[:3])


def _state(positive: list[float | None]) -> dict[str, Any]:
    """Two records alike to every query and to the question's words; only ``positive`` differs."""
    sim = {"latest": 0.2, "context": None, "needs": [0.2, 0.2]}
    return {
        "messages": [{"role": "user", "text": "What did they do together?"}],
        "needs": [{"index": 0, "text": "shared activity"}, {"index": 1, "text": "their plans"}],
        "records": [
            {"id": "r0", "header": "Session 2", "text": "Bo: We went kayaking at dawn."},
            {"id": "r1", "header": "Session 2", "text": "Bo: The weather was grey all week."},
        ],
        "_sims": [
            dict(sim, positives=[positive[0], None]),
            dict(sim, positives=[positive[1], None]),
        ],
    }


def _ask(judge: LocalDecisionModel, positive: list[float | None]) -> dict[str, float]:
    state = _state(positive)
    for record, sim in zip(state["records"], state.pop("_sims"), strict=True):
        record["evidence"] = {"sim": sim, "rank": 0, "rrf": 0.01, "searches": 1}
    qs = {}
    for rid in ("r0", "r1"):
        for prop in (Proposition.SCREEN, Proposition.NEEDED):
            qs[question_id(rid, prop)] = build_question(prop, rid)
        for need in (0, 1):
            qid = question_id(rid, Proposition.SATISFIES, need)
            qs[qid] = build_question(Proposition.SATISFIES, rid, need_index=need, need_text="x")
    answers = judge._classify(state, qs).answers
    return {qid: float(a.noul) for qid, a in answers.items()}


def test_a_record_like_the_needs_positive_is_judged_more_likely_needed() -> None:
    judge = LocalDecisionModel(embeddings=HashEmbeddings(dim=48), positive_weight=0.75)
    p = _ask(judge, [0.9, 0.1])
    for prop in (Proposition.SCREEN, Proposition.NEEDED):
        assert p[question_id("r0", prop)] > p[question_id("r1", prop)]
    assert (
        p[question_id("r0", Proposition.SATISFIES, 0)]
        > p[question_id("r1", Proposition.SATISFIES, 0)]
    )
    # need 1 has no positives: its satisfies judgments are untouched
    assert p[question_id("r0", Proposition.SATISFIES, 1)] == pytest.approx(
        p[question_id("r1", Proposition.SATISFIES, 1)]
    )


def test_positive_weight_zero_ignores_the_evidence() -> None:
    """Negative control: the gap above comes from ``positive_weight``, not from the texts."""
    p = _ask(LocalDecisionModel(embeddings=HashEmbeddings(dim=48), positive_weight=0.0), [0.9, 0.1])
    for prop in (Proposition.SCREEN, Proposition.NEEDED):
        assert p[question_id("r0", prop)] == pytest.approx(p[question_id("r1", prop)])


def test_positive_column_and_one_score_per_proposition() -> None:
    """The ``positive`` column is in the rows, and p = σ(w·x + b) of those rows."""

    judge = _Spy(embeddings=HashEmbeddings(dim=48), positive_weight=0.75)
    state = _state([0.9, None])
    for record, sim in zip(state["records"], state.pop("_sims"), strict=True):
        record["evidence"] = {"sim": sim}
    qs = {
        question_id(r, Proposition.NEEDED): build_question(Proposition.NEEDED, r)
        for r in ("r0", "r1")
    }
    answers = judge._classify(state, qs).answers
    rows = judge._rows[-1]
    assert rows.shape[1] == len(FEATURES)
    assert rows[:, FEATURES.index("positive")].tolist() == pytest.approx([0.9, 0.0])
    scores = judge.scorer.scores(rows)
    ps = np.array([answers[q].noul for q in qs])
    assert ps == pytest.approx(1 / (1 + np.exp(-scores)), abs=1e-12)
    assert rows[0, FEATURES.index("sem")] == pytest.approx(0.75 * 0.9)


def test_doc_reads_the_positive_similarity_per_need() -> None:
    doc = Doc({"id": "r0", "text": "x", "evidence": {"sim": {"positives": [0.7, None]}}}, 0)
    assert doc.stored_sim("positive:0") == 0.7
    assert doc.stored_sim("positive:1") is None and doc.stored_sim("positive:2") is None


def test_later_rounds_of_a_read_send_the_positives_likeness(store: Any) -> None:
    """Through the real graph: records judged after a need found positives carry the evidence.

    One record per page, so the first round pools only the best match and the next rounds
    (paging, following the positive) bring in the rest.
    """
    judge = _Spy(embeddings=store.embeddings)
    settings = ReadSettings(page_records=1, searches_per_plan=1, follow_records=2)
    graph = create_read_graph(source=store, judge=judge, settings=settings)
    graph.invoke(
        {"messages": [HumanMessage("What does Pixel the cat do in the garden?")]},
        context=ReadContext(namespace="ada"),
    )
    sims = [
        [r["evidence"]["sim"] for r in s["records"] if "sim" in r.get("evidence", {})]
        for s in judge._states
    ]
    assert sims[0] and all("positives" not in sim for sim in sims[0])  # round 1: none yet
    later = [sim["positives"] for call in sims[1:] for sim in call if "positives" in sim]
    assert later, "no record judged after the first positive carried its likeness to it"
    assert all(len(p) == len(judge._states[-1]["needs"]) for p in later)
    assert all(0.0 < v <= 1.0 for p in later for v in p if v is not None)
