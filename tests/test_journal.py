"""Tests for mnemon_langgraph.store.embedded._journal (real SQLite files in tmp_path)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from _search_fakes import HashEmbeddings

from mnemon_langgraph.errors import (
    EmbeddingMismatchError,
    InputError,
    JournalError,
    JournalLockedError,
    JournalReadOnlyError,
    NamespaceError,
    SchemaVersionError,
)
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._journal import SCHEMA_VERSION, Journal, namespace_key
from mnemon_langgraph.types import Message, Record

NS = ("users", "ada@example.com")


def _messages(n: int, *, prefix: str = "m", session: int = 1, text: str = "note") -> list[Message]:
    return [
        Message(
            text=f"{text} {i} about topic {i}",
            speaker="Ada" if i % 2 == 0 else "Bob",
            id=f"{prefix}{i}",
            session=session,
            timestamp=datetime(2023, 5, 8, 13, 56),
        )
        for i in range(n)
    ]


def _records(ns=NS, n: int = 5, **kw) -> list[Record]:  # type: ignore[no-untyped-def]
    return chunk_messages(_messages(n, **kw), namespace=ns, origin="test", pack=False)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "j.db")
    yield j
    j.close()


def _tables_with_namespace(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            n
            for n in names
            if any(c[1] == "namespace" for c in conn.execute(f'PRAGMA table_info("{n}")'))
        ]
    finally:
        conn.close()


def test_pragmas_and_schema(journal: Journal) -> None:
    conn = journal._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    assert journal.schema_version() == SCHEMA_VERSION


def test_append_read_roundtrip(journal: Journal) -> None:
    recs = _records()
    written = journal.append(NS, recs)
    assert [r.id for r in written] == [r.id for r in recs]
    assert [r.seq for r in written] == [1, 2, 3, 4, 5]
    back = list(journal.records(NS))
    assert back == written
    assert back[0].date == datetime(2023, 5, 8, 13, 56)
    assert back[0].roles == ("user",)
    assert journal.count(NS) == 5
    assert journal.max_seq(NS) == 5
    assert [r.id for r in journal.records(NS, after_seq=3)] == [recs[3].id, recs[4].id]
    assert len(list(journal.records(NS, limit=2))) == 2
    got = journal.get_records(NS, [recs[2].id, "missing", recs[0].id])
    assert [r.id for r in got] == [recs[2].id, recs[0].id]
    assert journal.get_records(("someone-else",), [recs[0].id]) == []


def test_reappend_is_idempotent(journal: Journal) -> None:
    recs = _records()
    journal.append(NS, recs)
    assert journal.append(NS, recs) == []
    assert journal.count(NS) == 5
    assert journal.known_message_ids(NS, ["m0", "m4", "zz"]) == {"m0", "m4"}
    assert journal.known_message_ids(("other",), ["m0"]) == set()


def test_seq_strictly_increasing_across_namespaces_and_never_reused(journal: Journal) -> None:
    a = journal.append(("a",), _records(("a",), 3))
    b = journal.append(("b",), _records(("b",), 3))
    seqs = [r.seq for r in a + b]
    assert seqs == sorted(seqs) and len(set(seqs)) == 6
    journal.delete_records(("b",), [b[-1].id])
    c = journal.append(("b",), _records(("b",), 2, prefix="n"))
    assert c[0].seq > b[-1].seq
    assert journal.last_seq() == c[-1].seq


def test_append_rejects_foreign_namespace(journal: Journal) -> None:
    with pytest.raises(InputError, match="namespace"):
        journal.append(("other",), _records())
    assert journal.count(("other",)) == 0


def test_vectors_roundtrip_and_batches(journal: Journal) -> None:
    recs = _records(n=7)
    journal.ensure_embedding_model("fake-model", 4)
    vecs = np.arange(28, dtype=np.float32).reshape(7, 4)
    journal.append(NS, recs, vecs)
    batches = list(journal.iter_vectors(NS, batch=3))
    assert [len(ids) for ids, _ in batches] == [3, 3, 1]
    ids = [i for b, _ in batches for i in b]
    assert ids == [r.id for r in recs]
    np.testing.assert_array_equal(np.vstack([v for _, v in batches]), vecs)
    assert batches[0][1].dtype == np.float32
    after = list(journal.iter_vectors(NS, after_seq=6))
    assert after[0][0] == [recs[6].id]


def test_put_vectors_for_records_written_without(journal: Journal) -> None:
    recs = _records(n=2)
    journal.append(NS, recs)
    assert list(journal.iter_vectors(NS)) == []
    journal.ensure_embedding_model("fake", 2)
    assert journal.put_vectors(NS, [r.id for r in recs] + [], np.ones((2, 2))) == 2
    ids, arr = next(journal.iter_vectors(NS))
    assert ids == [r.id for r in recs] and arr.shape == (2, 2)


def test_embedding_mismatch_names_both_models(journal: Journal, tmp_path: Path) -> None:
    assert journal.embedding_model() is None
    journal.ensure_embedding_model("model-a", 4)
    journal.ensure_embedding_model("model-a", 4)  # same model is fine
    assert journal.embedding_model() == ("model-a", 4)
    with pytest.raises(EmbeddingMismatchError, match=r"model-a.*model-b"):
        journal.ensure_embedding_model("model-b", 4)
    with pytest.raises(EmbeddingMismatchError, match="8"):
        journal.ensure_embedding_model("model-a", 8)
    with pytest.raises(EmbeddingMismatchError):
        journal.append(NS, _records(n=1), np.zeros((1, 3)))
    assert journal.count(NS) == 0
    journal.close()
    reopened = Journal(tmp_path / "j.db")
    with pytest.raises(EmbeddingMismatchError):
        reopened.ensure_embedding_model("model-b", 4)
    reopened.close()


def test_delete_records_audits_without_text(journal: Journal, tmp_path: Path) -> None:
    recs = _records(text="secret-diary-entry")
    journal.ensure_embedding_model("m", 2)
    journal.append(NS, recs, np.ones((5, 2)))
    g0 = journal.generation(NS)
    deleted = journal.delete_records(NS, [recs[1].id, "nope"], actor="tester", reason="user asked")
    assert deleted == [recs[1].id]
    assert journal.generation(NS) > g0
    assert journal.count(NS) == 4
    assert journal.known_message_ids(NS, ["m1"]) == set()  # messages rows gone
    assert recs[1].id not in [i for ids, _ in journal.iter_vectors(NS) for i in ids]
    (entry,) = journal.audit_log(NS)
    assert entry.action == "delete_records" and entry.actor == "tester"
    assert entry.record_ids == (recs[1].id,) and entry.count == 1 and entry.reason == "user asked"
    rows = journal._conn.execute("SELECT * FROM audit").fetchall()
    assert rows and "secret-diary-entry" not in json.dumps(rows)
    # nothing found: no audit row, no generation bump
    g1 = journal.generation(NS)
    assert journal.delete_records(NS, ["nope"]) == []
    assert journal.generation(NS) == g1
    # re-ingest after deletion writes the record again
    again = journal.append(NS, recs)
    assert [r.id for r in again] == [recs[1].id]


def test_delete_messages_returns_survivors_of_packed_records(journal: Journal) -> None:
    msgs = _messages(4)
    recs = chunk_messages(msgs, namespace=NS, origin="test")  # packed into one record
    assert len(recs) == 1
    journal.append(NS, recs)
    extra = journal.append(
        NS, chunk_messages(_messages(1, prefix="z", session=2), namespace=NS, origin="test")
    )
    deleted, survivors = journal.delete_messages(NS, ["m2"])
    assert deleted == [recs[0].id]
    assert [m.id for m in survivors] == ["m0", "m1", "m3"]
    assert [m.text for m in survivors] == [msgs[0].text, msgs[1].text, msgs[3].text]
    assert [m.speaker for m in survivors] == ["Ada", "Bob", "Bob"]
    assert all(m.session == 1 for m in survivors)
    assert journal.count(NS) == 1 and journal.get_records(NS, [extra[0].id])
    (entry,) = journal.audit_log(NS)
    assert entry.action == "delete_messages" and entry.message_ids == ("m2",)
    assert "note 2" not in json.dumps(entry.__repr__())
    # re-ingesting the survivors restores them; the deleted message stays gone
    assert journal.known_message_ids(NS, ["m0", "m1", "m2", "m3"]) == set()
    journal.append(NS, chunk_messages(survivors, namespace=NS, origin="test"))
    assert journal.known_message_ids(NS, ["m0", "m1", "m2", "m3"]) == {"m0", "m1", "m3"}


def test_delete_messages_reaches_every_part_of_a_split_neighbour(journal: Journal) -> None:
    long_text = " ".join(f"Sentence {i} of the long story." for i in range(60))
    msgs = [
        Message(text=long_text, speaker="Ada", id="long", session=1),
        Message(text="short reply", speaker="Bob", id="short", session=1),
    ]
    recs = chunk_messages(msgs, namespace=NS, origin="test")
    assert len(recs) >= 3 and recs[-1].message_ids == ("long", "short")
    journal.append(NS, recs)
    deleted, survivors = journal.delete_messages(NS, ["short"])
    assert sorted(deleted) == sorted(r.id for r in recs)  # all parts of "long" went too
    assert [m.id for m in survivors] == ["long"]
    assert survivors[0].text == long_text
    assert journal.count(NS) == 0


def test_foreign_key_cascade_reaches_other_tables(journal: Journal) -> None:
    recs = _records(n=2)
    journal.append(NS, recs)
    with journal.transaction() as conn:
        conn.execute(
            "CREATE TABLE items (id TEXT PRIMARY KEY, record_id TEXT NOT NULL "
            "REFERENCES records(id) ON DELETE CASCADE)"
        )
        conn.execute("INSERT INTO items VALUES ('i1', ?)", (recs[0].id,))
    with pytest.raises(sqlite3.IntegrityError), journal.transaction() as conn:
        conn.execute("INSERT INTO items VALUES ('i2', 'no-such-record')")
    journal.delete_records(NS, [recs[0].id])
    assert journal._conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0


def test_erase_namespace_leaves_no_row_and_no_text(tmp_path: Path) -> None:
    path = tmp_path / "erase.db"
    journal = Journal(path)
    other = ("users", "bob@example.com")
    journal.ensure_embedding_model("m", 2)
    marker = "zanzibar-unique-marker"
    recs = _records(n=40, text=marker)
    journal.append(NS, recs, np.ones((40, 2)))
    journal.append(other, _records(other, 3), np.ones((3, 2)))
    journal.delete_records(NS, [recs[0].id])
    with journal.transaction() as conn:  # a later module's table, found via sqlite_master
        conn.execute(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, namespace TEXT, body TEXT, "
            "record_id TEXT REFERENCES records(id) ON DELETE CASCADE)"
        )
        conn.execute(
            "INSERT INTO notes(namespace, body) VALUES (?, ?)", (namespace_key(NS), marker)
        )
        conn.execute(
            "INSERT INTO notes(namespace, body) VALUES (?, 'keep')", (namespace_key(other),)
        )
    g = journal.generation(NS)
    assert journal.erase_namespace(NS, actor="admin") == 39
    assert journal.generation(NS) > g
    key = namespace_key(NS)
    tables = _tables_with_namespace(path)
    assert {"records", "messages", "vectors", "audit", "notes"} <= set(tables)
    for table in tables:
        rows = journal._conn.execute(
            f'SELECT * FROM "{table}" WHERE namespace = ?', (key,)
        ).fetchall()
        if table == "audit":  # append-only: the earlier deletion's row stays, no text in it
            assert [r[3] for r in rows] == ["delete_records", "erase_namespace"]
            assert marker not in repr(rows)
        else:
            assert rows == [], table
    earlier, entry = journal.audit_log(NS)
    assert earlier.action == "delete_records" and earlier.record_ids == (recs[0].id,)
    assert entry.action == "erase_namespace" and entry.count == 39 and entry.actor == "admin"
    assert entry.record_ids == () and entry.message_ids == ()
    assert journal.count(other) == 3 and NS not in journal.namespaces()
    journal.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("erase.db"))
    assert marker.encode() not in raw
    assert b"keep" in raw  # sanity: the scan can see surviving text


def test_namespaces_edge_cases(journal: Journal) -> None:
    spaces = [
        ("ada@example.com",),
        ("users", "ünïcødé ☃"),
        ("a/b",),
        ("a", "b"),
        ("x.y", "z/w", "@"),
    ]
    for ns in spaces:
        journal.append(ns, _records(ns, 1))
    assert sorted(journal.namespaces()) == sorted(spaces)
    for ns in spaces:
        assert journal.count(ns) == 1
    # The journal takes checked namespaces only; the store's boundary checks them once.
    with pytest.raises(TypeError, match="checked namespace"):
        journal.count("ada@example.com")  # type: ignore[arg-type]
    store = MnemonStore(journal.path, HashEmbeddings(), journal=journal)
    assert store.count("ada@example.com") == 1  # a plain string is a one-part namespace
    for bad in [(), ("",), ("a", "  "), ("a\x00b",)]:
        with pytest.raises(NamespaceError):
            store.count(bad)


def test_transaction_rolls_back_whole(journal: Journal) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), journal.transaction():
        journal.append(NS, _records(n=2))
        raise Boom
    assert journal.count(NS) == 0
    with journal.transaction():
        journal.append(NS, _records(n=2))
    assert journal.count(NS) == 2


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Journal(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
    )
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match=str(SCHEMA_VERSION + 1)):
        Journal(path)


def test_migrates_empty_v0_file_and_keeps_foreign_tables(tmp_path: Path) -> None:
    path = tmp_path / "v0.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE keepme (x TEXT)")
    conn.execute("INSERT INTO keepme VALUES ('data')")
    conn.commit()
    conn.close()
    with Journal(path) as j:
        assert j.schema_version() == SCHEMA_VERSION
        assert j._conn.execute("SELECT x FROM keepme").fetchall() == [("data",)]
        j.append(NS, _records(n=1))
        assert j.count(NS) == 1


def test_corrupt_file_is_a_journal_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(JournalError, match=r"bad\.db"):
        Journal(path)


def test_read_only_mode_refuses_writes_but_reads(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    with Journal(path) as j:
        j.append(NS, _records(n=2))
        j.checkpoint()
    ro = Journal(path, read_only=True)
    assert ro.count(NS) == 2
    with pytest.raises(JournalReadOnlyError, match=r"ro\.db"):
        ro.append(NS, _records(n=3))
    with pytest.raises(JournalReadOnlyError):
        ro.delete_records(NS, ["x"])
    ro.close()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file modes")
def test_read_only_file_raises_with_path(tmp_path: Path) -> None:
    path = tmp_path / "perm.db"
    Journal(path).close()
    for p in tmp_path.iterdir():
        p.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(JournalReadOnlyError, match=r"perm\.db"):
            j = Journal(path)
            j.append(NS, _records(n=1))
    finally:
        tmp_path.chmod(0o755)


def test_locked_database_raises_journal_locked(tmp_path: Path) -> None:
    path = tmp_path / "lock.db"
    j = Journal(path, busy_timeout=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(JournalLockedError, match=r"lock\.db"):
            j.append(NS, _records(n=1))
        assert j.count(NS) == 0  # reads still work while another writer holds the lock
    finally:
        other.execute("ROLLBACK")
        other.close()
    j.append(NS, _records(n=1))
    assert j.count(NS) == 1
    j.close()


def test_reads_see_commits_of_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    writer, reader = Journal(path), Journal(path)
    writer.append(NS, _records(n=3))
    assert reader.count(NS) == 3
    writer.close()
    reader.close()


def test_thread_safety_smoke(journal: Journal) -> None:
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            ns = ("t", str(t))
            for batch in range(5):
                recs = _records(ns, 4, prefix=f"b{batch}-")
                journal.append(ns, recs)
                assert journal.count(ns) == 4 * (batch + 1)
                list(journal.records(NS))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    seqs = [r.seq for ns in journal.namespaces() for r in journal.records(ns)]
    assert len(seqs) == 6 * 20 and len(set(seqs)) == len(seqs)


def test_closed_journal_refuses_use(tmp_path: Path) -> None:
    j = Journal(tmp_path / "c.db")
    j.count(NS)
    j.close()
    j.close()  # idempotent
    with pytest.raises(JournalError, match="closed"):
        j.count(NS)


def test_connections_of_finished_threads_are_released(journal: Journal) -> None:
    import gc

    def read() -> None:
        journal.count(NS)

    for _ in range(8):
        th = threading.Thread(target=read)
        th.start()
        th.join()
    gc.collect()
    # this thread's connection, plus at most a couple not yet collected (not all 8)
    assert len(journal._connections) <= 3


def test_write_speed_batch_is_one_transaction(journal: Journal) -> None:
    recs = _records(n=1000)
    journal.ensure_embedding_model("m", 8)
    written = journal.append(NS, recs, np.random.default_rng(0).random((1000, 8)))
    assert len(written) == 1000 and journal.count(NS) == 1000
    assert journal.known_message_ids(NS, [f"m{i}" for i in range(1000)]) == {
        f"m{i}" for i in range(1000)
    }


def _chattr(flag: str, *paths: Path) -> bool:
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, check=False)
    return done.returncode == 0


def test_immutable_file_and_folder_raise_read_only_with_path(tmp_path: Path) -> None:
    folder = tmp_path / "frozen"
    folder.mkdir()
    path = folder / "imm.db"
    with Journal(path) as j:
        j.append(NS, _records(n=1))
    if not _chattr("+i", path, folder):
        pytest.skip("chattr +i is not available here")
    try:
        with pytest.raises(JournalReadOnlyError, match=r"imm\.db"):
            Journal(path).append(NS, _records(n=2))
    finally:
        _chattr("-i", path, folder)
    with Journal(path) as j:  # nothing half-written
        assert j.count(NS) == 1


def test_single_string_id_is_one_id_and_unknown_ids_do_nothing(journal: Journal) -> None:
    # The rule is the store boundary's (the journal takes checked id tuples only).
    recs = journal.append(NS, _records(n=2))
    store = MnemonStore(journal.path, HashEmbeddings(), journal=journal)
    assert [r.id for r in store.get_records(NS, recs[0].id)] == [recs[0].id]
    assert store.known_message_ids(NS, "m1") == {"m1"}
    deleted, written = store.delete_messages(NS, ["no-such-message"])
    assert (deleted, written.records_written) == ([], 0)
    assert journal.audit_log(NS) == []
    assert store.delete_records(NS, recs[1].id) == [recs[1].id]
    assert [r.id for r in journal.records(NS)] == [recs[0].id]


_WRITER = """
import sys
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.types import Message
j = Journal(sys.argv[1])
for batch in range(20):
    msgs = [Message(text=f"t {batch} {i}", speaker="A", id=f"{batch}-{i}") for i in range(10)]
    j.append(("p",), chunk_messages(msgs, namespace=("p",), origin="s", pack=False))
j.close()
"""


def test_reads_while_another_process_writes_see_whole_transactions(tmp_path: Path) -> None:
    path = tmp_path / "proc.db"
    reader = Journal(path)
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)])
    seen: list[int] = []
    while proc.poll() is None:
        seen.append(reader.count(("p",)))
    assert proc.wait() == 0
    seen.append(reader.count(("p",)))
    assert seen[-1] == 200
    assert all(n % 10 == 0 for n in seen)  # never half a transaction
    assert seen == sorted(seen)
    seqs = [r.seq for r in reader.records(("p",))]
    assert seqs == sorted(seqs) and len(set(seqs)) == 200
    reader.close()


def test_foreign_records_table_is_not_taken_for_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE records (x TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="not a mnemon journal"):
        Journal(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone() is None
    conn.close()
