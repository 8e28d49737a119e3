"""``mnemon bench ingest``: end-to-end write-path throughput (messages per second).

Loads conversation files, then times ``MnemonStore.ingest`` into a fresh temporary journal:
chunking, embedding, the journal transaction and the incremental index update, then closing
the store (index checkpoints). Goal: ≥ 250 messages/s on the LoCoMo dev conversations with
the real embedder. Messages per CPU-second are reported too, since wall-clock figures on a
shared machine mostly measure the other processes.

``--embedders`` lists the embedders to compare in the same process, each file ingested by
each of them in turn (each into its own store), for ratios measured under the same load:
``minilm-seq`` (the default model, one call after the other: the path before the
concurrent embedding), ``minilm`` (the default as shipped: the same one-text calls, two at
a time on 2 cores, bit-identical vectors), ``legacy`` (the shipped MiniLM file as is:
float32 compute, batches of 64, one after the other — the path before the int8 model) and
``fake`` (no model, to see the rest of the path). ``--repeat`` makes that many passes and
reports each embedder's median pass (and every pass's figure).

Where the time goes (cProfile, two LoCoMo dev conversations, default model one call at a
time): ONNX inference 93%, tokenisation 2%, the journal transaction, BM25/FAISS update and
index checkpoints together 3–4%; so inference is what runs concurrently, and the write
stays one transaction after all vectors are made (crash-safety unchanged).

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

from mnemon_langgraph.bench import dev_files, embeddings_for, peak_rss_mib

__all__ = ["HELP", "add_arguments", "render", "run"]

HELP = "messages/s of the whole write path on LoCoMo-format files (real embedder)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench ingest``."""
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="default: $MNEMON_LOCOMO_DEV/*.json"
    )
    parser.add_argument(
        "--embedders",
        default="minilm-seq,minilm",
        metavar="NAME,…",
        help="embedders to compare, of minilm-seq, minilm, legacy, e5, fake "
        "(default: minilm-seq,minilm)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="interleaved runs; medians reported"
    )
    parser.add_argument("--one-turn-per-record", action="store_true", help="one record per message")


def _ingest_interleaved(
    batches: list[Any], embedders: dict[str, Any], *, pack: bool
) -> dict[str, dict[str, Any]]:
    """One pass: each file is ingested by every embedder in turn, each into its own store.

    Interleaving by file (seconds each) rather than by whole pass puts the embedders under
    nearly the same load from other processes: on a shared machine a burst of someone
    else's work then slows both sides of the ratio, not one. Wall and CPU time are summed
    over each embedder's own ingest calls and its store's close (index checkpoints).
    """
    from mnemon_langgraph.store import MnemonStore

    for embeddings in embedders.values():
        if hasattr(embeddings, "embed_query"):
            embeddings.embed_query("warm up")  # load the model outside the timed part
    times: dict[str, dict[str, Any]] = {
        name: {"wall": 0.0, "cpu": 0.0, "per_file": []} for name in embedders
    }
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-") as tmp:
        stores = {
            name: MnemonStore(Path(tmp) / f"bench-{k}.db", embeddings)
            for k, (name, embeddings) in enumerate(embedders.items())
        }
        for i, source, messages in batches:
            for name, store in stores.items():
                t0, c0 = time.perf_counter(), time.process_time()
                result = store.ingest(("bench", str(i)), messages, origin=source, pack=pack)
                wall = _add_time(times[name], t0, c0)
                times[name]["per_file"].append(
                    {
                        "source": source,
                        "messages": len(messages),
                        "records": result.records_written,
                        "seconds": round(wall, 3),
                    }
                )
        for name, store in stores.items():
            t0, c0 = time.perf_counter(), time.process_time()
            store.close()
            _add_time(times[name], t0, c0)
    return {name: _figures(t) for name, t in times.items()}


def _add_time(into: dict[str, Any], wall_start: float, cpu_start: float) -> float:
    """Add the wall and CPU seconds since the given starts to ``into``; returns the wall."""
    wall = time.perf_counter() - wall_start
    into["wall"] += wall
    into["cpu"] += time.process_time() - cpu_start
    return wall


def _figures(times: dict[str, Any]) -> dict[str, Any]:
    """Throughput figures of one embedder's pass from its summed times."""
    per_file, elapsed, cpu = times["per_file"], times["wall"], times["cpu"]
    n_messages = sum(int(f["messages"]) for f in per_file)
    n_records = sum(int(f["records"]) for f in per_file)
    return {
        "messages": n_messages,
        "records": n_records,
        "seconds": round(elapsed, 3),
        "messages_per_second": round(n_messages / elapsed, 1) if elapsed else None,
        "records_per_second": round(n_records / elapsed, 1) if elapsed else None,
        "cpu_seconds": round(cpu, 3),
        "cores_used": round(cpu / elapsed, 2) if elapsed else None,
        "messages_per_cpu_second": round(n_messages / cpu, 1) if cpu else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "per_file": per_file,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark for each embedder asked for; returns its figures."""
    from mnemon_langgraph.store import load_messages

    files = dev_files(list(args.files))
    batches = [(i, source, msgs) for i, f in enumerate(files) for source, msgs in load_messages(f)]
    names = [n.strip() for n in str(args.embedders).split(",") if n.strip()]
    embedders = {name: embeddings_for(name) for name in names}
    tries: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(max(1, int(args.repeat))):
        one_pass = _ingest_interleaved(batches, embedders, pack=not args.one_turn_per_record)
        for name, figures in one_pass.items():
            tries[name].append(figures)
    for found in tries.values():  # each pass's ratio to the first embedder in that pass
        for mine, ref in zip(found, tries[names[0]], strict=True):
            a, b = mine["messages_per_second"], ref["messages_per_second"]
            mine["pass_ratio"] = round(a / b, 2) if a and b else None
    runs = {name: _median_run(found) for name, found in tries.items()}
    first = runs[names[0]] if names else None
    for row in runs.values():
        for key in ("messages_per_second", "messages_per_cpu_second"):
            base = first[key] if first else None
            row[f"{key}_ratio"] = round(row[key] / base, 2) if base and row[key] else None
    return {
        "benchmark": "ingest",
        "embedders": args.embedders,
        "repeat": max(1, int(args.repeat)),
        "cpu_count": os.cpu_count(),
        "files": len(files),
        "goal_messages_per_second": 250,
        "runs": runs,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def _median_run(found: list[dict[str, Any]]) -> dict[str, Any]:
    """The pass with the median messages/s, plus every pass's figures.

    Every pass is kept because on a shared machine the spread is the finding: a pass
    during which another process held a core cannot run two calls at once, so the best
    pass (closest to an idle machine) and the per-pass ratios say more than any one mean.
    """
    ranked = sorted(found, key=lambda r: float(r["messages_per_second"] or 0))
    median = dict(ranked[(len(ranked) - 1) // 2])
    median["all_messages_per_second"] = [r["messages_per_second"] for r in found]
    median["all_pass_ratios"] = [r["pass_ratio"] for r in found]
    median["all_cores_used"] = [r["cores_used"] for r in found]
    median["best_messages_per_second"] = ranked[-1]["messages_per_second"]
    return median


def render(result: dict[str, Any]) -> str:
    """Human-readable report: one line per embedder, ratios to the first."""
    lines = [
        f"ingest benchmark ({result['files']} files, {result['cpu_count']} CPUs; "
        f"goal ≥ {result['goal_messages_per_second']} messages/s)",
    ]
    for name, r in result["runs"].items():
        lines.append(
            f"  {name:>10}: {r['messages']} messages → {r['records']} records in {r['seconds']} s"
            f" = {r['messages_per_second']} messages/s (×{r['messages_per_second_ratio']}),"
            f" {r['messages_per_cpu_second']} per CPU-second"
            f" (×{r['messages_per_cpu_second_ratio']}), {r['cores_used']} cores busy,"
            f" load average {r['load_average_1min']}"
        )
        if len(r["all_messages_per_second"]) > 1:
            lines.append(
                f"             every pass: {r['all_messages_per_second']} messages/s,"
                f" ×{r['all_pass_ratios']} to {next(iter(result['runs']))} in the same pass,"
                f" {r['all_cores_used']} cores busy"
            )
    lines.append(f"  peak memory {result['peak_rss_mib']} MiB")
    return "\n".join(lines)
