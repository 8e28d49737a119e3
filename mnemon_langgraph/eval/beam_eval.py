"""The BEAM harness: evidence in the View by ability and tier, baselines, per-tier read work.

For each conversation under a BEAM folder (:func:`~.beam.find_beam_conversations`):

1. its raw messages are ingested into its own namespace ``("beam", <tier>, <n>)`` (batches as
   sessions, dated by their time anchors); the probing questions never reach the memory;
2. each probing question is asked through the read graph one day after the conversation's
   last dated message;
3. per question: all / any / recall of the ``source_chat_ids`` message ids (for a
   knowledge-update question, the updated statement), the View's size and the read path's
   counts (judgments, waves, searches; read time, the conversation's first question apart
   from the warm ones), the turn baselines at the View's size, P(needed) of every pooled
   record for the judge's AUC.

Abstention questions (and any without evidence) are reported in their own row and left out
of the overall figures. The summary has a ``by_tier`` section: per tier, the evidence rates and
the per-question work, so the cost of a longer conversation reads off directly.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.baselines import BASELINE_KS, TurnIndex, baseline_names
from mnemon_langgraph.eval.beam import (
    ABILITIES,
    BeamConversation,
    BeamQuestion,
    concatenate_conversations,
    find_beam_conversations,
    load_beam_conversation,
)
from mnemon_langgraph.eval.beam_history import (
    HistoryTier,
    build_lines,
    build_measures,
    build_summary,
    history_conversation,
    history_id,
    history_tiers,
    time_turn_write,
)
from mnemon_langgraph.eval.beam_tiers import tier_lines, tier_ratios, tier_summary
from mnemon_langgraph.eval.evidence import evidence_hits
from mnemon_langgraph.eval.filler import DEFAULT_TOKENS_PER_DAY, FillerPool, load_filler_pool
from mnemon_langgraph.eval.locomo import BASELINE_FIELDS, judge_scores, view_counts
from mnemon_langgraph.eval.metrics import aggregate, roc_auc
from mnemon_langgraph.eval.misses import gold_fates
from mnemon_langgraph.eval.report import (
    TokenCounter,
    first_result_row,
    format_value,
    header_lines,
    markdown_table,
    plot_lines,
    read_results,
    run_metadata,
)
from mnemon_langgraph.eval.runlog import RunLog, read_jsonl

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from mnemon_langgraph.consolidation.settings import ConsolidationSettings
    from mnemon_langgraph.items import ItemStore

__all__ = [
    "BeamEvalConfig",
    "consolidator",
    "is_beam_run",
    "render_beam_markdown",
    "run_beam_eval",
    "summarize_beam",
    "summarize_beam_results",
]

VIEW_FIELDS = (  # BEAM's own: judgments per question, for the per-tier work figures
    "all_hit",
    "any_hit",
    "recall",
    "view_chars",
    "view_tokens",
    "searches",
    "s1_calls",
    "judgments",
    "waves",
    "read_seconds",
)

SCORED_ABILITIES = tuple(a for a in ABILITIES if a != "abstention")


@dataclass
class BeamEvalConfig:
    """Settings of one BEAM run (recorded in ``summary.json``).

    Attributes:
        budget_chars: The View's character budget (recorded; the graph is the caller's).
        judge: System 1 spec (recorded).
        planner: System 2 spec (recorded).
        limit_questions: At most this many questions per conversation (file order).
        per_ability: At most this many questions per ability of each source conversation
            (file order; applied before ``limit_questions``).
        conversations: Only these conversation ids (``<tier>/<n>``).
        concat: Longer conversations built from the ones under the folder:
            ``(label, [<tier>/<n>, ...])`` each (:func:`~.beam.concatenate_conversations`;
            ``label`` is its tier). With ``concat`` and no ``conversations``, only the
            concatenations are run.
        baseline_ks: Turn counts of the baselines.
        keep_namespaces: Keep each conversation's namespace after its questions.
        plots: Draw the evidence plots (matplotlib, the ``eval`` extra).
        filler: Files or folders of other conversations (LongMemEval, BEAM, LoCoMo) from
            which the long histories are built (:mod:`~.filler`).
        history_tokens: History sizes (WordPiece tokens): each selected conversation is
            asked inside a history of each size (:mod:`~.beam_history`); only these tiers
            run. Needs ``filler``.
        filler_seed: The seed of the filler's choice and dates.
        tokens_per_day: The simulated life's pace, which dates the filler.
        resume: Keep the rows an earlier run of the same settings wrote to the output
            folder and ask only the missing questions.
        consolidation_model: The chat model that consolidated each namespace before its
            questions (recorded; the consolidation itself is the caller's ``consolidate``
            of :func:`run_beam_eval`); ``None``: no consolidated index.
    """

    budget_chars: int | None = None
    judge: str = "local"
    planner: str = "rules"
    limit_questions: int | None = None
    per_ability: int | None = None
    conversations: Sequence[str] | None = None
    concat: Sequence[tuple[str, Sequence[str]]] = ()
    baseline_ks: Sequence[int] = BASELINE_KS
    keep_namespaces: bool = False
    plots: bool = True
    filler: Sequence[str] = ()
    history_tokens: Sequence[int] = ()
    filler_seed: int = 0
    tokens_per_day: int = DEFAULT_TOKENS_PER_DAY
    resume: bool = False
    consolidation_model: str | None = None


@dataclass
class _Conversation:
    conv: BeamConversation
    namespace: tuple[str, ...]
    index: TurnIndex
    turn_tokens: list[int]
    message_ids_of: dict[str, Sequence[str]]
    ingest_seconds: float
    ingest_cpu_seconds: float
    warm_seconds: float = 0.0
    messages_written: int = 0


def _prepare(
    conv: BeamConversation,
    store: Any,
    embedder: Embeddings,
    tokens: TokenCounter,
    *,
    embed_headers: bool = True,
) -> _Conversation:
    from mnemon_langgraph.records._chunking import chunk_messages

    tier, _, n = conv.id.partition("/")
    ns = ("beam", tier, n)
    if store.holds_namespace(ns):  # left by a stopped run: built again from nothing
        store.erase_namespace(ns, actor="eval")
    t0, c0 = time.perf_counter(), time.process_time()
    written = store.ingest(ns, conv.messages, origin=f"beam:{conv.id}")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    store.warm(ns)  # the questions meet the indexes the store settles on (no load pending)
    warm_seconds = time.perf_counter() - t0
    turns = chunk_messages(
        conv.messages, namespace=("beam-turns", tier, n), origin=f"beam:{conv.id}", pack=False
    )
    index = TurnIndex.build(turns, embedder, embed_headers=embed_headers)
    return _Conversation(
        conv=conv,
        namespace=ns,
        index=index,
        turn_tokens=[tokens.count(t) for t in index.rendered],
        message_ids_of={r.id: r.message_ids for r in store.records(ns)},
        ingest_seconds=seconds,
        ingest_cpu_seconds=cpu,
        warm_seconds=warm_seconds,
        messages_written=written.messages_written,
    )


def _hits(gold: Sequence[str], shown: set[str]) -> dict[str, Any]:
    if not gold:
        return {"all_hit": None, "any_hit": None, "recall": None}
    return dict(evidence_hits(gold, shown))


def _ask_row(
    graph: Any, prep: _Conversation, q: BeamQuestion, first: bool, tokens: TokenCounter
) -> tuple[dict[str, Any], Any]:
    from mnemon_langgraph.read.state import ReadContext

    stamps = [m.timestamp for m in prep.conv.messages if m.timestamp is not None]
    now = max(stamps) + timedelta(days=1) if stamps else None
    t0, c0 = time.perf_counter(), time.process_time()
    state = graph.invoke(
        {"messages": [HumanMessage(q.question)]},
        context=ReadContext(namespace=prep.namespace, now=now),
    )
    # the process's CPU time of the whole read (judge and planner included): unlike the
    # wall-clock read time, it does not grow when other work shares the CPU
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0
    view = state["view"]
    shown = list(view.message_ids)
    scored = q.ability != "abstention" and bool(q.evidence)
    row: dict[str, Any] = {
        "conversation": prep.conv.id,
        "tier": prep.conv.tier,
        "question_index": q.index,
        "origin": q.origin or prep.conv.id,
        "category": q.ability if scored else "abstention",
        "ability": q.ability,
        "scored": scored,
        "first_read": first,
        "question": q.question,
        "asked_at": now.isoformat() if now else None,
        "answer": q.answer,
        "gold_evidence": list(q.evidence),
        "view_message_ids": shown,
        **_hits(q.evidence, set(shown)),
        "view_chars": len(view.text),
        "view_tokens": tokens.count(view.text),
        "view_records": len(view.records),
        "view_index_items": len(view.items),
        **view_counts(view),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "node_seconds": _node_seconds(view),
        **_work_parts(view),
        "c_full_tokens": sum(prep.turn_tokens),
        "messages": len(prep.conv.messages),
        "records": len(prep.message_ids_of),
        "ingest_seconds": prep.ingest_seconds,
        "ingest_cpu_seconds": prep.ingest_cpu_seconds,
    }
    row["pool_scores"] = [
        [r, p, g] for r, p, g in judge_scores(view, q.evidence, prep.message_ids_of)
    ]
    row["gold_fates"] = gold_fates(view, q.evidence, prep.message_ids_of)
    return row, view


def _node_seconds(view: Any) -> dict[str, float]:
    """The read path's time by graph node, model calls excluded (from the View's trace)."""
    out: dict[str, float] = {}
    for t in ((getattr(view, "trace", None) or {}).get("timings") or {}).get("by_node") or []:
        node = str(t.get("node"))
        out[node] = (
            out.get(node, 0.0) + float(t.get("seconds") or 0) - float(t.get("model_seconds") or 0)
        )
    return out


def _work_parts(view: Any) -> dict[str, Any]:
    """What the judgments and the pool are made of: judgments by proposition, the planner's
    needs, the pool's growth by round and the records the searches returned."""
    trace = getattr(view, "trace", None) or {}
    by_kind: dict[str, int] = {}
    for j in trace.get("judgments") or []:
        by_kind[str(j.get("proposition"))] = by_kind.get(str(j.get("proposition")), 0) + 1
    pool_rounds: dict[str, int] = {}
    for rec in trace.get("pool") or []:
        key = str(rec.get("round", 1))
        pool_rounds[key] = pool_rounds.get(key, 0) + 1
    calls = trace.get("search_calls") or []
    return {
        "judgments_by": by_kind,
        "needs": len(trace.get("needs") or []),
        "pool_by_round": pool_rounds,
        "search_returned": sum(int(c.get("returned") or 0) for c in calls),
    }


def _baselines(
    prep: _Conversation, q: BeamQuestion, chars: int, ks: Sequence[int]
) -> dict[str, Any]:
    index = prep.index
    contexts = index.contexts(q.question, ks=ks, view_chars=chars)
    return {
        name: {
            **_hits(q.evidence, index.message_ids(idx)),
            "chars": index.chars(idx),
            "tokens": sum(prep.turn_tokens[i] for i in idx),
        }
        for name, idx in contexts.items()
    }


def _conversations(root: Path, cfg: BeamEvalConfig) -> list[BeamConversation]:
    """Every selected conversation and concatenation, loaded and checked before any work."""
    loaded = {
        c.id: c
        for c in (
            load_beam_conversation(folder, tier) for tier, folder in find_beam_conversations(root)
        )
    }
    wanted = list(cfg.conversations or ([] if cfg.concat else loaded))
    wanted_parts = [p for _, parts in cfg.concat for p in parts]
    missing = sorted(set(wanted + wanted_parts) - set(loaded))
    if missing:
        raise InputError(f"no BEAM conversation {missing} under {root}")
    convs = [loaded[c] for c in dict.fromkeys(wanted)]
    convs += [
        concatenate_conversations([loaded[p] for p in parts], label) for label, parts in cfg.concat
    ]
    for conv in convs:
        ids = {m.id for m in conv.messages}
        for q in conv.questions:
            unknown = [e for e in q.evidence if e not in ids]
            if unknown:
                raise InputError(
                    f"{conv.id}: {q.ability}[{q.index}] names messages {unknown[:5]} "
                    "the conversation does not have"
                )
    return convs


def _selected(questions: Sequence[BeamQuestion], cfg: BeamEvalConfig) -> list[BeamQuestion]:
    """``per_ability`` questions per ability of each source conversation, then the first
    ``limit_questions``."""
    kept: list[BeamQuestion] = []
    seen: dict[tuple[str, str], int] = {}
    for q in questions:
        key = (q.origin, q.ability)
        seen[key] = seen.get(key, 0) + 1
        if cfg.per_ability is None or seen[key] <= cfg.per_ability:
            kept.append(q)
    return kept[: cfg.limit_questions]


def run_beam_eval(
    root: str | Path,
    out_dir: str | Path,
    *,
    graph: Any,
    store: Any,
    embeddings: Embeddings | None = None,
    config: BeamEvalConfig | None = None,
    command: Sequence[str] | str | None = None,
    progress: bool = False,
    cold_read: Callable[[Sequence[str], str], Mapping[str, Any]] | None = None,
    consolidate: Callable[[Sequence[str]], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run the evaluation; write ``results.jsonl``, ``builds.jsonl``, ``summary.json`` and
    ``summary.md`` (rows and builds appended as they finish, so a stopped run can resume).

    ``cold_read(namespace, question)``, when given, is called once per built namespace after
    its questions (e.g. a read in a fresh process: the cold open); what it returns goes into
    that build's record.

    ``consolidate(namespace)``, when given, runs once per built namespace before its
    questions (the batch job of the paper's consolidation: :func:`consolidator`, with a
    ``graph`` that reads the same item store); what it returns goes into that build's record.

    Raises:
        InputError: No conversation, a bad file, evidence naming no message, a filler
            setting without its counterpart, or a resume with other settings.
    """
    from tqdm import tqdm

    cfg = config or BeamEvalConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    convs = _conversations(Path(root), cfg)
    tiers = _history_tiers(cfg)
    run = _Run(
        cfg=cfg,
        graph=graph,
        store=store,
        embedder=embeddings if embeddings is not None else store.embeddings,
        tokens=TokenCounter(),
        log=RunLog(out, _run_settings(cfg, root), resume=cfg.resume),
        cold_read=cold_read,
        consolidate=consolidate,
    )
    started = time.perf_counter()
    # smallest history first for every conversation, then the next size: a stopped run has
    # whole smaller tiers, and the process's peak memory at a tier's builds is that tier's
    units: list[tuple[BeamConversation, HistoryTier | None]] = (
        [(c, t) for t in tiers for c in convs] if tiers else [(c, None) for c in convs]
    )
    try:
        if tiers:
            run.pool = load_filler_pool(cfg.filler, run.tokens)
        with tqdm(total=len(units), desc="histories", unit="ns", disable=not progress) as bar:
            for conv, tier in units:
                _run_unit(run, conv, tier)
                bar.update(1)
    finally:
        run.log.close()
    summary = summarize_beam(run.log.rows, names=baseline_names(cfg.baseline_ks))
    summary["builds"] = build_summary(run.log.builds)
    summary["index"] = index_summary(run.log.rows, run.log.builds)
    summary["config"] = {
        k: (list(v) if isinstance(v, tuple | list) else v) for k, v in asdict(cfg).items()
    }
    summary["token_method"] = run.tokens.method
    if run.pool is not None:
        summary["filler_pool"] = {
            "tokens_by_source": run.pool.tokens_by_source(),
            "repeated_messages_dropped": run.pool.dropped_repeats,
            "token_method": run.pool.token_method,
        }
    summary["metadata"] = {
        **run_metadata(command),
        "elapsed_seconds": round(time.perf_counter() - started, 1),
        "resumed_rows": run.log.resumed_rows,
    }
    _write(summary, out, plots=cfg.plots)
    return summary


def consolidator(
    model: BaseChatModel | str, items: ItemStore, *, settings: ConsolidationSettings | None = None
) -> Callable[[Sequence[str]], dict[str, Any]]:
    """A ``consolidate`` for :func:`run_beam_eval`: the consolidation graph over ``items``
    (the store's own, ``store.item_store()``), run on a namespace until it has caught up.

    What it returns goes into the build's record: the job's time and CPU, its batches, the
    items it wrote, its model calls and tokens, failed batches and why it stopped. A failed
    batch does not stop the evaluation (the questions are then asked of a partial index,
    and the record says so).
    """
    from mnemon_langgraph.consolidation import create_consolidation_graph

    graph = create_consolidation_graph(model=model, store=items, settings=settings)

    def consolidate(namespace: Sequence[str]) -> dict[str, Any]:
        t0, c0 = time.perf_counter(), time.process_time()
        report = graph.invoke({"namespace": tuple(namespace)})["report"]
        return {
            "consolidation_seconds": time.perf_counter() - t0,
            "consolidation_cpu_seconds": time.process_time() - c0,
            "consolidation_batches": len(report.batches),
            "consolidation_items": report.items_added,
            "consolidation_model_calls": report.model_calls,
            "consolidation_input_tokens": sum(b.input_tokens for b in report.batches),
            "consolidation_output_tokens": sum(b.output_tokens for b in report.batches),
            "consolidation_failed_batches": len(report.failures),
            "consolidation_stop": report.stop_reason,
        }

    return consolidate


@dataclass
class _Run:
    cfg: BeamEvalConfig
    graph: Any
    store: Any
    embedder: Embeddings
    tokens: TokenCounter
    log: RunLog
    cold_read: Callable[[Sequence[str], str], Mapping[str, Any]] | None = None
    consolidate: Callable[[Sequence[str]], Mapping[str, Any]] | None = None
    pool: FillerPool | None = None


def _history_tiers(cfg: BeamEvalConfig) -> list[HistoryTier]:
    if bool(cfg.filler) != bool(cfg.history_tokens):
        raise InputError("a filler history needs both the filler sources and the history sizes")
    if cfg.tokens_per_day <= 0:
        raise InputError("tokens per day must be positive")
    return history_tiers(cfg.history_tokens)


def _run_settings(cfg: BeamEvalConfig, root: str | Path) -> dict[str, Any]:
    """What a resumed run must share with the run it continues."""
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("resume", "plots")}
    if settings.get("consolidation_model") is None:  # runs written before the field resume
        settings.pop("consolidation_model", None)
    return {"root": str(Path(root).resolve()), **settings}


def _run_unit(run: _Run, conv: BeamConversation, tier: HistoryTier | None) -> None:
    """Build one namespace (a conversation, alone or in its history), ask its questions
    not asked yet, measure the build, erase it."""
    cfg = run.cfg
    run_id = history_id(conv, tier) if tier else conv.id
    selected = _selected(conv.questions, cfg)
    todo = [
        q for q in selected if not run.log.done(run_id, q.ability, q.index, q.origin or conv.id)
    ]
    if not todo:
        return
    info: dict[str, Any] = {}
    if tier is not None and run.pool is not None:
        conv, info = history_conversation(
            conv,
            tier,
            run.pool,
            seed=cfg.filler_seed,
            tokens=run.tokens,
            tokens_per_day=cfg.tokens_per_day,
        )
    prep = _prepare(conv, run.store, run.embedder, run.tokens, embed_headers=tier is None)
    build = build_measures(conv, run.store, prep.ingest_seconds, prep.ingest_cpu_seconds)
    build["messages_written"] = prep.messages_written
    build["warm_seconds"] = prep.warm_seconds
    build.update(info)
    try:
        if run.consolidate is not None:
            build.update(run.consolidate(prep.namespace))
        for i, q in enumerate(todo):
            row, view = _ask_row(run.graph, prep, q, i == 0, run.tokens)
            row.update(info)
            row["baselines"] = _baselines(prep, q, len(view.text), cfg.baseline_ks)
            run.log.add_row(row)
        if run.cold_read is not None:
            build.update(run.cold_read(prep.namespace, todo[0].question))
        stamps = [m.timestamp for m in conv.messages if m.timestamp is not None]
        build.update(time_turn_write(run.store, prep.namespace, max(stamps, default=None)))
    finally:
        if not cfg.keep_namespaces:
            run.store.erase_namespace(prep.namespace, actor="eval")
    run.log.add_build(build)


def _write(summary: dict[str, Any], out: Path, *, plots: bool) -> None:
    """Draw the plots if asked and possible (a bonus: a failure is recorded), then the summary."""
    from mnemon_langgraph.eval.plots import plot_evidence, plotting_available

    if plots and plotting_available():
        try:
            summary["plots"] = [str(p) for p in plot_evidence(summary, out)]
        except Exception as exc:  # plots must never cost the run its summary
            summary["plots_error"] = f"{type(exc).__name__}: {exc}"
    elif plots:
        summary["plots_error"] = (
            "matplotlib is not installed (pip install 'mnemon-langgraph[eval]')"
        )
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    (out / "summary.md").write_text(render_beam_markdown(summary), encoding="utf-8")


def summarize_beam(
    rows: Sequence[Mapping[str, Any]], *, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Aggregate BEAM rows: View by ability, baselines, judge AUC, per-tier work."""
    with_gold = [r for r in rows if r.get("gold_evidence") and r.get("scored")]
    if names is None:
        names = sorted({n for r in rows for n in (r.get("baselines") or {})})
    pooled = [(p, bool(g)) for r in with_gold for _, p, g in r.get("pool_scores") or []]
    by_tier = tier_summary(rows, SCORED_ABILITIES)
    return {
        "view": aggregate(with_gold, VIEW_FIELDS, scored=SCORED_ABILITIES),
        "view_all_questions": aggregate(rows, VIEW_FIELDS[3:], scored=ABILITIES),
        "baselines": {
            name: aggregate(
                [
                    {"category": r["category"], **r["baselines"][name]}
                    for r in with_gold
                    if name in (r.get("baselines") or {})
                ],
                BASELINE_FIELDS,
                scored=SCORED_ABILITIES,
            )
            for name in names
        },
        "judge_auc": {
            "auc": roc_auc([p for p, _ in pooled], [g for _, g in pooled]),
            "records": len(pooled),
            "gold": sum(1 for _, g in pooled if g),
            "questions": len(with_gold),
        },
        "by_tier": by_tier,
        "tier_ratios": tier_ratios(by_tier, rows),
        "counts": {
            "conversations": len({r.get("conversation") for r in rows}),
            "questions": len(rows),
            "scored_questions": len(with_gold),
            "unscored_questions": len(rows) - len(with_gold),
            "questions_with_model_errors": sum(1 for r in rows if r.get("model_errors")),
        },
    }


def index_summary(
    rows: Sequence[Mapping[str, Any]], builds: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """What the consolidated index did in a run with ``consolidate`` (``None`` without one):
    the job's batches, items, model calls and failed batches summed over the builds, its
    median time per build, and how many Views showed index items."""
    done = [b for b in builds if b.get("consolidation_batches") is not None]
    if not done:
        return None
    shown = [int(r.get("view_index_items") or 0) for r in rows]
    return {
        "builds": len(done),
        "batches": sum(int(b["consolidation_batches"]) for b in done),
        "items": sum(int(b.get("consolidation_items") or 0) for b in done),
        "model_calls": sum(int(b.get("consolidation_model_calls") or 0) for b in done),
        "failed_batches": sum(int(b.get("consolidation_failed_batches") or 0) for b in done),
        "seconds_median": _median_of([b.get("consolidation_seconds") for b in done]),
        "questions": len(rows),
        "views_with_items": sum(1 for n in shown if n > 0),
        "items_shown_median": _median_of(shown),
    }


def _median_of(values: Sequence[Any]) -> float | None:
    nums = [float(v) for v in values if v is not None]
    return statistics.median(nums) if nums else None


def _index_lines(summary: Mapping[str, Any]) -> list[str]:
    idx = summary.get("index")
    if not idx:
        return []
    fmt = format_value
    return [
        "",
        "## The consolidated index",
        "",
        f"Model: {(summary.get('config') or {}).get('consolidation_model') or '(given in code)'}; "
        f"{idx['builds']} namespaces consolidated in {idx['batches']} batches "
        f"({idx['failed_batches']} failed, {idx['model_calls']} model calls), "
        f"{idx['items']} items written, median {fmt(idx['seconds_median'])} s per namespace; "
        f"{idx['views_with_items']} of {idx['questions']} Views showed index items "
        f"(median {fmt(idx['items_shown_median'])} per View).",
    ]


def render_beam_markdown(summary: Mapping[str, Any]) -> str:
    """Render a BEAM ``summary.json`` as Markdown."""
    out = header_lines(summary)
    out[0] = "# BEAM evaluation"
    view = summary.get("view") or {}
    o = view.get("overall", {})
    fmt = format_value
    out += ["## View (source_chat_ids evidence; abstention apart)", ""]
    out += markdown_table(
        ["questions", "all_hit", "any_hit", "recall", "chars", "judgments", "waves", "read s"],
        [
            [
                fmt(o.get("n")),
                fmt(o.get("all_hit"), True),
                fmt(o.get("any_hit"), True),
                fmt(o.get("recall"), True),
                fmt(o.get("view_chars")),
                fmt(o.get("judgments")),
                fmt(o.get("waves")),
                fmt(o.get("read_seconds")),
            ]
        ],
    )
    out += ["", "### By ability", ""]
    out += markdown_table(
        ["ability", "questions", "all_hit", "any_hit"],
        [
            [c, fmt(s.get("n")), fmt(s.get("all_hit"), True), fmt(s.get("any_hit"), True)]
            for c, s in view.get("by_category", {}).items()
        ],
    )
    out += ["", "## Baselines (turn-level records, same questions)", ""]
    out += markdown_table(
        ["baseline", "all_hit", "any_hit", "chars"],
        [
            [
                n,
                fmt(s["overall"].get("all_hit"), True),
                fmt(s["overall"].get("any_hit"), True),
                fmt(s["overall"].get("chars")),
            ]
            for n, s in (summary.get("baselines") or {}).items()
        ],
    )
    out += tier_lines(summary)
    out += build_lines(summary)
    out += _index_lines(summary)
    judge = summary.get("judge_auc") or {}
    out += [
        "",
        f"Judge ROC AUC: {fmt(judge.get('auc'))} ({judge.get('records', 0)} pooled "
        f"records, {judge.get('gold', 0)} gold).",
        "",
    ]
    out += plot_lines(summary)
    return "\n".join(out)


def is_beam_run(out_dir: str | Path) -> bool:
    """Whether ``out_dir/results.jsonl`` holds BEAM rows (its first row says)."""
    row = first_result_row(out_dir)
    return "ability" in row and "tier" in row


def summarize_beam_results(
    out_dir: str | Path, *, plots: bool = False, command: Sequence[str] | str | None = None
) -> dict[str, Any]:
    """Rebuild ``summary.json``/``summary.md`` of a BEAM run from its ``results.jsonl``.

    Raises:
        InputError: If ``results.jsonl`` is missing or holds no rows.
    """
    path, rows = read_results(out_dir)
    out = path.parent
    summary = summarize_beam(rows)
    builds = read_jsonl(out / "builds.jsonl")
    summary["builds"] = build_summary(builds)
    summary["index"] = index_summary(rows, builds)
    summary["metadata"] = {**run_metadata(command), "source": f"rebuilt from {path}"}
    _write(summary, out, plots=plots)
    return summary
