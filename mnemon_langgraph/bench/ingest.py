"""``mnemon bench ingest``: end-to-end write-path throughput (messages per second).

Loads conversation files, then times ``MnemonStore.ingest`` into a fresh temporary journal:
chunking, embedding, the journal transaction and the incremental index update, then closing
the store (index checkpoints). Goal: ≥ 250 messages/s on the LoCoMo dev conversations with
the real embedder. Messages per CPU-second are reported too, since wall-clock figures on a
shared machine mostly measure the other processes.

``--embedders`` lists the embedders to run one after the other in the same process, for
ratios measured under the same load: ``legacy`` (the shipped MiniLM file as is: float32
compute, batches of 64 — the path before issue 15), ``minilm`` (the default: dynamically
quantized int8, one text per call) and ``fake`` (no model, to see the rest of the path).

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
        "--embedders",
        default="legacy,minilm",
        metavar="NAME,…",
        help="embedders to compare, of legacy, minilm, fake (default: legacy,minilm)",
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


def _embedder(name: str) -> Any:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.search.embeddings import LEGACY_MODEL_NAME, MiniLMEmbeddings

    if name == "fake":
        return DeterministicFakeEmbedding(size=384)
    if name == "legacy":
        return MiniLMEmbeddings(model_name=LEGACY_MODEL_NAME, batch_size=64)
    if name == "minilm":
        return MiniLMEmbeddings()
    raise ConfigurationError(f"--embedders: unknown embedder {name!r} (legacy, minilm, fake)")


def _ingest_once(batches: list[Any], embeddings: Any, *, pack: bool) -> dict[str, Any]:
    """Ingest every batch into a fresh temporary store; wall and CPU time of the whole."""
    from mnemon_langgraph.store import MnemonStore

    if hasattr(embeddings, "embed_query"):
        embeddings.embed_query("warm up")  # load the model outside the timed part
    per_file: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-") as tmp:
        store = MnemonStore(Path(tmp) / "bench.db", embeddings)
        start, cpu_start = time.perf_counter(), time.process_time()
        for i, source, messages in batches:
            t0 = time.perf_counter()
            result = store.ingest(("bench", str(i)), messages, source=source, pack=pack)
            per_file.append(
                {
                    "source": source,
                    "messages": len(messages),
                    "records": result.records_written,
                    "seconds": round(time.perf_counter() - t0, 3),
                }
            )
        store.close()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    n_messages = sum(int(f["messages"]) for f in per_file)
    n_records = sum(int(f["records"]) for f in per_file)
    return {
        "messages": n_messages,
        "records": n_records,
        "seconds": round(elapsed, 3),
        "messages_per_second": round(n_messages / elapsed, 1) if elapsed else None,
        "records_per_second": round(n_records / elapsed, 1) if elapsed else None,
        "cpu_seconds": round(cpu, 3),
        "messages_per_cpu_second": round(n_messages / cpu, 1) if cpu else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "per_file": per_file,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark for each embedder asked for; returns its figures."""
    from mnemon_langgraph.store import load_messages

    files = _files(list(args.files))
    batches = [(i, source, msgs) for i, f in enumerate(files) for source, msgs in load_messages(f)]
    names = [n.strip() for n in str(args.embedders).split(",") if n.strip()]
    runs = {
        name: _ingest_once(batches, _embedder(name), pack=not args.one_turn_per_record)
        for name in names
    }
    first = runs[names[0]] if names else None
    for row in runs.values():
        for key in ("messages_per_second", "messages_per_cpu_second"):
            base = first[key] if first else None
            row[f"{key}_ratio"] = round(row[key] / base, 2) if base and row[key] else None
    return {
        "benchmark": "ingest",
        "embedders": args.embedders,
        "cpu_count": os.cpu_count(),
        "files": len(files),
        "goal_messages_per_second": 250,
        "runs": runs,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable report: one line per embedder, ratios to the first."""
    lines = [
        f"ingest benchmark ({result['files']} files, {result['cpu_count']} CPUs; "
        f"goal ≥ {result['goal_messages_per_second']} messages/s)",
    ]
    for name, r in result["runs"].items():
        lines.append(
            f"  {name:>7}: {r['messages']} messages → {r['records']} records in {r['seconds']} s"
            f" = {r['messages_per_second']} messages/s (×{r['messages_per_second_ratio']}),"
            f" {r['messages_per_cpu_second']} per CPU-second"
            f" (×{r['messages_per_cpu_second_ratio']}), load average {r['load_average_1min']}"
        )
    lines.append(f"  peak memory {result['peak_rss_mib']} MiB")
    return "\n".join(lines)
