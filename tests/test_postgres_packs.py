"""BM25 packs on a real server (schema version 5): built by ingests, kept exact by deletes,
gone with an erase, consistent under concurrent writers, and the pruned ranking equal to
the full query's on every change.

Packs are small here (parts of 4 postings, a pack for every term in more than 4 records)
so a few hundred records exercise many parts, repacks and deeper rounds.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _packs_check import check_packs
from _reliability_common import fake_embeddings

from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.store.postgres._impact import PACK_GROWTH, needs_pack, pack_parts
from mnemon_langgraph.store.postgres._packs import Packs
from mnemon_langgraph.types import Message

WORDS = [f"w{i}" for i in range(40)]
QUERIES = ["w0 w1", "w0 w7 w20", "w3 w5 w9 w33", "w1 w2 w3 w4 w5 w6", "w39 w0", "w12"]


def _messages(count: int, prefix: str, seed: int) -> list[Message]:
    """Records of 2–25 words from a Zipf-like vocabulary of 40 (seeded)."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return [
        Message(" ".join(rng.choices(WORDS, weights, k=rng.randint(2, 25))), "A", id=f"{prefix}{i}")
        for i in range(count)
    ]


# the impact rounds on every query, however small the namespace
SMALL = PostgresSettings(bm25_pack_min=4, bm25_pack_part=4, bm25_full_below=0)


def _small_packs(pg: PostgresStore) -> PostgresStore:
    """A sibling of ``pg`` (same pool) writing and reading small packs."""
    return pg.with_settings(bm25_pack_min=4, bm25_pack_part=4, bm25_full_below=0)


def _assert_pruned_equals_full(pg: PostgresStore, ns: tuple[str, ...]) -> None:
    for query in QUERIES:
        for k in (3, 20):
            pruned = pg.lexical_ranking(query, namespace=ns, k=k)
            full = pg.with_settings(bm25_prune=False).lexical_ranking(query, namespace=ns, k=k)
            assert full and pruned == full, (query, k)


def test_pack_parts_sort_by_impact_then_seq_and_split_by_size() -> None:
    seqs = np.array([5, 1, 9, 3, 7], np.int64)
    imps = np.array([0.2, 0.5, 0.5, 0.1, 0.3], np.float32)
    parts = pack_parts(seqs, imps, 2)
    assert [p.seqs.tolist() for p in parts] == [[1, 9], [7, 5], [3]]  # a tie: older first
    assert [p.low for p in parts] == pytest.approx([0.5, 0.2, 0.1])
    assert [p.last for p in parts] == [False, False, True]
    again = type(parts[0]).from_row(*parts[1].row()[1:])
    assert again.seqs.tolist() == [7, 5] and again.impacts.tolist() == pytest.approx([0.3, 0.2])


def test_needs_pack_when_common_and_enough_new_postings() -> None:
    assert not needs_pack(1000, 0, 1024) and needs_pack(1025, 0, 1024)  # common: a first pack
    packed = 64_000
    grown = packed // PACK_GROWTH  # the new postings a term may hold before its repack
    assert not needs_pack(packed + grown, packed, 1024)
    assert needs_pack(packed + grown + 1, packed, 1024)
    assert not needs_pack(2000 + 1024, 2000, 1024)  # small terms wait for pack_min new ones


def test_packs_follow_ingests_deletes_and_erase(postgres_url: str) -> None:
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg = _small_packs(pg)
        ns, other = ("p",), ("q",)
        pg.ingest(other, _messages(60, "o", 1), origin="test", pack=False)
        uptos = []
        for batch in range(6):
            pg.ingest(ns, _messages(80, f"b{batch}-", 10 + batch), origin="test", pack=False)
            packed = check_packs(postgres_url)
            rows = pg._run(pg._fetch("SELECT max(upto) FROM mnemon_terms WHERE packed > 0"))
            uptos.append(int(rows[0][0]))
            _assert_pruned_equals_full(pg, ns)
        assert len(packed) >= 40 and uptos == sorted(uptos) and uptos[-1] > uptos[0]  # repacked
        victims = [r.id for r in pg.records(ns)][::7]
        assert len(pg.delete_records(ns, victims)) == len(victims)
        check_packs(postgres_url)  # no pack holds a deleted record's posting
        _assert_pruned_equals_full(pg, ns)
        target = next(mid for r in pg.records(ns) for mid in r.message_ids)
        deleted, _ = pg.delete_messages(ns, [target])
        assert deleted
        check_packs(postgres_url)
        _assert_pruned_equals_full(pg, ns)
        pg.erase_namespace(ns)
        nsid_left = pg._run(pg._fetch("SELECT DISTINCT nsid FROM mnemon_packs"))
        assert len(nsid_left) == 1  # only the other namespace's packs remain
        check_packs(postgres_url)
        _assert_pruned_equals_full(pg, other)


def test_a_delete_that_left_packs_alone_is_caught(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control for the checks above: without taking deleted postings out of the
    packs, the packs still name deleted records and the invariant check fails."""

    async def keep(*args: object) -> None:
        return None

    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg = _small_packs(pg)
        pg.ingest(("n",), _messages(200, "n", 3), origin="test", pack=False)
        check_packs(postgres_url)
        monkeypatch.setattr(Packs, "unpack", staticmethod(keep))
        pg.delete_records(("n",), [r.id for r in pg.records(("n",))][::3])
        with pytest.raises(AssertionError):
            check_packs(postgres_url)


def test_concurrent_writers_and_a_deleter_keep_packs_exact(postgres_url: str) -> None:
    """Four stores (own pools, own connections) ingest into one namespace at once while a
    fifth deletes from it: every message is stored once and the packs hold exactly the
    live postings up to their ``upto`` (a repack under the namespace lock never misses a
    posting committed late nor keeps a deleted one)."""
    stores = [PostgresStore(postgres_url, fake_embeddings(), settings=SMALL) for _ in range(5)]
    errors: list[BaseException] = []
    ns = ("c",)

    def writer(i: int) -> None:
        try:
            for batch in range(5):
                msgs = _messages(30, f"c{i}-{batch}-", 100 * i + batch)
                stores[i].ingest(ns, msgs, origin="test", pack=False)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    def deleter() -> None:
        try:
            for _ in range(8):
                ids = [r.id for r in stores[4].records(ns)][::11]
                if ids:
                    stores[4].delete_records(ns, ids)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=deleter))
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        packed = check_packs(postgres_url)
        assert len(packed) >= 30
        ids = [mid for r in stores[0].records(ns) for mid in r.message_ids]
        assert len(ids) == len(set(ids))
        _assert_pruned_equals_full(stores[0], ns)
    finally:
        for s in stores:
            s.close()


def test_a_failed_repack_is_logged_and_done_by_the_next_write(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    real = Packs.pack
    calls = {"n": 0}

    async def failing(self: Packs, conn: object, nsid: int, term: str) -> None:
        calls["n"] += 1
        raise psycopg.OperationalError("disk full (simulated)")

    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg = _small_packs(pg)
        monkeypatch.setattr(Packs, "pack", failing)
        with caplog.at_level(logging.WARNING, logger="mnemon_langgraph.store.postgres"):
            result = pg.ingest(("r",), _messages(100, "r", 5), origin="test", pack=False)
        assert result.records_written == 100 and calls["n"] == 1  # the ingest stands
        assert "packing BM25 postings" in caplog.text
        assert check_packs(postgres_url) == {}  # no pack yet: terms are read whole
        _assert_pruned_equals_full(pg, ("r",))
        monkeypatch.setattr(Packs, "pack", real)
        pg.ingest(("r",), _messages(10, "s", 6), origin="test", pack=False)
        assert len(check_packs(postgres_url)) >= 20
        _assert_pruned_equals_full(pg, ("r",))


def test_unpack_finds_a_posting_whatever_impact_it_is_given(postgres_url: str) -> None:
    """The parts an impact points at are tried first; a posting not found there (an impact
    that was rounded, or wrong) is still taken out of whichever part holds it."""
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg = _small_packs(pg)
        pg.ingest(("u",), _messages(200, "u", 8), origin="test", pack=False)
        term, parts = pg._run(
            pg._fetch(
                "SELECT term, count(*) FROM mnemon_packs GROUP BY term ORDER BY 2 DESC LIMIT 1"
            )
        )[0]
        assert parts >= 5
        row = pg._run(
            pg._fetch("SELECT seqs FROM mnemon_packs WHERE term = %s AND part = 1", (term,))
        )[0]
        seq = int(np.frombuffer(bytes(row[0]), "<i8")[0])

        async def unpack() -> None:
            async with pg._connection() as conn, conn.transaction():
                await Packs.unpack(conn, term, np.array([seq]), np.array([-1.0]))

        pg._run(unpack())
        held = pg._run(pg._fetch("SELECT seqs FROM mnemon_packs WHERE term = %s", (term,)))
        seqs = np.concatenate([np.frombuffer(bytes(r[0]), "<i8") for r in held])
        assert seq not in seqs.tolist() and len(seqs) > 0
