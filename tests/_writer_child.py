"""Child process of tests/test_concurrent_ingest.py: one writer of one session.

Usage::

    python _writer_child.py TARGET WRITER BATCHES

Ingests ``BATCHES`` batches of 25 messages ``{WRITER}{i}`` into session 1 of
``("users", "ada")`` with a slowed fake embedder (so writers overlap between drafting and
writing), one record per message. Prints ``ready`` once the store is open.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

NS = ("users", "ada")
PER_BATCH = 25


class SlowEmbeddings(Embeddings):
    """The fake embedder, slowed down (shared with the test, which opens the same model)."""

    def __init__(self, delay: float) -> None:
        self.inner = fake_embeddings()
        self.delay = delay
        self.model_name = "fake-slow"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(self.delay)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def main() -> None:
    target, writer, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = MnemonStore(target, SlowEmbeddings(0.05))
    print("ready", flush=True)
    for b in range(batches):
        numbers = range(b * PER_BATCH, (b + 1) * PER_BATCH)
        msgs = [Message(f"{writer} says {n}", "Ada", id=f"{writer}{n}", session=1) for n in numbers]
        store.ingest(NS, msgs, origin=f"host-{writer}", pack=False)
    store.close()


if __name__ == "__main__":
    main()
