"""A retention run SIGKILLed at every step leaves its namespace as before or as after.

Issue 46 §2: like the erase crash trials (tests/test_reliability_erase_crash.py), a child
process applies a policy and is killed at each step boundary (tests/_retention_child.py), on
both backends. After the next open the namespace is whole (killed before COMMIT: the run
can be repeated) or exactly as a finished run leaves it (after COMMIT): never records gone
with their items or key-value items still there, or the other way round. On the embedded
backend no removed word is left in any file (journal, WAL, index folder) after the next
open. Every scan first sees the marker words it later misses.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings, start_child
from _retention_child import NOW, NS, STEPS
from test_store_conformance import _holding

from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.store import MnemonStore, is_postgres_url
from mnemon_langgraph.store._internal.retention import RETENTION_NOTE
from mnemon_langgraph.store.kv_items import KVWrite
from mnemon_langgraph.types import Message

CHILD = Path(__file__).parent / "_retention_child.py"
OLD, NEW = 8, 3
MARKERS = [f"QzvRetCrash{i}x" for i in range(OLD)] + ["QzvRetKvOld"]
BYSTANDER = ("users", "bystander")


def _seed(target: str) -> None:
    old_day, new_day = NOW.replace(tzinfo=None) - timedelta(days=90), NOW.replace(tzinfo=None)
    messages = [
        Message(f"{MARKERS[i]} old words {i}", "Ada", id=f"o{i}", timestamp=old_day, session=1)
        for i in range(OLD)
    ] + [
        Message(f"new words {i} about tea", "Ada", id=f"n{i}", timestamp=new_day, session=2)
        for i in range(NEW)
    ]
    with MnemonStore(target, fake_embeddings()) as store:
        store.ingest(NS, messages, origin="chat", pack=False)
        store.ingest(BYSTANDER, [Message("KeepMeBystander", "Bo", id="b", timestamp=old_day)],
                     origin="chat")  # fmt: skip
        ids = {r.message_ids[0]: r.id for r in store.records(NS)}
        items = store.item_store()
        batch = [
            IndexItem("mixed", NS, "event", f"{MARKERS[0]} happened. Ada drinks tea.",
                      (ids["o0"], ids["n0"]), topic="life"),
            IndexItem("only-old", NS, "event", f"{MARKERS[1]} happened.", (ids["o1"],),
                      topic="old"),
        ]  # fmt: skip
        items.commit_batch(NS, expected_watermark=0, new_watermark=store.max_seq(NS),
                           new_items=batch, new_vectors=items.embed_items(batch))  # fmt: skip
        at = NOW - timedelta(days=90)
        asyncio.run(store.kv().write(
            [KVWrite(NS, "old", json.dumps({"v": MARKERS[-1]}), text=MARKERS[-1], stamp=(at, at))],
            actor="test",
        ))  # fmt: skip
        assert store.search(MARKERS[2], namespace=NS, k=1)  # the index files hold the words
        store.flush()


def _state(target: str) -> str:
    """``"before"`` or ``"after"``; fails on anything in between."""
    with MnemonStore(target, fake_embeddings()) as store:
        left = sorted(m for r in store.records(NS) for m in r.message_ids)
        items = {it.id: it.text for it in store.item_store().all_items(NS)}
        kv = [r.key for r in asyncio.run(store.kv().under(NS, None))]
        actions = [a.action for a in store.audit_log(NS)]
        assert store.count(BYSTANDER) == 1
    if len(left) == OLD + NEW:
        assert set(items) == {"mixed", "only-old"} and kv == ["old"] and actions == []
        return "before"
    assert left == [f"n{i}" for i in range(NEW)], left
    assert items == {"mixed": f"Ada drinks tea. {RETENTION_NOTE}"}
    assert kv == [] and actions == ["apply_retention"]
    return "after"


def _steps(target: str) -> list[str]:
    return [s for s in STEPS if not (is_postgres_url(target) and s == "index")]


EXPECTED = {"rows": "before", "commit": "before", "scrub": "after", "index": "after"}


@pytest.mark.parametrize("step", STEPS)
def test_retention_killed_at_every_step_leaves_before_or_after(
    journal_target: str, step: str
) -> None:
    if step not in _steps(journal_target):
        pytest.skip("PostgreSQL keeps no index files: no such step")
    _seed(journal_target)
    assert len({f.split(": ")[-1] for f in _holding(journal_target, MARKERS)}) == len(MARKERS)
    child = start_child(CHILD, journal_target, step)
    assert child.stdout is not None
    line = child.stdout.readline()  # a child that dies instead gives b"" and fails here
    assert line.strip() == f"at {step}".encode(), (
        line,
        child.stderr.read() if child.stderr else b"",
    )
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    state = _state(journal_target)  # also the next open: it scrubs a WAL left behind
    assert state == EXPECTED[step]
    if state == "before":  # nothing happened: the run is simply repeated
        with MnemonStore(journal_target, fake_embeddings()) as store:
            assert store.apply_retention(NS, older_than="30d", now=NOW).records == OLD
        assert _state(journal_target) == "after"
    assert _holding(journal_target, MARKERS) == []
    assert _holding(journal_target, ["KeepMeBystander"])
    with MnemonStore(journal_target, fake_embeddings()) as store:
        hits = store.search("old words", namespace=NS, k=5)
        assert hits and all("QzvRetCrash" not in h.record.text for h in hits)
    assert _holding(journal_target, MARKERS) == []  # the rebuilt index holds none either
