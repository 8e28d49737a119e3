"""The BM25 computed in PostgreSQL equals the embedded BM25 on the LoCoMo dev conversations.

Both backends ingest the same conversations (same records: ids are derived from the
messages); for every LoCoMo question (the question text only, as a query; answers and
evidence are never read) the SQL ranking's top 48 must hold the same records, in the same
order, with the same scores (float8 in SQL vs float32 embedded: 1e-4 relative), except that
records whose embedded scores tie within that tolerance may swap places.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _paths import LOCOMO_DEV
from _reliability_common import fake_embeddings

from mnemon_langgraph.sources import load_locomo
from mnemon_langgraph.store import EmbeddedStore, MnemonStore, PostgresStore

TOP = 48
REL = 1e-4


def _same_up_to_ties(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """Same ids in the same order, allowing swaps inside groups of (near-)equal scores."""
    if len(a) != len(b):
        return False
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and abs(a[j + 1][1] - a[i][1]) <= REL * abs(a[i][1]):
            j += 1
        # a tie group cut by the top-k boundary (the last one) may differ in who made the cut
        if {x for x, _ in a[i : j + 1]} != {x for x, _ in b[i : j + 1]} and j + 1 < len(a):
            return False
        i = j + 1
    return True


@pytest.mark.slow
def test_sql_bm25_equals_embedded_bm25_on_locomo_dev(tmp_path: Path, postgres_url: str) -> None:
    files = sorted(LOCOMO_DEV.glob("*.json"))
    if not files:
        pytest.skip(f"LoCoMo dev conversations not found in {LOCOMO_DEV}")
    compared = mismatched = nonempty = 0
    with (
        MnemonStore(tmp_path / "m.db", fake_embeddings()) as emb,
        MnemonStore(postgres_url, fake_embeddings()) as pg,
    ):
        assert isinstance(emb, EmbeddedStore) and isinstance(pg, PostgresStore)
        for path in files:
            conv = load_locomo(path)[0]
            ns = ("locomo", path.stem)
            a = emb.ingest(ns, conv.messages, source=path.name)
            b = pg.ingest(ns, conv.messages, source=path.name)
            assert a.record_ids == b.record_ids
            index = emb.index(ns)
            index.sync()
            for qa in conv.qa[:60]:
                query = str(qa["question"])
                seqs, scores = index.bm25.search(query, TOP)
                ids = index.bm25.ids_for(seqs.tolist())
                expected = list(zip(ids, scores.tolist(), strict=True))
                got = pg.lexical_ranking(query, namespace=ns, k=TOP)
                for (eid, es), (gid, gs) in zip(expected, got, strict=False):
                    if eid == gid:
                        assert gs == pytest.approx(es, rel=REL), (query, eid)
                compared += 1
                nonempty += bool(expected)
                if not _same_up_to_ties(expected, got):
                    mismatched += 1
                    pytest.fail(f"rankings differ for {query!r}:\n{expected[:8]}\n{got[:8]}")
    assert compared >= 100 and mismatched == 0
    assert nonempty >= compared * 0.9, "most questions must match something"


@pytest.mark.slow
def test_hybrid_search_equals_embedded_on_locomo_dev(tmp_path: Path, postgres_url: str) -> None:
    """Same fused ranking on both backends, so the read graph (and ``mnemon eval``) sees the
    same records: BM25 is equal (above) and dense search is exact on both at LoCoMo size."""
    files = sorted(LOCOMO_DEV.glob("*.json"))
    if not files:
        pytest.skip(f"LoCoMo dev conversations not found in {LOCOMO_DEV}")
    compared = 0
    with (
        MnemonStore(tmp_path / "m.db", fake_embeddings()) as emb,
        MnemonStore(postgres_url, fake_embeddings()) as pg,
    ):
        for path in files[:2]:
            conv = load_locomo(path)[0]
            ns = ("locomo", path.stem)
            emb.ingest(ns, conv.messages, source=path.name)
            pg.ingest(ns, conv.messages, source=path.name)
            for qa in conv.qa[:40]:
                query = str(qa["question"])
                a = [
                    (h.record.id, h.bm25_rank, h.dense_rank)
                    for h in emb.search(query, namespace=ns, k=TOP)
                ]
                b = [
                    (h.record.id, h.bm25_rank, h.dense_rank)
                    for h in pg.search(query, namespace=ns, k=TOP)
                ]
                assert len(a) == TOP and a == b, query
                compared += 1
    assert compared == 80


def test_prune_split_bounds_common_terms_by_their_idf() -> None:
    """Common terms (df above the share) leave the candidates; their IDF sum is the bound."""
    from mnemon_langgraph.store.postgres_bm25 import idf, prune_split

    split = prune_split(1000, {"a": 600, "b": 3, "c": 0, "d": 200}, share=0.1)
    assert split is not None
    rare, bound = split
    assert rare == ["b"]
    assert bound == pytest.approx(idf(1000, 600) + idf(1000, 200))
    assert prune_split(1000, {"a": 600}, share=0.1) is None  # nothing rare: full query
    assert prune_split(1000, {"b": 3, "e": 5}, share=0.1) is None  # nothing common


def test_pruned_bm25_equals_full_bm25_and_falls_back(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pruned ranking is the full one; a failed bound check reruns the full query."""
    from mnemon_langgraph.types import Message

    msgs = [Message(f"shared words here note{i % 30} n{i}", "A", id=f"m{i}") for i in range(300)]
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("t",), msgs, source="test", pack=False)
        calls: list[str] = []
        real = PostgresStore._bm25_rows

        async def spy(conn: object, sql: str, params: dict[str, object]) -> object:
            calls.append("rare" if "%(rare)s" in sql else "full")
            return await real(conn, sql, params)

        monkeypatch.setattr(PostgresStore, "_bm25_rows", staticmethod(spy))
        for query, k, expected_calls in (
            ("shared note3", 5, ["rare"]),  # 10 records hold note3: the 5th beats the bound
            ("shared note3", 48, ["rare", "full"]),  # fewer than k rare matches: full query
        ):
            calls.clear()
            pruned = pg.lexical_ranking(query, namespace=("t",), k=k)
            assert calls == expected_calls
            pg.bm25_prune = False
            full = pg.lexical_ranking(query, namespace=("t",), k=k)
            pg.bm25_prune = True
            assert pruned == full and len(full) == k
        # the 10 records holding the rare term outrank the 38 that hold only common ones
        assert full[9][1] > 2 * full[10][1] and full[10][1] == pytest.approx(full[-1][1])
