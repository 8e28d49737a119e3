"""What ``mnemon eval locomo``, ``longmemeval`` and ``beam`` share: the models a run uses,
the store it ingests into, and its exit code. A module of its own so that the long-history
subcommands (:mod:`.eval_long`) and :mod:`.eval` both import it and not each other."""

from __future__ import annotations

import argparse
import sys
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


def eval_store(args: argparse.Namespace, embeddings: Any) -> Any:
    """The store an eval run ingests into: ``--store`` (a journal path or a postgresql://
    URL, then the eval runs on it), else a fresh temporary journal; ``--record-chars``."""
    from mnemon_langgraph.eval.locomo import default_store_path
    from mnemon_langgraph.store import MnemonStore, is_postgres_url

    store_path: Path | str = default_store_path()
    if args.store:
        store_path = args.store if is_postgres_url(args.store) else Path(args.store)
    sizing = {} if args.record_chars is None else {"record_chars": args.record_chars}
    return MnemonStore(store_path, embeddings=embeddings, **sizing)


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
