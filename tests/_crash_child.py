"""Child process of the reliability crash tests; the parent SIGKILLs it at a random moment.

Usage::

    python _crash_child.py consolidate DB ACKS # consolidate the journal batch by batch
    python _crash_child.py write DB ACKS WRITER N  # N ingests (concurrency test), then exit

``consolidate``: after each batch's ``write`` node the child appends the committed watermark;
``write``: batch ``i`` holds 3 messages ``b{i}-m{j}`` (see :func:`batch_messages`), acked once
``store.ingest`` returned. Both print ``ready`` on stdout once set up.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model
from _reliability_common import fake_embeddings
from _store_child import NS, _ack, batch_messages


def consolidate(db: Path, acks: Path) -> None:
    from mnemon_langgraph.consolidation import (
        ConsolidationSettings,
        EmbeddedItemStore,
        create_consolidation_graph,
    )
    from mnemon_langgraph.store.embedded._journal import Journal

    journal = Journal(db)
    items = EmbeddedItemStore(journal, fake_embeddings())
    graph = create_consolidation_graph(
        model=deriving_model(), store=items, settings=ConsolidationSettings(batch_chars=400)
    )
    with open(acks, "a", encoding="utf-8") as fh:
        print("ready", flush=True)
        for update in graph.stream({"namespace": NS}, stream_mode="updates"):
            if "write" in update:
                _ack(fh, items.watermark(NS))


def write(db: Path, acks: Path, writer: str, n: int) -> None:
    from mnemon_langgraph.store import MnemonStore

    store = MnemonStore(db, fake_embeddings())
    with open(acks, "a", encoding="utf-8") as fh:
        print("ready", flush=True)
        for i in range(n):
            store.ingest(NS, batch_messages(i, writer=writer), origin=f"writer-{writer}")
            _ack(fh, i)
    store.close()


def main() -> None:
    mode, db, acks = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if mode == "consolidate":
        consolidate(db, acks)
    elif mode == "write":
        write(db, acks, sys.argv[4], int(sys.argv[5]))
    else:  # pragma: no cover
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
