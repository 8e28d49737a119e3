"""Concurrent writers of one namespace, on both backends: no message stored twice, and one
session's ``(session, position)`` unique and in write order, whatever overlaps.

Each writer is its own store on the same target (two journals on one file, two pools on
one database: what two hosts are), started together on a barrier, with an embedder slow
enough that every writer drafts its records before any of them writes.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import start_child
from _writer_child import SlowEmbeddings

from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message, Record

NS = ("users", "ada")


@pytest.fixture(params=["embedded", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "embedded":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


def _message(i: int, *, prefix: str = "m", session: int = 1) -> Message:
    # lengths vary, so writers starting at different messages pack them differently
    text = f"note {prefix}{i}: " + "word " * (3 + (i * 7) % 40)
    return Message(text, "Ada", id=f"{prefix}{i}", session=session)


def _run_writers(target: str, jobs: list[Callable[[MnemonStore], None]], delay: float) -> None:
    """Each job on its own store, all started at once; re-raises a writer's error."""
    stores = [MnemonStore(target, SlowEmbeddings(delay)) for _ in jobs]
    barrier = threading.Barrier(len(jobs))
    errors: list[BaseException] = []

    def run(job: Callable[[MnemonStore], None], store: MnemonStore) -> None:
        try:
            barrier.wait()
            job(store)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(j, s)) for j, s in zip(jobs, stores, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for s in stores:
        s.close()
    assert not errors, errors


def _stored(target: str) -> list[Record]:
    with MnemonStore(target, SlowEmbeddings(0)) as store:
        return list(store.records(NS))


def _assert_positions_in_write_order(records: list[Record]) -> None:
    by_session: dict[int, list[Record]] = {}
    for rec in sorted(records, key=lambda r: r.seq):
        by_session.setdefault(rec.session, []).append(rec)
    for session, recs in by_session.items():
        positions = [r.position for r in recs]
        assert len(set(positions)) == len(positions), f"session {session}: duplicated positions"
        assert positions == sorted(positions), f"session {session}: positions not in seq order"


def test_overlapping_ingests_store_each_message_once(target: str) -> None:
    first = [_message(i) for i in range(0, 200)]
    second = [_message(i) for i in range(100, 300)]

    def ingest(messages: list[Message]) -> Callable[[MnemonStore], None]:
        return lambda store: store.ingest(NS, messages, origin="chat").records_written

    _run_writers(target, [ingest(first), ingest(second)], delay=0.5)
    records = _stored(target)
    held = Counter(mid for rec in records for mid in dict.fromkeys(rec.message_ids))
    assert set(held) == {f"m{i}" for i in range(300)}
    twice = sorted(mid for mid, n in held.items() if n > 1)
    assert twice == [], f"{len(twice)} message ids stored in more than one record"
    _assert_positions_in_write_order(records)


def test_two_writers_of_one_session_keep_positions_unique_and_ordered(target: str) -> None:
    def writer(prefix: str) -> Callable[[MnemonStore], None]:
        def job(store: MnemonStore) -> None:
            for batch in range(8):
                msgs = [_message(batch * 25 + i, prefix=prefix) for i in range(25)]
                store.ingest(NS, msgs, origin=f"host-{prefix}", pack=False)

        return job

    _run_writers(target, [writer("a"), writer("b")], delay=0.05)
    records = _stored(target)
    assert len(records) == 2 * 8 * 25  # pack=False: one record per message
    _assert_positions_in_write_order(records)
    # and the order inside each writer's own messages is the order it wrote them in
    for prefix in ("a", "b"):
        mine = sorted((r for r in records if r.origin == f"host-{prefix}"), key=lambda r: r.seq)
        numbers = [int(r.message_ids[0][1:]) for r in mine]
        assert numbers == sorted(numbers)


@pytest.mark.integration  # starts writer processes (on either backend)
def test_writer_processes_of_one_session_keep_positions_unique_and_ordered(
    target: str,
) -> None:
    with MnemonStore(target, SlowEmbeddings(0)):
        pass  # set the store up once, before the writers race
    child = Path(__file__).parent / "_writer_child.py"
    writers = [(w, start_child(child, target, w, "20")) for w in ("a", "b")]
    for w, proc in writers:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"writer {w} failed: {err.decode()[-2000:]}"
    records = _stored(target)
    held = Counter(mid for rec in records for mid in rec.message_ids)
    assert len(held) == 2 * 20 * 25 and set(held.values()) == {1}
    _assert_positions_in_write_order(records)
    for w, _ in writers:  # each writer's messages in the order it wrote them
        mine = sorted((r for r in records if r.origin == f"host-{w}"), key=lambda r: r.seq)
        assert [int(r.message_ids[0][1:]) for r in mine] == list(range(20 * 25))


def test_vectors_drafted_before_the_lock_are_reused_by_text() -> None:
    from mnemon_langgraph.records._chunking import chunk_messages
    from mnemon_langgraph.store._internal.settle import reuse_vectors

    msgs = [_message(i) for i in range(6)]
    drafted = chunk_messages(msgs[:4], namespace=NS, origin="chat", pack=False)
    vectors = np.arange(len(drafted) * 3, dtype=np.float32).reshape(len(drafted), 3)
    decided = chunk_messages(msgs[2:], namespace=NS, origin="chat", pack=False)
    embedded: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        embedded.append(texts)
        return np.full((len(texts), 3), -1.0, dtype=np.float32)

    rows = reuse_vectors(decided, drafted, vectors, embed)
    assert embedded == [[r.text for r in decided[2:]]]  # only the two texts never drafted
    np.testing.assert_array_equal(rows[:2], vectors[2:4])
    assert (rows[2:] == -1).all()
