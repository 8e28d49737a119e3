"""A real ``mnemon ui`` for the tests: a SQLite journal with two users (and stored attack
payloads), the command started in a child process on a loopback port, its printed URL.

Used by tests/test_ui.py (plain HTTP) and tests/test_ui_browser.py (headless Chromium).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from _paths import REPO
from _processes import stop_group

BOOT_TIMEOUT_S = 60

PAYLOADS = (
    "<script>window.__pwned = 1; document.title = 'pwned'</script>",
    "<img src=x onerror=\"window.__pwned = 2; document.title = 'pwned'\">",
    '<a id="jslink" href="javascript:window.__pwned = 3">click me</a>',
)
"""Stored in record text, a speaker name and a namespace part: none may run."""

EVIL_SPEAKER = "<img src=y onerror=\"document.title='pwned'\">Eve"
EVIL_NAMESPACE = ("users", "<script>document.title='pwned'</script>")

ANN = ("users", "ann")
BOB = ("users", "bob")
ANN_ANSWER = "My cat is called Miso, a grey tabby"
BOB_SECRET = "Bob's locker code is 4471"
PAGED = ("users", "paged")
PAGED_RECORDS = 120


def build_journal(path: Path) -> None:
    """Two users (Ann's cat, Bob's secret), a payload namespace and a namespace of
    :data:`PAGED_RECORDS` records (each message too long to share a record); written and
    closed (indexes saved)."""
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    def day(d: int) -> datetime:
        return datetime(2024, 1, 1 + d % 28, 10, 0)

    with MnemonStore(path) as store:
        ann = [
            Message(text="I planted tomatoes on the balcony", speaker="Ann", session=1,
                    timestamp=day(1)),
            Message(text=ANN_ANSWER, speaker="Ann", session=2, timestamp=day(5)),
            Message(text="Payloads: " + " ".join(PAYLOADS), speaker=EVIL_SPEAKER, session=3,
                    timestamp=day(9)),
        ]  # fmt: skip
        store.ingest(ANN, ann, origin="test")
        bob = [Message(text=BOB_SECRET, speaker="Bob", session=1, timestamp=day(2))]
        store.ingest(BOB, bob, origin="test")
        evil = [Message(text=" ".join(PAYLOADS), speaker=EVIL_SPEAKER, session=1,
                        timestamp=day(3))]  # fmt: skip
        store.ingest(EVIL_NAMESPACE, evil, origin="test")
        many = [
            Message(text=f"note number {i}: " + "a long day in the diary " * 16, speaker="Pat",
                    session=1 + i // 40, timestamp=day(i // 40))
            for i in range(PAGED_RECORDS)
        ]  # fmt: skip
        store.ingest(PAGED, many, origin="test")
        add_items(store)


def add_items(store: object) -> None:
    """Consolidated items for Ann (one linked to her cat record, with payloads in its topic
    and text), written as the consolidation job writes them."""
    from mnemon_langgraph.items import IndexItem

    items = store.item_store()  # type: ignore[attr-defined]
    cat = next(r for r in store.records(ANN) if "Miso" in r.text)  # type: ignore[attr-defined]
    item = IndexItem(
        id="i-" + "c" * 32,
        namespace=ANN,
        kind="event",
        text="Ann named her cat Miso " + PAYLOADS[1],
        record_ids=(cat.id,),
        topic="pets " + PAYLOADS[0],
        date=cat.date,
    )
    mark = items.watermark(ANN)
    items.commit_batch(
        ANN,
        expected_watermark=mark,
        new_watermark=store.max_seq(ANN),  # type: ignore[attr-defined]
        new_items=[item],
        new_vectors=items.embed_items([item]),
    )
    items.close()


def env() -> dict[str, str]:
    return {
        **os.environ,
        "MNEMON_EMBEDDINGS": "fake",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        "PYTHONUNBUFFERED": "1",
    }


@contextlib.contextmanager
def running_ui(
    db: Path, log: Path, *extra: str, environ: dict[str, str] | None = None
) -> Iterator[str]:
    """``mnemon ui --db db`` in a child process (``environ``: default :func:`env`, the fake
    embedder); yields the URL it printed (with the token); stops it afterwards."""
    out = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemon_langgraph.cli", "ui", "--db", str(db), *extra],
        cwd=REPO,
        env=environ if environ is not None else env(),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while True:
            found = re.search(r"mnemon ui: (http://\S+)", log.read_text())
            if found:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("mnemon ui did not start:\n" + log.read_text())
            time.sleep(0.2)
        yield found.group(1)
    finally:
        stop_group(proc)
        out.close()
