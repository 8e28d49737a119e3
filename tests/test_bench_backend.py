"""``mnemon bench backend`` on PostgreSQL: realistic stand-in vectors, the ef trade-off."""

from __future__ import annotations

import argparse

import numpy as np

from mnemon_langgraph.bench import backend


def test_word_mix_vectors_have_neighbourhoods() -> None:
    """Texts sharing words are nearer than texts sharing none (unlike hash-random vectors)."""
    emb = backend.WordMixEmbeddings(64)
    a, b, c = (
        np.array(v)
        for v in emb.embed_documents(
            ["hiking in the mountains with my dog", "my dog loves the mountains", "tax forms due"]
        )
    )
    assert abs(float(np.linalg.norm(a)) - 1) < 1e-5
    assert a @ b > 0.4 > abs(a @ c)
    assert emb.embed_query("tax forms due") == emb.embed_documents(["tax forms due"])[0]


def test_bench_backend_reports_the_ef_tradeoff_and_pruning(postgres_url: str) -> None:
    args = argparse.Namespace(db=postgres_url, records="600", batch=300, queries=10, seed=0)
    result = backend.run(args)
    (row,) = result["sizes"]
    assert row["messages_written"] == 600
    assert row["hybrid_ms_p50"] > 0 and row["hybrid_unpruned_ms_p50"] > 0
    table = row["ef"]["tradeoff"]
    assert [t["ef_search"] for t in table] == list(backend.EF_CHOICES)
    # 600 vectors: every ef_search reaches the goal, so the smallest is chosen
    assert all(t["big"]["recall_at_48"] >= backend.RECALL_GOAL for t in table)
    assert row["ef"]["chosen_ef_search"] == backend.EF_CHOICES[0]
    # MaxScore is exact: every query's top 48 equals the full BM25's
    for name in ("bm25_topic", "bm25_common"):
        assert row[name]["same_top48"] == row[name]["queries"] == 10
    # 600 (and 6) vectors, 200 re-ranked: the halfvec path must find the exact top 48
    assert row["dense_big"]["half_recall_at_48"] == row["dense_small_1pct"]["half_recall_min"] == 1
    text = backend.render(result)
    assert "chosen ef_search" in text and "without BM25 MaxScore" in text
    assert "halfvec + float re-rank" in text
