"""Child process of the retention crash test: apply a policy and stop dead at one step.

Usage::

    python _retention_child.py TARGET STEP

TARGET is a journal path or a PostgreSQL URL the parent has seeded. The child opens the
store, prints ``ready``, then runs ``apply_retention`` on :data:`NS` with the clock
:data:`NOW`; when it reaches step ``STEP`` it prints ``at STEP`` and sleeps until the parent
SIGKILLs it, so every step boundary is interrupted deterministically. Steps, in order:

* ``rows`` — inside the transaction, planned, before the first row is removed;
* ``commit`` — every row removed and the audit row written, before COMMIT;
* ``scrub`` — committed, before the WAL checkpoint (embedded) or the ``VACUUM`` (PostgreSQL);
* ``index`` — (embedded) checkpointed, before the removed records leave the in-memory index.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.store import MnemonStore, is_postgres_url

NS = ("users", "retention-crash@example.com")
NOW = datetime(2025, 6, 30, tzinfo=UTC)
STEPS = ("rows", "commit", "scrub", "index")


def _stop(step: str, target: str) -> None:
    if step == target:
        print(f"at {step}", flush=True)
        time.sleep(600)


def _embedded_hooks(target: str) -> None:
    import mnemon_langgraph.store.embedded._retention as retention
    from mnemon_langgraph.store.embedded._index import NamespaceIndex
    from mnemon_langgraph.store.embedded._journal import Journal

    apply, audit = retention._apply, retention._audit
    checkpoint, remove = Journal.checkpoint, NamespaceIndex.remove
    state = {"ran": False}

    def rows(conn: Any, plan: Any, key: str, actor: str) -> Any:
        _stop("rows", target)
        state["ran"] = True
        return apply(conn, plan, key, actor)

    def audited(*args: Any) -> None:
        audit(*args)
        _stop("commit", target)

    def scrub(self: Journal) -> None:
        if state["ran"]:
            _stop("scrub", target)
        checkpoint(self)

    def index(self: NamespaceIndex, ids: list[str]) -> None:
        _stop("index", target)
        remove(self, ids)

    retention._apply, retention._audit = rows, audited  # type: ignore[assignment]
    Journal.checkpoint = scrub  # type: ignore[method-assign]
    NamespaceIndex.remove = index  # type: ignore[method-assign]


def _postgres_hooks(target: str) -> None:
    from mnemon_langgraph.store.postgres._retention import Retention
    from mnemon_langgraph.store.postgres._writes import Writes

    apply, audit, vacuum = Retention._apply, Writes.audit, Writes.vacuum

    async def rows(self: Retention, conn: Any, nsid: Any, plan: Any) -> Any:
        _stop("rows", target)
        return await apply(self, conn, nsid, plan)

    async def audited(self: Writes, conn: Any, **kwargs: Any) -> None:
        await audit(self, conn, **kwargs)
        if kwargs.get("action") == "apply_retention":
            _stop("commit", target)

    async def scrub(self: Writes) -> None:
        _stop("scrub", target)
        await vacuum(self)

    Retention._apply = rows  # type: ignore[method-assign]
    Writes.audit = audited  # type: ignore[method-assign]
    Writes.vacuum = scrub  # type: ignore[method-assign]


def main() -> None:
    target, step = sys.argv[1], sys.argv[2]
    if is_postgres_url(target):
        _postgres_hooks(step)
    else:
        _embedded_hooks(step)
    store = MnemonStore(target, fake_embeddings())
    if not is_postgres_url(target):
        store.index(NS).sync()
    print("ready", flush=True)
    store.apply_retention(NS, older_than="30d", now=NOW)
    print("done", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
