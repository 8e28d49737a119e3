"""Child process of the import SIGKILL trials: import a file and stop dead at one step.

Usage::

    python _import_child.py TARGET FILE STEP

``TARGET`` is a journal path or a PostgreSQL URL. The child opens the store, prints
``ready``, then runs :func:`~mnemon_langgraph.transfer.import_jsonl`. When it reaches step
``STEP`` it prints ``at STEP`` and sleeps until the parent SIGKILLs it. Steps, in order:

* ``records`` — every record of the file written, before the index items;
* ``kv`` — records, index items and key-value items written, before the commit;
* ``committed`` — the import's transaction committed, before the result is counted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph import transfer
from mnemon_langgraph.store import MnemonStore

STEPS = ("records", "kv", "committed")


def _stop(step: str, target: str) -> None:
    if step == target:
        print(f"at {step}", flush=True)
        time.sleep(600)


def main() -> None:
    db, path, target = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    commit_items, import_kv, renumbered = (
        transfer._commit_items,
        transfer._import_kv,
        transfer._renumbered,
    )

    def items_step(*args: Any) -> int:
        _stop("records", target)
        return commit_items(*args)

    def kv_step(*args: Any) -> int:
        written = import_kv(*args)
        _stop("kv", target)
        return written

    def after(*args: Any) -> int:
        _stop("committed", target)
        return renumbered(*args)

    transfer._commit_items = items_step  # type: ignore[assignment]
    transfer._import_kv = kv_step  # type: ignore[assignment]
    transfer._renumbered = after  # type: ignore[assignment]
    lines = path.read_text(encoding="utf-8").splitlines()
    with MnemonStore(db, fake_embeddings()) as store:
        print("ready", flush=True)
        transfer.import_jsonl(store, lines, name=path.name)
    print("done", flush=True)


if __name__ == "__main__":
    main()
