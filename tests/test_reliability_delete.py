"""Deleting messages is atomic: the deletion and the re-written survivors commit together.

``delete_messages`` deletes every record holding a part of the named messages and writes
the *other* messages of those records again (re-chunked, re-embedded). Both happen in one
journal transaction, so neither an embedder failure nor a SIGKILL in between can lose a
message the caller never asked to delete.

Trials of the crash test: ``MNEMON_CRASH_TRIALS`` (default 6 here).
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _delete_child import NS, TARGETS, all_messages, word
from _reliability_common import kill_after, start_child
from _search_fakes import HashEmbeddings

from mnemon_langgraph.errors import InputError, ModelCallError, RuntimeMnemonError
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._journal import Journal, namespace_key
from mnemon_langgraph.types import Message

CHILD = Path(__file__).with_name("_delete_child.py")
TRIALS = int(os.environ.get("MNEMON_CRASH_TRIALS", "6"))


class FlakyEmbeddings(HashEmbeddings):
    """:class:`HashEmbeddings` whose document embedding fails while ``fail`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.fail:
            raise RuntimeError("embedding service unavailable")
        return super().embed_documents(texts)


def _snapshot(db: Path) -> dict[str, object]:
    """Every row of the journal's data tables (records, messages, vectors, audit)."""
    conn = sqlite3.connect(db)
    try:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall())
            for table in ("records", "messages", "vectors", "audit")
        }
    finally:
        conn.close()


# -- an embedder failure during the survivors' re-embedding -------------------------------


def test_embedder_failure_deletes_nothing(tmp_path: Path) -> None:
    emb = FlakyEmbeddings()
    db = tmp_path / "j.db"
    with MnemonStore(db, emb) as store:
        store.ingest(NS, all_messages()[:10], origin="chat")  # one packed record
        before = _snapshot(db)
        assert len(before["records"]) == 1  # type: ignore[arg-type]
        emb.fail = True
        with pytest.raises(ModelCallError, match="embedding model failed"):
            store.delete_messages(NS, ["m3"])
        assert _snapshot(db) == before  # nothing deleted, no audit row
        assert store.journal.audit_log(NS) == []
        assert store.journal.known_message_ids(NS, ["m3", "m4"]) == {"m3", "m4"}
        hits = store.search(word(3), namespace=NS, k=3)
        assert hits and word(3) in hits[0].record.text  # the index still has it too
        # once the embedder works again the same call succeeds and keeps the others
        emb.fail = False
        deleted, result = store.delete_messages(NS, ["m3"])
        assert len(deleted) == 1 and result.messages_written == 9
        assert store.journal.known_message_ids(NS, ["m3", "m4"]) == {"m4"}
        texts = [h.record.text for h in store.search(word(4), namespace=NS, k=5)]
        assert texts and word(4) in texts[0] and word(3) not in " ".join(texts)
    # reopened: the index on disk agrees
    with MnemonStore(db, HashEmbeddings()) as store:
        stats = store.stats(NS)["namespaces"][0]
        assert stats["records"] == stats["indexed"] == stats["vectors"] == 1


def test_delete_messages_result_and_index_match_the_journal(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as store:
        store.ingest(NS, all_messages(), origin="chat")
        records = list(store.journal.records(NS))
        deleted, result = store.delete_messages(NS, ["m1", "m17"])
        assert len(deleted) == 2 and result.records_written >= 2
        assert result.messages_written == 30 and result.messages_skipped == 0
        now = list(store.journal.records(NS))
        assert {r.id for r in now} == (
            {r.id for r in records} - set(deleted) | set(result.record_ids)
        )
        index = store.index(NS)
        assert len(index.bm25) == len(index.vectors) == len(now)
        assert sorted(index.bm25.seqs().tolist()) == sorted(r.seq for r in now)
        audit = store.journal.audit_log(NS)
        assert [a.action for a in audit] == ["delete_messages"]
        assert audit[0].message_ids == ("m1", "m17")


# -- the journal's replace callback --------------------------------------------------------


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "j.db")
    j.ensure_embedding_model("test", 4)
    yield j
    j.close()


def _packed(journal: Journal) -> list[Message]:
    messages = all_messages()[:6]
    journal.append(NS, chunk_messages(messages, namespace=NS, origin="chat"))
    assert journal.count(NS) == 1
    return messages


def test_replace_writes_survivors_in_the_same_transaction(journal: Journal) -> None:
    _packed(journal)
    seen: list[list[str]] = []

    def replace(survivors: list[Message], first: Mapping[int, int]) -> tuple[list, np.ndarray]:
        seen.append([m.id or "" for m in survivors])
        assert first == {1: 0}  # the place of the record the survivors replace
        # inside the transaction the old record is already gone
        assert journal.known_message_ids(NS, ["m0", "m1"]) == set()
        recs = chunk_messages(survivors, namespace=NS, origin="reingest", first_positions=first)
        return recs, np.ones((len(recs), 4), dtype=np.float32)

    deleted, survivors = journal.delete_messages(NS, ["m2"], replace=replace)
    assert len(deleted) == 1
    assert [m.id for m in survivors] == ["m0", "m1", "m3", "m4", "m5"]
    assert seen == [["m0", "m1", "m3", "m4", "m5"]]
    assert journal.known_message_ids(NS, [f"m{i}" for i in range(6)]) == {
        "m0",
        "m1",
        "m3",
        "m4",
        "m5",
    }
    (rec,) = list(journal.records(NS))
    assert rec.origin == "reingest" and rec.seq == 2 and rec.position == 0
    ids, vecs = next(journal.iter_vectors(NS))
    assert ids == [rec.id] and vecs.shape == (1, 4)
    assert journal.audit_log(NS)[-1].record_ids == tuple(deleted)


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (ValueError("boom"), RuntimeMnemonError),
        (ModelCallError("model down"), ModelCallError),
        ("wrong-namespace", InputError),
        ("wrong-shape", InputError),
    ],
)
def test_replace_failure_rolls_everything_back(
    journal: Journal, failure: object, error: type[Exception]
) -> None:
    _packed(journal)
    before = _snapshot(journal.path)
    last_seq = journal.last_seq()

    def replace(survivors: list[Message], first: object) -> tuple[list, np.ndarray | None]:
        if isinstance(failure, Exception):
            raise failure
        if failure == "wrong-namespace":
            return chunk_messages(survivors, namespace=("other",), origin="x"), None
        recs = chunk_messages(survivors, namespace=NS, origin="x")
        return recs, np.ones((len(recs) + 1, 4), dtype=np.float32)

    with pytest.raises(error):
        journal.delete_messages(NS, ["m2"], replace=replace)
    assert _snapshot(journal.path) == before
    assert journal.audit_log(NS) == [] and journal.generation(NS) == 0
    assert journal.last_seq() == last_seq
    # the journal is still usable
    assert journal.delete_messages(NS, ["m2"])[0]


def test_replace_is_not_called_without_survivors(journal: Journal) -> None:
    journal.append(NS, chunk_messages(all_messages()[:1], namespace=NS, origin="chat"))
    calls: list[int] = []

    def replace(survivors: list[Message], first: object) -> tuple[list, None]:
        calls.append(len(survivors))
        return [], None

    deleted, survivors = journal.delete_messages(NS, ["m0"], replace=replace)
    assert len(deleted) == 1 and survivors == [] and calls == []
    assert journal.delete_messages(NS, ["nothing"], replace=replace) == ([], [])
    assert calls == []


# -- SIGKILL at random moments during delete_messages --------------------------------------


def _acked(path: Path) -> set[str]:
    if not path.exists():
        return set()
    text = path.read_text()
    return {TARGETS[int(x)] for x in text[: text.rfind("\n") + 1].split()}


def _check_trial(db: Path, acked: set[str]) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        stored = [
            r[0]
            for r in conn.execute(
                "SELECT message_id FROM messages WHERE namespace = ?", (namespace_key(NS),)
            )
        ]
        no_vector = conn.execute(
            "SELECT COUNT(*) FROM records r LEFT JOIN vectors v ON v.record_id = r.id "
            "WHERE v.record_id IS NULL"
        ).fetchone()[0]
    finally:
        conn.close()
    assert no_vector == 0
    with Journal(db) as journal:
        audited = {m for a in journal.audit_log(NS) for m in a.message_ids}
        records = list(journal.records(NS))
    everything = {m.id or "" for m in all_messages()}
    assert audited <= set(TARGETS)
    assert acked <= audited, f"acknowledged deletions undone: {sorted(acked - audited)}"
    # every message is there exactly once unless its own deletion committed
    assert Counter(stored) == Counter(everything - audited), (
        f"lost: {sorted(everything - audited - set(stored))}, "
        f"kept although deleted: {sorted(set(stored) & audited)}"
    )
    assert Counter(m for r in records for m in r.message_ids) == Counter(stored)
    # the indexes (reloaded or rebuilt after the kill) agree with the journal
    with MnemonStore(db, HashEmbeddings()) as store:
        stats = store.stats(NS)["namespaces"][0]
        assert stats["indexed"] == stats["records"] == stats["vectors"] == len(records)
        for mid in sorted(everything - audited)[:6]:
            w = word(int(mid[1:]))
            hits = store.search(w, namespace=NS, k=3)
            assert hits and w in hits[0].record.text, w
        folder = store.index(NS).folder
        leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".bm25-")]
        assert leftovers == []  # temp files of a killed index save are cleaned up
    return audited


@pytest.mark.slow
def test_sigkill_during_delete_messages_loses_no_survivor(tmp_path: Path) -> None:
    rng = random.Random(4242)
    deletions = 0
    for trial in range(TRIALS):
        db = tmp_path / f"del{trial}.db"
        acks = tmp_path / f"del{trial}.acks"
        with MnemonStore(db, HashEmbeddings()) as store:
            store.ingest(NS, all_messages(), origin="chat")
        child = start_child(CHILD, str(db), str(acks))
        kill_after(child, rng.uniform(0.05, 0.9))
        audited = _check_trial(db, _acked(acks))
        deletions += len(audited)
        # a restarted process carries on with the next deletion
        left = [t for t in TARGETS if t not in audited]
        if left:
            with MnemonStore(db, HashEmbeddings()) as store:
                deleted, result = store.delete_messages(NS, [left[0]])
                assert deleted and result.messages_written == 15 - sum(
                    1 for t in audited if int(t[1:]) // 16 == int(left[0][1:]) // 16
                )
    assert deletions > 0, "no trial committed a deletion: the test checked nothing"
