"""Concurrency: two writer processes and readers on one journal; the read graph under load.

* Two real processes ingest into the same journal and namespace at once (WAL, busy
  timeout) while this process searches and counts from several threads: no error reaches
  anyone, every acknowledged batch is there exactly once, and search finds it afterwards.
* The read graph invoked from many threads (``ThreadPoolExecutor``) and many asyncio tasks
  at once gives exactly the Views it gives when invoked one at a time.
"""

from __future__ import annotations

import asyncio
import os
import re
import select
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import NAMESPACES, fake_embeddings, tagged_messages
from _store_child import BATCH, NS

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore

CHILD = Path(__file__).with_name("_crash_child.py")
PER_WRITER = 25


def _writer(db: Path, acks: Path, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, str(CHILD), "write", str(db), str(acks), name, str(PER_WRITER)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow
def test_two_writer_processes_and_readers_share_one_journal(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with MnemonStore(db, fake_embeddings()) as store:  # create the journal first
        store.ingest(NS, tagged_messages("seed", 2), origin="seed")
    writers = {name: _writer(db, tmp_path / f"{name}.acks", name) for name in ("p", "q")}
    for proc in writers.values():
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready and proc.stdout.readline().strip() == b"ready"

    errors: list[BaseException] = []
    reads = Counter[str]()
    reader_store = MnemonStore(db, fake_embeddings())
    stop = threading.Event()

    def reader(k: int) -> None:
        while not stop.is_set():
            try:
                hits = reader_store.search(f"remember ackpw{k}x0", namespace=NS, k=5)
                assert all(tuple(h.record.namespace) == NS for h in hits)
                reader_store.journal.count(NS)
                list(reader_store.journal.records(NS, limit=50))
                reads["ok"] += 1
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        outs = {name: proc.communicate(timeout=300) for name, proc in writers.items()}
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    for name, proc in writers.items():
        assert proc.returncode == 0, outs[name][1].decode()[-3000:]
        assert b"Traceback" not in outs[name][1], outs[name][1].decode()[-3000:]
    assert not errors, errors[:3]
    assert reads["ok"] > 0

    for name in writers:
        acks = [int(x) for x in (tmp_path / f"{name}.acks").read_text().split()]
        assert acks == list(range(PER_WRITER))
    records = list(reader_store.journal.records(NS))
    per_message = Counter(m for r in records for m in r.message_ids)
    assert all(c == 1 for c in per_message.values())
    # Both writers append to the same sessions: (session, position) stays unique, and
    # positions follow the commit (seq) order inside each session.
    keys = [(r.session, r.position) for r in records]
    assert len(keys) == len(set(keys)), Counter(keys).most_common(3)
    for session in {r.session for r in records}:
        in_seq = [r.position for r in records if r.session == session]  # records: seq order
        assert in_seq == sorted(in_seq)
    for name in writers:
        for i in range(PER_WRITER):
            for j in range(BATCH):
                assert per_message[f"{name}{i}-m{j}"] == 1
    for name in writers:  # the reader's index caught up with both writers
        word = f"ack{name}w{PER_WRITER - 1}x{BATCH - 1}"
        hits = reader_store.search(word, namespace=NS, k=3)
        assert hits and word in hits[0].record.text
    reader_store.close()


# --- the read graph under concurrent use ---------------------------------------------------

_WORD = re.compile(r"[a-z0-9]{4,}")


def _overlap_judge() -> ScriptedDecisionModel:
    """Deterministic, text-dependent answers: p depends on shared words with the message."""

    def answer(qid: str, question: Any, state: Any) -> float:
        local, _, suffix = qid.partition(".")
        if suffix == "stale":
            return 0.05
        rows = state["records"] if local.startswith("r") else state.get("items", [])
        text = next(r["text"] for r in rows if r["id"] == local).lower()
        asked = set(_WORD.findall(state["messages"][-1]["text"].lower()))
        shared = len(asked & set(_WORD.findall(text)))
        return min(0.95, 0.2 + 0.15 * shared + (hash(local) % 7) / 1000)

    return ScriptedDecisionModel(answers=answer)


def _signature(view: Any) -> tuple[Any, ...]:
    judgments = sorted(
        (j["target"], j["proposition"], j["need_index"], round(j["p"], 9))
        for j in view.trace["judgments"]
    )
    return (view.text, tuple(view.record_ids), tuple(judgments))


@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = tmp_path_factory.mktemp("conc") / "views.db"
    store = MnemonStore(db, fake_embeddings())
    for i, ns in enumerate(NAMESPACES[:4]):
        store.ingest(ns, tagged_messages(f"topic{i}", 30, extra=f"hobby{i} painting"), origin="s")
    yield store
    store.close()


QUESTIONS = [
    (NAMESPACES[i % 4], f"what did we say about topic{i % 4} and hobby{(i * 3) % 4} story {i}?")
    for i in range(12)
]


def test_read_graph_threads_and_tasks_match_serial(loaded_store: MnemonStore) -> None:
    graph = create_read_graph(source=loaded_store, judge=_overlap_judge())

    def one(q: tuple[tuple[str, ...], str]) -> tuple[Any, ...]:
        out = graph.invoke({"messages": [HumanMessage(q[1])]}, context=ReadContext(namespace=q[0]))
        return _signature(out["view"])

    serial = [one(q) for q in QUESTIONS]
    assert all(sig[1] for sig in serial)  # Views hold records: equality is not vacuous
    assert len({sig[1] for sig in serial}) > 1  # and they differ between questions
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(one, QUESTIONS * 2))
    assert threaded == serial * 2

    async def many() -> list[tuple[Any, ...]]:
        async def a(q: tuple[tuple[str, ...], str]) -> tuple[Any, ...]:
            out = await graph.ainvoke(
                {"messages": [HumanMessage(q[1])]}, context=ReadContext(namespace=q[0])
            )
            return _signature(out["view"])

        return list(await asyncio.gather(*(a(q) for q in QUESTIONS * 2)))

    assert asyncio.run(many()) == serial * 2


def test_writer_locked_out_gets_a_typed_error_and_readers_carry_on(tmp_path: Path) -> None:
    """Another process holds the write lock past the busy timeout: JournalLockedError."""
    import sqlite3

    from mnemon_langgraph.errors import JournalLockedError
    from mnemon_langgraph.store.embedded._journal import Journal

    db = tmp_path / "locked.db"
    store = MnemonStore(db, fake_embeddings(), journal=Journal(db, busy_timeout=0.2))
    try:
        store.ingest(NS, tagged_messages("first", 3), origin="s")
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the other writer
        try:
            with pytest.raises(JournalLockedError):
                store.ingest(NS, tagged_messages("second", 3, prefix="x"), origin="s")
            assert store.journal.count(NS) == 3  # readers are not blocked (WAL)
            assert store.search("first shared apple", namespace=NS, k=3)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        result = store.ingest(NS, tagged_messages("second", 3, prefix="x"), origin="s")
        assert result.records_written > 0
        assert (
            store.ingest(NS, tagged_messages("second", 3, prefix="x"), origin="s").records_written
            == 0
        )
    finally:
        store.close()


def test_views_while_another_thread_ingests(loaded_store: MnemonStore) -> None:
    ns = NAMESPACES[5]
    loaded_store.ingest(ns, tagged_messages("live", 10, prefix="pre"), origin="s")
    graph = create_read_graph(source=loaded_store, judge=_overlap_judge())
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(15):
                loaded_store.ingest(ns, tagged_messages("live", 4, prefix=f"w{i}-"), origin="s")
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def view(k: int) -> list[str]:
        out = graph.invoke(
            {"messages": [HumanMessage(f"live shared apple story number {k}")]},
            context=ReadContext(namespace=ns),
        )
        return out["view"].record_ids

    thread = threading.Thread(target=writer)
    thread.start()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(view, range(16)))
    thread.join(timeout=120)
    assert done.is_set() and not errors, errors
    own = {r.id for r in loaded_store.journal.records(ns)}
    assert all(ids and set(ids) <= own for ids in results)
    assert loaded_store.journal.count(ns) == len(own) > 10
