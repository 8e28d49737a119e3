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
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _paths import LOCOMO_DEV
from _reliability_common import fake_embeddings

from mnemon_langgraph.sources import load_locomo
from mnemon_langgraph.store import EmbeddedStore, MnemonStore, PostgresStore
from mnemon_langgraph.store.postgres_bm25 import PASS_STEP, SET_PASS_MIN_POSTINGS
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
                # the MaxScore passes (by default only above 10,000 postings) rank the same
                pg.bm25_set_pass_min, pg.bm25_pass_step = 0, 0
                assert pg.lexical_ranking(query, namespace=ns, k=TOP) == got, query
                pg.bm25_set_pass_min, pg.bm25_pass_step = SET_PASS_MIN_POSTINGS, PASS_STEP
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


def test_next_pass_reads_rare_terms_first_and_stops_when_the_rest_cannot_reach_theta() -> None:
    """The plan: rarest first; "done" once the unread terms' bounds sum strictly below
    theta; a "clauses" pass when it is expected to cost less than the next term."""
    from mnemon_langgraph.store.postgres_bm25 import TermStats, next_pass, pass_order

    stats = {
        "rarer": TermStats(10, 1.0, 5),
        "rare": TermStats(40, 1.0, 5),
        "like": TermStats(3_000, 1.0, 5),
        "common": TermStats(5_000, 1.0, 5),
        "absent": TermStats(0, 1.0, 5),
    }
    order = pass_order(stats)
    assert order == ["rarer", "rare", "like", "common"]  # rarest first, no absent term
    df = {t: stats[t].df for t in order}
    bounds = {"rarer": 6.0, "rare": 4.0, "like": 0.7, "common": 0.5}
    n = 10_000
    # nothing found yet (theta 0): every term's records may count; rare terms batch up
    first = next_pass(order, 0, bounds, df, n, 0.0, step=100)
    assert (first.kind, first.terms, first.next_index) == ("any", ("rarer", "rare"), 2)
    assert next_pass(order, 0, bounds, df, n, 0.0, step=0).terms == ("rarer",)  # >= 1 term
    # like + common can add 1.2 at most: below a theta of 1.3, nothing unread can count
    assert next_pass(order, 2, bounds, df, n, 1.3).kind == "done"
    # equal is not below (an older record could tie and win): not done. Only records
    # holding both (expected 3,000 * 5,000 / 10,000 = 1,500 rows, plus 8,000 postings
    # decoded: 20 row-equivalents; < 3,000) -> one "clauses" pass, exact at once
    tie = next_pass(order, 2, bounds, df, n, 1.2)
    assert (tie.kind, tie.clauses, tie.next_index) == ("clauses", ((("like",), ("common",)),), 4)
    # a low theta: each common word alone qualifies (5,000 + 3,000 expected): read "like"
    low = next_pass(order, 2, bounds, df, n, 0.4)
    assert (low.kind, low.terms, low.next_index) == ("any", ("like",), 3)
    assert next_pass(order, 4, bounds, df, n, 0.0).kind == "done"  # every term was read

    # no theta yet and the next term is common: a seeding clause pass first (records
    # holding the two strongest terms together), which leaves the position where it is
    common = {"a": TermStats(5_000, 1.0, 5), "b": TermStats(6_000, 1.0, 5)}
    common["c"] = TermStats(7_000, 1.0, 5)
    cb, cdf, corder = (
        {"a": 2.0, "b": 1.9, "c": 1.8},
        {t: common[t].df for t in common},
        ["a", "b", "c"],
    )
    seeded = next_pass(corder, 0, cb, cdf, 100_000, 0.0, seed=True)
    assert (seeded.kind, seeded.clauses, seeded.next_index) == ("clauses", ((("a",), ("b",)),), 0)
    assert next_pass(corder, 0, cb, cdf, 100_000, 0.0).kind == "any"  # not asked: no seed


def test_qualifying_clauses_cover_every_term_set_that_can_reach_the_threshold() -> None:
    """Every set of terms whose bounds reach theta satisfies a clause; a set below it needs
    none (common words qualify only together: a clause holds one and needs another)."""
    import itertools

    from mnemon_langgraph.store.postgres_bm25 import MAX_CLAUSES, qualifying_clauses

    bounds = {"a": 2.0, "b": 2.0, "c": 5.0}
    assert qualifying_clauses(bounds, 3.0) == [((), ("c",)), (("a",), ("b",))]
    assert qualifying_clauses(bounds, 4.0) == [((), ("c",)), (("a",), ("b",))]  # reaching
    assert qualifying_clauses(bounds, 4.5) == [((), ("c",))]
    assert qualifying_clauses(bounds, 0.0) == [((), ("c", "a", "b"))]
    assert qualifying_clauses(bounds, 9.5) == []  # nothing can reach it
    many = {f"t{i}": 1.0 for i in range(14)}
    assert qualifying_clauses(many, 3.0) is None  # 78 pairs + any third: another any-pass
    # exhaustive check on uneven bounds: a record holding `held` satisfies some clause
    # exactly when its bounds reach theta (or more: clauses may over-cover, never under)
    uneven = {"w": 3.1, "x": 2.2, "y": 1.3, "z": 0.9, "v": 0.4}
    for theta in (0.3, 1.0, 2.5, 3.5, 4.4, 6.0, 7.9, 8.0):
        clauses = qualifying_clauses(uneven, theta)
        assert clauses is not None and len(clauses) <= MAX_CLAUSES
        for size in range(1, len(uneven) + 1):
            for held in itertools.combinations(uneven, size):
                hit = any(set(h) <= set(held) and set(x) & set(held) for h, x in clauses)
                if sum(uneven[t] for t in held) >= theta:
                    assert hit, (theta, held, clauses)


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


def _spy_passes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Record each BM25 statement: ``("any", candidate terms)`` or ``("clauses", [(held,
    any_of), …])``."""
    passes: list[tuple[str, list[Any]]] = []
    real = PostgresStore._bm25_rows

    async def spy(conn: object, sql: str, params: dict[str, list[str]]) -> object:
        n = sum(f"%(x{i})s" in sql for i in range(len(params)))
        clauses = [(tuple(params.get(f"h{i}", ())), tuple(params[f"x{i}"])) for i in range(n)]
        passes.append(("clauses", clauses) if clauses else ("any", list(params["cand"])))
        return await real(conn, sql, params)

    monkeypatch.setattr(PostgresStore, "_bm25_rows", staticmethod(spy))
    return passes


def _read_alone(plan: list[tuple[str, list[Any]]]) -> set[str]:
    """The terms whose every record a plan read: "any" terms, any-of terms of clauses
    that hold no other term."""
    out: set[str] = set()
    for kind, terms in plan:
        out.update(terms if kind == "any" else [t for held, x in terms if not held for t in x])
    return out


QUERIES = [
    "alpha beta note3",  # note3's records prove the ranking: alpha's and beta's never read
    "alpha gamma note3",  # gamma can beat note3's records: its records are read too
    "gamma note7",
    "beta note11 note12",
    "alpha beta",
    "gamma",
]


def test_maxscore_bm25_equals_full_bm25_on_very_common_words(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pruned == unpruned top k on every query, on plans that skip common words' records;
    with a broken bound (the negative control) the same comparison fails."""
    from mnemon_langgraph.store import postgres as pg_module

    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("t",), _common_word_messages(), source="test", pack=False)
        nsid = _nsid(pg, ("t",))
        pg.bm25_set_pass_min = 0  # 400 records: MaxScore passes only run when told to
        pg.bm25_pass_step = 0  # one term per "any" pass, so that each pass shows
        passes = _spy_passes(monkeypatch)
        plans: dict[tuple[str, int], list[tuple[str, list[Any]]]] = {}
        for query in QUERIES:
            for k in (3, 5, 10, 48):
                passes.clear()
                pruned = pg.lexical_ranking(query, namespace=("t",), k=k)
                plans[query, k] = list(passes)
                pg.bm25_prune = False
                full = pg.lexical_ranking(query, namespace=("t",), k=k)
                pg.bm25_prune = True
                assert full and pruned == full, (query, k)
        # pruning happened: in these plans some query term's records were never read (a
        # clause reads a term's records only beside another term's)
        unread = {
            key: {f"{nsid}:{t}" for t in key[0].split()} - _read_alone(plan)
            for key, plan in plans.items()
        }
        assert sum(bool(u) for u in unread.values()) >= 8, unread
        n3 = [f"{nsid}:note3"]
        assert plans["alpha beta note3", 3] == [("any", n3)]  # one pass: note3's records
        # negative control: bounds that are not upper bounds stop the plan after the
        # first pass, and the comparison above catches the records it misses
        monkeypatch.setattr(pg_module, "term_bound", lambda n, avgdl, stats: 0.0)
        wrong = 0
        for query in QUERIES:
            pruned = pg.lexical_ranking(query, namespace=("t",), k=5)
            pg.bm25_prune = False
            full = pg.lexical_ranking(query, namespace=("t",), k=5)
            pg.bm25_prune = True
            wrong += pruned != full
        assert wrong >= 2


def _nsid(pg: PostgresStore, ns: tuple[str, ...]) -> int:
    rows = pg.run(
        pg.fetch("SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (pg.key(ns),))
    )
    return int(rows[0][0])


def test_lexical_ranking_runs_one_statement_below_the_postings_threshold(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few postings (fewer than ``bm25_set_pass_min``, by default 10,000): the full query at
    once, without a transaction or passes; above it, the MaxScore passes."""
    from mnemon_langgraph.store.postgres_bm25 import SET_PASS_MIN_POSTINGS

    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("one",), _common_word_messages(), source="test", pack=False)
        passes = _spy_passes(monkeypatch)
        nsid = _nsid(pg, ("one",))
        everything = [f"{nsid}:{t}" for t in ("alpha", "gamma", "note3")]
        assert pg.bm25_set_pass_min == SET_PASS_MIN_POSTINGS
        ranked = pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=3)
        assert len(ranked) == 3 and passes == [("any", everything)]
        pg.bm25_set_pass_min = 0
        passes.clear()
        assert pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=3) == ranked
        rarest_first = [f"{nsid}:{t}" for t in ("note3", "gamma", "alpha")]
        assert passes == [("any", rarest_first)]  # 407 postings: one pass of PASS_STEP
        pg.bm25_pass_step, pg.bm25_seed = 0, False  # one term per pass, no seeding pass
        passes.clear()
        assert pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=3) == ranked
        assert passes[0] == ("any", rarest_first[:1]) and len(passes) > 1


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
