"""Retrieval evidence reaches the local judge: stored-vector similarities and pool ranks.

The read path sends every pooled record's cosine with the queries (from the journal's
stored vectors, never a new embedding of the record) and its ranks; the local judge uses
them instead of embedding the records, and every p stays a strictly increasing function
of one score.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage
from pydantic import PrivateAttr

from mnemon_langgraph.judges._features import FEATURES, Doc, terms
from mnemon_langgraph.judges.learned import JudgeWeights
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import (
    Proposition,
    build_question,
    question_id,
    without_evidence,
)
from mnemon_langgraph.read._evidence import EvidenceBuilder, query_texts, rank_evidence
from mnemon_langgraph.read._judging import JudgeRequest, plan_wave
from mnemon_langgraph.read._nodes import Reader
from mnemon_langgraph.read._pooling import record_to_dict
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.planner import RulePlanner
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import PoolRecord, ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message
from tests._conversations import TALK
from tests._search_fakes import HashEmbeddings

NS = ("ada",)


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
    emb = HashEmbeddings(dim=48)
    s = MnemonStore(tmp_path / "j.sqlite", embeddings=emb)
    msgs = [
        Message(id=f"m{i}", speaker=sp, text=t, session=1 + i // 4)
        for i, (sp, t) in enumerate(TALK)
    ]
    s.ingest(NS, msgs, origin="test")
    yield s
    s.close()


def _ask(store: Any, judge: LocalDecisionModel, question: str) -> Any:
    graph = create_read_graph(source=store, judge=judge)
    return graph.invoke(
        {"messages": [HumanMessage(question)]}, context=ReadContext(namespace="ada")
    )


def test_judge_gets_stored_vector_similarities_and_ranks_without_re_embedding(store: Any) -> None:
    emb = store.embeddings
    judge = _Spy(embeddings=emb)
    before = emb.documents
    asked: list[str] = []
    embed_query = emb.embed_query

    def counted(text: str) -> list[float]:
        asked.append(text)
        return embed_query(text)

    emb.embed_query = counted
    _ask(store, judge, "What is the name of Ada's cat?")
    records = [r for s in judge._states for r in s["records"]]
    assert records, "the judge was asked about no record"
    # no record was embedded again, and each query text once for the searches and the
    # evidence together: the evidence takes the store's own query vectors
    assert emb.documents == before
    assert "What is the name of Ada's cat?" in asked and len(asked) == len(set(asked))
    stored = store.stored_vectors(NS, [r.id for r in store.records(NS)])
    by_text = {r.text: stored[r.id] for r in store.records(NS)}
    latest = np.asarray(emb._vec("What is the name of Ada's cat?"))
    for r in records:
        ev = r["evidence"]
        assert ev["sim"]["latest"] == pytest.approx(float(latest @ by_text[r["text"]]), abs=1e-4)
        assert len(ev["sim"]["needs"]) == len(judge._states[0]["needs"])
        assert ev["rank"] >= 0 and ev["searches"] >= 1 and ev["rrf"] > 0
    # the rank features are in the judge's rows (not all zero)
    rows = np.vstack(judge._rows)
    assert rows.shape[1] == len(FEATURES)
    assert rows[:, FEATURES.index("rrf")].min() > 0
    assert rows[:, FEATURES.index("fused_rank")].max() > 0


def test_stored_similarities_give_the_same_scores_as_embedding_the_records(store: Any) -> None:
    """Same embedder: the stored-vector ``sem`` equals the re-embedded one (no drift)."""
    emb = store.embeddings
    spy = _Spy(embeddings=emb)
    _ask(store, spy, "Where did the band play a gig?")
    state = spy._states[-1]
    qs = {
        question_id(r["id"], Proposition.NEEDED): build_question(Proposition.NEEDED, r["id"])
        for r in state["records"]
    }
    a = _Spy(embeddings=emb)
    a._classify(state, qs)
    b = _Spy(embeddings=HashEmbeddings(dim=48))
    b._classify(without_evidence(state), qs)
    sem = FEATURES.index("sem")
    assert np.allclose(a._rows[0][:, sem], b._rows[0][:, sem], atol=1e-4)
    assert a._rows[0][:, sem].max() > 0


def test_evidence_builder_ranks_without_a_vector_source() -> None:
    pool: list[PoolRecord] = [
        PoolRecord(id="x", found=[[0, 3], [1, 0], [1, 5]], bm25_rank=2, dense_rank=None),
        PoolRecord(id="y", found=[[2, 9]], bm25_rank=None, dense_rank=9),
    ]
    builder = EvidenceBuilder(object())  # a search source that is not a VectorSource
    assert not builder.has_vectors
    built, secs = builder.build(NS, pool, ["hi"], [])
    assert secs == 0.0
    assert built["x"] == rank_evidence(pool[0])
    assert built["x"]["rank"] == 0 and built["x"]["searches"] == 2
    assert built["x"]["rrf"] == pytest.approx(1 / 63 + 1 / 60, abs=1e-6)
    assert built["x"]["bm25"] == 2 and built["x"]["dense"] is None
    assert "sim" not in built["y"]


def test_query_texts_split_like_the_judge() -> None:
    texts = query_texts(
        [{"role": "system", "text": "note"}, HumanMessage("where?"), "and when?"],
        ["first need", "second need"],
    )
    assert texts == {
        "latest": "and when?",
        "context": "note where?",
        "need:0": "first need",
        "need:1": "second need",
    }


def test_build_state_sends_evidence_and_text_judges_do_not_see_it(store: Any) -> None:
    recs = list(store.records(NS))[:2]
    ev = {recs[0].id: {"rank": 0, "rrf": 0.0167, "sim": {"latest": 0.5}}}
    calls = plan_wave([JudgeRequest([Proposition.SCREEN], recs, ["q"], evidence=ev)])
    sent = calls[0].state["records"]
    with_ev = [r for r in sent if "evidence" in r]
    assert len(with_ev) == 1 and with_ev[0]["evidence"]["rank"] == 0
    assert all("evidence" not in r for r in without_evidence(calls[0].state)["records"])


def test_doc_reads_stored_similarity_per_role() -> None:
    doc = Doc({"id": "r0", "text": "x", "evidence": {"sim": {"latest": 0.4, "needs": [0.2]}}}, 0)
    assert doc.stored_sim("latest") == 0.4
    assert doc.stored_sim("need:0") == 0.2
    assert doc.stored_sim("need:1") is None and doc.stored_sim("context") is None
    assert Doc({"id": "r1", "text": "y"}, 1).retrieval() == [0.0, 0.0, 0.0, 0.0]


def test_p_stays_a_strictly_increasing_function_of_one_score_with_rank_features(
    store: Any,
) -> None:
    coef = tuple(1.0 if f in ("sem", "rrf", "fused_rank", "bm25_rank") else 0.0 for f in FEATURES)
    judge = _Spy(embeddings=store.embeddings, weights=JudgeWeights(FEATURES, coef, -2.0))
    _ask(store, judge, "What bread is Ada baking?")
    state = judge._states[0]
    qs = {
        question_id(r["id"], Proposition.SCREEN): build_question(Proposition.SCREEN, r["id"])
        for r in state["records"]
    }
    judge._rows.clear()
    answers = judge._classify(state, qs).answers
    rows = judge._rows[0]
    assert rows[:, FEATURES.index("rrf")].std() > 0  # the rank evidence moves the score
    scores = judge.scorer.scores(rows)
    ps = np.array([answers[q].noul for q in qs])
    assert judge.calibration is not None  # the default: p = σ(k · t(s)), k > 0 for the turn
    n_terms = len(set(terms("What bread is Ada baking?")))
    turn = judge.calibration.apply(scores, n_terms=n_terms, screen=True)
    assert ps == pytest.approx(1 / (1 + np.exp(-turn)), abs=1e-12)
    order = np.argsort(scores)
    assert np.all(np.diff(ps[order]) >= 0)


class _Broken(HashEmbeddings):
    """Embeds records at ingest, then fails (or answers NaN) for every later text."""

    def __init__(self, mode: str) -> None:
        super().__init__(dim=48)
        self.mode = mode
        self.broken = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not self.broken:
            return super().embed_documents(texts)
        if self.mode == "raise":
            raise ConnectionError("embedding endpoint reset the connection")
        return [[float("nan")] * self.dimension for _ in texts]


@pytest.mark.parametrize("mode", ["raise", "nan"])
def test_failing_query_embedder_leaves_ranks_only_and_never_raises(
    store: Any, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    emb = _Broken(mode)
    pool = [
        PoolRecord(id=r.id, found=[[0, i]], bm25_rank=i, dense_rank=None)
        for i, r in enumerate(store.records(NS))
    ]

    class _Source:
        stored_vectors = staticmethod(store.stored_vectors)

        @staticmethod
        def query_vector(text: str) -> np.ndarray:  # a source without the store's checks
            return np.asarray(emb.embed_documents([text])[0])

    emb.broken = True
    built, _ = EvidenceBuilder(_Source()).build(NS, pool, ["where is Pixel?"], ["the cat"])
    assert set(built) == {p["id"] for p in pool}
    assert all("sim" not in e and e["searches"] == 1 for e in built.values())
    if mode == "raise":
        assert "no stored-vector similarities" in caplog.text


def test_a_later_round_looks_up_only_its_new_records(store: Any) -> None:
    """Round 2's judge step looks up the stored vectors of the records pooled that round,
    each once, and not again those of round 1 (already screened and judged)."""
    asked: list[list[str]] = []

    class _Source:
        embeddings = store.embeddings

        def stored_vectors(self, namespace: Any, ids: Any) -> Any:
            asked.append(list(ids))
            return store.stored_vectors(namespace, ids)

    records = list(store.records(NS))
    old, new = records[:2], records[2:]
    pool = [
        PoolRecord(**record_to_dict(r), found=[[0, i]], round=1 if r in old else 2)
        for i, r in enumerate(records)
    ]
    judged = [
        {"target": r.id, "proposition": prop, "p": 0.9, "need_index": None, "round": 1}
        for r in old
        for prop in ("screen", "needed")
    ]
    reader = Reader(
        _Source(), _Spy(embeddings=store.embeddings), RulePlanner(), None, ReadSettings()
    )
    update = reader.judge(
        {
            "namespace": list(NS),
            "pool": pool,
            "judgments": judged,
            "rounds": 1,
            "messages": [HumanMessage("Where did the band play a gig?")],
            "needs": [],
        }
    )
    looked_up = [rid for ids in asked for rid in ids]
    assert sorted(looked_up) == sorted(r.id for r in new)  # each new record once, no old one
    assert {j["target"] for j in update["judgments"]} == {r.id for r in new}


def test_evidence_is_looked_up_only_for_the_records_a_wave_judges(store: Any) -> None:
    """Each judge step looks up the stored vectors of its waves' targets, each id once —
    not the whole pool again every round (the read path's cost, model calls excluded)."""
    asked: list[list[str]] = []

    class _Source:
        embeddings = store.embeddings

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def stored_vectors(self, namespace: Any, ids: Any) -> Any:
            asked.append(list(ids))
            return store.stored_vectors(namespace, ids)

    judge = _Spy(embeddings=store.embeddings)
    graph = create_read_graph(source=_Source(), judge=judge)
    state = graph.invoke(
        {"messages": [HumanMessage("Where did the band play a gig?")]},
        context=ReadContext(namespace="ada"),
    )
    looked_up = [rid for ids in asked for rid in ids]
    judged = {j["target"] for j in state["view"].trace["judgments"]}
    assert looked_up, "no stored vector was looked up"
    assert set(looked_up) <= judged  # no lookup for a record no wave judged
    pooled = len(state["view"].trace["pool"])
    rounds = state["view"].trace["counts"]["rounds"]
    assert len(looked_up) == len(set(looked_up)) or rounds > 1
    assert len(looked_up) <= pooled * rounds


def test_a_text_is_parsed_once_and_its_parse_cannot_be_changed() -> None:
    """Waves and turns judge the same records again: their parse is shared, so frozen."""
    body = "Ada: I moved to Rotterdam on 6 September at 10am\nBo: 3 boxes left"
    a = Doc({"id": "r0", "text": body, "header": "Session 2"}, 0)
    b = Doc({"id": "r9", "text": body, "header": "Session 5"}, 4)
    assert a.tf is b.tf and a.numbers is b.numbers  # one parse of the text
    assert a.session == 2 and b.session == 5 and (a.id, b.order) == ("r0", 4)  # per record
    assert a.tf["rotterdam"] == 1 and a.numbers == {"6", "3"} and a.times
    assert a.speakers == {"ada", "bo"}
    with pytest.raises(TypeError):
        a.tf["rotterdam"] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        a.numbers.add("7")  # type: ignore[attr-defined]
    other = Doc({"id": "r1", "text": "Bo: nothing here"}, 1)
    assert other.tf is not a.tf and "rotterdam" not in other.tf and not other.times
