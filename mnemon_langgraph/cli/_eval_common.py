"""What ``mnemon eval locomo``, ``longmemeval`` and ``beam`` share: the models a run uses,
the store it ingests into, and its exit code. A module of its own so that the long-history
subcommands (:mod:`._eval_long`) and :mod:`._eval` both import it and not each other."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli import _common

__all__ = [
    "add_documents_args",
    "build_judge",
    "build_planner",
    "documents_flags",
    "eval_store",
    "read_graph",
    "report_failures",
    "split_store",
]


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


def add_documents_args(parser: argparse.ArgumentParser, *, distractors: bool = False) -> None:
    """``--documents-share F`` (and ``--documents-seed``; ``--distractors`` for LoCoMo)."""
    parser.add_argument(
        "--documents-share",
        type=float,
        default=None,
        metavar="F",
        help="put a seeded share F (0..1) of each history's sessions into a document source "
        "(a RetrieverSource over a vector store, --documents-store, one dated document per turn) "
        "and the "
        "rest into the journal; the View reads both",
    )
    parser.add_argument(
        "--documents-seed", type=int, default=0, metavar="N", help="seed of the split (0)"
    )
    parser.add_argument(
        "--documents-retriever",
        choices=("vector", "ensemble"),
        default="vector",
        help="the document source's retriever: vector = the InMemoryVectorStore's own (dense "
        "only; default); ensemble = LangChain's EnsembleRetriever of BM25Retriever and the "
        "vector store (the peers extra)",
    )
    parser.add_argument(
        "--documents-store",
        choices=("memory", "faiss"),
        default="memory",
        help="the document source's vector store: memory = LangChain's InMemoryVectorStore "
        "(default; searches every document by brute force), faiss = LangChain community's "
        "FAISS (a flat index; what a user with thousands of documents builds)",
    )
    if distractors:
        parser.add_argument(
            "--distractors",
            action="store_true",
            help="a document source holding the other conversations' sessions beside the "
            "whole journal; rows report the View's characters by source",
        )


def documents_flags(args: argparse.Namespace) -> list[str]:
    """The document flags of a recorded command line."""
    parts: list[str] = []
    if args.documents_share is not None:
        parts += ["--documents-share", str(args.documents_share)]
        parts += ["--documents-seed", str(args.documents_seed)]
    if getattr(args, "distractors", False):
        parts.append("--distractors")
    if parts and getattr(args, "documents_retriever", "vector") != "vector":
        parts += ["--documents-retriever", args.documents_retriever]
    if parts and getattr(args, "documents_store", "memory") != "memory":
        parts += ["--documents-store", args.documents_store]
    return parts


def split_store(
    args: argparse.Namespace, store: Any, embeddings: Any, histories: Any = None
) -> tuple[Any, dict[str, Any] | None]:
    """``(the store the eval ingests into, the read graph's other sources)``: the store
    itself and ``None`` without the document flags, else a
    :class:`~mnemon_langgraph.eval.documents.DocumentSplit` and its document source.
    ``histories``: conversation id → messages, the distractors' material."""
    from mnemon_langgraph.eval.documents import DOCS_SOURCE, DocumentSplit

    retriever = getattr(args, "documents_retriever", "vector")
    vector_store = getattr(args, "documents_store", "memory")
    if getattr(args, "distractors", False):
        split = DocumentSplit(
            store,
            embeddings,
            distractors=dict(histories or {}),
            retriever=retriever,
            vector_store=vector_store,
        )
        return split, {"distractors": split.source}
    if args.documents_share is None:
        return store, None
    split = DocumentSplit(
        store,
        embeddings,
        share=args.documents_share,
        seed=args.documents_seed,
        retriever=retriever,
        vector_store=vector_store,
    )
    return split, {DOCS_SOURCE: split.source}


def read_graph(store: Any, others: dict[str, Any] | None, **kwargs: Any) -> Any:
    """The eval's read graph: over the store, or over it and ``others`` (named sources)."""
    from mnemon_langgraph.read.graph import create_read_graph

    if others is None:
        return create_read_graph(source=store, **kwargs)
    return create_read_graph(sources={"memory": store, **others}, **kwargs)
