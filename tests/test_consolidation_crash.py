"""SIGKILL a real consolidation process between batches; the rerun resumes exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import (
    NS_CRASH,
    deriving_model,
    fake_embeddings,
    make_journal,
    make_messages,
)

from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    EmbeddedItemStore,
    create_consolidation_graph,
)
from mnemon_langgraph.store.embedded._journal import Journal

CHILD = Path(__file__).with_name("_consolidate_child.py")


def _items_of(store: EmbeddedItemStore) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((it.kind, it.text, it.record_ids) for it in store.all_items(NS_CRASH))


def _consolidate(store: EmbeddedItemStore):  # type: ignore[no-untyped-def]
    graph = create_consolidation_graph(
        model=deriving_model(), store=store, settings=ConsolidationSettings(batch_chars=1500)
    )
    return graph.invoke({"namespace": NS_CRASH})["report"]


@pytest.mark.slow
@pytest.mark.parametrize("k", [2])
def test_sigkill_between_batches_then_rerun_resumes(tmp_path: Path, k: int) -> None:
    messages = make_messages(120)
    db = tmp_path / "crash.db"
    make_journal(db, NS_CRASH, messages).close()
    signal_file = tmp_path / "committed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(db), str(signal_file), str(k)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not signal_file.exists():
            if child.poll() is not None:
                _out, err = child.communicate()
                pytest.fail(f"child exited early ({child.returncode}): {err.decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("child never committed batch k")
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    committed = int(signal_file.read_text())
    assert committed > 0

    journal = Journal(db)
    try:
        store = EmbeddedItemStore(journal, fake_embeddings())
        status = store.state(NS_CRASH)
        assert status.watermark == committed and status.batches == k
        before = _items_of(store)
        assert before and len(before) == status.items_added

        report = _consolidate(store)
        assert report.stop_reason == "caught_up" and not report.failures
        assert report.batches[0].start_seq > committed  # resumed after the watermark
        assert store.watermark(NS_CRASH) == journal.max_seq(NS_CRASH)
        after = _items_of(store)
        assert set(before) <= set(after)
        assert len(after) == len(set(after))  # no duplicate items
    finally:
        journal.close()

    # the same journal consolidated in one uninterrupted run gives exactly the same items
    fresh_db = tmp_path / "fresh.db"
    fresh = make_journal(fresh_db, NS_CRASH, messages)
    try:
        fresh_store = EmbeddedItemStore(fresh, fake_embeddings())
        _consolidate(fresh_store)
        assert _items_of(fresh_store) == after
    finally:
        fresh.close()
