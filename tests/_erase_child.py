"""Child process of the erase crash test: erase a namespace and stop dead at one step.

Usage::

    python _erase_child.py DB STEP [store|cli]

The parent has ingested the victim namespace. The child opens the store, prints
``ready``, then runs ``MnemonStore.erase_namespace`` (or, with ``cli``, the
``mnemon erase`` code path, which loads no embedder). Each step of the erase is wrapped:
when the child reaches step ``STEP`` it prints ``at STEP`` and sleeps until the parent
SIGKILLs it, so every step boundary is interrupted deterministically. Steps, in order:

* ``files1`` — before the first removal of the index files;
* ``rows`` — index files gone, before the journal's DELETE transaction;
* ``commit`` — inside that transaction, every row deleted, before COMMIT;
* ``checkpoint`` — committed, before the WAL checkpoint that scrubs the file;
* ``files2`` — checkpointed, before the second removal of the index files.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.cli._erase import erase_namespace_files
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._deletion import Deletions
from mnemon_langgraph.store.embedded._index import NamespaceIndex
from mnemon_langgraph.store.embedded._journal import Journal

NS = ("users", "erase-crash@example.com")
STEPS = ("files1", "rows", "commit", "checkpoint", "files2")


def _stop(step: str, target: str) -> None:
    if step == target:
        print(f"at {step}", flush=True)
        time.sleep(600)


def main() -> None:
    db, target = Path(sys.argv[1]), sys.argv[2]
    via = sys.argv[3] if len(sys.argv) > 3 else "store"
    calls = {"files": 0, "erasing": False}
    erase_files = NamespaceIndex.erase_files
    erase_rows = Journal.erase_namespace
    checkpoint = Journal.checkpoint
    audit = Deletions._audit

    def files(self: NamespaceIndex, extra: Any = None) -> None:
        calls["files"] += 1
        _stop("files1" if calls["files"] == 1 else "files2", target)
        erase_files(self, extra)

    def rows(self: Journal, namespace: Any, *, actor: str = "api") -> int:
        _stop("rows", target)
        calls["erasing"] = True
        return erase_rows(self, namespace, actor=actor)

    def before_commit(self: Deletions, conn: Any, **kwargs: Any) -> None:
        audit(self, conn, **kwargs)  # the erase's last statement before COMMIT
        if calls["erasing"]:
            _stop("commit", target)

    def scrub(self: Journal) -> None:
        if calls["erasing"]:
            _stop("checkpoint", target)
        checkpoint(self)

    NamespaceIndex.erase_files = files  # type: ignore[method-assign]
    Journal.erase_namespace = rows  # type: ignore[method-assign]
    Deletions._audit = before_commit  # type: ignore[method-assign]
    Journal.checkpoint = scrub  # type: ignore[method-assign]
    store = MnemonStore(db, fake_embeddings())
    store.index(NS).sync()
    print("ready", flush=True)
    if via == "cli":
        store.close()
        erase_namespace_files(db, NS)
    else:
        store.erase_namespace(NS)
    print("done", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
