"""Child process of the delete_messages crash test; the parent SIGKILLs it at a random moment.

Usage::

    python _delete_child.py DB ACKS

The parent has ingested :func:`all_messages` (short turns, packed several to a record).
The child deletes the :data:`TARGETS` one at a time with ``MnemonStore.delete_messages``
(each deletion re-writes the other messages of the packed record) and, after each call
returned, appends its index to ACKS and fsyncs it. Its embedder sleeps a little on every
document batch, like a real model does, so kills often land while the surviving messages
are being re-embedded. Prints ``ready`` on stdout once set up.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _search_fakes import HashEmbeddings

from mnemon_langgraph.types import Message

NS = ("crash", "delete@example.com")
N_MESSAGES = 48
TARGETS = [f"m{i}" for i in range(0, N_MESSAGES, 4)]
EMBED_SLEEP = 0.08


def word(i: int) -> str:
    """The word unique to message ``i``."""
    return f"uniq{i}w"


def all_messages() -> list[Message]:
    """The messages the parent ingests (deterministic)."""
    return [
        Message(
            text=f"line {i} says {word(i)}",
            speaker="Ada" if i % 2 == 0 else "Bo",
            role="user",
            id=f"m{i}",
            timestamp=datetime(2024, 3, 1 + i // 16, 9, 0),
            session=1 + i // 16,
        )
        for i in range(N_MESSAGES)
    ]


class SlowEmbeddings(HashEmbeddings):
    """:class:`HashEmbeddings` (same identity) that takes a while per document batch."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(EMBED_SLEEP)
        return super().embed_documents(texts)


def main() -> None:
    from mnemon_langgraph.store import MnemonStore

    db, acks = Path(sys.argv[1]), Path(sys.argv[2])
    store = MnemonStore(db, SlowEmbeddings())
    store.search("warm up", namespace=NS, k=1)  # load the indexes before "ready"
    with open(acks, "a", encoding="utf-8") as fh:
        print("ready", flush=True)
        for i, mid in enumerate(TARGETS):
            store.delete_messages(NS, [mid])
            fh.write(f"{i}\n")
            fh.flush()
            os.fsync(fh.fileno())
    store.close()


if __name__ == "__main__":
    main()
