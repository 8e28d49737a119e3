"""``mnemon bench ingest``: end-to-end write-path throughput (messages per second).

Loads conversation files, then times ``MnemonStore.ingest`` into a fresh temporary journal:
chunking, embedding (the real offline MiniLM model unless ``--embeddings fake``), the journal
transaction and the incremental index update, then closing the store (index checkpoints).
Goal: ≥ 250 messages/s on the LoCoMo dev conversations with the real embedder. Messages per
CPU-second are reported too, since wall-clock figures on a shared machine mostly measure the
other processes.

Files: the positional arguments, else every ``*.json`` in ``$MNEMON_LOCOMO_DEV``, else the
bundled sample conversation.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from mnemon_langgraph.bench import peak_rss_mib

__all__ = ["HELP", "add_arguments", "render", "run"]

HELP = "messages/s of the whole write path on LoCoMo-format files (real embedder)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench ingest``."""
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="default: $MNEMON_LOCOMO_DEV/*.json"
    )
    parser.add_argument(
        "--embeddings",
        choices=("minilm", "fake"),
        default="minilm",
        help="embedder (default: the offline MiniLM model)",
    )
    parser.add_argument("--one-turn-per-record", action="store_true", help="one record per message")


def _files(given: list[str]) -> list[Path]:
    if given:
        return [Path(f) for f in given]
    folder = os.environ.get("MNEMON_LOCOMO_DEV")
    if folder and Path(folder).is_dir():
        found = sorted(Path(folder).glob("*.json"))
        if found:
            return found
    from mnemon_langgraph.sources import SAMPLE_PATH

    return [SAMPLE_PATH]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark; returns its figures."""
    from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

    from mnemon_langgraph.search.embeddings import MiniLMEmbeddings
    from mnemon_langgraph.store import MnemonStore, load_messages

    files = _files(list(args.files))
    batches = [(i, source, msgs) for i, f in enumerate(files) for source, msgs in load_messages(f)]
    embeddings: Embeddings = (
        DeterministicFakeEmbedding(size=384) if args.embeddings == "fake" else MiniLMEmbeddings()
    )
    if isinstance(embeddings, MiniLMEmbeddings):
        embeddings.embed_query("warm up")  # load the model outside the timed part
    per_file: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-") as tmp:
        store = MnemonStore(Path(tmp) / "bench.db", embeddings)
        start = time.perf_counter()
        cpu_start = time.process_time()
        for i, source, messages in batches:
            t0 = time.perf_counter()
            result = store.ingest(
                ("bench", str(i)), messages, source=source, pack=not args.one_turn_per_record
            )
            per_file.append(
                {
                    "source": source,
                    "messages": len(messages),
                    "records": result.records_written,
                    "seconds": round(time.perf_counter() - t0, 3),
                }
            )
        store.close()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    n_messages = sum(int(f["messages"]) for f in per_file)
    n_records = sum(int(f["records"]) for f in per_file)
    return {
        "benchmark": "ingest",
        "embeddings": args.embeddings,
        "cpu_count": os.cpu_count(),
        "files": len(files),
        "messages": n_messages,
        "records": n_records,
        "seconds": round(elapsed, 3),
        "messages_per_second": round(n_messages / elapsed, 1) if elapsed else None,
        "records_per_second": round(n_records / elapsed, 1) if elapsed else None,
        "cpu_seconds": round(cpu, 3),
        "messages_per_cpu_second": round(n_messages / cpu, 1) if cpu else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "goal_messages_per_second": 250,
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "per_file": per_file,
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable report."""
    lines = [
        f"ingest benchmark ({result['embeddings']} embeddings, {result['cpu_count']} CPUs)",
        f"  {result['messages']} messages → {result['records']} records "
        f"from {result['files']} files in {result['seconds']} s",
        f"  {result['messages_per_second']} messages/s, {result['records_per_second']} "
        f"records/s (goal ≥ {result['goal_messages_per_second']} messages/s)",
        f"  {result['cpu_seconds']} CPU-seconds: {result['messages_per_cpu_second']} "
        f"messages per CPU-second (load average {result['load_average_1min']})",
        f"  peak memory {result['peak_rss_mib']} MiB",
    ]
    return "\n".join(lines)
