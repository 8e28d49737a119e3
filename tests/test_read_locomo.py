"""End to end, offline: the real MnemonStore over one LoCoMo conversation, the local judge.

Slow-ish (embeds ~370 messages once with the bundled MiniLM model), so one module-scoped
store serves every question.
"""

from __future__ import annotations

import pytest
from _paths import LOCOMO_DEV
from langchain_core.messages import HumanMessage

from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.read.view import explain

DATA = LOCOMO_DEV / "conv-30.json"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATA.exists(), reason="LoCoMo dev data not available"),
]

# Single-hop questions (category 4) checked by hand against the conversation: each gold
# turn answers the question in plain words.
QUESTIONS = [
    ("Why did Jon decide to start his dance studio?", ["D1:2", "D1:4"]),
    ("What is Jon's favorite style of dance?", ["D1:8"]),
    ("What kind of flooring is Jon looking for in his dance studio?", ["D2:8"]),
    ("What did Gina design for her store?", ["D3:4"]),
    ("Where is Gina's fashion internship?", ["D12:3"]),
    ("What offer does Gina make to Jon regarding social media?", ["D18:13"]),
]


@pytest.fixture(scope="module")
def read_graph(tmp_path_factory):
    from mnemon_langgraph.judges.local import LocalDecisionModel
    from mnemon_langgraph.loaders import load_locomo
    from mnemon_langgraph.store import MnemonStore

    conv = load_locomo(DATA)[0]
    store = MnemonStore(tmp_path_factory.mktemp("locomo") / "journal.db")
    store.ingest("conv-30", conv.messages, origin="locomo")
    graph = create_read_graph(source=store, judge=LocalDecisionModel(embeddings=store.embeddings))
    yield graph, store
    store.close()


def test_gold_evidence_reaches_the_view(read_graph) -> None:
    graph, store = read_graph
    ctx = ReadContext(namespace="conv-30")
    reached = 0
    for question, gold in QUESTIONS:
        view = graph.invoke({"messages": [HumanMessage(question)]}, context=ctx)["view"]
        assert view.records and len(view.text) <= 12_000  # sized by characters alone
        pooled = {p["id"] for p in view.trace["pool"]}
        gold_ids = {
            h.record.id
            for h in store.search(question, namespace=("conv-30",), k=48)
            if set(gold) & set(h.record.message_ids)
        }
        # retrieval: the gold record is pooled (the message itself is a search)
        assert gold_ids & pooled, question
        rid = next(iter(gold_ids & pooled))
        assert "found by:" in explain(view, rid)
        reached += all(g in view.message_ids for g in gold)
    assert reached >= 4, f"gold evidence reached the View for only {reached} of {len(QUESTIONS)}"


def test_empty_namespace_gives_empty_view(read_graph) -> None:
    graph, _ = read_graph
    view = graph.invoke(
        {"messages": [HumanMessage("What is Jon's favorite style of dance?")]},
        context=ReadContext(namespace="nobody"),
    )["view"]
    assert view.records == () and view.empty_reason


async def test_async_view_equals_sync_view_over_the_store(read_graph) -> None:
    graph, _ = read_graph
    ctx = ReadContext(namespace="conv-30")
    msg = {"messages": [HumanMessage("What did Gina design for her store?")]}
    sync_view = graph.invoke(msg, context=ctx)["view"]
    async_view = (await graph.ainvoke(msg, context=ctx))["view"]
    assert sync_view.record_ids == async_view.record_ids and sync_view.record_ids
    assert sync_view.trace["actions"] == async_view.trace["actions"]
