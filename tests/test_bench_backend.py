"""``mnemon bench backend`` on PostgreSQL: realistic stand-in vectors, the ef trade-off."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

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
    # pruning is exact: every query's top 48 equals the full BM25's
    for name in ("bm25_topic", "bm25_common"):
        assert row[name]["same_top48"] == row[name]["queries"] == 10
    # 600 (and 6) vectors, 200 re-ranked: the halfvec path must find the exact top 48
    assert row["dense_big"]["half_recall_at_48"] == row["dense_small_1pct"]["half_recall_min"] == 1
    text = backend.render(result)
    assert "chosen ef_search" in text and "without BM25 pruning" in text
    assert "halfvec + float re-rank" in text


class _TopicModel:
    """Stand-in for the bundled MiniLM in ``real_corpus``: unit vectors that depend on a
    passage's topic word, so nearest neighbours mean something; counts what it embeds."""

    model_name = "topic-model"
    dimension = 16
    embedded = 0

    def embed_array(self, texts: list[str]) -> np.ndarray:
        _TopicModel.embedded += len(texts)
        out = np.stack(
            [np.random.default_rng(sum(map(ord, t.split()[-1]))).standard_normal(16) for t in texts]
        ).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_bench_backend_on_a_corpus_file_with_bulk_index(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--corpus``: records, 1% namespace and queries are the file's passages, vectors are
    looked up by text; ``--bulk-index``: the HNSW index is gone while writing, back after."""
    import psycopg

    from mnemon_langgraph.search import embeddings

    monkeypatch.setattr(embeddings, "MiniLMEmbeddings", _TopicModel)
    path = tmp_path / "passages.txt"
    lines = [f"passage {i} says something about the word topic{i % 13}" for i in range(620)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seen: list[int] = []
    real_ingest = backend._ingest_big

    def spy(store: object, target: str, n: int, messages: list[object], args: object) -> object:
        with psycopg.connect(target) as conn:  # the index exists before the big ingest
            seen.append(
                conn.execute(
                    "SELECT count(*) FROM pg_indexes WHERE indexname = 'mnemon_vectors_hnsw'"
                ).fetchone()[0]
            )
        return real_ingest(store, target, n, messages, args)

    monkeypatch.setattr(backend, "_ingest_big", spy)
    args = argparse.Namespace(
        db=postgres_url,
        records="600",
        batch=300,
        queries=10,
        seed=0,
        corpus=str(path),
        bulk_index=True,
    )
    result = backend.run(args)
    (row,) = result["sizes"]
    assert seen == [1] and row["messages_written"] == 600
    assert row["bulk_index"]["hnsw_build_s"] >= 0 and row["ingest_msgs_per_s"] > 0
    with psycopg.connect(postgres_url) as conn:
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'mnemon_vectors_hnsw'"
        ).fetchone()
        texts = {r[0] for r in conn.execute("SELECT text FROM mnemon_records")}
    assert index is not None and "hnsw" in index[0]  # rebuilt after the bulk write
    # big = the first 600 passages, 1% = the next 6 (600-605); the last 10 are held out
    assert len(texts) == 606 and any(t.endswith(lines[605]) for t in texts)
    assert not any(t.endswith(line) for t in texts for line in lines[606:])
    assert result["settings"]["vectors"] == "corpus passages.txt, MiniLM"
    # exact vectors by text: the halfvec path equals the float scan, HNSW finds it at 600
    assert row["dense_big"]["half_recall_at_48"] == 1 and row["ef"]["chosen_ef_search"]
    assert row["bm25_topic"]["same_top48"] == 10  # the held-out passages as BM25 queries
    assert "--bulk-index: ingest without HNSW" in backend.render(result)


def test_corpus_workload_wraps_the_small_namespace_when_the_file_runs_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1M records of a 1,002,000-line file: the 1% namespace takes what is left, then the
    file's first passages; held-out queries are never records; every text has its vector."""
    from mnemon_langgraph.search import embeddings

    monkeypatch.setattr(embeddings, "MiniLMEmbeddings", _TopicModel)
    path = tmp_path / "p.txt"
    lines = [f"line {i} topic{i % 5}" for i in range(605)]
    path.write_text("\n".join(lines), encoding="utf-8")
    work = backend._corpus_workload(str(path), 600, 4, 0)
    small = [m.text for m in work["small"]]
    assert small == [lines[600], *lines[:5]]  # one fresh passage, then the first five
    assert work["queries"] == lines[601:]
    assert [m.text for m in work["big"]] == lines[:600]
    table = work["embeddings"].table
    assert all(f"{m.speaker}: {m.text}" in table for m in work["big"] + work["small"])
    assert all(q in table for q in work["queries"]) and len(work["common"]) == 4
