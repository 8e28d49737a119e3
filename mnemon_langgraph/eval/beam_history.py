"""Long histories in the BEAM harness: filler tiers, resumable runs, what a build costs.

* **Filler tiers** (``BeamEvalConfig.history_tokens``): each selected conversation is asked
  again inside a history of each stated size built by :func:`~.filler.build_history`; the
  tier is named ``<size>-hist`` (``10M-hist``) and the conversation
  ``<size>-hist/<its id with '/' as '-'>``. Its questions keep their ``origin``, so the
  per-tier ratios pair the same question across sizes.
* **Resume** (:class:`~.runlog.RunLog`): a run with ``resume`` builds only the histories
  that still have a question to ask, and asks only those.
* **Build measures** (:func:`build_measures`): ingest wall and CPU time, messages per
  CPU-second, the process's peak resident memory so far, the store's size on disk, and the
  time to write one more chat turn into the built namespace (:func:`time_turn_write`).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.beam import BeamConversation
from mnemon_langgraph.eval.filler import DEFAULT_TOKENS_PER_DAY, FillerPool, build_history
from mnemon_langgraph.eval.report import TokenCounter
from mnemon_langgraph.types import Message

__all__ = [
    "BUILD_FIELDS",
    "HistoryTier",
    "build_lines",
    "build_measures",
    "build_summary",
    "current_rss_bytes",
    "format_tokens",
    "history_conversation",
    "history_id",
    "history_tiers",
    "peak_rss_bytes",
    "store_disk_bytes",
    "time_turn_write",
]


def format_tokens(n: int) -> str:
    """``10_000_000`` → ``"10M"``, ``1_500_000`` → ``"1.5M"``, ``100_000`` → ``"100K"``."""
    for unit, size in (("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            value = n / size
            return f"{value:g}{unit}" if value == round(value, 3) else f"{value:.3f}{unit}"
    return str(n)


@dataclass(frozen=True)
class HistoryTier:
    """One history size of a run: its budget and its tier name."""

    budget: int
    label: str


def history_tiers(budgets: Sequence[int]) -> list[HistoryTier]:
    """Tiers for ``budgets`` (smallest first), named ``<size>-hist``.

    Raises:
        InputError: A budget named twice.
    """
    if len(set(budgets)) < len(budgets):
        raise InputError(f"--history-tokens names a size twice: {list(budgets)}")
    return [HistoryTier(b, f"{format_tokens(b)}-hist") for b in sorted(budgets)]


def history_id(conv: BeamConversation, tier: HistoryTier) -> str:
    """The id of ``conv`` inside a history of ``tier``."""
    return f"{tier.label}/{conv.id.replace('/', '-')}"


def history_conversation(
    conv: BeamConversation,
    tier: HistoryTier,
    pool: FillerPool,
    *,
    seed: int,
    tokens: TokenCounter,
    tokens_per_day: int = DEFAULT_TOKENS_PER_DAY,
) -> tuple[BeamConversation, dict[str, Any]]:
    """``conv`` inside filler up to ``tier``'s budget, and what the history holds."""
    history = build_history(
        conv.messages,
        pool,
        tier.budget,
        seed=seed,
        tokens=tokens,
        tokens_per_day=tokens_per_day,
    )
    questions = [replace(q, origin=q.origin or conv.id) for q in conv.questions]
    moved = BeamConversation(history_id(conv, tier), tier.label, history.messages, questions)
    return moved, history.info()


# -- what a build costs ----------------------------------------------------------------------


def _proc_status(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` in bytes (Linux; ``None`` elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def peak_rss_bytes() -> int:
    """The process's peak resident memory so far (bytes; monotonic over the process):
    Linux's ``VmHWM``, else ``getrusage``'s ``ru_maxrss``."""
    peak = _proc_status("VmHWM")
    if peak is not None:
        return peak
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(usage if sys.platform == "darwin" else usage * 1024)


def current_rss_bytes() -> int | None:
    """The process's resident memory now (Linux ``VmRSS``; ``None`` elsewhere)."""
    return _proc_status("VmRSS")


def store_disk_bytes(store: Any) -> int | None:
    """Bytes the store holds on disk: an embedded journal's file and the files beside it
    that share its name (write-ahead log, index files); PostgreSQL: the database's size.
    ``None`` when it cannot be told."""
    try:
        stats = store.stats()
    except Exception:  # a measure must not cost the run
        return None
    path = stats.get("path")
    if not isinstance(path, str):
        return None
    if path.startswith(("postgresql://", "postgres://")):
        return _postgres_bytes(path)
    p = Path(path)
    if not p.is_file():
        return None
    return sum(
        f.stat().st_size for f in p.parent.iterdir() if f.is_file() and f.name.startswith(p.name)
    )


def _postgres_bytes(url: str) -> int | None:
    try:
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else None
    except Exception:  # best effort: a measure must not cost the run
        return None


def time_turn_write(store: Any, namespace: Sequence[str], after: datetime | None) -> dict[str, Any]:
    """Write one more chat turn (a user message) into ``namespace``; its wall and CPU time.

    The turn is dated half a day after ``after`` (the history's last date) in a session of
    its own, as a new chat turn would be.
    """
    when = (after or datetime(2024, 1, 1)) + timedelta(hours=12)
    message = Message(
        text="One more chat turn, written to time a write into this history.",
        speaker="user",
        role="user",
        id=f"turn-write:{os.getpid()}:{time.time_ns()}",
        timestamp=when,
        session=None,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    store.ingest(namespace, [message], origin="turn-write")
    return {
        "turn_write_seconds": time.perf_counter() - t0,
        "turn_write_cpu_seconds": time.process_time() - c0,
    }


def build_measures(
    conv: BeamConversation, store: Any, seconds: float, cpu: float
) -> dict[str, Any]:
    """What the build of ``conv``'s namespace cost (ingest done, before the questions)."""
    return {
        "conversation": conv.id,
        "tier": conv.tier,
        "messages": len(conv.messages),
        "ingest_seconds": seconds,
        "ingest_cpu_seconds": cpu,
        "messages_per_cpu_second": len(conv.messages) / cpu if cpu > 0 else None,
        "rss_bytes": current_rss_bytes(),
        "peak_rss_bytes": peak_rss_bytes(),  # read second: never below the RSS just read
        "disk_bytes": store_disk_bytes(store),
    }


BUILD_FIELDS = (
    "history_tokens",
    "filler_tokens",
    "messages",
    "ingest_seconds",
    "ingest_cpu_seconds",
    "messages_per_cpu_second",
    "peak_rss_bytes",
    "rss_bytes",
    "disk_bytes",
    "warm_seconds",
    "turn_write_seconds",
    "turn_write_cpu_seconds",
    "cold_open_seconds",
    "cold_open_read_seconds",
)
"""Per-build measures summarised per tier (medians)."""


def _median(values: Sequence[Any]) -> float | None:
    nums = sorted(float(v) for v in values if v is not None)
    if not nums:
        return None
    mid = len(nums) // 2
    return nums[mid] if len(nums) % 2 else (nums[mid - 1] + nums[mid]) / 2


def build_summary(builds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per tier: the number of builds and the median of each of :data:`BUILD_FIELDS`; and
    the filler's make-up (tokens per dataset, summed over the tier's builds)."""
    tiers: dict[str, list[Mapping[str, Any]]] = {}
    for b in builds:
        tiers.setdefault(str(b.get("tier")), []).append(b)
    out: dict[str, Any] = {}
    for tier, mine in tiers.items():
        entry: dict[str, Any] = {"builds": len(mine)}
        for name in BUILD_FIELDS:
            entry[f"{name}_median"] = _median([b.get(name) for b in mine])
        sources: dict[str, int] = {}
        for b in mine:
            for src, n in (b.get("filler_by_source") or {}).items():
                sources[src] = sources.get(src, 0) + int(n)
        entry["filler_by_source"] = sources
        out[tier] = entry
    return dict(sorted(out.items(), key=lambda kv: (kv[1]["messages_median"] or 0, kv[0])))


def _mb(value: Any) -> str:
    return "–" if value is None else f"{float(value) / 1e6:,.0f}"


def _s(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    return "–" if value is None else f"{float(value) * scale:,.{digits}f}"


def build_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's section on what building each tier's namespaces cost."""
    builds = summary.get("builds") or {}
    if not builds:
        return []
    from mnemon_langgraph.eval.report import markdown_table

    rows = [
        [
            tier,
            str(b.get("builds")),
            _s(b.get("history_tokens_median"), 1.0, 0),
            _s(b.get("messages_median"), 1.0, 0),
            _s(b.get("ingest_seconds_median")),
            _s(b.get("ingest_cpu_seconds_median")),
            _s(b.get("messages_per_cpu_second_median")),
            _mb(b.get("peak_rss_bytes_median")),
            _mb(b.get("rss_bytes_median")),
            _mb(b.get("disk_bytes_median")),
            _s(b.get("warm_seconds_median")),
            _s(b.get("turn_write_seconds_median"), 1000.0, 0),
            _s(b.get("cold_open_seconds_median")),
            _s(b.get("cold_open_read_seconds_median"), 1000.0, 0),
        ]
        for tier, b in builds.items()
    ]
    header = [
        "tier",
        "builds",
        "history tokens",
        "messages",
        "ingest s",
        "ingest CPU s",
        "messages / CPU s",
        "peak RSS MB",
        "RSS MB",
        "disk MB",
        "warm s",
        "one turn write ms",
        "cold open s",
        "cold read ms",
    ]
    out = ["", "## Building the namespaces (median per build)", "", *markdown_table(header, rows)]
    mix = {t: b.get("filler_by_source") for t, b in builds.items() if b.get("filler_by_source")}
    if mix:
        out += ["", "Filler tokens by dataset (summed over the tier's builds): "]
        out += [
            f"- {t}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(m.items()))
            for t, m in mix.items()
        ]
        out += [
            "",
            'Most of the filler is other LongMemEval "users" (ShareGPT/UltraChat-style '
            "sessions and LongMemEval's simulated users), not one person's life.",
        ]
    out += [
        "",
        "Peak RSS: the process's peak resident memory when the build finished (monotonic "
        "over the run); RSS: its resident memory then; disk: the journal's files (embedded) "
        "or the database (PostgreSQL); warm: `store.warm` after the ingest, before the "
        "questions (the embedded backend's conversion to its approximate index, "
        "PostgreSQL's client copy); "
        "one turn write: one more user message ingested into the built namespace; cold "
        "open (--cold-open): a new process's time from its start to the View of the "
        "namespace's first question (interpreter, imports, models, store open, read), and "
        "the read path's own time in it (model calls excluded).",
    ]
    return out
