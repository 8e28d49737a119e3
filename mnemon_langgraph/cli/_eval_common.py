"""What ``mnemon eval locomo``, ``longmemeval`` and ``beam`` share: the models a run uses,
the store it ingests into, and its exit code. A module of its own so that the long-history
subcommands (:mod:`.eval_long`) and :mod:`.eval` both import it and not each other."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli import _common

__all__ = ["build_judge", "build_planner", "eval_store", "report_failures"]


def build_judge(spec: str, embeddings: Any = None) -> Any:
    """The System 1 backend named by ``spec`` (see ``backends.judge_from_spec``)."""
    return _common.judge(spec, embeddings)


def build_planner(spec: str) -> Any:
    """``None`` (the rule planner) for ``rules``, else a chat model from ``PROVIDER:MODEL``."""
    return _common.planner(spec)


@contextmanager
def eval_store(args: argparse.Namespace, embeddings: Any) -> Iterator[Any]:
    """The store an eval run ingests into, closed at the end: ``--store`` (a journal path,
    its folder made if missing, or a postgresql:// URL; the eval runs on it and it stays),
    else a fresh journal in a temporary folder that is deleted with it; ``--record-chars``."""
    from mnemon_langgraph.store import MnemonStore, is_postgres_url

    sizing = {} if args.record_chars is None else {"record_chars": args.record_chars}
    with ExitStack() as stack:
        if args.store:
            store_path: Path | str = args.store
            if not is_postgres_url(args.store):
                _common.make_journal_folder(args.store)
                store_path = Path(args.store)
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemon-eval-"))
            store_path = Path(folder) / "journal.sqlite"
        store = stack.enter_context(MnemonStore(store_path, embeddings=embeddings, **sizing))
        yield store


def report_failures(summary: dict[str, Any]) -> int:
    """Exit code of a run: 1 (and one line on stderr) if model calls failed, else 0."""
    failed = summary["counts"].get("questions_with_model_errors", 0)
    if failed:
        print(
            f"mnemon: error: model calls failed on {failed} of {summary['counts']['questions']} "
            "questions (the read path fell back to its offline defaults there); see "
            "results.jsonl, or rerun with -v for each failure",
            file=sys.stderr,
        )
        return 1
    return 0
