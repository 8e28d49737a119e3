"""The embedded item store's nearest-item search over a damaged stored vector (a row of
another length, a NaN): the item is skipped and logged, the healthy ones are still found,
as record search leaves out a damaged vector rather than failing the read."""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

NS = ("users", "ada")
TEXTS = {
    "tea": "Ada drinks green tea every morning.",
    "cat": "Ada adopted a cat named Whiskers.",
    "job": "Ada works at Oakridge Primary.",
}


def _seed(path: Path) -> None:
    with MnemonStore(path, fake_embeddings()) as store:
        store.ingest(
            NS, [Message(t, "Ada", id=k) for k, t in TEXTS.items()], origin="chat", pack=False
        )
        rid = {r.message_ids[0]: r.id for r in store.records(NS)}
        items = store.item_store()
        batch = [
            IndexItem(id=k, namespace=NS, kind="event", text=t, record_ids=(rid[k],), topic=k)
            for k, t in TEXTS.items()
        ]
        items.commit_batch(
            NS, expected_watermark=0, new_watermark=store.max_seq(NS), new_items=batch,
            new_vectors=items.embed_items(batch),
        )  # fmt: skip


def test_nearest_items_skips_and_logs_a_damaged_item_vector(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    with MnemonStore(path, fake_embeddings()) as store:  # every item found while healthy
        assert {i.id for i in store.item_store().nearest_items("tea", namespace=NS, k=5)} == set(
            TEXTS
        )
    with sqlite3.connect(path) as conn:  # one row too short, one holding a NaN
        (blob,) = conn.execute("SELECT embedding FROM items WHERE id = 'cat'").fetchone()
        conn.execute("UPDATE items SET embedding = ? WHERE id = 'cat'", (blob[:-4],))
        nan = np.frombuffer(blob, dtype=np.float32).copy()
        nan[3] = np.nan
        conn.execute("UPDATE items SET embedding = ? WHERE id = 'job'", (nan.tobytes(),))
    with MnemonStore(path, fake_embeddings()) as store, caplog.at_level(logging.WARNING):
        found = store.item_store().nearest_items("tea", namespace=NS, k=5)
        assert [i.id for i in found] == ["tea"]
        logged = " ".join(r.getMessage() for r in caplog.records)
        assert "item cat " in logged and "item job " in logged and "damaged" in logged
