"""One storage conformance suite, run against both backends (SQLite file and PostgreSQL).

Every test takes ``target``: a journal path for the embedded backend or a fresh database
URL on the session's PostgreSQL server (tests/conftest.py), and opens it through the one
public class, ``MnemonStore(target)``. What is checked is the contract of
:class:`~mnemon_langgraph.store.base.StoreBackend`: the journal (order, seq, records by
id), idempotent ingest (also from concurrent writers), search (lexical and dense ranks,
filters), namespace isolation, deletion with audit rows, erase with nothing left in any
live row of any table, a SIGKILL during ingest, and four processes writing and reading at
once.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import (
    all_files,
    fake_embeddings,
    kill_after,
    sqlite_cells,
    start_child,
    tagged_messages,
)
from _store_child import BATCH, NS, SHARED, batch_messages

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.items import ItemStore
from mnemon_langgraph.search._bm25 import tokenize
from mnemon_langgraph.store import IngestResult, MnemonStore, StoreBackend, is_postgres_url
from mnemon_langgraph.types import Message, SearchFilters, TermStatsSource, VectorSource

CHILD = Path(__file__).parent / "_store_child.py"
# SIGKILL trials per backend (crash tests are bounded for CI; raise it for a soak).
TRIALS = int(os.environ.get("MNEMON_CRASH_TRIALS", "4"))
ADA = ("users", "ada")
BO = ("users", "bo")


@pytest.fixture(params=["embedded", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: a SQLite path, or a fresh PostgreSQL database URL."""
    if request.param == "embedded":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(target: str) -> Iterator[MnemonStore]:
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


def _cells(target: str) -> list[tuple[str, bytes]]:
    """Every stored value of every table (and, embedded, every file) as ``(where, bytes)``."""
    if is_postgres_url(target):
        import psycopg

        out = []
        with psycopg.connect(target) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
                )
            ]
            assert "mnemon_records" in tables
            for table in tables:
                for (text,) in conn.execute(f'SELECT t::text FROM "{table}" t'):
                    out.append((table, text.encode()))
        return out
    db = Path(target)
    out = [(f"{t}.{c}", raw) for t, c, raw in sqlite_cells(db)]
    for path in all_files(db.parent):
        out.append((str(path), path.read_bytes()))
    return out


def _holding(target: str, needles: list[str]) -> list[str]:
    found = []
    for where, raw in _cells(target):
        low = raw.lower()
        found += [f"{where}: {n}" for n in needles if n.lower().encode() in low]
    return sorted(set(found))


def test_both_backends_implement_the_protocol(store: MnemonStore, target: str) -> None:
    assert isinstance(store, StoreBackend)
    assert isinstance(store, VectorSource)  # the read path's evidence uses stored vectors
    # the write side of consolidation is part of the contract: each backend hands out its own
    items = store.item_store()
    assert isinstance(items, ItemStore)
    assert type(items).__name__ == (
        "PostgresItemStore" if is_postgres_url(target) else "EmbeddedItemStore"
    )
    assert type(store).__name__ == ("PostgresStore" if is_postgres_url(target) else "EmbeddedStore")


def test_term_statistics_count_live_records_per_word(store: MnemonStore) -> None:
    """The memory's word counts the local judge weighs words by: same on both backends."""
    assert isinstance(store, TermStatsSource)
    result = store.ingest(ADA, tagged_messages("counts", 6), origin="chat", pack=False)
    records = list(store.records(ADA))
    words = [*list(dict.fromkeys(t for r in records for t in tokenize(r.text)))[:8], "zzzunseen"]
    n, df = store.term_statistics(ADA, words)
    assert n == len(records) == 6
    assert df == {w: sum(w in set(tokenize(r.text)) for r in records) for w in words}
    assert df["zzzunseen"] == 0 and max(df.values()) >= 1
    store.delete_records(ADA, [result.record_ids[0]])
    n2, df2 = store.term_statistics(ADA, words)
    gone = set(tokenize(records[0].text))
    assert n2 == 5 and all(df2[w] == df[w] - (w in gone) for w in words)


def test_stored_vectors_are_the_same_unit_vectors_on_both_backends(
    postgres_url: str, tmp_path: Path
) -> None:
    """The vectors the judge's evidence reads back (PostgreSQL reads them in binary) are,
    record by record, the embedded journal's: unit length, equal to float32 precision."""
    got = {}
    for where in (str(tmp_path / "memory.db"), postgres_url):
        with MnemonStore(where, fake_embeddings()) as s:
            s.ingest(ADA, tagged_messages("vectors", 5), origin="chat", pack=False)
            ids = [r.id for r in s.records(ADA)]
            got[where] = s.stored_vectors(ADA, [*ids, "r-not-there"])
    embedded, postgres = got.values()
    assert sorted(embedded) == sorted(postgres) and len(embedded) == 5
    for rid, vector in embedded.items():
        assert vector.dtype == postgres[rid].dtype == np.float32 and vector.shape == (32,)
        assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)
        np.testing.assert_allclose(postgres[rid], vector, rtol=0, atol=1e-6)


def test_journal_keeps_order_seq_and_records_by_id(store: MnemonStore) -> None:
    result = store.ingest(ADA, tagged_messages("journal", 12), origin="chat", pack=False)
    assert result.records_written == 12 and result.messages_written == 12
    records = list(store.records(ADA))
    assert [r.id for r in records] == list(result.record_ids)
    seqs = [r.seq for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == 12
    assert store.max_seq(ADA) == seqs[-1] and store.count(ADA) == 12
    assert [r.id for r in store.records(ADA, after_seq=seqs[4], limit=3)] == [
        r.id for r in records[5:8]
    ]
    wanted = [records[7].id, "missing", records[2].id]
    assert [r.id for r in store.get_records(ADA, wanted)] == [records[7].id, records[2].id]
    got = store.get_records(ADA, [records[3].id])[0]
    assert got == records[3] and got.date is not None and got.roles
    assert store.namespaces() == [ADA]
    assert store.known_message_ids(ADA, ["m0", "m5", "nope"]) == {"m0", "m5"}


def test_records_read_by_date_and_session_bounds_in_pages(store: MnemonStore) -> None:
    """``records(filters=...)``: the same bounds as a search (inclusive; an undated record
    passes no date bound), keyset on seq so pages continue, the async twin alike."""
    import asyncio
    from datetime import datetime

    days = [datetime(2024, 3, 1 + i % 10, 9, 30) for i in range(30)]
    msgs = [Message(f"day {i}", "Ada", "user", f"d{i}", days[i], 1 + i % 3) for i in range(30)]
    msgs.append(Message("no date", "Ada", "user", "nd", None, 1))
    store.ingest(ADA, msgs, origin="chat", pack=False)
    store.ingest(BO, [Message("bo", "Bo", "user", "b0", days[4], 1)], origin="chat")
    march = SearchFilters(date_from=datetime(2024, 3, 3), date_to=datetime(2024, 3, 5, 23, 59))
    want = [r for r in store.records(ADA) if march.accepts(r)]
    assert len(want) == 9 and all(r.date and 3 <= r.date.day <= 5 for r in want)
    assert [r.id for r in store.records(ADA, filters=march)] == [r.id for r in want]
    first = list(store.records(ADA, filters=march, limit=4))
    rest = list(store.records(ADA, filters=march, after_seq=first[-1].seq))
    assert [r.id for r in first + rest] == [r.id for r in want] and len(first) == 4
    both = SearchFilters(date_from=datetime(2024, 3, 3), session_from=2, session_to=2)
    got = list(store.records(ADA, filters=both))
    assert got and all(r.session == 2 and r.date >= datetime(2024, 3, 3) for r in got)
    assert [r.id for r in got] == [r.id for r in store.records(ADA) if both.accepts(r)]
    sessions = [r.id for r in store.records(ADA, filters=SearchFilters(session_to=1))]
    assert "no date" in " ".join(r.text for r in store.get_records(ADA, sessions))
    assert list(store.records(ADA, filters=SearchFilters(date_from=datetime(2025, 1, 1)))) == []

    async def twin() -> list[Any]:
        return [r async for r in store.arecords(ADA, filters=march, limit=5)]

    assert asyncio.run(twin()) == want[:5]


def test_a_sessions_records_are_read_by_position_whatever_was_written_between(
    store: MnemonStore,
) -> None:
    """Positions continue a session across ingests; other namespaces' writes in between
    take ``seq`` numbers but not positions, so a part of a session is read by position."""
    day = tagged_messages("turn", 1)[0].timestamp
    for i in range(6):
        store.ingest(ADA, [Message(f"turn {i}", "Ada", "user", f"t{i}", day, 2)], origin="chat")
        other = [Message(f"note {i}.{j}", "Bo", "user", f"n{i}.{j}", day, 2) for j in range(3)]
        store.ingest(BO, other, origin="chat", pack=False)
    store.ingest(ADA, [Message("elsewhere", "Ada", "user", "e0", day, 3)], origin="chat")
    whole = store.session_records(ADA, 2)
    assert [r.position for r in whole] == list(range(6))
    assert [r.message_ids for r in whole] == [(f"t{i}",) for i in range(6)]
    assert whole[1].seq - whole[0].seq > 3, "the other user's records took seqs between"
    assert [r.position for r in store.session_records(ADA, 2, start=2, stop=5)] == [2, 3, 4]
    assert store.session_records(ADA, 2, start=4, stop=4) == []
    assert store.session_records(ADA, 9) == [] and store.session_records(("users", "x"), 2) == []
    assert [r.message_ids for r in store.session_records(ADA, 3)] == [("e0",)]
    assert all(r.namespace == BO for r in store.session_records(BO, 2))


def test_record_ids_are_found_again_from_their_start_literally(store: MnemonStore) -> None:
    """The View shows ids shortened; the store finds them again, in one namespace only."""
    ids = sorted(
        store.ingest(ADA, tagged_messages("prefix", 40), origin="chat", pack=False).record_ids
    )
    bo = store.ingest(BO, tagged_messages("other", 3), origin="chat").record_ids
    one = ids[17]
    assert store.match_record_ids(ADA, one) == [one]
    assert store.match_record_ids(ADA, one[:10]) == [one]
    assert store.match_record_ids(ADA, "r-", limit=50) == ids  # sorted, and every one
    assert store.match_record_ids(ADA, "r-", limit=2) == ids[:2]
    # literal: LIKE's wildcards and a range's neighbours match nothing
    odd = ("r-\udc80", "r-\x00", "r-\n")  # a lone surrogate, NUL: neither is stored text
    for ref in ("r-%", "r-_", "%", one[:10] + "%", one + "0", "R" + one[1:], "", *odd):
        assert store.match_record_ids(ADA, ref) == [], ref
    assert store.match_record_ids(ADA, bo[0][:10]) == []  # another namespace's record
    assert store.match_record_ids(("users", "nobody"), one) == []


def test_record_size_is_the_stores_setting_for_ingest_and_rewrites(target: str) -> None:
    """``record_chars`` sizes the records a store writes, also when a delete rewrites them."""
    walk = "we walked past the old mill and on to the bridge over the harbour, then home for tea"
    messages = [
        Message(f"{walk} ({i})", "Ada" if i % 2 else "Bo", id=f"m{i}", session=1) for i in range(12)
    ]
    with MnemonStore(target, fake_embeddings(), record_chars=300) as small:
        small.ingest(ADA, messages, origin="chat")
        records = list(small.records(ADA))
        assert records and max(len(r.text) for r in records) <= 300
        assert [len(r.message_ids) for r in records] == [3, 3, 3, 3]  # packed up to the size
        small.delete_messages(ADA, ["m4"])
        rewritten = list(small.records(ADA))
        assert "m4" not in {m for r in rewritten for m in r.message_ids}
        assert max(len(r.text) for r in rewritten) <= 300
    with MnemonStore(target, fake_embeddings()) as default:
        default.ingest(BO, messages, origin="chat")
        packed = list(default.records(BO))
        assert [len(r.message_ids) for r in packed] == [6, 6]  # the default: 600


@pytest.mark.parametrize("bad", [0, 119, 4_001, True, 600.0, "600"])
def test_a_record_size_out_of_range_is_refused_before_anything_is_opened(
    target: str, bad: Any
) -> None:
    with pytest.raises(ConfigurationError, match="record_chars must be a whole number"):
        MnemonStore(target, fake_embeddings(), record_chars=bad)
    if not is_postgres_url(target):
        assert not Path(target).exists()


def test_text_postgresql_cannot_hold_is_refused_alike_and_writes_nothing(
    store: MnemonStore,
) -> None:
    """A NUL character (binary tool output) is an InputError on both backends, raised
    before anything of the batch is written; what was stored before stays, and the same
    batch without it goes in."""
    store.ingest(ADA, tagged_messages("before", 3), origin="chat", pack=False)
    batch = [Message("fine", "Ada", id="n1"), Message("raw \x00 bytes", "Ada", id="n2")]
    with pytest.raises(InputError, match=r"message 1 \(text\) contains a NUL"):
        store.ingest(ADA, batch, origin="chat", pack=False)
    with pytest.raises(InputError, match=r"message 0 \(speaker\) contains a NUL"):
        store.ingest(ADA, [Message("ok", "A\x00da", id="n3")], origin="chat", pack=False)
    assert store.count(ADA) == 3 and not store.known_message_ids(ADA, ["n1", "n2", "n3"])
    fixed = [batch[0], Message("raw \\x00 bytes", "Ada", id="n2")]
    assert store.ingest(ADA, fixed, origin="chat", pack=False).messages_written == 2
    assert store.count(ADA) == 5


def test_ingest_is_idempotent_also_from_concurrent_writers(target: str) -> None:
    messages = tagged_messages("idem", 30)
    stores = [MnemonStore(target, fake_embeddings()) for _ in range(3)]
    try:
        results: list[Any] = []

        def write(s: MnemonStore) -> None:
            results.append(s.ingest(ADA, messages, origin="chat"))

        threads = [threading.Thread(target=write, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 3
        assert sum(r.messages_written for r in results) == 30
        again = stores[0].ingest(ADA, messages, origin="chat")
        assert again.records_written == 0 and again.messages_skipped == 30
        per_message = Counter(m for r in stores[1].records(ADA) for m in r.message_ids)
        assert set(per_message) == {m.id for m in messages}
        assert set(per_message.values()) == {1}
    finally:
        for s in stores:
            s.close()


def test_search_ranks_lexically_and_densely_and_applies_filters(store: MnemonStore) -> None:
    messages = [
        Message(f"note {i} about gardening tulips", "Ada", id=f"n{i}", session=1 + i % 3)
        for i in range(9)
    ] + [Message("the zebra named Quillon escaped", "Bo", id="z", session=2)]
    store.ingest(ADA, messages, origin="chat", pack=False)
    hits = store.search("Quillon zebra", namespace=ADA, k=5)
    assert hits[0].record.message_ids == ("z",)
    assert hits[0].bm25_rank == 0 and hits[0].rank == 0
    # an exact text match is also the nearest fake vector of the same text
    exact = store.search("Bo: the zebra named Quillon escaped", namespace=ADA, k=3)
    assert exact[0].record.message_ids == ("z",) and exact[0].dense_rank == 0
    page = store.search("gardening tulips", namespace=ADA, k=4, offset=2)
    assert [h.rank for h in page] == [2, 3, 4, 5]
    only3 = store.search(
        "gardening tulips", namespace=ADA, k=20, filters=SearchFilters(session_from=3)
    )
    assert only3 and {h.record.session for h in only3} == {3}
    assert store.search("gardening", namespace=("users", "nobody"), k=5) == []


def test_a_date_filter_keeps_to_its_bounds_inside_the_ranking(store: MnemonStore) -> None:
    """The read path's date search (``ReadSettings.date_search``) relies on this: bounds are
    inclusive, applied before the page is cut (so a month's records are found however far
    the unfiltered ranking puts them), and undated records never pass."""
    from datetime import datetime

    messages = [
        Message(
            f"tulips note {i}, tulips and gardening again",
            "Ada",
            id=f"t{i}",
            session=1 + i,
            timestamp=datetime(2023, 1 + i % 12, 1 + i % 28, 12),
        )
        for i in range(36)
    ] + [
        Message(
            "signed up at the shelter",
            "Ada",
            id="june",
            session=40,
            timestamp=datetime(2023, 6, 30, 23, 59),
        ),
        Message("an undated tulips note", "Ada", id="undated", session=41),
    ]
    store.ingest(ADA, messages, origin="chat", pack=False)
    june = SearchFilters(
        date_from=datetime(2023, 6, 1), date_to=datetime(2023, 6, 30, 23, 59, 59, 999999)
    )
    hits = store.search("tulips gardening", namespace=ADA, k=20, filters=june)
    ids = {m for h in hits for m in h.record.message_ids}
    assert ids == {"t5", "t17", "t29", "june"}  # the last minute of the month included
    assert [h.rank for h in hits] == list(range(len(hits)))
    assert all(h.record.date is not None and h.record.date.month == 6 for h in hits)
    # negative control: unfiltered, the page is the tulips notes, not the shelter one
    plain = store.search("tulips gardening", namespace=ADA, k=4)
    assert "june" not in {m for h in plain for m in h.record.message_ids}


def test_namespaces_are_isolated(store: MnemonStore) -> None:
    store.ingest(ADA, tagged_messages("adaonly", 5), origin="chat")
    bo = store.ingest(BO, tagged_messages("boonly", 5), origin="chat")
    hits = store.search("boonly shared apple", namespace=ADA, k=50)
    assert hits and all(h.record.namespace == ADA for h in hits)
    assert all("boonly" not in h.record.text for h in hits)
    assert store.get_records(ADA, list(bo.record_ids)) == []
    assert list(store.records(("users", "b"))) == []


def test_delete_records_and_messages_are_audited_and_lose_nothing_else(
    store: MnemonStore,
) -> None:
    packed = [Message(f"short {w} turn", "Ada", id=f"p{i}") for i, w in enumerate("abcdef")]
    store.ingest(ADA, packed, origin="chat", pack=True)
    single = store.ingest(ADA, tagged_messages("solo", 3, prefix="s"), origin="x", pack=False)
    gone = store.delete_records(ADA, [single.record_ids[0], "unknown"], reason="asked")
    assert gone == [single.record_ids[0]]
    assert store.get_records(ADA, gone) == []
    deleted, rewritten = store.delete_messages(ADA, ["p2"], actor="ada", reason="gdpr")
    assert deleted
    left = Counter(m for r in store.records(ADA) for m in r.message_ids)
    assert "p2" not in left
    assert {f"p{i}" for i in range(6) if i != 2} <= set(left)
    assert rewritten.messages_written == 5
    assert all("short c turn" not in h.record.text for h in store.search("c", namespace=ADA))
    audit = store.audit_log(ADA)
    assert [a.action for a in audit] == ["delete_records", "delete_messages"]
    assert audit[1].message_ids == ("p2",) and audit[1].actor == "ada"
    assert audit[0].record_ids == tuple(gone) and audit[0].reason == "asked"


def test_erase_leaves_nothing_of_the_namespace_in_any_table(target: str) -> None:
    markers = ["QzvMarkerAlpha7731", "ZqvMarkerGamma5521"]
    victim = [Message(f"secret {m} words", "Eve", id=f"v{i}") for i, m in enumerate(markers)]
    with MnemonStore(target, fake_embeddings()) as store:
        store.ingest(("users", "victim"), victim, origin="chat")
        store.ingest(("users", "victi"), [Message("KeepMeOmega5512", "Ann")], origin="c")
        store.delete_records(("users", "victim"), [], reason="noop")
        _consolidate(store, ("users", "victim"))  # items, links, watermark of the victim too
        store.flush()
        before = _holding(target, markers)
        assert before, "the scan must find the markers before the erase"
        assert store.erase_namespace(("users", "victim"), actor="ops") >= 1
        store.flush()
        assert store.search("secret", namespace=("users", "victim")) == []
        assert [a.action for a in store.audit_log(("users", "victim"))] == ["erase_namespace"]
        assert store.get_records(("users", "victi"), []) == []
        kept = store.search("KeepMeOmega5512", namespace=("users", "victi"), k=1)
        assert kept and "KeepMeOmega5512" in kept[0].record.text
    assert _holding(target, markers) == []
    assert _holding(target, ["KeepMeOmega5512"])


def _file_integrity(target: str) -> None:
    """On the embedded backend: the SQLite file is intact and no record lacks its vector."""
    if is_postgres_url(target):
        return  # PostgreSQL's own WAL recovery; the checks below are about the file format
    conn = sqlite3.connect(target)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        orphans = conn.execute(
            "SELECT COUNT(*) FROM records r LEFT JOIN vectors v ON v.record_id = r.id "
            "WHERE v.record_id IS NULL"
        ).fetchone()[0]
        assert orphans == 0, "records and vectors must commit together"
    finally:
        conn.close()


def _check_after_kill(target: str, acked: list[int]) -> int:
    _file_integrity(target)
    with MnemonStore(target, fake_embeddings()) as store:
        records = list(store.records(NS))
        per_message = Counter(m for r in records for m in r.message_ids)
        assert set(per_message.values()) <= {1}, "a message is stored twice"
        present = {int(m.split("-")[0][1:]) for m in per_message}
        for i in present:
            assert all(f"b{i}-m{j}" in per_message for j in range(BATCH)), f"batch {i} partial"
        assert present == set(range(len(present))), "batches are not a prefix"
        assert set(acked) <= present, f"acknowledged batches lost: {set(acked) - present}"
        stats = store.stats(NS)["namespaces"][0]
        assert stats["records"] == stats["vectors"] == len(records)
        for i in acked[-3:]:
            word = f"ackbw{i}x1"
            hits = store.search(word, namespace=NS, k=2)
            assert hits and word in hits[0].record.text
        if present:  # a restarted writer continues without writing anything twice
            redo = store.ingest(NS, batch_messages(max(present)), origin="crash")
            assert redo.records_written == 0
        again = store.ingest(NS, batch_messages(len(present)), origin="crash")
        assert again.records_written > 0
    return len(present)


@pytest.mark.slow
def test_sigkill_during_ingest_loses_and_duplicates_nothing(target: str, tmp_path: Path) -> None:
    rng = random.Random(11)
    total = 0
    for trial in range(TRIALS):
        acks = tmp_path / f"acks{trial}"
        child = start_child(CHILD, "ingest", target, str(acks))
        kill_after(child, rng.uniform(0.05, 2.0))  # early kills land inside the first commits
        text = acks.read_text() if acks.exists() else ""
        acked = [int(x) for x in text[: text.rfind("\n") + 1].split()]  # a torn line was no ack
        total += len(acked)
        assert _check_after_kill(target, acked) >= len(acked)
    assert total > 0, "no batch was acknowledged: the test checked nothing"


@pytest.mark.slow
def test_four_processes_write_and_read_without_loss_or_duplicates(
    target: str, tmp_path: Path
) -> None:
    with MnemonStore(target, fake_embeddings()):
        pass  # set the store up once, before the writers race
    n = 6
    children = [
        (w, start_child(CHILD, "mixed", target, str(tmp_path / f"acks-{w}"), w, str(n)))
        for w in ("p", "q", "r", "s")
    ]
    for w, child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, f"writer {w} failed: {err.decode()[-2000:]}"
    with MnemonStore(target, fake_embeddings()) as store:
        shared = Counter(m for r in store.records(SHARED) for m in r.message_ids)
        assert len(shared) == 4 * n * BATCH and set(shared.values()) == {1}
        for w, _ in children:
            own = Counter(m for r in store.records(("own", w)) for m in r.message_ids)
            assert set(own) == {f"{w}{i}-m{j}" for i in range(n) for j in range(BATCH)}
            assert set(own.values()) == {1}


# --- consolidation: watermark, items, two jobs ------------------------------------------


def _consolidate(store: MnemonStore, ns: tuple[str, ...]) -> Any:
    from _consolidation_fakes import deriving_model

    from mnemon_langgraph.consolidation import ConsolidationSettings, create_consolidation_graph

    graph = create_consolidation_graph(
        model=deriving_model(), store=store, settings=ConsolidationSettings(batch_chars=400)
    )
    return graph.invoke({"namespace": ns})["report"]


def test_consolidation_folds_every_record_once_and_moves_the_watermark(
    store: MnemonStore,
) -> None:
    from mnemon_langgraph.consolidation import item_store_for
    from mnemon_langgraph.store._internal.item_rows import item_embedding_text

    store.ingest(ADA, tagged_messages("fold", 24), origin="chat", pack=False)
    report = _consolidate(store, ADA)
    items = item_store_for(store)
    assert report.stop_reason == "caught_up" and len(report.batches) >= 2
    assert items.watermark(ADA) == store.max_seq(ADA)
    events = items.all_items(ADA, "event")
    linked = Counter(r for it in events for r in it.record_ids)
    assert set(linked) == {r.id for r in store.records(ADA)}  # every record folded …
    assert set(linked.values()) == {1}  # … once
    probe = item_embedding_text(events[0])  # the text its embedding was made from
    assert items.nearest_items(probe, namespace=ADA, k=1)[0].id == events[0].id
    assert items.linked_items(ADA, [events[0].record_ids[0]])[0].id == events[0].id
    again = _consolidate(store, ADA)
    assert again.batches == () and items.count(ADA) == len(items.all_items(ADA))
    # deleting a record deletes its links; an item left without links goes, audited
    store.delete_records(ADA, [events[0].record_ids[0]])
    assert items.get_items(ADA, [events[0].id]) == []
    assert "delete_item" in [a.action for a in store.audit_log(ADA)]


def test_two_consolidation_jobs_never_fold_the_same_records_twice(target: str) -> None:
    from mnemon_langgraph.consolidation import item_store_for
    from mnemon_langgraph.errors import JournalError

    with MnemonStore(target, fake_embeddings()) as store:
        store.ingest(ADA, tagged_messages("race", 40), origin="chat", pack=False)
    outcomes: list[str] = []

    def job() -> None:
        with MnemonStore(target, fake_embeddings()) as mine:
            try:
                _consolidate(mine, ADA)
                outcomes.append("done")
            except JournalError:
                outcomes.append("moved")  # the other job moved the watermark first

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 2
    with MnemonStore(target, fake_embeddings()) as store:
        items = item_store_for(store)
        linked = Counter(r for it in items.all_items(ADA, "event") for r in it.record_ids)
        assert set(linked) == {r.id for r in store.records(ADA)}
        assert set(linked.values()) == {1}, "a record was folded twice"
        assert items.watermark(ADA) == store.max_seq(ADA)
        # item ids may repeat across folds, so count folded batches against one lone job
        store.ingest(BO, tagged_messages("race", 40), origin="chat", pack=False)
        alone = _consolidate(store, BO)
        assert items.state(ADA).batches == items.state(BO).batches == len(alone.batches)


# -- the same arguments, the same errors: every public method on both backends ------------

_PEAR = [Message("a pear and an apple", "Ada", id="pear0")]
BAD_CALLS: dict[str, Any] = {
    # the table of the storage redesign: SQLite and PostgreSQL answered differently
    "search offset=-1": lambda s: s.search("pear", namespace=ADA, offset=-1),
    "search k=2.5": lambda s: s.search("pear", namespace=ADA, k=2.5),
    "search lone surrogate": lambda s: s.search("pear \ud800", namespace=ADA),
    "search query=None": lambda s: s.search(None, namespace=ADA),
    # bounds and types of every other argument
    "search k=-1": lambda s: s.search("pear", namespace=ADA, k=-1),
    "search k=True": lambda s: s.search("pear", namespace=ADA, k=True),
    "search k=2**63": lambda s: s.search("pear", namespace=ADA, k=2**63),
    "search offset=2**63": lambda s: s.search("pear", namespace=ADA, offset=2**63),
    "search offset=-5": lambda s: s.search("pear", namespace=ADA, offset=-5),
    "search filters=dict": lambda s: s.search("pear", namespace=ADA, filters={"session_to": 1}),
    "search query=bytes": lambda s: s.search(b"pear", namespace=ADA),
    "search namespace=()": lambda s: s.search("pear", namespace=()),
    "asearch offset=-1": lambda s: _run(s.asearch("pear", namespace=ADA, offset=-1)),
    "asearch query=None": lambda s: _run(s.asearch(None, namespace=ADA)),
    "ingest messages=5": lambda s: s.ingest(ADA, 5, origin="t"),
    "ingest messages=str": lambda s: s.ingest(ADA, "hello", origin="t"),
    "ingest messages=[dict]": lambda s: s.ingest(ADA, [{"text": "hi"}], origin="t"),
    "ingest one Message": lambda s: s.ingest(ADA, _PEAR[0], origin="t"),
    "ingest source=None": lambda s: s.ingest(ADA, _PEAR, origin=None),
    "ingest pack='yes'": lambda s: s.ingest(ADA, _PEAR, origin="t", pack="yes"),
    "ingest progress=1": lambda s: s.ingest(ADA, _PEAR, origin="t", progress=1),
    "ingest surrogate text": lambda s: s.ingest(ADA, [Message("x \ud800", "Ada")], origin="t"),
    "aingest messages=[dict]": lambda s: _run(s.aingest(ADA, [{"text": "hi"}], origin="t")),
    "get_records ids=None": lambda s: s.get_records(ADA, None),
    "get_records ids=[1]": lambda s: s.get_records(ADA, [1]),
    "stored_vectors ids=[1]": lambda s: s.stored_vectors(ADA, [1]),
    "term_statistics terms=[None]": lambda s: s.term_statistics(ADA, [None]),
    "match_record_ids limit=-1": lambda s: s.match_record_ids(ADA, "r-", limit=-1),
    "match_record_ids limit=2**63": lambda s: s.match_record_ids(ADA, "r-", limit=2**63),
    "match_record_ids prefix=None": lambda s: s.match_record_ids(ADA, None),
    "records after_seq=2**63": lambda s: s.records(ADA, after_seq=2**63),
    "records after_seq=None": lambda s: s.records(ADA, after_seq=None),
    "records limit=-1": lambda s: s.records(ADA, limit=-1),
    "records limit=1.5": lambda s: s.records(ADA, limit=1.5),
    "session_records session=-1": lambda s: s.session_records(ADA, -1),
    "session_records session=None": lambda s: s.session_records(ADA, None),
    "session_records start=-1": lambda s: s.session_records(ADA, 1, start=-1),
    "session_records stop=1.5": lambda s: s.session_records(ADA, 1, stop=1.5),
    "session_records stop=2**63": lambda s: s.session_records(ADA, 1, stop=2**63),
    "known_message_ids ids=5": lambda s: s.known_message_ids(ADA, 5),
    "known_message_ids ids=[None]": lambda s: s.known_message_ids(ADA, [None]),
    "max_seq namespace=5": lambda s: s.max_seq(5),
    "count namespace=('',)": lambda s: s.count(("",)),
    "delete_records ids=[1]": lambda s: s.delete_records(ADA, [1]),
    "delete_records ids=None": lambda s: s.delete_records(ADA, None),
    "delete_records actor=None": lambda s: s.delete_records(ADA, ["r-x"], actor=None),
    "delete_messages ids=[None]": lambda s: s.delete_messages(ADA, [None]),
    "delete_messages source=None": lambda s: s.delete_messages(ADA, ["pear0"], origin=None),
    "erase_namespace actor=None": lambda s: s.erase_namespace(ADA, actor=None),
    "audit_log namespace=5": lambda s: s.audit_log(5),
    "stats namespace=[]": lambda s: s.stats([]),
    "delete_records reason=None": lambda s: s.delete_records(ADA, ["r-x"], reason=None),
    "ingest_file path=None": lambda s: s.ingest_file(None, namespace=ADA),
    "ingest_file format=bogus": lambda s: s.ingest_file("x.jsonl", namespace=ADA, format="bogus"),
    "ingest_file missing file": lambda s: s.ingest_file("/nonexistent/x.jsonl", namespace=ADA),
    "add_messages messages=str": lambda s: s.add_messages(ADA, "hello"),
    "add_messages messages=5": lambda s: s.add_messages(ADA, 5),
    "add_messages role=wizard": lambda s: s.add_messages(ADA, [("wizard", "hi")]),
    "add_messages mixed kinds": lambda s: s.add_messages(ADA, [_PEAR[0], ("user", "x")]),
    "add_messages now=str": lambda s: s.add_messages(ADA, [("user", "x")], now="today"),
    "export user=5": lambda s: s.export(5),
    "holds_namespace ns=None": lambda s: s.holds_namespace(None),
    "warm namespace=5": lambda s: s.warm(5),
    "awarm namespace=()": lambda s: _run(s.awarm(())),
    "records filters=dict": lambda s: s.records(ADA, filters={"session_from": 1}),
    "aget_records ids=None": lambda s: _run(s.aget_records(ADA, None)),
    "arecords after_seq=None": lambda s: _run(_first(s.arecords(ADA, after_seq=None))),
    "asession_records start=True": lambda s: _run(s.asession_records(ADA, 1, start=True)),
    "aerase_namespace actor=None": lambda s: _run(s.aerase_namespace(ADA, actor=None)),
    "aadd_messages messages=str": lambda s: _run(s.aadd_messages(ADA, "hello")),
    "sweep_expired_items now=naive": lambda s: s.sweep_expired_items(now=datetime(2026, 1, 1)),
    "sweep_expired_items now=str": lambda s: s.sweep_expired_items(now="2026-01-01"),
    "sweep_expired_items actor=None": lambda s: s.sweep_expired_items(actor=None),
    "asweep_expired_items now=naive": lambda s: _run(
        s.asweep_expired_items(now=datetime(2026, 1, 1))
    ),
}


async def _first(records: Any) -> Any:
    return [r async for r in records][:1]


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_arguments_raise_input_error_alike_and_change_nothing(
    store: MnemonStore, case: str
) -> None:
    """The one contract: every bad argument of every public method is the package's
    ``InputError`` on both backends (never a driver's or Python's own error), raised
    before anything is read or written."""
    store.ingest(ADA, _PEAR, origin="chat")
    before = [r.id for r in store.records(ADA)]
    with pytest.raises(InputError):
        BAD_CALLS[case](store)
    assert [r.id for r in store.records(ADA)] == before
    assert store.audit_log(ADA) == [] and store.count(ADA) == 1
    assert [h.record.id for h in store.search("pear", namespace=ADA)] == before


def test_edge_arguments_answer_alike(store: MnemonStore) -> None:
    """The valid edges: ``k=0``, an offset past the end, an empty id list, a prefix no id
    can hold, one string as one id; and ``messages_skipped`` is counted by one rule."""
    first = store.ingest(ADA, _PEAR, origin="chat")
    assert (first.records_written, first.messages_written, first.messages_skipped) == (1, 1, 0)
    again = store.ingest(ADA, [*_PEAR, *_PEAR], origin="chat")
    assert (again.records_written, again.messages_skipped) == (0, 2)
    with pytest.raises(InputError, match="appears twice"):  # a new id given twice in one call
        store.ingest(BO, [Message("bo once", "Bo", id="b0")] * 2, origin="chat")
    assert store.count(BO) == 0
    assert store.search("pear", namespace=ADA, k=0) == []
    assert store.search("pear", namespace=ADA, offset=10_000) == []
    assert _run(store.asearch("pear", namespace=ADA, k=0)) == []
    assert [h.record.id for h in _run(store.asearch("pear", namespace=ADA))] == list(
        first.record_ids
    )
    assert store.get_records(ADA, []) == [] and store.stored_vectors(ADA, []) == {}
    assert [r.id for r in store.get_records(ADA, first.record_ids[0])] == list(first.record_ids)
    assert store.match_record_ids(ADA, "r-\n") == [] and store.match_record_ids(ADA, "") == []
    assert store.match_record_ids(ADA, "r-", limit=0) == []
    assert store.match_record_ids(ADA, first.record_ids[0][:6]) == list(first.record_ids)
    assert store.known_message_ids(ADA, "pear0") == {"pear0"}
    assert list(store.records(ADA, after_seq=2**63 - 1)) == []
    # a negative watermark reads from the first record (max_seq - 1 of an empty namespace)
    assert [r.id for r in store.records(ADA, after_seq=-1)] == list(first.record_ids)
    assert (
        list(store.records(("users", "new"), after_seq=store.max_seq(("users", "new")) - 1)) == []
    )
    added = store.add_messages(("users", "new"), [("user", "hello there"), ("assistant", "hi")])
    assert added.messages_written == 2 and store.count(("users", "new")) == 1
    assert store.delete_records(ADA, []) == []
    assert store.delete_records(ADA, "r-none") == []  # one string is one id (no such record)
    assert store.delete_messages(ADA, []) == ([], IngestResult(0, 0, 0))
    assert store.audit_log(ADA) == []  # a deletion of nothing is not audited
    assert store.holds_namespace(ADA) and not store.holds_namespace(("users", "nobody"))


def test_cli_erase_of_a_missing_namespace_exits_1_alike_and_audits_nothing(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemon_langgraph.cli import main

    with MnemonStore(target, fake_embeddings()) as store:
        store.ingest(ADA, _PEAR, origin="chat")
    assert main(["erase", "--db", target, "--namespace", "nobody", "--yes"]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "nothing erased" in err
    with MnemonStore(target, fake_embeddings()) as store:
        assert store.audit_log() == [] and store.count(ADA) == 1
    assert (
        main(["erase", "--db", target, "--namespace", "users", "--namespace", "ada", "--yes"]) == 0
    )
    assert "erased 1 records" in capsys.readouterr().out
    with MnemonStore(target, fake_embeddings()) as store:
        assert [a.action for a in store.audit_log()] == ["erase_namespace"]
        assert store.count(ADA) == 0 and not store.holds_namespace(ADA)


# -- the async face: a twin of every public method, answering as the sync one ------------

# item_store and kv build an object (each has its own faces); they do no I/O themselves
SYNC_ONLY = {"open", "close", "flush", "query_vector", "item_store", "kv", "transaction"}


def test_every_public_method_has_an_async_twin(store: MnemonStore) -> None:
    from mnemon_langgraph.store._internal.async_face import AsyncFace

    public = {
        n for n in dir(MnemonStore) if not n.startswith("_") and callable(getattr(MnemonStore, n))
    }
    sync = {n for n in public if f"a{n}" in public or not n.startswith("a")}
    missing = sorted(n for n in sync - SYNC_ONLY if f"a{n}" not in public)
    assert len(sync) > 20 and missing == []
    assert hasattr(store, "aingest_file")
    if type(store).__name__ == "PostgresStore":  # native: every hook of the face overridden
        hooks = [n for n in vars(AsyncFace) if n.startswith("_a")]
        assert len(hooks) >= 15
        assert [n for n in hooks if getattr(type(store), n) is getattr(AsyncFace, n)] == []


def test_the_async_face_answers_as_the_sync_face(store: MnemonStore) -> None:
    import asyncio

    ids = list(store.ingest(ADA, tagged_messages("faces", 6), origin="chat", pack=False).record_ids)
    store.ingest(BO, tagged_messages("other", 2, prefix="o"), origin="chat", pack=False)

    async def pairs() -> dict[str, tuple[Any, Any]]:
        return {
            "get": (await store.aget_records(ADA, ids[:3]), store.get_records(ADA, ids[:3])),
            "match": (
                await store.amatch_record_ids(ADA, ids[0][:8], 5),
                store.match_record_ids(ADA, ids[0][:8], 5),
            ),
            "vectors": (
                sorted(await store.astored_vectors(ADA, ids)),
                sorted(store.stored_vectors(ADA, ids)),
            ),
            "terms": (
                await store.aterm_statistics(ADA, ["faces", "apple", "zzz"]),
                store.term_statistics(ADA, ["faces", "apple", "zzz"]),
            ),
            "records": (
                [r async for r in store.arecords(ADA, after_seq=-1, limit=4)],
                list(store.records(ADA, limit=4)),
            ),
            "session": (
                await store.asession_records(ADA, 1, start=1, stop=4),
                store.session_records(ADA, 1, start=1, stop=4),
            ),
            "known": (
                await store.aknown_message_ids(ADA, ["m1", "o1", "x"]),
                store.known_message_ids(ADA, ["m1", "o1", "x"]),
            ),
            "max_seq": (await store.amax_seq(ADA), store.max_seq(ADA)),
            "count": (await store.acount(ADA), store.count(ADA)),
            "namespaces": (await store.anamespaces(), store.namespaces()),
            "holds": (await store.aholds_namespace(BO), store.holds_namespace(BO)),
            "warm": (await store.awarm(ADA), store.warm(ADA)),
            "stats": (await store.astats(ADA), store.stats(ADA)),
            "export": (await store.aexport(BO), store.export(BO)),
        }

    got = asyncio.run(pairs())
    assert got["get"][0] and got["records"][0] and got["known"][0] == {"m1"}
    assert got["warm"] == (True, True)  # a namespace with records: searched in this process
    assert [name for name, (a, s) in got.items() if a != s] == []

    async def writes() -> tuple[Any, ...]:
        gone = await store.adelete_records(ADA, [ids[0]], reason="async")
        deleted, rewritten = await store.adelete_messages(ADA, ["m2"])
        added = await store.aadd_messages(("users", "cy"), [("user", "hi there")])
        erased = await store.aerase_namespace(BO, actor="async")
        return gone, deleted, rewritten, added, erased

    gone, deleted, rewritten, added, erased = asyncio.run(writes())
    assert gone == [ids[0]] and deleted == [ids[2]] and rewritten.records_written == 0
    assert added.messages_written == 1 and erased == 2 and not store.holds_namespace(BO)
    assert [a.action for a in store.audit_log(ADA)] == ["delete_records", "delete_messages"]
    assert asyncio.run(store.aaudit_log(ADA)) == store.audit_log(ADA)
    with pytest.raises(InputError):
        asyncio.run(store.adelete_records(ADA, [1]))
    with pytest.raises(InputError):
        asyncio.run(store.amatch_record_ids(ADA, None))


def test_expired_key_value_items_are_swept_alike_on_both_faces(store: MnemonStore) -> None:
    """``sweep_expired_items`` (the BaseStore's TTL sweep): only what expired by ``now``,
    one audit row per namespace, the same on the sync and the async face."""
    import asyncio

    from mnemon_langgraph.store.kv_items import KVWrite

    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    writes = [
        KVWrite(ADA, "a", '{"v": 1}', ttl=5),
        KVWrite(ADA, "b", '{"v": 2}', ttl=20),
        KVWrite(BO, "c", '{"v": 3}', ttl=5),
        KVWrite(BO, "d", '{"v": 4}'),
    ]
    kv = store.kv()
    asyncio.run(kv.write(writes, actor="test", now=t0))
    assert store.sweep_expired_items(now=t0 + timedelta(minutes=4)) == 0
    assert store.sweep_expired_items(now=t0 + timedelta(minutes=5), actor="ops") == 2
    later = t0 + timedelta(minutes=30)
    assert asyncio.run(store.asweep_expired_items(now=later)) == 1
    left = asyncio.run(kv.under((), None))
    assert [(r.namespace, r.key) for r in left] == [(BO, "d")]
    audit = [a for a in asyncio.run(kv.audit_log(None)) if a.action == "expire_items"]
    assert [(a.actor, a.namespace, a.keys) for a in audit] == [
        ("ops", ADA, ("a",)),
        ("ops", BO, ("c",)),
        ("ttl", ADA, ("b",)),
    ]


def test_one_date_rule_for_the_store_and_the_integrations(store: MnemonStore) -> None:
    """``add_messages`` and the agent surfaces date messages by one rule (store.users
    .date_messages): an aware ``now`` in any time zone is compared in UTC with the last
    record's date, so a session changes after four hours of real time, not wall time."""
    from datetime import datetime, timedelta, timezone

    from mnemon_langgraph.integrations._common import stamp_messages
    from mnemon_langgraph.store._internal.users import date_messages

    store.add_messages(ADA, [("user", "first words")], now=datetime(2024, 5, 1, 12, 0))
    paris = timezone(timedelta(hours=2))
    three_hours = datetime(2024, 5, 1, 17, 0, tzinfo=paris)  # 15:00 UTC
    dated = date_messages(store, ADA, [Message("later", "Ada")], now=three_hours)
    assert stamp_messages(store, ADA, [Message("later", "Ada")], now=three_hours) == dated
    assert dated[0].session == 1 and dated[0].timestamp == datetime(2024, 5, 1, 15, 0)
    five_hours = datetime(2024, 5, 1, 19, 0, tzinfo=paris)  # 17:00 UTC
    assert date_messages(store, ADA, [Message("next", "Ada")], now=five_hours)[0].session == 2
    kept = Message("own date", "Ada", timestamp=datetime(2020, 1, 1), session=7)
    assert date_messages(store, ADA, [kept], now=five_hours) == [kept]


def test_retention_answers_alike_on_both_faces_and_a_hold_outlives_an_erase(
    store: MnemonStore,
) -> None:
    """``apply_retention`` (tests/test_retention.py has the rest): the same receipt from each
    face for the same history; a legal hold is not lifted by an erase of its namespace."""
    from datetime import UTC, datetime

    old, now = datetime(2024, 1, 1), datetime(2024, 6, 1, tzinfo=UTC)
    history = [
        Message(f"turn {i}", "Ada", id=f"t{i}", session=1 + i % 2, timestamp=old if i < 3 else now)
        for i in range(5)
    ]
    for ns in (ADA, BO):
        store.ingest(ns, history, origin="chat", pack=False)
    sync = store.apply_retention(ADA, older_than="30d", now=now)
    other = _run(store.aapply_retention(BO, older_than="30d", now=now))
    assert sync.records == 3 and (other.counts, other.message_ids) == (
        sync.counts,
        sync.message_ids,
    )
    assert store.count(ADA) == store.count(BO) == 2
    store.hold(BO)
    store.erase_namespace(BO)
    assert store.held_namespaces() == [BO] and store.count(BO) == 0
