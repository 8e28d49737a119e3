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

from mnemon_langgraph.loaders import load_locomo
from mnemon_langgraph.store import EmbeddedStore, MnemonStore, PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.store.postgres._bm25 import BM25Query
from mnemon_langgraph.store.postgres._impact import FULL_BELOW_POSTINGS
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
        MnemonStore(  # packs of 8 for every term in > 8 records
            postgres_url,
            fake_embeddings(),
            settings=PostgresSettings(bm25_pack_min=8, bm25_pack_part=8),
        ) as pg,
    ):
        assert isinstance(emb, EmbeddedStore) and isinstance(pg, PostgresStore)
        impact_only = pg.with_settings(bm25_full_below=0)
        for path in files:
            conv = load_locomo(path)[0]
            ns = ("locomo", path.stem)
            a = emb.ingest(ns, conv.messages, origin=path.name)
            b = pg.ingest(ns, conv.messages, origin=path.name)
            assert a.record_ids == b.record_ids
            index = emb.index(ns)
            index.sync()
            for qa in conv.qa[:60]:
                query = str(qa["question"])
                seqs, scores = index.bm25.search(query, TOP)
                ids = index.bm25.ids_for(seqs.tolist())
                expected = list(zip(ids, scores.tolist(), strict=True))
                got = pg.lexical_ranking(query, namespace=ns, k=TOP)
                # the impact postings (by default only above 10,000 postings) rank the same,
                # also when every pack part holds 8 postings (several deeper rounds)
                assert impact_only.lexical_ranking(query, namespace=ns, k=TOP) == got, query
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
@pytest.mark.parametrize("where", ["server", "client"])
def test_hybrid_search_equals_embedded_on_locomo_dev(
    tmp_path: Path, postgres_url: str, where: str
) -> None:
    """Same fused ranking on both backends, so the read graph (and ``mnemon eval``) sees the
    same records: BM25 is equal (above) and dense search is exact on both at LoCoMo size —
    with both rankings in the server (no client copy) and on the namespace's client copy
    (its vectors and BM25 index, loaded before the questions)."""
    files = sorted(LOCOMO_DEV.glob("*.json"))
    if not files:
        pytest.skip(f"LoCoMo dev conversations not found in {LOCOMO_DEV}")
    compared = 0
    settings = PostgresSettings(client_cache_mb=0 if where == "server" else 512)
    with (
        MnemonStore(tmp_path / "m.db", fake_embeddings()) as emb,
        MnemonStore(postgres_url, fake_embeddings(), settings=settings) as pg,
    ):
        for path in files[:2]:
            conv = load_locomo(path)[0]
            ns = ("locomo", path.stem)
            emb.ingest(ns, conv.messages, origin=path.name)
            pg.ingest(ns, conv.messages, origin=path.name)
            pg.search("warm up", namespace=ns, k=1)  # the copy loads off the search path
            pg._run(pg.dense.cache.settle())
            assert len(pg.dense.cache._copies) == (0 if where == "server" else compared // 40 + 1)
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


def test_impact_scale_bounds_every_contribution_at_any_average_length() -> None:
    """``impact at A <= impact at A_ref * max(1, A / A_ref)`` (the proof in the docstring),
    checked on a grid of term frequencies, lengths and both sides of ``A_ref``; and the
    bound is tight where it should be (``A = A_ref``: equal)."""
    from mnemon_langgraph.store.postgres._impact import impact, impact_scale

    ref = 15.0
    for avgdl in (1.0, 7.5, 14.9, 15.0, 15.1, 30.0, 300.0):
        scale = impact_scale(avgdl, ref)
        for tf in (1.0, 2.0, 5.0, 40.0):
            for length in (1, 3, 15, 60, 500):
                assert impact(tf, length, avgdl) <= impact(tf, length, ref) * scale * (1 + 1e-12)
    assert impact_scale(15.0, ref) == 1.0 and impact_scale(30.0, ref) == 2.0
    assert impact_scale(5.0, ref) == 1.0  # a shorter average never loosens the bound


def test_candidate_bounds_add_read_parts_and_cut_bounds_of_unread_terms() -> None:
    """A record's bound: ``weight · impact`` of its read postings plus the cut bounds of
    the terms whose posting was not read; ``B`` (every cut bound) bounds a record no
    posting names, and a record only at the cut (no more than ``B``) is left to it."""
    import numpy as np

    from mnemon_langgraph.store.postgres._impact import TermRead, candidate_bounds, cut_bound

    def read(seqs: list[int], imps: list[float], full: bool) -> TermRead:
        low = float(np.float32(min(imps)))  # the lowest impact of the parts read
        return TermRead(len(seqs), np.array(seqs), np.array(imps, np.float32), full, low)

    reads = {"a": read([1, 2, 4], [0.6, 0.4, 0.2], False), "b": read([2, 3], [0.5, 0.2], True)}
    cuts = {t: cut_bound(5.0, r, 1.0, 100.0) for t, r in reads.items()}
    assert cuts["b"] == 0.0  # read whole: nothing unread
    assert cuts["a"] == pytest.approx(1.0, rel=1e-5) and cuts["a"] >= 5.0 * float(np.float32(0.2))
    weights = {"a": 5.0, "b": 10.0}
    seqs, bounds, unread = candidate_bounds(reads, cuts, weights)
    assert unread == pytest.approx(1.0, rel=1e-5)
    got = dict(zip(seqs.tolist(), bounds.tolist(), strict=True))
    # 4 holds "a" at the cut only: bounded by B like a record never read, so left out
    assert got == pytest.approx({1: 3.0, 2: 2.0 + 5.0, 3: 2.0 + cuts["a"]}, rel=1e-5)
    far = {"a": read([1, 10**9], [0.6, 0.4], True)}  # sparse seqs: the sorting path
    seqs, bounds, unread = candidate_bounds(far, {"a": 0.0}, {"a": 5.0})
    assert seqs.tolist() == [1, 10**9] and bounds == pytest.approx([3.0, 2.0]) and unread == 0
    assert cut_bound(5.0, reads["a"], 1.0, 0.5) == 0.5  # capped by the term's own bound
    assert cut_bound(5.0, reads["a"], 2.0, 100.0) == pytest.approx(2 * cuts["a"])  # longer avg


def test_plan_depths_deepens_the_cheapest_bound_first_and_reads_whole_terms_at_the_end() -> None:
    """Greedy: the predicted bound removed per posting decides; with no theta yet every
    open term goes four times deeper; a depth never passes ``df + 1`` (read whole)."""
    import numpy as np

    from mnemon_langgraph.store.postgres._impact import TermRead, plan_depths

    pool = np.linspace(0.9, 0.1, 1000, dtype=np.float32)  # a term read whole
    rare = TermRead(1001, np.arange(1000), pool, True)
    imps = np.linspace(0.9, 0.5, 100, dtype=np.float32)
    heavy = TermRead(100, np.arange(100), imps, False, 0.5)  # 100 of 200 read
    light = TermRead(100, np.arange(100), imps, False, 0.5)  # 100 of 100,000
    reads = {"rare": rare, "heavy": heavy, "light": light}
    df = {"rare": 1000, "heavy": 200, "light": 100_000}
    weights = {"rare": 9.0, "heavy": 5.0, "light": 1.0}
    # a cut of 0.5 on both: bound 3.0; asking for 2.0, reading heavy whole (101 more
    # postings for 2.5) beats any depth of light
    assert plan_depths(reads, df, weights, 2.0) == {"heavy": 201}
    assert plan_depths(reads, df, weights, 0.0) == {"heavy": 201, "light": 400}
    deep = plan_depths(reads, df, weights, 0.05)  # only reading light (nearly) whole does it
    assert deep["heavy"] == 201 and deep["light"] > 10_000


def test_decode_array_reads_postgres_binary_arrays(postgres_url: str) -> None:
    """``array_send`` output decodes to the same values (and an empty or NULL array)."""
    import numpy as np
    import psycopg

    from mnemon_langgraph.store.postgres._impact import decode_array

    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(
            "SELECT array_send(ARRAY[3, -1, 9000000000]::bigint[]), "
            "array_send(ARRAY[0.25, 1e-300]::float8[]), array_send(ARRAY[0.5]::real[]), "
            "array_send('{}'::bigint[]), NULL::bytea"
        ).fetchone()
    assert row is not None
    assert decode_array(row[0], ">i8").tolist() == [3, -1, 9_000_000_000]
    assert decode_array(row[1], ">f8").tolist() == [0.25, 1e-300]
    assert decode_array(row[2], ">f4").tolist() == [0.5]
    assert len(decode_array(row[3], ">i8")) == 0 and len(decode_array(row[4], ">i8")) == 0
    assert decode_array(row[0], ">i8").dtype == np.dtype(">i8")


def test_term_bound_is_above_every_records_contribution() -> None:
    """The bound from (max tf, min length) is at least any record's actual contribution."""
    from mnemon_langgraph.search._formula import BM25_B, BM25_K1, idf
    from mnemon_langgraph.store.postgres._impact import TermStats, term_bound

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


def _spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, int]]:
    """Record each round of impact postings read: ``{term: postings read}``."""
    rounds: list[dict[str, int]] = []
    real_first, real_parts = BM25Query._read_first, BM25Query._read_parts

    async def first(self: BM25Query, conn: Any, live: Any) -> Any:
        got = await real_first(self, conn, live)
        rounds.append({t: len(r.seqs) for t, r in got.items()})
        return got

    async def parts(self: BM25Query, conn: Any, depth: Any, reads: Any) -> Any:
        got = await real_parts(self, conn, depth, reads)
        if depth and reads.get(next(iter(depth))) is not None and reads[next(iter(depth))].parts:
            rounds.append({t: len(r.seqs) for t, r in got.items()})  # a deeper round
        return got

    monkeypatch.setattr(BM25Query, "_read_first", first)
    monkeypatch.setattr(BM25Query, "_read_parts", parts)
    return rounds


QUERIES = [
    "alpha beta note3",  # note3's records prove the ranking: most of alpha's never read
    "alpha gamma note3",  # gamma can beat note3's records: its records are read too
    "gamma note7",
    "beta note11 note12",
    "alpha beta",
    "gamma",
]


def test_impact_bm25_equals_full_bm25_on_very_common_words(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Impact-ordered top k == full top k on every query, on reads that leave most of the
    common words' postings unread; with a broken cut bound (the negative control) the same
    comparison fails."""
    import mnemon_langgraph.store.postgres._bm25 as pg_module

    # packs of 4: read 4 first, then deeper; 400 records: impact postings only when told to
    small = PostgresSettings(bm25_pack_min=4, bm25_pack_part=4, bm25_full_below=0)
    with PostgresStore(postgres_url, fake_embeddings(), settings=small) as pg:
        pg.ingest(("t",), _common_word_messages(), origin="test", pack=False)
        unpruned = pg.with_settings(bm25_prune=False)
        rounds = _spy_reads(monkeypatch)
        read: dict[tuple[str, int], int] = {}
        for query in QUERIES:
            for k in (3, 5, 10, 48):
                rounds.clear()
                pruned = pg.lexical_ranking(query, namespace=("t",), k=k)
                deepest: dict[str, int] = {}  # a deeper round re-reads a term from its top
                for got in rounds:
                    deepest.update({t: max(n, deepest.get(t, 0)) for t, n in got.items()})
                read[query, k] = sum(deepest.values())
                full = unpruned.lexical_ranking(query, namespace=("t",), k=k)
                assert full and pruned == full, (query, k)
        total = {q: sum(pg.term_statistics(("t",), q.split())[1].values()) for q in QUERIES}
        # pruning happened: for small k most postings of alpha (350) and beta (200) unread
        pruned_reads = [key for key, n in read.items() if n < total[key[0]]]
        # identical records tie at theta, and a tie must be read whole (the older wins):
        # most of these plans read everything; pruning on varied text: the test below
        assert len(pruned_reads) >= 2, sorted(pruned_reads)
        # negative control: cut bounds that are not upper bounds stop after the first
        # round, and the comparison above catches the records it misses
        monkeypatch.setattr(pg_module, "cut_bound", lambda *args: 0.0)
        wrong = 0
        for query in QUERIES:
            pruned = pg.lexical_ranking(query, namespace=("t",), k=5)
            full = unpruned.lexical_ranking(query, namespace=("t",), k=5)
            wrong += pruned != full
        assert wrong >= 2


def _spy_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record each candidate lookup (``LOOKUP_SQL``): how many records it bounds."""
    sizes: list[int] = []
    real = BM25Query._record_bounds

    async def spy(conn: Any, batch: Any, per_impact: Any) -> Any:
        sizes.append(len(batch))
        return await real(conn, batch, per_impact)

    monkeypatch.setattr(BM25Query, "_record_bounds", staticmethod(spy))
    return sizes


def test_impact_bm25_looks_no_candidate_up_when_every_term_was_read_whole(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query term read whole (no packs: each term in fewer than ``bm25_pack_min``
    records): the candidates' bounds already hold all their postings, so no lookup runs,
    and the ranking is the full query's (ids, order, scores). With packs of 4 (terms read
    in part) the lookups do run: the spy sees them, and the ranking is the same."""
    whole = PostgresSettings(bm25_full_below=0)  # impact rounds; no term packed (< 1,024)
    with PostgresStore(postgres_url, fake_embeddings(), settings=whole) as pg:
        pg.ingest(("w",), _common_word_messages(), origin="test", pack=False)
        unpruned = pg.with_settings(bm25_prune=False)
        lookups = _spy_lookups(monkeypatch)
        for query in QUERIES:
            for k in (3, 10, 48):
                full = unpruned.lexical_ranking(query, namespace=("w",), k=k)
                assert full and pg.lexical_ranking(query, namespace=("w",), k=k) == full
        assert lookups == []
        packed = pg.with_settings(bm25_pack_min=4, bm25_pack_part=4)
        packed.ingest(("p",), _common_word_messages(), origin="test", pack=False)
        for query in QUERIES:
            full = unpruned.lexical_ranking(query, namespace=("p",), k=5)
            assert full and packed.lexical_ranking(query, namespace=("p",), k=5) == full
        assert lookups and all(n > 0 for n in lookups)


def test_int_array_binds_integers_as_one_array_literal(postgres_url: str) -> None:
    """``int_array`` (the candidates' ``seq`` values, bound as text and cast) reads back as
    the same ``bigint[]``, empty included."""
    import numpy as np
    import psycopg

    from mnemon_langgraph.store.postgres._impact import int_array

    values = np.array([3, -1, 9_000_000_000], dtype=np.int64)
    assert int_array(values) == "{3,-1,9000000000}" and int_array([]) == "{}"
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(
            "SELECT %s::bigint[], %s::bigint[]", (int_array(values), int_array([]))
        ).fetchone()
    assert row == ([3, -1, 9_000_000_000], [])


def _varied_messages(count: int) -> list[Message]:
    """Records of 3–40 words drawn from a Zipf-like vocabulary of 80 words (seeded), so
    impacts spread as on real text (lengths and term frequencies vary) and most words
    are in hundreds of records."""
    import random

    rng = random.Random(7)
    words = [f"w{i}" for i in range(80)]
    weights = [1 / (i + 1) for i in range(80)]
    return [
        Message(" ".join(rng.choices(words, weights, k=rng.randint(3, 40))), "A", id=f"v{i}")
        for i in range(count)
    ]


def test_impact_bm25_equals_full_bm25_on_varied_text_and_leaves_postings_unread(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On varied text the rounds often stop before reading every posting (on a namespace
    this small the plan reads common terms nearly whole: pruning pays at 1M records, see
    the README), and rank exactly as the full query (ids, order, scores) every time."""
    import random

    import mnemon_langgraph.store.postgres._bm25 as pg_module

    small = PostgresSettings(bm25_pack_min=16, bm25_pack_part=16, bm25_full_below=0)
    with PostgresStore(postgres_url, fake_embeddings(), settings=small) as pg:
        pg.ingest(("v",), _varied_messages(1500), origin="test", pack=False)
        unpruned = pg.with_settings(bm25_prune=False)
        # the default margin (0.15) reads a namespace this small whole; 0.5 stops rounds
        # with postings unread, the case this test is about
        monkeypatch.setattr(pg_module, "DEEPEN_MARGIN", 0.5)
        rounds = _spy_reads(monkeypatch)
        rng = random.Random(3)
        pruned_count = compared = 0
        for _ in range(30):
            query = " ".join(f"w{rng.randint(0, 79)}" for _ in range(rng.randint(2, 7)))
            total = sum(pg.term_statistics(("v",), query.split())[1].values())
            for k in (5, 20):
                rounds.clear()
                pruned = pg.lexical_ranking(query, namespace=("v",), k=k)
                deepest: dict[str, int] = {}
                for got in rounds:
                    deepest.update({t: max(n, deepest.get(t, 0)) for t, n in got.items()})
                full = unpruned.lexical_ranking(query, namespace=("v",), k=k)
                assert full and pruned == full, (query, k)
                compared += 1
                pruned_count += sum(deepest.values()) < total
        assert compared == 60 and pruned_count >= 12, pruned_count  # 17 when written


def _nsid(pg: PostgresStore, ns: tuple[str, ...]) -> int:
    rows = pg._run(
        pg._fetch("SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (pg._key(ns),))
    )
    return int(rows[0][0])


def test_impact_bm25_honours_filters_and_deletes(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filters apply to the exactly scored rows (the top k of the filtered records, as the
    full query gives), and deleted records leave no postings behind (cascade)."""
    from mnemon_langgraph.types import SearchFilters

    msgs = [
        Message(m.text, m.speaker, id=m.id, session=1 + i % 3)
        for i, m in enumerate(_common_word_messages())
    ]
    small = PostgresSettings(bm25_pack_min=4, bm25_pack_part=4, bm25_full_below=0)
    with PostgresStore(postgres_url, fake_embeddings(), settings=small) as pg:
        pg.ingest(("f",), msgs, origin="test", pack=False)
        unpruned = pg.with_settings(bm25_prune=False)
        for query in QUERIES:
            filters = SearchFilters(session_from=2, session_to=2)
            pruned = pg._run(_bm25(pg, ("f",), query, 5, filters))
            full = pg._run(_bm25(unpruned, ("f",), query, 5, filters))
            assert full and pruned == full, query
        nsid = _nsid(pg, ("f",))
        victims = [r.id for r in pg.records(("f",))][:50]
        before = pg._run(pg._fetch("SELECT count(*) FROM mnemon_postings"))[0][0]
        pg.delete_records(("f",), victims)
        rows = pg._run(
            pg._fetch(
                "SELECT count(*) FROM mnemon_postings p LEFT JOIN mnemon_records r "
                "USING (seq) WHERE r.seq IS NULL OR r.nsid <> %s",
                (nsid,),
            )
        )
        after = pg._run(pg._fetch("SELECT count(*) FROM mnemon_postings"))[0][0]
        assert rows[0][0] == 0 and after < before
        pruned = pg.lexical_ranking("alpha beta note3", namespace=("f",), k=5)
        assert pruned == unpruned.lexical_ranking("alpha beta note3", namespace=("f",), k=5)


async def _bm25(
    pg: PostgresStore, ns: tuple[str, ...], query: str, k: int, filters: Any
) -> list[tuple[int, str, float]]:
    async with pg._connection() as conn:
        nsid = await pg.engine.nsid(conn, ns)
        assert nsid is not None
        return await pg.bm25.top(conn, nsid, query, k, filters)


def test_lexical_ranking_runs_one_statement_below_the_postings_threshold(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few postings (fewer than ``bm25_full_below``, by default 10,000): the full query at
    once, no impact postings read; above it, the impact rounds (rare terms read whole)."""
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("one",), _common_word_messages(), origin="test", pack=False)
        rounds = _spy_reads(monkeypatch)
        nsid = _nsid(pg, ("one",))
        assert pg.settings.bm25_full_below == FULL_BELOW_POSTINGS
        ranked = pg.lexical_ranking("alpha gamma note3", namespace=("one",), k=3)
        assert len(ranked) == 3 and rounds == []
        impact_only = pg.with_settings(bm25_full_below=0)
        assert impact_only.lexical_ranking("alpha gamma note3", namespace=("one",), k=3) == ranked
        note3, gamma = f"{nsid}:note3", f"{nsid}:gamma"
        # 407 postings, no term in more than 1,024 records (no packs): all read whole
        assert rounds[0][note3] == 7 and rounds[0][gamma] == 50
        tiny = impact_only.with_settings(bm25_pack_min=1, bm25_pack_part=2)  # parts of 2
        tiny.ingest(("two",), _common_word_messages(), origin="test", pack=False)
        rounds.clear()
        assert [r for r, _ in tiny.lexical_ranking("alpha gamma note3", namespace=("two",), k=3)]
        assert set(rounds[0].values()) == {2} and len(rounds) > 1


def test_bm25_sql_scores_each_candidate_once(postgres_url: str) -> None:
    """Plan shape: the score is computed in the fenced subquery and sorted by reference.

    Flattened by the planner, the score expression was copied into the ``score > 0``
    filter and the sort key (four ``array_position`` calls per term and row; 2.3× slower
    at 10k records, same rows).
    """
    from mnemon_langgraph.store.postgres._impact import bm25_sql

    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("plan",), _common_word_messages()[:40], origin="test", pack=False)
        nsid = _nsid(pg, ("plan",))
        terms = [f"{nsid}:{t}" for t in ("alpha", "beta")]
        params = {"terms": terms, "cand": terms, "nsid": nsid, "k": 5, "t0": terms[0]}
        params["t1"] = terms[1]
        plan = "\n".join(r[0] for r in pg._run(pg._fetch("EXPLAIN VERBOSE " + bm25_sql(2), params)))
        rows = pg._run(pg._fetch(bm25_sql(2), params))
    assert "Sort Key: c.score DESC, c.seq" in plan, plan
    assert "Filter: (c.score > '0'::double precision)" in plan, plan
    assert len(rows) == 5 and rows[0][2] >= rows[-1][2] > 0
