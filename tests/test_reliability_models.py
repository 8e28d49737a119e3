"""Failing models: planner, judge and embedder that raise, hang or return garbage mid-turn.

The View must still be produced (from the fused search ranking when System 1 is out),
the failure must be visible in the View's trace and in the logs, and nothing may be
written twice: an ingest whose embedder fails halfway writes nothing, and a retry
succeeds without duplicates.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model, make_messages
from _reliability_common import EMB_DIM, tagged_messages, yes_judge

from mnemon_langgraph.consolidation import EmbeddedItemStore, create_consolidation_graph
from mnemon_langgraph.errors import MnemonError, ModelCallError
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore

NS = ("users", "flaky@example.com")
QUESTION = {"messages": [HumanMessage("What happened in the shared apple garden story?")]}
CTX = ReadContext(namespace=NS)


class FlakyEmbedding(DeterministicFakeEmbedding):
    """Deterministic fake vectors; ``mode`` switches on failures (same identity always)."""

    mode: str = "ok"
    fail_after: int = 0
    _calls: int = PrivateAttr(default=0)

    def _trip(self) -> list[float] | None:
        self._calls += 1
        if self.mode == "raise" and self._calls > self.fail_after:
            raise ConnectionError("embedding endpoint reset the connection")
        if self.mode == "nan" and self._calls > self.fail_after:
            return [float("nan")] * self.size
        return None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out = []
        bad = self._trip()
        for t in texts:
            out.append(bad if bad is not None else self._get_embedding(seed=self._get_seed(t)))
        return out

    def embed_query(self, text: str) -> list[float]:
        bad = self._trip()
        return bad if bad is not None else super().embed_query(text)

    @property
    def model_name(self) -> str:
        return "flaky-fake"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    emb = FlakyEmbedding(size=EMB_DIM)
    s = MnemonStore(tmp_path / "flaky.db", emb)
    s.ingest(NS, tagged_messages("flaky", 30), origin="chat", pack=False)
    yield s
    s.close()


def _degraded(view: Any) -> str:
    return " | ".join(
        [str(d) for d in view.trace.get("degradations", [])]
        + [str(e) for e in view.trace.get("errors", [])]
    )


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    return " | ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


# --- planner (System 2) ---------------------------------------------------------------------


class BadPlanner(BaseChatModel):
    """A chat model that raises, hangs, or answers garbage."""

    behaviour: str = "raise"
    _release: threading.Event = PrivateAttr(default_factory=threading.Event)

    @property
    def _llm_type(self) -> str:
        return "bad-planner"

    def release(self) -> None:
        self._release.set()

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if self.behaviour == "raise":
            raise RuntimeError("planner provider returned HTTP 503")
        if self.behaviour == "hang":
            self._release.wait(30)
        text = "I'd rather write a poem { not json" if self.behaviour == "garbage" else "{}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


@pytest.mark.parametrize("behaviour", ["raise", "garbage", "hang"])
def test_failing_planner_falls_back_to_rules_and_says_so(
    store: MnemonStore, behaviour: str
) -> None:
    planner = BadPlanner(behaviour=behaviour)
    graph = create_read_graph(
        source=store,
        judge=yes_judge(),
        planner=planner,
        settings=ReadSettings(planner_timeout_s=0.5 if behaviour == "hang" else 60.0),
    )
    try:
        view = graph.invoke(QUESTION, context=CTX)["view"]
    finally:
        planner.release()
    assert view.records, view.empty_reason
    trace = _degraded(view)
    expected = {"raise": "503", "garbage": "unparsable", "hang": "timed out"}[behaviour]
    assert expected in trace
    assert "rule planner" in " ".join(view.trace["plan_notes"])


# --- decision model (System 1) ----------------------------------------------------------------


class MidTurnFailingJudge(ScriptedDecisionModel):
    """Answers the first ``ok_calls`` calls, then raises for every later call."""

    ok_calls: int = 1

    def _maybe_fail(self, number: int) -> None:
        if number > self.ok_calls:
            raise TimeoutError("decision endpoint timed out (gateway)")


def _judges() -> dict[str, Any]:
    return {
        "raise": ScriptedDecisionModel(error=RuntimeError("decision model HTTP 500")),
        "mid_turn": MidTurnFailingJudge(
            answers=lambda q, _, __: 0.05 if q.endswith("stale") else 0.8
        ),
        "garbage_p": ScriptedDecisionModel(default=1.7, raw=True),
        "missing": ScriptedDecisionModel(default=None),
        "hang": ScriptedDecisionModel(hang=True),
    }


@pytest.mark.parametrize("kind", ["raise", "mid_turn", "garbage_p", "missing", "hang"])
def test_failing_judge_still_gives_a_view_from_the_ranking(
    store: MnemonStore, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    judge = _judges()[kind]
    graph = create_read_graph(
        source=store,
        judge=judge,
        settings=ReadSettings(judge_timeout_s=0.5 if kind == "hang" else 60.0),
    )
    try:
        view = graph.invoke(QUESTION, context=CTX)["view"]
    finally:
        judge.release()
    assert view.records, view.empty_reason  # produced from the fused ranking
    assert set(view.record_ids) <= {r.id for r in store.journal.records(NS)}
    assert view.trace["errors"], "the failure is not in the trace"
    assert any(d["step"].startswith("judge") for d in view.trace["degradations"])
    if kind == "mid_turn":
        assert judge.requests and len(judge.requests) > 1


def test_failing_judge_is_logged(store: MnemonStore, caplog: pytest.LogCaptureFixture) -> None:
    judge = ScriptedDecisionModel(error=RuntimeError("decision model HTTP 500"))
    graph = create_read_graph(source=store, judge=judge)
    with caplog.at_level(logging.WARNING):
        view = graph.invoke(QUESTION, context=CTX)["view"]
    assert view.records
    assert "HTTP 500" in _logged(caplog)


# --- embedder -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["raise", "nan"])
def test_failing_query_embedder_degrades_search_not_the_turn(store: MnemonStore, mode: str) -> None:
    emb = store.embeddings
    assert isinstance(emb, FlakyEmbedding)
    emb.mode, emb.fail_after = mode, 1  # the first search of the turn works, later ones fail
    emb._calls = 0
    view = create_read_graph(source=store, judge=yes_judge()).invoke(QUESTION, context=CTX)["view"]
    assert view.records, view.empty_reason  # the search that worked still feeds the View
    assert "search" in _degraded(view)
    emb.mode = "ok"
    with pytest.raises(ModelCallError):
        emb.mode = mode
        emb.fail_after = 0
        store.search("apple", namespace=NS)


@pytest.mark.parametrize("mode", ["raise", "nan"])
def test_ingest_with_embedder_failing_halfway_writes_nothing_and_retries_cleanly(
    store: MnemonStore, mode: str
) -> None:
    emb = store.embeddings
    assert isinstance(emb, FlakyEmbedding)
    before = store.journal.count(NS)
    last_seq = store.journal.last_seq()
    messages = tagged_messages("retry", 150, prefix="retry-")  # > 2 embedding batches of 64
    emb.mode, emb.fail_after, emb._calls = mode, 1, 0
    with pytest.raises(ModelCallError):
        store.ingest(NS, messages, origin="chat", pack=False)
    assert emb._calls >= 2  # it really failed halfway, after a successful batch
    assert store.journal.count(NS) == before
    assert store.journal.last_seq() == last_seq
    assert not store.journal.known_message_ids(NS, [m.id for m in messages if m.id])
    emb.mode = "ok"
    result = store.ingest(NS, messages, origin="chat", pack=False)
    assert result.records_written == 150
    again = store.ingest(NS, messages, origin="chat", pack=False)
    assert again.records_written == 0 and again.messages_skipped == 150
    assert store.journal.count(NS) == before + 150
    stats = store.stats(NS)["namespaces"][0]
    assert stats["indexed"] == stats["vectors"] == before + 150
    hits = store.search("retry shared apple story number 149", namespace=NS, k=5)
    assert hits


# --- consolidation with a failing item embedder ---------------------------------------------


def _consolidate_with_failing_embedder(tmp_path: Path, expected: type[BaseException]) -> None:
    emb = FlakyEmbedding(size=EMB_DIM)
    store = MnemonStore(tmp_path / "cons.db", emb)
    try:
        store.ingest(NS, make_messages(40), origin="chat")
        items = EmbeddedItemStore(store.journal, emb)
        graph = create_consolidation_graph(model=deriving_model(), store=items)
        emb.mode, emb.fail_after, emb._calls = "raise", 0, 0
        with pytest.raises(expected):
            graph.invoke({"namespace": NS})
        assert items.watermark(NS) == 0 and items.count(NS) == 0  # nothing half-written
        emb.mode = "ok"
        graph.invoke({"namespace": NS})
        assert items.watermark(NS) == store.journal.max_seq(NS) and items.count(NS) > 0
    finally:
        store.close()


def test_consolidation_with_failing_item_embedder_writes_nothing(tmp_path: Path) -> None:
    _consolidate_with_failing_embedder(tmp_path, Exception)


def test_consolidation_item_embedder_failure_is_a_typed_error(tmp_path: Path) -> None:
    _consolidate_with_failing_embedder(tmp_path, MnemonError)
