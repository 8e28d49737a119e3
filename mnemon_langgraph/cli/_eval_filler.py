"""``mnemon eval filler SRC...``: the filler pool's make-up, and its vectors into the cache.

Embedding the whole filler once is the long part of building a ten-million-token history
(docs/results/ten-million.md); this command does it ahead of ``eval beam --history-tokens``,
into the same embedding cache, and can be stopped and run again (cached texts are skipped).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mnemon_langgraph.cli._common import add_embeddings_arg

__all__ = ["add_filler", "cold_reader"]


def add_filler(sub: Any) -> None:
    """Add ``eval filler`` to ``sub``."""
    p = sub.add_parser(
        "filler",
        help="the filler pool of eval beam --history-tokens: its tokens, and its vectors "
        "into the embedding cache",
        description="Load the filler sources as eval beam --filler does (no text repeated, "
        "WordPiece tokens), print the distinct tokens per dataset, and unless --stats-only "
        "embed every record and turn text a history build would embed into the embedding "
        "cache (resumable: cached texts are skipped).",
    )
    p.add_argument("sources", nargs="+", metavar="SRC", help="filler files or folders")
    add_embeddings_arg(p, what="embedder whose vectors are cached")
    p.add_argument(
        "--embedding-cache",
        default=None,
        metavar="PATH",
        help="the embedding cache file (default under $MNEMON_CACHE_DIR or "
        "~/.cache/mnemon-langgraph); give eval beam the same one",
    )
    p.add_argument(
        "--record-chars",
        type=int,
        default=None,
        metavar="N",
        help="the record size of the store the histories will be built in (default 600)",
    )
    p.add_argument(
        "--filler-seed",
        type=int,
        default=0,
        metavar="N",
        help="embed in the order the histories of this seed take the sessions (default 0)",
    )
    p.add_argument("--stats-only", action="store_true", help="count, embed nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress lines")
    p.set_defaults(func=_run_filler)


def add_cold_open(beam: argparse.ArgumentParser) -> None:
    """Add ``--cold-open`` to ``eval beam``."""
    beam.add_argument(
        "--cold-open",
        action="store_true",
        help="after each namespace's questions, read it once from a new process (mnemon "
        "view) and record that process's time from start to View: the first read after a "
        "restart",
    )


def _run_filler(args: argparse.Namespace) -> int:
    from mnemon_langgraph.cli._common import embeddings_for
    from mnemon_langgraph.eval.filler import embed_filler, load_filler_pool
    from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS, check_record_chars
    from mnemon_langgraph.search.embeddings import CachedEmbeddings

    record_chars = check_record_chars(args.record_chars or DEFAULT_MAX_CHARS)
    started = time.perf_counter()
    pool = load_filler_pool(args.sources)
    by_source = pool.tokens_by_source()
    sessions = sum(1 for _ in pool.sessions())
    print(
        f"filler pool: {sum(by_source.values()):,} distinct {pool.token_method} tokens in "
        f"{sessions:,} sessions ("
        + ", ".join(f"{k} {v:,}" for k, v in sorted(by_source.items()))
        + f"); {pool.dropped_repeats:,} repeated messages dropped",
        flush=True,
    )
    if args.stats_only:
        return 0
    cached = CachedEmbeddings(embeddings_for(args.embeddings), args.embedding_cache)

    last = [0.0]

    def report(done: int, total: int, texts: int) -> None:
        now = time.perf_counter()
        if not args.no_progress and (now - last[0] >= 30 or done == total):
            last[0] = now
            print(
                f"{done:,}/{total:,} sessions, {texts:,} texts, {cached.misses:,} embedded, "
                f"{time.perf_counter() - started:,.0f} s",
                file=sys.stderr,
                flush=True,
            )

    try:
        texts = embed_filler(
            pool, cached, record_chars=record_chars, seed=args.filler_seed, progress=report
        )
    finally:
        cached.close()
    print(
        f"{texts:,} texts: {cached.misses:,} embedded, {cached.hits:,} already cached, in "
        f"{cached.path}"
    )
    return 0


def cold_reader(args: argparse.Namespace, store: Any) -> Any:
    """``eval beam --cold-open``: a function that reads a built namespace from a **new**
    process (``mnemon view``, the run's judge, planner, budget and read settings) and returns
    that process's wall time from start to View, and the read path's own time inside it.

    ``None`` without ``--cold-open``.
    """
    if not getattr(args, "cold_open", False):
        return None
    import json
    import os
    import subprocess

    db = str(args.store or store.stats()["path"])  # the URL as given: a password is kept
    env = dict(os.environ)
    if args.embeddings in ("fake", "e5"):
        env["MNEMON_EMBEDDINGS"] = args.embeddings

    def read(namespace: Any, question: str) -> dict[str, Any]:
        cmd = [sys.executable, "-m", "mnemon_langgraph.cli", "view", question, "--db", db]
        for part in namespace:
            cmd += ["--namespace", part]
        cmd += ["--json", "--judge", args.judge, "--planner", args.planner]
        if args.budget_chars is not None:
            cmd += ["--budget-chars", str(args.budget_chars)]
        for setting in args.read_setting or ():
            cmd += ["--read-setting", setting]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"cold_open_error": proc.stderr.strip()[-500:]}
        timings = (json.loads(proc.stdout).get("trace") or {}).get("timings") or {}
        return {
            "cold_open_seconds": wall,
            "cold_open_read_seconds": timings.get("read_path_s"),
            "cold_open_model_seconds": timings.get("model_s"),
        }

    return read
