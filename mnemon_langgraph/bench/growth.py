"""``mnemon bench search --growth``: how search grows with a namespace, measured in one run.

For each pair of sizes (``2000:40000`` by default; ``10000:1000000`` is the long run), one
store — an embedded journal in a folder, or PostgreSQL — holds a small and a large namespace
of each corpus, and the same kinds of question are asked of both, alternating between them
call by call, so that load from other processes falls on both sizes alike. Each figure is the
median over every call of the whole ``store.search(query, k=20)`` as a caller sees it: the
query embedded (every call asks a question not asked before, so no cached query vector
helps either size), BM25, the dense search, fusion, and the page's records fetched; warm
(each namespace answered a few questions first). The ratio is large / small.

Corpora and questions:

* ``zipf`` — :func:`~.search.make_corpus`'s records (a Zipf vocabulary of 30,000 words plus
  common English words, 256 topics), asked **topical** questions (four words of a topic, two
  of the vocabulary; :func:`~.search.topic_queries`) and **common**-word questions (five
  words each in a large share of the records and one topic word;
  :func:`~.search.common_word_queries`);
* ``narrow`` — records of 70 words drawn from a 23-word vocabulary, asked questions of 3–8
  of those words (**narrow**): every query word is in nearly every record, BM25's worst
  case, and the shape of the measurement that first showed search growing too fast.

Vectors: :class:`~.backend.WordMixEmbeddings` (a fixed random vector per word, summed), so
the queries are really embedded at every call, texts sharing words are near each other and
no model runs. CPU time is this process's (for PostgreSQL, the client's only, its engine
thread included; the server's work shows in the wall time only). On a machine shared with
other work, compare sizes by CPU time: a call that needs more CPU than one scheduler slice
waits for the other processes in between, so wall-clock medians there grow with the load,
not only with the namespace.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import ConfigurationError

__all__ = [
    "CORPORA",
    "DEFAULT_PAIRS",
    "GOALS",
    "NARROW_VOCABULARY",
    "narrow_queries",
    "narrow_texts",
    "parse_corpora",
    "parse_pairs",
    "render",
    "run_growth",
]

DEFAULT_PAIRS = "2000:40000"
GOALS: dict[tuple[int, int], float] = {(2_000, 40_000): 2.5, (10_000, 1_000_000): 4.0}
"""The largest ratio of the large namespace's median to the small one's that is acceptable."""

_NARROW_WORDS = (
    "garden river window market coffee letter bicycle music winter doctor kitchen holiday "
    "teacher paint train island camera forest dinner office football friend story"
)
NARROW_VOCABULARY: tuple[str, ...] = tuple(_NARROW_WORDS.split())
_WARM_CALLS = 5
_NAMESPACE = ("bench", "growth")


def narrow_texts(n: int, rng: random.Random) -> list[str]:
    """``n`` records of 70 words drawn from :data:`NARROW_VOCABULARY`, with a speaker."""
    return [
        f"{('Ann', 'Ben')[i % 2]}: " + " ".join(rng.choice(NARROW_VOCABULARY) for _ in range(70))
        for i in range(n)
    ]


def narrow_queries(count: int, rng: random.Random) -> list[str]:
    """``count`` questions of 3–8 words of :data:`NARROW_VOCABULARY`."""
    return [
        " ".join(rng.choice(NARROW_VOCABULARY) for _ in range(rng.randint(3, 8)))
        for _ in range(count)
    ]


def parse_pairs(text: str) -> list[tuple[int, int]]:
    """``"2000:40000,10000:1000000"`` → ``[(2000, 40000), (10000, 1000000)]``."""
    pairs = []
    for item in str(text).split(","):
        if not item.strip():
            continue
        try:
            small, large = (int(x.replace("_", "")) for x in item.split(":"))
        except ValueError as exc:
            raise ConfigurationError(f"--growth needs SMALL:LARGE pairs, got {item!r}") from exc
        if not 0 < small < large:
            raise ConfigurationError(f"--growth pair {item!r}: need 0 < SMALL < LARGE")
        pairs.append((small, large))
    if not pairs:
        raise ConfigurationError("--growth needs at least one SMALL:LARGE pair")
    return pairs


CORPORA = ("zipf", "narrow")


def parse_corpora(text: str) -> tuple[str, ...]:
    """``"narrow"`` → ``("narrow",)``; every name one of :data:`CORPORA`, at least one."""
    names = tuple(dict.fromkeys(x.strip() for x in str(text).split(",") if x.strip()))
    unknown = [x for x in names if x not in CORPORA]
    if unknown or not names:
        raise ConfigurationError(
            f"--growth-corpora takes {', '.join(CORPORA)} (comma-separated), got {text!r}"
        )
    return names


def _workload(corpus: str, n: int, seed: int, calls: int) -> tuple[list[str], dict[str, Any]]:
    """The records of one namespace and ``calls`` fresh questions of each kind for it."""
    from mnemon_langgraph.bench.search import common_word_queries, make_corpus, topic_queries

    if corpus == "narrow":
        rng = random.Random(seed * 1_000_003 + n)
        return narrow_texts(n, rng), {"narrow": narrow_queries(calls, rng)}
    data = make_corpus(n, seed=seed)
    topical = [q for q, _ in topic_queries(data, calls, data["rng"])]
    return data["texts"], {
        "topical": topical,
        "common": common_word_queries(data, calls, data["rng"]),
    }


def _fill(
    store: Any, target: str, ns: tuple[str, ...], texts: list[str], bulk_index: bool = False
) -> None:
    """Write one namespace (one record per message) and let its indexes settle.

    A namespace the store already holds whole is not written again, so a long run that
    stopped resumes, and a second run on the same store (other settings) reuses the data;
    a partly written one is completed (ingest skips the messages it already holds).
    With ``bulk_index`` (PostgreSQL) the HNSW index is dropped while it is written and built
    once after, as ``bench backend --bulk-index`` does: keeping the graph up to date is
    most of a large write's cost, and the searches meet the same kind of index.
    """
    from mnemon_langgraph.bench.backend import (
        analyze_tables,
        build_hnsw,
        drop_hnsw,
        turn_messages,
    )
    from mnemon_langgraph.store import is_postgres_url

    if store.count(ns) != len(texts):
        bulk = bulk_index and is_postgres_url(target)
        if bulk:
            drop_hnsw(target)
        messages = turn_messages(texts, "G")
        for start in range(0, len(messages), 10_000):
            store.ingest(ns, messages[start : start + 10_000], origin="bench", pack=False)
        if bulk:
            build_hnsw(target)
    if is_postgres_url(target):
        analyze_tables(target)
    store.warm(ns)  # the conversion to the approximate index, or the client's copy, done


class ServerCPU:
    """CPU time of the PostgreSQL server processes serving one database, when the server
    runs on this machine: the sum of ``/proc/<pid>/schedstat``'s first field (nanoseconds
    on a CPU) over the database's backends. On a shared machine a search's wall time
    includes waiting for other processes; its client CPU misses the server's work; client
    plus server CPU is the figure that compares sizes on PostgreSQL. ``None`` when the
    server is elsewhere or ``/proc`` is unreadable."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.pids: list[int] = []

    def refresh(self) -> None:
        """Find the database's backends again (the store's pool may have opened more)."""
        cur = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        self.pids = [int(r[0]) for r in cur.fetchall() if _is_postgres(int(r[0]))]

    def read(self) -> dict[int, int] | None:
        """Nanoseconds of CPU each backend has used so far (``None``: not readable here;
        a backend that has ended is left out)."""
        used = {}
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/schedstat") as f:
                    used[pid] = int(f.read().split()[0])
            except FileNotFoundError:
                continue
            except (OSError, ValueError, IndexError):
                return None
        return used or None

    def close(self) -> None:
        self.conn.close()


def _is_postgres(pid: int) -> bool:
    """Whether this machine's process ``pid`` is a PostgreSQL backend (a remote server's
    backend ids may name unrelated local processes)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == "postgres"
    except OSError:
        return False


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


def _time_pair(
    store: Any,
    namespaces: tuple[Any, Any],
    questions: tuple[list[str], list[str]],
    server: ServerCPU | None = None,
) -> dict[str, float]:
    """Wall and CPU medians of both namespaces, calls alternating between them (and the
    server's CPU per call, with ``server``)."""
    for ns, asked in zip(namespaces, questions, strict=True):
        for q in asked[:_WARM_CALLS]:
            store.search(q, namespace=ns, k=20)
    wall: list[list[float]] = [[], []]
    cpu: list[list[float]] = [[], []]
    served: list[list[float]] = [[], []]
    for i in range(_WARM_CALLS, len(questions[0])):
        order = (0, 1) if i % 2 == 0 else (1, 0)  # neither size always goes first
        for side in order:
            if server is not None:
                server.refresh()  # outside the timed call
            s0 = server.read() if server is not None else None
            t0, c0 = time.perf_counter(), time.process_time()
            store.search(questions[side][i], namespace=namespaces[side], k=20)
            wall[side].append(time.perf_counter() - t0)
            cpu[side].append(time.process_time() - c0)
            s1 = server.read() if server is not None else None
            if s0 is not None and s1 is not None:  # the backends alive throughout
                served[side].append(sum(s1[p] - s0[p] for p in s0 if p in s1) / 1e9)
            else:
                served[side].append(math.nan)
    out: dict[str, float] = {}
    for side, name in enumerate(("small", "large")):
        out[f"{name}_ms"] = _median_ms(wall[side])
        out[f"{name}_cpu_ms"] = _median_ms(cpu[side])
        known = [(c, s) for c, s in zip(cpu[side], served[side], strict=True) if s == s]
        if server is not None and len(known) * 2 >= len(cpu[side]) > 0:
            out[f"{name}_server_cpu_ms"] = _median_ms([s for _, s in known])
            out[f"{name}_total_cpu_ms"] = _median_ms([c + s for c, s in known])
    out["ratio"] = round(out["large_ms"] / out["small_ms"], 2) if out["small_ms"] else 0.0
    small_cpu = out["small_cpu_ms"]
    out["cpu_ratio"] = round(out["large_cpu_ms"] / small_cpu, 2) if small_cpu else 0.0
    if out.get("small_total_cpu_ms") and "large_total_cpu_ms" in out:
        out["total_cpu_ratio"] = round(out["large_total_cpu_ms"] / out["small_total_cpu_ms"], 2)
    return out


def _measure_pair(
    store: Any,
    target: str,
    pair: tuple[int, int],
    corpora: list[str],
    seed: int,
    calls: int,
    server: ServerCPU | None = None,
    bulk_index: bool = False,
) -> dict[str, Any]:
    """Every corpus's small and large namespace of one pair, written then timed."""
    kinds: dict[str, Any] = {}
    for corpus in corpora:
        namespaces, asked = [], []
        for n in pair:
            ns = (*_NAMESPACE, corpus, str(n))
            texts, questions = _workload(corpus, n, seed, calls + _WARM_CALLS)
            _fill(store, target, ns, texts, bulk_index)
            namespaces.append(ns)
            asked.append(questions)
        for kind in asked[0]:
            kinds[kind] = _time_pair(
                store, (namespaces[0], namespaces[1]), (asked[0][kind], asked[1][kind]), server
            )
    goal = GOALS.get(pair)
    worst = max(k["ratio"] for k in kinds.values())
    worst_cpu = max(k["cpu_ratio"] for k in kinds.values())
    out = {
        "small": pair[0],
        "large": pair[1],
        "goal": goal,
        "worst_ratio": worst,
        "met": None if goal is None else worst <= goal,
        "worst_cpu_ratio": worst_cpu,
        "met_cpu": None if goal is None else worst_cpu <= goal,
        "kinds": kinds,
    }
    if all("total_cpu_ratio" in k for k in kinds.values()):
        worst_total = max(k["total_cpu_ratio"] for k in kinds.values())
        out["worst_total_cpu_ratio"] = worst_total
        out["met_total_cpu"] = None if goal is None else worst_total <= goal
    return out


def run_growth(
    pairs: list[tuple[int, int]],
    target: str,
    *,
    calls: int = 150,
    seed: int = 0,
    corpora: tuple[str, ...] = ("zipf", "narrow"),
    client_cache_mb: int | None = None,
    bulk_index: bool = False,
) -> dict[str, Any]:
    """Measure every pair in one store at ``target`` (a folder or a ``postgresql://`` URL).

    Namespaces the store already holds whole are reused (:func:`_fill`). On PostgreSQL,
    ``client_cache_mb`` replaces the default budget of the client's copies (``None``: the
    default), to measure a deployment that sizes it for its largest namespace; with
    ``bulk_index`` namespaces are written without the HNSW index, built once after.
    """
    import os

    from mnemon_langgraph.bench.backend import WordMixEmbeddings
    from mnemon_langgraph.store import MnemonStore, is_postgres_url

    if is_postgres_url(target):
        location, backend = target, "postgres"
    else:
        Path(target).mkdir(parents=True, exist_ok=True)
        location, backend = str(Path(target) / "growth.db"), "embedded"
    options: dict[str, Any] = {}
    if client_cache_mb is not None:
        if backend != "postgres":
            raise ConfigurationError("--client-cache-mb applies to a postgresql:// store only")
        from mnemon_langgraph.store.postgres import PostgresSettings

        options["settings"] = PostgresSettings(client_cache_mb=client_cache_mb)
    rows = []
    server = ServerCPU(location) if backend == "postgres" else None
    try:
        with MnemonStore(location, WordMixEmbeddings(384), **options) as store:
            for pair in pairs:
                rows.append(
                    _measure_pair(
                        store, location, pair, list(corpora), seed, calls, server, bulk_index
                    )
                )
    finally:
        if server is not None:
            server.close()
    return {
        "benchmark": "search growth",
        "backend": backend,
        "client_cache_mb": client_cache_mb,
        "calls": calls,
        "cpu_count": os.cpu_count(),
        "pairs": rows,
    }


def render(result: dict[str, Any]) -> str:
    """One line per pair and kind of question: medians, ratios, and the goal's verdict
    (on a local PostgreSQL server also client + server CPU: its medians and ratio)."""
    lines = [
        f"search growth, {result['backend']} backend ({result['calls']} calls per size and "
        f"kind, {result['cpu_count']} CPUs): store.search median ms, wall (CPU)",
        f"{'pair':>17} {'questions':>9} {'small':>15} {'large':>15} {'ratio':>6} {'CPU ratio':>9}",
    ]
    for p in result["pairs"]:
        pair = f"{p['small']:,}→{p['large']:,}"
        for kind, k in p["kinds"].items():
            line = (
                f"{pair:>17} {kind:>9} {k['small_ms']:>7} ({k['small_cpu_ms']:>5}) "
                f"{k['large_ms']:>7} ({k['large_cpu_ms']:>5}) {k['ratio']:>6} {k['cpu_ratio']:>9}"
            )
            if "total_cpu_ratio" in k:
                line += (
                    f"   client+server CPU {k['small_total_cpu_ms']} → "
                    f"{k['large_total_cpu_ms']} ({k['total_cpu_ratio']})"
                )
            lines.append(line)
        if p["goal"] is not None:
            verdict = "met" if p["met"] else "NOT met"
            line = f"{'':>17} goal: ratio ≤ {p['goal']} — worst {p['worst_ratio']} ({verdict})"
            if "worst_cpu_ratio" in p:
                cpu = "met" if p["met_cpu"] else "NOT met"
                line += f"; CPU worst {p['worst_cpu_ratio']} ({cpu})"
            if "worst_total_cpu_ratio" in p:
                total = "met" if p["met_total_cpu"] else "NOT met"
                line += f"; client+server CPU worst {p['worst_total_cpu_ratio']} ({total})"
            lines.append(line)
    return "\n".join(lines)
