"""BM25 frames on a real server (schema version 8): common-word queries bounded from one byte
per record (``store/postgres/_frames.py``), ranked exactly as the full query ranks them.

Frames are small here (a frame for every namespace of 16 records or more, a code row for
every term in more than 4 records and in one record of 16) so a few hundred records exercise
rebuilds, records written since the frame, deletes and ties. Every comparison is against the
full query (``bm25_prune=False``): the same records, scores and order, bit for bit.
"""

from __future__ import annotations

import dataclasses
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.search._bounds import CODE_MAX
from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import _frames
from mnemon_langgraph.store.postgres._frames import ROSTER_PART, frame_due
from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION
from mnemon_langgraph.types import Message


def _small(pg: PostgresStore) -> PostgresStore:
    """A sibling of ``pg`` (same pool) with small packs and frames, no full-query shortcut."""
    return pg.with_settings(
        bm25_pack_min=4, bm25_pack_part=64, bm25_full_below=0, bm25_frame_min=16
    )


def _corpus(rng: random.Random, count: int, prefix: str, words: list[str]) -> list[Message]:
    """Records of 1–30 words, most of them common; every fifth repeats an earlier text
    (exact ties)."""
    weights = [1 / (i + 1) ** rng.uniform(0.0, 1.2) for i in range(len(words))]
    texts: list[str] = []
    for _ in range(count):
        if texts and rng.random() < 0.2:
            texts.append(rng.choice(texts))
        else:
            texts.append(" ".join(rng.choices(words, weights, k=rng.randint(1, 30))))
    return [Message(t, "A", id=f"{prefix}{i}") for i, t in enumerate(texts)]


def _queries(rng: random.Random, words: list[str], count: int) -> list[str]:
    return [" ".join(rng.sample(words, rng.randint(1, min(6, len(words))))) for _ in range(count)]


def _compare(pg: PostgresStore, ns: tuple[str, ...], queries: list[str], ks: list[int]) -> int:
    """Assert the framed ranking equals the full one for every query and ``k``; how many
    answers the frame gave."""
    full = pg.with_settings(bm25_prune=False)
    framed = 0
    for query in queries:
        for k in ks:
            got = pg.lexical_ranking(query, namespace=ns, k=k)
            framed += pg.bm25.last_route == "frame"
            want = full.lexical_ranking(query, namespace=ns, k=k)
            assert want and got == want, (query, k)
    return framed


def _frame_rows(pg: PostgresStore, ns: tuple[str, ...]) -> tuple[np.ndarray, dict[str, Any]]:
    """The namespace's roster and its code rows ``{term: (top, codes)}``."""
    nsid = pg._run(
        pg._fetch("SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (namespace_key(ns),))
    )[0][0]
    parts = pg._run(
        pg._fetch("SELECT seqs FROM mnemon_frame_seqs WHERE nsid = %s ORDER BY part", (nsid,))
    )
    roster = np.concatenate([np.frombuffer(bytes(p[0]), ">i8") for p in parts])
    rows = pg._run(pg._fetch("SELECT term, top, codes FROM mnemon_codes WHERE nsid = %s", (nsid,)))
    return roster.astype(np.int64), {
        t: (top, np.frombuffer(bytes(c), np.uint8)) for t, top, c in rows
    }


def _check_codes(pg: PostgresStore, ns: tuple[str, ...]) -> int:
    """Every code row bounds its term's live postings from above (``code · top / 255 >=
    impact``), and every position whose record is gone, or lacks the term, is 0. How many
    code rows there are."""
    roster, rows = _frame_rows(pg, ns)
    for term, (top, codes) in rows.items():
        assert len(codes) == len(roster), term
        post = pg._run(
            pg._fetch("SELECT seq, impact FROM mnemon_postings WHERE term = %s", (term,))
        )
        held = {int(s): float(np.float32(i)) for s, i in post}  # float4 exactly
        for pos, seq in enumerate(roster.tolist()):
            if seq in held:
                assert codes[pos] * top / CODE_MAX >= held[seq] * (1 - 1e-12), (term, seq)
            else:
                assert codes[pos] == 0, (term, seq)
    return len(rows)


@pytest.mark.parametrize("seed", range(6))
def test_frame_ranking_equals_the_full_query_on_random_corpora(
    postgres_url: str, seed: int
) -> None:
    """Many common words, records written after the frame, deletes, ties, ``k`` from 1 to
    every record: the frame's ranking is the full query's."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.choice([2, 5, 12, 24]))]
    ns = ("frames", str(seed))
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base)
        pg.ingest(ns, _corpus(rng, rng.randint(60, 160), "a", words), origin="t", pack=False)
        pg.ingest(ns, _corpus(rng, rng.randint(1, 4), "b", words), origin="t", pack=False)
        victims = [r.id for r in pg.records(ns)][:: rng.randint(3, 9)]
        pg.delete_records(ns, victims)
        assert _check_codes(pg, ns) >= 1
        count = len(list(pg.records(ns)))
        framed = _compare(pg, ns, _queries(rng, words, 6), [1, 3, 10, count + 5])
        assert framed >= 12  # most answers came from the frame, not the rounds


def _mixed_corpus(rng: random.Random, count: int, prefix: str) -> list[Message]:
    """Records of a few common words (``c0`` …) and now and then rarer ones (``r0`` …, each
    in a few records: no code row); every fifth repeats an earlier text (exact ties)."""
    common, rare = [f"c{i}" for i in range(6)], [f"r{i}" for i in range(24)]
    texts: list[str] = []
    for _ in range(count):
        if texts and rng.random() < 0.2:
            texts.append(rng.choice(texts))
            continue
        words = rng.choices(common, k=rng.randint(1, 20))
        for word in rng.sample(rare, rng.choice([0, 0, 1, 2, 3])):
            words += [word] * rng.randint(1, 3)
        rng.shuffle(words)
        texts.append(" ".join(words))
    return [Message(t, "A", id=f"{prefix}{i}") for i, t in enumerate(texts)]


def _mixed_queries(rng: random.Random, count: int) -> list[str]:
    """Common words with rarer ones (``r30`` is in no record)."""
    common, rare = [f"c{i}" for i in range(6)], [f"r{i}" for i in range(24)] + ["r30"]
    return [
        " ".join(rng.sample(common, rng.randint(1, 4)) + rng.sample(rare, rng.randint(1, 3)))
        for _ in range(count)
    ]


def _mixed(pg: PostgresStore, ns: tuple[str, ...], queries: list[str], ks: list[int]) -> int:
    """:func:`_compare`, counting the framed answers whose query holds a word with no code
    row (the rarer words read whole and placed in the frame)."""
    coded = {t.split(":", 1)[1] for t in _frame_rows(pg, ns)[1]}
    mixed = 0
    for query in queries:
        before = _compare(pg, ns, [query], ks)
        mixed += before * any(w not in coded for w in query.split())
    return mixed


@pytest.mark.parametrize("seed", range(4))
def test_mixed_queries_from_the_frame_equal_the_full_query(postgres_url: str, seed: int) -> None:
    """Common words with rarer ones (read whole: their packs' parts and postings since),
    records written after the frame, deletes, ties, ``k`` from 1 to every record: the
    frame's ranking is the full query's."""
    rng = random.Random(200 + seed)
    ns = ("mixed", str(seed))
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base).with_settings(bm25_pack_part=4)  # rarer words' packs of parts
        pg.ingest(ns, _mixed_corpus(rng, rng.randint(120, 200), "a"), origin="t", pack=False)
        pg.ingest(ns, _mixed_corpus(rng, rng.randint(1, 4), "b"), origin="t", pack=False)
        victims = [r.id for r in pg.records(ns)][:: rng.randint(3, 9)]
        pg.delete_records(ns, victims)
        _check_codes(pg, ns)
        count = len(list(pg.records(ns)))
        mixed = _mixed(pg, ns, _mixed_queries(rng, 8), [1, 3, 10, count + 5])
        assert mixed >= 16  # most mixed answers came from the frame


def test_rarer_words_alone_and_below_the_full_query_line(postgres_url: str) -> None:
    """Queries of rarer words only (no code row: every posting read whole and placed), and,
    with the full-query shortcut at its default, unfiltered queries with at least
    ``FRAME_FROM`` postings per result wanted: bounded from the frame, ranked as the full
    query ranks them. A filtered query takes the full query."""
    from mnemon_langgraph.types import SearchFilters

    rng = random.Random(17)
    ns = ("rare",)
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = base.with_settings(bm25_pack_min=4, bm25_pack_part=4, bm25_frame_min=16)
        pg.ingest(ns, _mixed_corpus(rng, 200, "a"), origin="t", pack=False)
        pg.ingest(ns, _mixed_corpus(rng, 3, "b"), origin="t", pack=False)
        coded = {t.split(":", 1)[1] for t in _frame_rows(pg, ns)[1]}
        rare = [f"r{i}" for i in range(24) if f"r{i}" not in coded]
        queries = [" ".join(rng.sample(rare, rng.randint(1, 3))) for _ in range(8)]
        assert _compare(pg, ns, queries, [1, 2]) >= 12  # rare words alone, from the frame
        assert _compare(pg, ns, _mixed_queries(rng, 6), [1, 3]) >= 10
        assert _compare(pg, ns, ["c0 c1 c2"], [200]) == 0  # too few postings per result
        pg.lexical_ranking("c0 r1", namespace=ns, k=3, filters=SearchFilters(session_to=10**6))
        assert pg.bm25.last_route == "full"


def test_rarer_postings_left_out_give_another_ranking(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control: with every other posting of the rarer words left out of the
    frame's bounds, some records' bounds fall below their scores and the comparison fails."""
    from mnemon_langgraph.store.postgres._bm25 import BM25Query

    real = BM25Query._read_whole

    async def halved(self: Any, conn: Any, live: Any, upto: int) -> Any:
        reads = await real(self, conn, live, upto)
        for term, read in (reads or {}).items():
            if not live[term].coded:
                keep = np.arange(len(read.seqs)) % 2 == 0
                reads[term] = dataclasses.replace(
                    read, seqs=read.seqs[keep], impacts=read.impacts[keep]
                )
        return reads

    monkeypatch.setattr(BM25Query, "_read_whole", halved)
    failures = framed = 0
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base)
        full = pg.with_settings(bm25_prune=False)
        for seed in range(3):
            rng = random.Random(300 + seed)
            ns = ("halved", str(seed))
            pg.ingest(ns, _mixed_corpus(rng, 160, "a"), origin="t", pack=False)
            for query in _mixed_queries(rng, 8):
                for k in (1, 5, 20):
                    got = pg.lexical_ranking(query, namespace=ns, k=k)
                    framed += pg.bm25.last_route == "frame"
                    failures += got != full.lexical_ranking(query, namespace=ns, k=k)
    assert framed >= 48 and failures >= 1


def test_the_roster_is_read_once_per_frame(postgres_url: str) -> None:
    """A frame's roster is read from the database once and kept (the same array at every
    query), and read again once the frame is rebuilt (another ``(n, upto)``)."""
    rng = random.Random(5)
    ns = ("roster",)
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base)
        pg.ingest(ns, _mixed_corpus(rng, 120, "a"), origin="t", pack=False)
        queries = _mixed_queries(rng, 4)
        held = pg.bm25.rosters._held
        assert _mixed(pg, ns, queries[:2], [1, 10]) >= 2 and len(held) == 1
        ((key, first),) = held.items()
        assert _mixed(pg, ns, queries[2:], [1, 10]) >= 2
        assert list(held) == [key] and held[key] is first
        pg.ingest(ns, _mixed_corpus(rng, 60, "c"), origin="t", pack=False)  # rebuilt
        assert _mixed(pg, ns, queries, [1, 10]) >= 4
        assert len(held) == 1 and list(held) != [key]
        assert np.array_equal(next(iter(held.values())), _frame_rows(pg, ns)[0])


def test_codes_rounded_down_give_another_ranking(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control: with codes rounded down (every other posting's to the least code)
    the bound falls below some records' scores and the comparison above fails."""

    real = _frames.impact_codes

    def floor_codes(docs: np.ndarray, impacts: np.ndarray, n: int) -> tuple[np.ndarray, float]:
        codes, top = real(docs, impacts, n)
        codes[docs[::2]] = 1  # every other posting's code rounded down to the least
        return codes, top

    monkeypatch.setattr(_frames, "impact_codes", floor_codes)
    failures = framed = 0
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base)
        for seed in range(4):
            rng = random.Random(100 + seed)
            words = [f"w{i}" for i in range(12)]
            ns = ("floor", str(seed))
            pg.ingest(ns, _corpus(rng, 150, "a", words), origin="t", pack=False)
            full = pg.with_settings(bm25_prune=False)
            for query in _queries(rng, words, 8):
                for k in (1, 5, 20):
                    got = pg.lexical_ranking(query, namespace=ns, k=k)
                    framed += pg.bm25.last_route == "frame"
                    failures += got != full.lexical_ranking(query, namespace=ns, k=k)
    assert framed >= 48 and failures >= 1


def test_deletes_and_rewrites_keep_the_bytes_right(postgres_url: str) -> None:
    """A delete zeroes its records' bytes (no code row remembers a deleted record's words);
    messages deleted and their records written again (new ``seq``), and a rebuild once
    enough changed, keep the codes an upper bound and the ranking exact."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(10)]
    ns = ("rewrites",)
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base)
        pg.ingest(ns, _corpus(rng, 120, "a", words), origin="t", pack=False)
        roster_before, _ = _frame_rows(pg, ns)
        victims = [r for r in pg.records(ns)][::4]
        pg.delete_records(ns, [r.id for r in victims])
        roster, rows = _frame_rows(pg, ns)
        gone = np.isin(roster, [r.seq for r in victims])
        assert gone.sum() == len(victims) and np.array_equal(roster, roster_before)
        assert all(not codes[gone].any() for _, codes in rows.values())
        _check_codes(pg, ns)
        queries = _queries(rng, words, 5)
        assert _compare(pg, ns, queries, [1, 7, 200]) >= 10
        for _ in range(3):  # updates: a message's records deleted and written again
            target = rng.choice([mid for r in pg.records(ns) for mid in r.message_ids])
            deleted, _ = pg.delete_messages(ns, [target])
            assert deleted
            _check_codes(pg, ns)
            assert _compare(pg, ns, queries, [1, 7, 200]) >= 10
        pg.ingest(ns, _corpus(rng, 80, "c", words), origin="t", pack=False)  # rebuilt
        roster_after, _ = _frame_rows(pg, ns)
        assert len(roster_after) == len(list(pg.records(ns))) != len(roster)
        _check_codes(pg, ns)
        assert _compare(pg, ns, queries, [1, 7, 200]) >= 10
        pg.erase_namespace(ns)
        for table in ("mnemon_frames", "mnemon_frame_seqs", "mnemon_codes"):
            assert pg._run(pg._fetch(f"SELECT count(*) FROM {table}"))[0][0] == 0, table


def test_a_version_7_store_migrates_and_gets_its_frames(postgres_url: str) -> None:
    """A store written by schema version 7 (no frame tables) opens, migrates to version 8,
    builds its frames at setup, and ranks common-word queries from them exactly."""
    import psycopg

    rng = random.Random(11)
    words = [f"w{i}" for i in range(8)]
    ns = ("old",)
    with PostgresStore(postgres_url, fake_embeddings()) as base:
        pg = _small(base)
        pg.ingest(ns, _corpus(rng, 100, "a", words), origin="t", pack=False)
        before = [pg.lexical_ranking(q, namespace=ns, k=10) for q in words]
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # back to version 7
        for table in ("mnemon_codes", "mnemon_frame_seqs", "mnemon_frames"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE mnemon_meta SET value = '7' WHERE key = 'schema_version'")
    with PostgresStore(
        postgres_url,
        fake_embeddings(),
        settings=_small(base).settings,
    ) as pg:
        version = pg._run(pg._fetch("SELECT value FROM mnemon_meta WHERE key = 'schema_version'"))
        assert version[0][0] == str(SCHEMA_VERSION) and SCHEMA_VERSION >= 8
        assert _check_codes(pg, ns) >= 1
        assert [pg.lexical_ranking(q, namespace=ns, k=10) for q in words] == before
        assert _compare(pg, ns, _queries(rng, words, 5), [1, 10]) >= 10


def test_frame_due_and_roster_parts() -> None:
    assert not frame_due(15, None, 4, 16) and frame_due(16, None, 4, 16)
    assert not frame_due(16_000 + 1_000, 16_000, 4, 16) and frame_due(17_001, 16_000, 4, 16)
    assert frame_due(10_000 - 1_025, 10_000, 1_024, 16)  # deletes count too
    assert ROSTER_PART * 8 <= 64 * 1024  # one part: a few toast chunks
