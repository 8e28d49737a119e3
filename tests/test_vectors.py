"""Tests of the FAISS vector index (exact flat, HNSW past a threshold, tombstones)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnemon_langgraph.search.bm25 import IndexFileError
from mnemon_langgraph.search.vectors import VectorIndex, normalize_rows

DIM = 16


def _data(n: int, seed: int = 0) -> np.ndarray:
    return normalize_rows(np.random.default_rng(seed).standard_normal((n, DIM)))


def _exact(vecs: np.ndarray, seqs: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return seqs[np.argsort(-(vecs @ q), kind="stable")[:k]].tolist()


def test_normalize_rows() -> None:
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_flat_is_exact_with_seq_ids() -> None:
    vecs = _data(200)
    seqs = np.arange(10, 210, dtype=np.int64)
    index = VectorIndex(DIM)
    index.add(seqs[:150], vecs[:150])
    index.add(seqs[150:], vecs[150:])
    assert index.kind == "flat" and len(index) == 200 and index.max_seq == 209
    q = vecs[7]
    got, scores = index.search(q, 10)
    assert got.tolist() == _exact(vecs, seqs, q, 10)
    assert got[0] == 17 and scores[0] == pytest.approx(1.0, abs=1e-5)


def test_flat_remove_and_filter() -> None:
    vecs = _data(50, seed=1)
    seqs = np.arange(1, 51, dtype=np.int64)
    index = VectorIndex(DIM)
    index.add(seqs, vecs)
    assert index.remove([5, 6, 999]) == 2
    got, _ = index.search(vecs[4], 50)
    assert 5 not in got.tolist() and 6 not in got.tolist() and len(got) == 48
    allowed = np.array([1, 2, 3, 40], dtype=np.int64)
    got, _ = index.search(vecs[39], 10, allowed=allowed)
    assert sorted(got.tolist()) == [1, 2, 3, 40] and got[0] == 40
    assert index.search(vecs[0], 5, allowed=np.array([], dtype=np.int64))[0].tolist() == []


def test_switches_to_hnsw_with_good_recall_and_tombstones() -> None:
    vecs = _data(600, seed=2)
    seqs = np.arange(1, 601, dtype=np.int64)
    index = VectorIndex(DIM, hnsw_threshold=300)
    index.add(seqs[:200], vecs[:200])
    assert index.kind == "flat"
    index.add(seqs[200:], vecs[200:])
    assert index.kind == "hnsw" and len(index) == 600
    recall = np.mean(
        [
            len(set(index.search(vecs[i], 10)[0].tolist()) & set(_exact(vecs, seqs, vecs[i], 10)))
            / 10
            for i in range(0, 600, 30)
        ]
    )
    assert recall >= 0.9
    assert index.remove([1, 2, 3]) == 3
    assert len(index) == 597
    got, _ = index.search(vecs[0], 20)
    assert 1 not in got.tolist() and len(got) == 20
    # filtered search on HNSW with a small allowed set is exact
    allowed = np.array([1, 50, 51, 52], dtype=np.int64)
    got, _ = index.search(vecs[50], 10, allowed=allowed)
    assert sorted(got.tolist()) == [50, 51, 52] and got[0] == 51
    # deleting more than a tenth compacts (tombstones gone, back to flat below threshold)
    index.remove(range(4, 400))
    assert index.kind == "flat" and len(index) == 201 and not index._tombstones


def test_save_load_roundtrip(tmp_path: Path) -> None:
    vecs = _data(400, seed=3)
    seqs = np.arange(1, 401, dtype=np.int64)
    index = VectorIndex(DIM, hnsw_threshold=300)
    index.add(seqs, vecs)
    index.remove([10])
    index.save(tmp_path, {"generation": 3})
    first = sorted(tmp_path.glob("vectors-*.faiss"))
    index.save(tmp_path, {"generation": 4})
    files = sorted(tmp_path.glob("vectors-*.faiss"))
    assert len(files) == 1 and files != first  # old file replaced, not left behind
    loaded, meta = VectorIndex.load(tmp_path)
    assert meta["generation"] == 4 and loaded.kind == "hnsw" and len(loaded) == 399
    got, _ = loaded.search(vecs[9], 5)
    assert 10 not in got.tolist()
    assert loaded.search(vecs[20], 5)[0].tolist() == index.search(vecs[20], 5)[0].tolist()
    files[0].write_bytes(b"not a faiss index")
    with pytest.raises(IndexFileError):
        VectorIndex.load(tmp_path)
    with pytest.raises(IndexFileError):
        VectorIndex.load(tmp_path / "nowhere")


def test_ef_search_grows_with_the_index_unless_given() -> None:
    """Issue 15: efSearch 128 loses recall at 1M (0.91), so larger indexes search wider."""
    from mnemon_langgraph.search.vectors import EF_SEARCH_LARGE, ef_search_for

    sizes = [1, 50_000, 200_000, 200_001, 500_001, 1_000_000, 10_000_000]
    efs = [ef_search_for(n) for n in sizes]
    assert efs == sorted(efs) and efs[0] == 128 and efs[-1] == EF_SEARCH_LARGE > 128
    auto = VectorIndex(8, hnsw_threshold=1)
    rng = np.random.default_rng(0)
    auto.add(range(1, 101), normalize_rows(rng.standard_normal((100, 8))))
    assert auto.kind == "hnsw" and auto.effective_ef_search == ef_search_for(100)
    fixed = VectorIndex(8, hnsw_threshold=1, ef_search=40)
    assert fixed.effective_ef_search == 40
