"""Child process of the storage conformance tests (works on a file path or a URL).

Usage::

    python _store_child.py ingest TARGET ACKS         # batch after batch until killed
    python _store_child.py mixed TARGET ACKS WRITER N  # N batches into two namespaces + reads

``ingest``: batch ``i`` holds 3 messages ``b{i}-m{j}`` carrying the unique word
``ackbw{i}x{j}``; after ``store.ingest`` returns (committed) and ``store.flush()`` wrote the index
checkpoints (so kills also land inside index saves), the child appends ``i`` to ACKS
and fsyncs it. ``mixed``: writer ``W`` writes batch ``i`` to namespace ``("shared",)`` and to
``("own", W)``, searches the shared namespace after each, and acks ``i``. Both print
``ready`` once the store is open.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

NS = ("crash", "user@example.com")
SHARED = ("shared",)
BATCH = 3


def batch_messages(i: int, *, writer: str = "b") -> list[Message]:
    """The messages of batch ``i`` of ``writer`` (deterministic, so the parent knows them)."""
    return [
        Message(
            text=f"{writer} batch {i} line {j}: remember ack{writer}w{i}x{j} please",
            speaker="Ada" if j % 2 == 0 else "Bo",
            role="user",
            id=f"{writer}{i}-m{j}",
            timestamp=datetime(2024, 2, 1 + i % 20, 9, 0),
            session=1 + i // 10,
        )
        for j in range(BATCH)
    ]


def _ack(fh: object, value: object) -> None:
    fh.write(f"{value}\n")  # type: ignore[attr-defined]
    fh.flush()  # type: ignore[attr-defined]
    os.fsync(fh.fileno())  # type: ignore[attr-defined]


def main() -> None:
    mode, target, acks = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    store = MnemonStore(target, fake_embeddings())
    with open(acks, "a", encoding="utf-8") as fh:
        print("ready", flush=True)
        if mode == "ingest":
            for i in range(100_000):
                store.ingest(NS, batch_messages(i), origin="crash")
                store.flush()
                _ack(fh, i)
        else:
            writer, n = sys.argv[4], int(sys.argv[5])
            for i in range(n):
                store.ingest(SHARED, batch_messages(i, writer=writer), origin=writer)
                store.ingest(("own", writer), batch_messages(i, writer=writer), origin=writer)
                hits = store.search(f"ack{writer}w{i}x0", namespace=SHARED, k=3)
                if not hits or f"ack{writer}w{i}x0" not in hits[0].record.text:
                    raise SystemExit(f"writer {writer} did not find its own batch {i}")
                _ack(fh, i)
    store.close()


if __name__ == "__main__":
    main()
