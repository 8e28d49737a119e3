"""Tests of the turn-level baselines on a tiny synthetic conversation."""

from __future__ import annotations

from datetime import datetime

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from mnemon_langgraph.eval.baselines import (
    BASELINE_KS,
    TurnIndex,
    baseline_names,
    budget_prefix,
    rrf_fuse,
)
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.types import Message

TURNS = [
    ("Ann", "I adopted a puppy named Biscuit last week."),
    ("Bob", "Congrats! I have been learning the violin."),
    ("Ann", "My sister moved to Lisbon in May."),
    ("Bob", "I ran a marathon in Chicago."),
    ("Ann", "Biscuit loves the beach."),
    ("Bob", "The violin teacher is very patient."),
]


def _records() -> list:
    messages = [
        Message(
            text=t, speaker=s, id=f"D1:{i + 1}", session=1, timestamp=datetime(2023, 5, 1, 10, i)
        )
        for i, (s, t) in enumerate(TURNS)
    ]
    return chunk_messages(messages, namespace=("t",), origin="tiny", pack=False)


def test_one_turn_per_record() -> None:
    records = _records()
    assert len(records) == len(TURNS)
    assert all(len(r.message_ids) == 1 for r in records)


def test_rankings_and_contexts() -> None:
    # Query embedding equal to a record's own rendered text: cosine must rank it first.
    emb = DeterministicFakeEmbedding(size=64)
    index = TurnIndex.build(_records(), emb)
    target = index.rendered[3]
    ranks = index.rankings(target)
    assert ranks["cosine"][0] == 3
    assert sorted(ranks["cosine"]) == list(range(len(TURNS)))
    bm25 = index.rankings("violin")["bm25"]
    assert set(bm25) == {1, 5}
    assert ranks["rrf"][0] == 3
    contexts = index.contexts("violin", ks=(1, 3), view_chars=index.chars([0, 1]))
    assert set(contexts) == {
        "turns+cosine@1",
        "turns+cosine@3",
        "turns+bm25@1",
        "turns+bm25@3",
        "turns+rrf@1",
        "turns+rrf@3",
        "turns+cosine@view",
        "turns+bm25@view",
        "turns+rrf@view",
    }
    assert len(contexts["turns+cosine@3"]) == 3
    assert contexts["turns+bm25@3"] == bm25  # BM25 returns only records with a query term
    for name in ("turns+cosine@view", "turns+bm25@view", "turns+rrf@view"):
        assert index.chars(contexts[name]) <= index.chars([0, 1])
        assert contexts[name]
    assert index.message_ids([1, 5]) == {"D1:2", "D1:6"}


def test_weighted_rrf_scales_each_ranking_and_defaults_to_plain_rrf() -> None:
    from mnemon_langgraph.search._fusion import rrf_fuse as fuse

    lists = [[1, 2, 3], [3, 2, 1], [2, 4]]
    plain = fuse(lists)
    assert fuse(lists, weights=[1, 1, 1]) == plain
    assert plain[0].key == 2  # the only item near the top of all three
    heavy = fuse(lists, weights=[1, 1, 10])
    assert [f.key for f in heavy[:2]] == [2, 4]  # the third ranking now decides
    assert heavy[0].score == pytest.approx(1 / 61 + 1 / 61 + 10 / 60)
    none = fuse(lists, weights=[1, 1, 0])  # a weight of 0 ranks as if the list were absent
    assert [f.key for f in none] == [f.key for f in fuse([[1, 2, 3], [3, 2, 1]])] + [4]
    for bad in ([1, 1], [1, 1, -1], [1, 1, float("nan")]):
        with pytest.raises(ValueError, match="weight"):
            fuse(lists, weights=bad)


def test_rrf_fuse_prefers_items_high_in_both() -> None:
    assert rrf_fuse([[1, 2, 3], [2, 1, 3]])[:2] in ([1, 2], [2, 1])
    assert rrf_fuse([[5, 1], [1, 7]])[0] == 1
    assert set(rrf_fuse([[5, 1], [1, 7]])) == {1, 5, 7}


def test_budget_prefix() -> None:
    # sizes by index: 0 → 10, 1 → 20, 2 → 5
    assert budget_prefix([2, 0, 1], [10, 20, 5], 15) == [2, 0]
    assert budget_prefix([2, 0, 1], [10, 20, 5], 14) == [2]
    assert budget_prefix([2, 0, 1], [10, 20, 5], 35) == [2, 0, 1]
    assert budget_prefix([2, 0, 1], [10, 20, 5], 4) == []


def test_baseline_names() -> None:
    names = baseline_names()
    assert len(names) == 3 * len(BASELINE_KS) + 3
    assert "turns+cosine@3" in names and "turns+rrf@view" in names
