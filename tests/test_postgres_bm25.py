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
from mnemon_langgraph.types import Message

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


def test_essential_terms_keep_every_term_that_could_reach_the_threshold() -> None:
    """MaxScore's cut: the smallest bounds, summed strictly below the threshold, go."""
    from mnemon_langgraph.store.postgres_bm25 import essential_terms

    bounds = {"common": 0.5, "like": 0.7, "rare": 4.0, "rarer": 6.0}
    assert essential_terms(bounds, 1.3) == ["rare", "rarer"]  # 0.5 + 0.7 < 1.3
    assert essential_terms(bounds, 1.2) == ["like", "rare", "rarer"]  # equal is not below
    assert essential_terms(bounds, 0.0) == sorted(bounds)  # fewer than k hits: no pruning
    assert essential_terms(bounds, 100.0) == []


def test_qualifying_sets_are_the_minimal_term_sets_reaching_the_threshold() -> None:
    """A record must hold one set in full; common words qualify only together."""
    from mnemon_langgraph.store.postgres_bm25 import MAX_SET_TERMS, qualifying_sets

    bounds = {"a": 2.0, "b": 2.0, "c": 5.0}
    assert qualifying_sets(bounds, 3.0) == [["c"], ["a", "b"]]
    assert qualifying_sets(bounds, 4.0) == [["c"], ["a", "b"]]  # reaching counts
    assert qualifying_sets(bounds, 4.5) == [["c"]]
    assert qualifying_sets(bounds, 0.0) == [["c"], ["a"], ["b"]]
    assert qualifying_sets(bounds, 9.5) == []  # nothing can reach it
    many = {f"t{i}": 1.0 for i in range(MAX_SET_TERMS + 1)}
    assert qualifying_sets(many, 3.0) is None  # too many subsets: essential terms instead


def test_term_bound_is_above_every_records_contribution() -> None:
    """The bound from (max tf, min length) is at least any record's actual contribution."""
    from mnemon_langgraph.store.postgres_bm25 import BM25_B, BM25_K1, TermStats, idf, term_bound

    n, avgdl = 1000, 12.0
    stats = TermStats(df=300, max_tf=3.0, min_len=4)
    bound = term_bound(n, avgdl, stats)
    for tf in (1.0, 2.0, 3.0):
        for length in (4, 5, 12, 60):
            part = idf(n, 300) * tf / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl))
            assert part <= bound
    assert bound == pytest.approx(idf(n, 300) * 3 / (3 + BM25_K1 * (0.25 + 0.75 * 4 / 12)))
    # the migration's "unknown" defaults bound by the IDF itself
    assert term_bound(n, avgdl, TermStats(300, 1e30, 0)) == pytest.approx(idf(n, 300))


def _common_word_messages() -> list[Message]:
    """A namespace where common words decide much of the top k.

    ``alpha`` is in 350 of 400 records, ``beta`` in half (short records, often twice);
    ``gamma`` in 50 very short ones (``gamma gamma``: a high BM25 though not rare); each of
    ``note0`` … ``note14`` in 6–7 long records diluted by filler (rare, but a low score).
    """
    out = []
    for i in range(400):
        if i % 4 == 0:
            text = f"alpha note{(i // 4) % 15} " + " ".join(f"filler{j}" for j in range(30))
        elif i % 2:
            text = "alpha beta beta" if i % 3 else "alpha alpha beta"
        else:
            text = "gamma gamma" if i % 8 == 2 else f"alpha word{i}"
        out.append(Message(text, "A", id=f"m{i}"))
    return out


def test_maxscore_bm25_equals_full_bm25_on_very_common_words(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pruned == unpruned top k on every query; both passes act; naive pruning would fail."""
    from mnemon_langgraph.store import postgres as pg_module
    from mnemon_langgraph.store.postgres_bm25 import SET_PASS_MIN_POSTINGS

    queries = [
        "alpha beta note3",  # the bound proves the first pass (note3's records) exact
        "alpha gamma note3",  # gamma can beat note3's records: a second pass adds it
        "gamma note7",
        "beta note11 note12",
        "alpha beta",
        "gamma",
    ]
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("t",), _common_word_messages(), source="test", pack=False)
        pg.bm25_set_pass_min = 0  # 400 records: the term-set pass only runs when told to
        passes: list[object] = []  # per SQL pass: the candidate terms, or the term sets
        real = PostgresStore._bm25_rows

        async def spy(conn: object, sql: str, params: dict[str, list[str]]) -> object:
            sets = [params[f"s{i}"] for i in range(len(params)) if f"%(s{i})s" in sql]
            passes.append(("sets", sets) if sets else ("any", params["cand"]))
            return await real(conn, sql, params)

        monkeypatch.setattr(PostgresStore, "_bm25_rows", staticmethod(spy))
        seen: dict[tuple[str, int], list[object]] = {}
        for query in queries:
            for k in (3, 5, 10, 48):
                passes.clear()
                pruned = pg.lexical_ranking(query, namespace=("t",), k=k)
                seen[query, k] = list(passes)
                pg.bm25_prune = False
                full = pg.lexical_ranking(query, namespace=("t",), k=k)
                pg.bm25_prune = True
                assert full and pruned == full, (query, k)
                if (query, k) == ("alpha gamma note3", 3):
                    pruned_3 = pruned
        n3, gamma = ["1:note3"], ["1:gamma"]
        assert seen["alpha beta note3", 3] == [("any", n3)]  # one pass, over note3's records
        # gamma alone can beat note3's records; alpha (in 350 of 400) only beside note3:
        # the second pass ranks the records holding gamma, or alpha and note3 together
        assert seen["alpha gamma note3", 3] == [("any", n3), ("sets", [gamma, ["1:alpha", *n3]])]
        # by default a query this small (few postings) gets the full query, in one pass
        pg.bm25_set_pass_min = SET_PASS_MIN_POSTINGS
        passes.clear()
        assert pg.lexical_ranking("alpha gamma note3", namespace=("t",), k=3) == pruned_3
        assert passes == [("any", ["1:alpha", "1:gamma", *n3])]
        # negative control: skipping the other terms without the bound check drops true
        # top-k records (gamma's), and the comparison above would have caught it
        full = pg.lexical_ranking("alpha gamma note3", namespace=("t",), k=5)
        note3 = {f"m{i}" for i in range(0, 400, 4) if (i // 4) % 15 == 3}
        assert len(note3) >= 5 and not {rid for rid, _ in full} <= note3
        pg.bm25_set_pass_min = 0  # the passes again, now with a broken exactness check
        monkeypatch.setattr(pg_module, "qualifying_sets", lambda bounds, threshold: [])
        naive = pg.lexical_ranking("alpha gamma note3", namespace=("t",), k=5)
        assert len(naive) == 5 and naive != full


def _nsid(pg: PostgresStore, ns: tuple[str, ...]) -> int:
    rows = pg.run(
        pg.fetch("SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (pg.key(ns),))
    )
    return int(rows[0][0])


def test_first_pass_is_skipped_when_its_records_cannot_fill_k() -> None:
    """A first pass over fewer than ``k`` records can prove nothing: the full query runs."""
    from mnemon_langgraph.store.postgres_bm25 import TermStats, first_pass_terms

    stats = {"rare": TermStats(30, 2.0, 3), "rarer": TermStats(15, 1.0, 4)}
    stats["common"] = TermStats(5_000, 3.0, 2)
    assert first_pass_terms(10_000, stats, 45) == ["rare", "rarer"]  # 45 postings: enough
    assert first_pass_terms(10_000, stats, 46) is None  # 45 < 46: the pass would be short
    assert first_pass_terms(10_000, stats) == ["rare", "rarer"]  # no k: no such check


def test_lexical_ranking_runs_one_statement_when_no_first_pass_can_help(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 10k-record anomaly: at the hybrid search's depth (100) most first passes were
    short, or (real passages) rarely exact while the full query was cheap, so MaxScore ran
    two BM25 statements where the full query alone answers."""
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("one",), _common_word_messages(), source="test", pack=False)
        pg.bm25_set_pass_min = 0  # 400 records: MaxScore passes only run when told to
        calls: list[list[str]] = []
        real = PostgresStore._bm25_rows

        async def spy(conn: object, sql: str, params: dict[str, list[str]]) -> object:
            calls.append(params["cand"])
            return await real(conn, sql, params)

        monkeypatch.setattr(PostgresStore, "_bm25_rows", staticmethod(spy))
        nsid = _nsid(pg, ("one",))
        everything = [f"{nsid}:{t}" for t in ("alpha", "gamma", "note3")]
        # note3 is in 7 records: a first pass could not fill 10, so one full statement
        ranked = pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=10)
        assert len(ranked) == 10 and calls == [everything]
        # control: with k = 3 the first pass (note3's records) runs first
        calls.clear()
        pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=3)
        assert calls[0] == [f"{nsid}:note3"] and len(calls) == 2
        # fewer postings than bm25_set_pass_min (by default 10,000): the full query at once
        pg.bm25_set_pass_min = 10_000
        calls.clear()
        pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=3)
        assert calls == [everything]


def test_bm25_sql_scores_each_candidate_once(postgres_url: str) -> None:
    """Plan shape: the score is computed in the fenced subquery and sorted by reference.

    Flattened by the planner, the score expression was copied into the ``score > 0``
    filter and the sort key (four ``array_position`` calls per term and row; 2.3× slower
    at 10k records, same rows).
    """
    from mnemon_langgraph.store.postgres_bm25 import bm25_sql

    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("plan",), _common_word_messages()[:40], source="test", pack=False)
        nsid = _nsid(pg, ("plan",))
        terms = [f"{nsid}:{t}" for t in ("alpha", "beta")]
        params = {"terms": terms, "cand": terms, "nsid": nsid, "k": 5, "t0": terms[0]}
        params["t1"] = terms[1]
        plan = "\n".join(r[0] for r in pg.run(pg.fetch("EXPLAIN VERBOSE " + bm25_sql(2), params)))
        rows = pg.run(pg.fetch(bm25_sql(2), params))
    assert "Sort Key: c.score DESC, c.seq" in plan, plan
    assert "Filter: (c.score > '0'::double precision)" in plan, plan
    assert len(rows) == 5 and rows[0][2] >= rows[-1][2] > 0
