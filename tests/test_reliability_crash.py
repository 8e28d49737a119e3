"""Crash safety of consolidation: a real process SIGKILLed at random moments mid-job.

Each trial starts ``_crash_child.py``, waits until it is set up, lets it work for a random
time (seeded, so a failure names its trial) and kills it with SIGKILL — possibly inside an
SQLite commit or a fold. Then, on reopen, the consolidation watermark covers every
acknowledged batch, items exist only for records at or below it, none twice, and a rerun
ends with exactly the items of an uninterrupted run.

SIGKILL during ingest is one test of the storage conformance suite
(``tests/test_store_conformance.py``), run against both backends.

Trials: ``MNEMON_CRASH_TRIALS`` (default 8 per scenario).
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model, make_messages
from _reliability_common import fake_embeddings, kill_after, start_child
from _store_child import NS

from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    EmbeddedItemStore,
    create_consolidation_graph,
)
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store.embedded._journal import Journal

CHILD = Path(__file__).with_name("_crash_child.py")
TRIALS = int(os.environ.get("MNEMON_CRASH_TRIALS", "8"))


def _acks(path: Path) -> list[int]:
    if not path.exists():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]  # a torn last line was never acknowledged
    return [int(x) for x in complete.split()]


def _integrity(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def _consolidation_journal(db: Path) -> None:
    messages = make_messages(240, sessions=5)
    with Journal(db) as journal:
        journal.append(NS, chunk_messages(messages, namespace=NS, origin="test", pack=False))


def _items(store: EmbeddedItemStore) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((it.kind, it.text, it.record_ids) for it in store.all_items(NS))


def _finish(store: EmbeddedItemStore) -> None:
    graph = create_consolidation_graph(
        model=deriving_model(), store=store, settings=ConsolidationSettings(batch_chars=400)
    )
    report = graph.invoke({"namespace": NS})["report"]
    assert report.stop_reason == "caught_up" and not report.failures


@pytest.mark.slow
def test_sigkill_during_consolidation_keeps_the_watermark_right(tmp_path: Path) -> None:
    reference_db = tmp_path / "reference.db"
    _consolidation_journal(reference_db)
    with Journal(reference_db) as journal:
        ref_store = EmbeddedItemStore(journal, fake_embeddings())
        _finish(ref_store)
        reference = _items(ref_store)
    assert reference
    rng = random.Random(777)
    total_acked = 0
    for trial in range(TRIALS):
        db = tmp_path / f"cons{trial}.db"
        acks = tmp_path / f"cons{trial}.acks"
        _consolidation_journal(db)
        child = start_child(CHILD, "consolidate", str(db), str(acks))
        kill_after(child, rng.uniform(0.02, 1.0))
        acked = _acks(acks)
        total_acked += len(acked)
        _integrity(db)
        with Journal(db) as journal:
            store = EmbeddedItemStore(journal, fake_embeddings())
            mark = store.watermark(NS)
            assert all(a <= mark for a in acked)
            seq_of = {r.id: r.seq for r in journal.records(NS)}
            items = store.all_items(NS)
            for item in items:
                assert item.record_ids
                assert all(seq_of[r] <= mark for r in item.record_ids), "item past watermark"
            keys = [(it.kind, it.text, it.record_ids) for it in items]
            assert len(keys) == len(set(keys)), "duplicate items"
            assert set(keys) <= set(reference)
            assert not store.failures(NS)
            _finish(store)  # the rerun resumes and completes
            assert store.watermark(NS) == journal.max_seq(NS)
            assert _items(store) == reference
    assert total_acked > 0, "no trial committed a batch: the test checked nothing"
