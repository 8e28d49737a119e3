"""``mnemon bench scale``: does the cost of a turn grow with the history? (paper §6.4)

For each size (records), the benchmark writes a synthetic journal of LoCoMo-like turns
(two speakers, sessions of 20 turns a few days apart, sentences from a small vocabulary of
templates, names, places and activities) into a fresh store, then measures:

* the write path: records per second;
* hybrid search latency (BM25 + vectors, fused), median and p90 over the probe questions;
* the read path per turn, with the rule planner and a fast deterministic judge (a scripted
  decision model whose answers depend only on the question, never on the history):
  time excluding model calls, searches, System 1 calls, waves, judgments, rounds, View size;
* peak resident memory (``ru_maxrss`` of the process after the size ran; sizes run in
  increasing order, so each figure is that size's peak or an earlier larger one);

and the ratio of each figure to the smallest size's. Because every read budget is bounded,
the per-turn counts should be equal across sizes; only search grows with the history.

Vectors: ``random`` (default) — fast stand-in vectors (LangChain's
``DeterministicFakeEmbedding``, a seeded random unit vector per text) so 1M records fit in
minutes; ``model`` — the bundled MiniLM embedder (realistic, much slower to write).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemon_langgraph.bench import embeddings_for, fast_judge, peak_rss_mib
from mnemon_langgraph.types import Message

__all__ = [
    "HELP",
    "PROBE_QUESTIONS",
    "add_arguments",
    "format_report",
    "ratios",
    "render",
    "run",
    "run_scale",
    "synthetic_messages",
]

_NAMES = ("Caroline", "Melanie")
_PEOPLE = ("my sister", "my neighbour", "an old friend", "my coworker", "my cousin", "the coach")
_PLACES = (
    "the lake",
    "Boston",
    "the library",
    "a pottery class",
    "the beach",
    "the museum",
    "the community center",
    "Paris",
    "the mountains",
    "a bookstore",
)
_ACTIVITIES = (
    "painting",
    "running",
    "camping",
    "baking bread",
    "learning the guitar",
    "swimming",
    "volunteering",
    "reading poetry",
    "hiking",
    "gardening",
    "photography",
    "yoga",
)
_THINGS = (
    "a necklace",
    "a new puppy",
    "a sunflower painting",
    "a pair of running shoes",
    "a journal",
    "a telescope",
    "a cookbook",
    "a bike",
    "concert tickets",
    "a ceramic bowl",
)
_TEMPLATES = (
    "I went to {place} with {person} last weekend and it was lovely.",
    "I've been really into {activity} lately, it helps me relax.",
    "Guess what, I bought {thing} yesterday!",
    "{person} and I are planning a trip to {place} next month.",
    "Thanks! I started {activity} after talking to {person}.",
    "Do you still go to {place}? I remember you liked {activity}.",
    "I gave {thing} to {person} for their birthday.",
    "That's amazing! How long have you been doing {activity}?",
    "We finally visited {place}; {person} loved it.",
    "I'm thinking about getting {thing} so I can try {activity}.",
)
PROBE_QUESTIONS: tuple[str, ...] = (
    "When did Caroline go to the lake?",
    "What did Melanie buy for her sister?",
    "How many times did they talk about painting?",
    "Where is Caroline planning a trip next month?",
    "What activities does Melanie do to relax?",
    "Who did Caroline give a necklace to?",
    "When did Melanie visit the museum?",
    "Who went to the beach with Caroline?",
    "What did Caroline buy yesterday?",
    "How long has Melanie been doing yoga?",
    "Where did Caroline and her cousin plan a trip?",
    "Did Melanie start running after talking to the coach?",
    "What gift did Melanie give her neighbour for their birthday?",
    "Which places did Caroline visit with an old friend?",
    "Why did Melanie get into gardening?",
    "When did Caroline buy a telescope?",
    "What does Caroline want to get so she can try photography?",
    "How often does Melanie go to the library?",
    "Who loved the trip to Paris?",
    "What did Caroline say about learning the guitar?",
    "Has Melanie been to the mountains?",
    "What did Caroline's coworker think of the bookstore?",
    "When is Melanie planning to go to the community center?",
    "What kinds of things has Caroline bought?",
)
"""The turns asked at every size (the same questions, so counts are comparable).

Twenty-four, not the six of earlier runs: per question the judgments of a turn vary by
about ±10% with what the searches happen to find (which records are pooled twice, which
followed records share words), at every size, so six questions could not resolve a 5%
bound on the median. The eighteen added questions were written from the generator's
vocabulary before any run with them."""


def synthetic_messages(n: int, *, seed: int = 0, per_session: int = 20) -> list[Message]:
    """``n`` LoCoMo-like turns: two speakers, sessions of ``per_session`` turns, dated.

    Deterministic for a given ``seed``; ids ``D<session>:<turn>`` as in LoCoMo.
    """
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, 10, 0)
    out: list[Message] = []
    for i in range(n):
        session, turn = divmod(i, per_session)
        template = rng.choice(_TEMPLATES)
        text = template.format(
            place=rng.choice(_PLACES),
            person=rng.choice(_PEOPLE),
            activity=rng.choice(_ACTIVITIES),
            thing=rng.choice(_THINGS),
        )
        out.append(
            Message(
                text=text,
                speaker=_NAMES[turn % 2],
                role="user",
                id=f"D{session + 1}:{turn + 1}",
                timestamp=start + timedelta(days=3 * session, minutes=turn),
                session=session + 1,
            )
        )
    return out


def _measure_size(
    n: int, *, vectors: str, folder: Path, seed: int, batch: int, searches_per_probe: int
) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.state import ReadContext
    from mnemon_langgraph.store import MnemonStore

    ns = ("bench", f"scale-{n}")
    messages = synthetic_messages(n, seed=seed)
    store = MnemonStore(folder / f"scale-{n}.sqlite", embeddings=embeddings_for(vectors))
    try:
        t0 = time.perf_counter()
        for i in range(0, n, batch):
            store.ingest(ns, messages[i : i + batch], origin="bench-scale", pack=False)
        write_s = time.perf_counter() - t0
        store.warm(ns)  # timed on the index the store settles on
        store.search(PROBE_QUESTIONS[0], namespace=ns, k=20)  # warm
        search_ms: list[float] = []
        for q in PROBE_QUESTIONS:
            for _ in range(searches_per_probe):
                t = time.perf_counter()
                store.search(q, namespace=ns, k=20)
                search_ms.append(1000 * (time.perf_counter() - t))
        graph = create_read_graph(source=store, judge=fast_judge())
        now = messages[-1].timestamp + timedelta(days=1) if messages[-1].timestamp else None
        turns: list[dict[str, Any]] = []
        for q in PROBE_QUESTIONS:
            state = graph.invoke(
                {"messages": [HumanMessage(q)]}, context=ReadContext(namespace=ns, now=now)
            )
            view = state["view"]
            counts = view.trace.get("counts", {})
            timings = view.trace.get("timings", {})
            turns.append(
                {
                    "read_seconds": float(timings.get("read_path_s", 0.0)),
                    "searches": counts.get("searches"),
                    "s1_calls": counts.get("s1_calls"),
                    "waves": counts.get("waves"),
                    "judgments": counts.get("judgments"),
                    "rounds": counts.get("rounds"),
                    "view_records": len(view.records),
                    "view_chars": len(view.text),
                }
            )
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()

    def med(key: str) -> float:
        return float(statistics.median(t[key] for t in turns))

    search_ms.sort()
    return {
        "records": n,
        "write_seconds": write_s,
        "records_per_second": n / write_s if write_s > 0 else None,
        "search_ms_median": statistics.median(search_ms),
        "search_ms_p90": search_ms[min(len(search_ms) - 1, int(0.9 * len(search_ms)))],
        "read_seconds_median": med("read_seconds"),
        "per_turn": {
            k: [t[k] for t in turns]
            for k in ("searches", "s1_calls", "waves", "judgments", "rounds", "view_records")
        },
        "searches_per_turn": med("searches"),
        "s1_calls_per_turn": med("s1_calls"),
        "waves_per_turn": med("waves"),
        "judgments_per_turn": med("judgments"),
        "rounds_per_turn": med("rounds"),
        "view_records_median": med("view_records"),
        "view_chars_median": med("view_chars"),
        "peak_rss_mb": peak_rss_mib(),
    }


_RATIO_KEYS = (
    "search_ms_median",
    "read_seconds_median",
    "searches_per_turn",
    "s1_calls_per_turn",
    "waves_per_turn",
    "judgments_per_turn",
    "rounds_per_turn",
    "view_records_median",
    "view_chars_median",
    "peak_rss_mb",
    "records_per_second",
)


def ratios(sizes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each size's figures divided by the smallest size's (``None`` where that is 0)."""
    if not sizes:
        return []
    base = min(sizes, key=lambda s: s["records"])
    out = []
    for size in sizes:
        row: dict[str, Any] = {"records": size["records"]}
        for key in _RATIO_KEYS:
            a, b = size.get(key), base.get(key)
            row[key] = (float(a) / float(b)) if a is not None and b else None
        out.append(row)
    return out


def run_scale(
    records: Sequence[int],
    *,
    vectors: str = "random",
    folder: str | Path | None = None,
    seed: int = 0,
    batch: int = 10_000,
    searches_per_probe: int = 3,
) -> dict[str, Any]:
    """Run the scale benchmark for each size (ascending) and return the report.

    Args:
        records: Sizes of the synthetic history, in records (one turn per record).
        vectors: ``random`` (fast stand-ins) or ``model`` (the bundled embedder).
        folder: Where the journals go (default: a temporary folder).
        seed: Seed of the synthetic turns.
        batch: Messages per ingest call.
        searches_per_probe: Timed searches per probe question.

    Returns:
        ``{"sizes": [...], "ratios": [...], "settings": {...}}``.
    """
    from mnemon_langgraph.errors import ConfigurationError

    if not records or any(n <= 0 for n in records):
        raise ConfigurationError("--records needs positive sizes")
    if vectors not in ("random", "model"):
        raise ConfigurationError(f"--vectors must be random or model, got {vectors!r}")
    with contextlib.ExitStack() as stack:
        if folder is None:  # a journal of 1M records takes gigabytes: removed afterwards
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemon-scale-")))
        else:
            base = Path(folder)
            base.mkdir(parents=True, exist_ok=True)
        sizes = [
            _measure_size(
                n,
                vectors=vectors,
                folder=base,
                seed=seed,
                batch=batch,
                searches_per_probe=searches_per_probe,
            )
            for n in sorted(records)
        ]
    return {
        "sizes": sizes,
        "ratios": ratios(sizes),
        "settings": {
            "vectors": vectors,
            "seed": seed,
            "probe_questions": list(PROBE_QUESTIONS),
            "judge": "scripted (answers depend on the question id only)",
            "planner": "rules",
        },
    }


HELP = "per-turn cost against history size: search, read path, judgments, waves, memory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``scale`` benchmark's options to ``parser`` (``--json``/``--out`` come from the
    ``mnemon bench`` runner)."""
    parser.add_argument(
        "--records",
        default="1000,100000,1000000",
        metavar="N,...",
        help="history sizes in records (default 1000,100000,1000000)",
    )
    parser.add_argument(
        "--vectors",
        choices=("random", "model"),
        default="random",
        help="random: fast stand-in vectors (default); model: the bundled MiniLM",
    )
    parser.add_argument(
        "--folder", default=None, metavar="DIR", help="where the journals go (default: temp)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic turns")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run from parsed arguments and return the report (see :func:`run_scale`)."""
    from mnemon_langgraph.errors import ConfigurationError

    try:
        sizes = [int(x.replace("_", "")) for x in str(args.records).split(",") if x.strip()]
    except ValueError as exc:
        raise ConfigurationError(f"--records must be integers, got {args.records!r}") from exc
    return run_scale(sizes, vectors=args.vectors, folder=args.folder, seed=args.seed)


def render(report: dict[str, Any]) -> str:
    """Human-readable report (same as :func:`format_report`)."""
    return format_report(report)


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table of the report (figures, then ratios to the smallest size)."""
    head = (
        f"{'records':>10} {'rec/s':>9} {'search ms':>10} {'read s':>8} {'searches':>8} "
        f"{'S1 calls':>8} {'waves':>6} {'judgm.':>7} {'View ch':>8} {'RSS MB':>8}"
    )
    lines = [head]
    for s in report["sizes"]:
        lines.append(
            f"{s['records']:>10,} {s['records_per_second'] or 0:>9,.0f} "
            f"{s['search_ms_median']:>10.2f} {s['read_seconds_median']:>8.3f} "
            f"{s['searches_per_turn']:>8.1f} {s['s1_calls_per_turn']:>8.1f} "
            f"{s['waves_per_turn']:>6.1f} {s['judgments_per_turn']:>7.1f} "
            f"{s['view_chars_median']:>8,.0f} {s['peak_rss_mb']:>8.0f}"
        )
    lines.append("ratio to the smallest size (goal: per-turn counts and View ≤ 1.05×):")
    for r in report["ratios"]:
        cells = " ".join(
            f"{label}×{r[k]:.2f}" for label, k in _SHOWN_RATIOS if r.get(k) is not None
        )
        lines.append(f"{r['records']:>10,} {cells}")
    return "\n".join(lines)


_SHOWN_RATIOS = (
    ("search", "search_ms_median"),
    ("read", "read_seconds_median"),
    ("searches", "searches_per_turn"),
    ("S1", "s1_calls_per_turn"),
    ("waves", "waves_per_turn"),
    ("judgments", "judgments_per_turn"),
    ("rounds", "rounds_per_turn"),
    ("View-records", "view_records_median"),
    ("View-chars", "view_chars_median"),
    ("peak", "peak_rss_mb"),
)
