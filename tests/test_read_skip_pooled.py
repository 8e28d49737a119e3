"""``ReadSettings.skip_pooled``: later pages and follows add only records not pooled yet.

Real store (SQLite journal, BM25, FAISS) over the scale bench's synthetic history, whose
small vocabulary makes different searches return the same records often; the bench's
scripted judge (answers by question id only) so the two settings see the same yes/no
pattern.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.bench import embeddings_for, fast_judge
from mnemon_langgraph.bench.scale import PROBE_QUESTIONS, synthetic_messages
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore

NS = ("bench", "skip")


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory):
    messages = synthetic_messages(400, seed=3)
    store = MnemonStore(
        tmp_path_factory.mktemp("skip") / "j.sqlite", embeddings=embeddings_for("random")
    )
    store.ingest(NS, messages, origin="test", pack=False)
    yield store, ReadContext(namespace=NS, now=messages[-1].timestamp + timedelta(days=1))
    store.close()


def _views(synthetic_store, skip: bool):
    store, ctx = synthetic_store
    graph = create_read_graph(
        source=store, judge=fast_judge(), settings=ReadSettings(skip_pooled=skip)
    )
    return [
        graph.invoke({"messages": [HumanMessage(q)]}, context=ctx)["view"]
        for q in PROBE_QUESTIONS[:6]
    ]


def _added(view, round_no: int) -> int:
    return sum(1 for p in view.trace["pool"] if p["round"] == round_no)


def test_every_later_search_adds_only_unseen_records(synthetic_store) -> None:
    """With ``skip_pooled`` each later-round search's ``new`` records are really new: they
    sum to what the pool gained that round (no record taken by two searches of one
    round), pages pass over pooled hits (``returned`` > ``new`` somewhere), and a page
    or follow never adds more than its budget."""
    passed_over = 0
    for view in _views(synthetic_store, True):
        calls = [c for c in view.trace["search_calls"] if c["round"] > 1]
        assert calls  # later rounds searched: fails if the rules stop after round 1
        for r in {c["round"] for c in calls}:
            assert sum(c["new"] for c in calls if c["round"] == r) == _added(view, r) > 0
        for c in calls:
            assert c["new"] <= (6 if c["origin"].startswith("follow") else 20)
            passed_over += c["returned"] - c["new"]
    assert passed_over > 0


def test_skip_pooled_judges_more_new_records_than_plain_paging(synthetic_store) -> None:
    """Plain paging (the negative control) returns pooled records again, so later rounds
    pool fewer new records than with ``skip_pooled`` on the same questions."""
    plain = _views(synthetic_store, False)
    skipping = _views(synthetic_store, True)
    later = Counter()
    for a, b in zip(plain, skipping, strict=True):
        later["plain"] += _added(a, 2) + _added(a, 3)
        later["skip"] += _added(b, 2) + _added(b, 3)
        assert a.trace["counts"]["rounds"] == b.trace["counts"]["rounds"]
    assert later["skip"] > later["plain"] > 0
