"""The LongMemEval harness: evidence in the View per question, baselines, budget curve, answers.

For each question of a LongMemEval-format file (:mod:`mnemon_langgraph.loaders.longmemeval`):

1. its own history is ingested into its own namespace ``("longmemeval", <question_id>)``,
   every turn dated by its session's date (empty turns skipped and counted); nothing of the
   labels (``has_answer``, ``answer_session_ids``, the answer) reaches the memory;
2. the question is asked through the read graph at its ``question_date``
   (``ReadContext(now=...)``), and again through one graph per budget of the budget curve;
3. per question: turn-level all / any / recall of the ``has_answer`` turns, session-level
   all / any / recall of ``answer_session_ids``, View size and the read path's counts; the
   turn baselines of :mod:`.baselines` (turns + cosine / BM25 / RRF at k and at the View's
   size) with the same metrics; P(needed) of every pooled record for the judge's ROC AUC;
4. with an answer model: the answer from the View and the grade, both with LongMemEval's
   own prompts (:mod:`.longmemeval_answer`).

Abstention questions (``…_abs``) have category ``abstention``: reported in their own row and
left out of the overall figures (as LongMemEval's retrieval metrics skip them). The rows,
``summary.json`` and ``summary.md`` have the LoCoMo harness's shape (``category`` is the
question type), so ``mnemon eval misses`` reads them too. Questions are processed one at a
time (ingest, then read) and each namespace is erased after its question unless
``keep_namespaces``, so the journal stays one history large on the whole file.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.as_of import (
    after_as_of,
    as_of_summary,
    longmemeval_as_of,
    message_dates,
)
from mnemon_langgraph.eval.baselines import BASELINE_KS, TurnIndex, baseline_names
from mnemon_langgraph.eval.evidence import evidence_hits
from mnemon_langgraph.eval.filler import (
    DEFAULT_TOKENS_PER_DAY,
    FillerPool,
    build_history,
    load_filler_pool,
)
from mnemon_langgraph.eval.locomo import VIEW_FIELDS, judge_scores, view_counts
from mnemon_langgraph.eval.longmemeval_answer import answer_longmemeval, grade_longmemeval
from mnemon_langgraph.eval.metrics import aggregate, mean, roc_auc
from mnemon_langgraph.eval.misses import gold_fates
from mnemon_langgraph.eval.report import TokenCounter, first_result_row, read_results, run_metadata
from mnemon_langgraph.eval.runlog import RunLog
from mnemon_langgraph.loaders.longmemeval import (
    QUESTION_TYPES,
    LongMemEvalQuestion,
    first_telling,
    load_longmemeval,
    session_of,
)

log = logging.getLogger(__name__)

__all__ = [
    "BUDGET_CURVE",
    "LongMemEvalConfig",
    "is_longmemeval_run",
    "run_longmemeval_eval",
    "summarize_longmemeval",
    "summarize_longmemeval_results",
]

BUDGET_CURVE: tuple[int, ...] = (1_000, 2_000, 3_000, 6_000, 12_000)
"""View budgets (characters) of the budget curve."""

ABSTENTION = "abstention"
"""The category of an abstention question (its type is kept in ``question_type``)."""

SESSION_FIELDS = ("session_all_hit", "session_any_hit", "session_recall")
BASELINE_FIELDS = ("all_hit", "any_hit", "recall", "chars", "tokens", *SESSION_FIELDS)
CURVE_FIELDS = ("all_hit", "any_hit", "recall", "chars", *SESSION_FIELDS, "read_seconds")


@dataclass
class LongMemEvalConfig:
    """Settings of one LongMemEval run (recorded in ``summary.json``).

    Attributes:
        budget_chars: The main View's character budget (``None``: the read settings').
        judge: ``local``, ``llm:PROVIDER:MODEL`` or ``jev`` (recorded).
        planner: ``rules`` or ``PROVIDER:MODEL`` (recorded).
        limit_questions: At most this many questions (after the type filter, file order).
        question_types: Only these question types.
        baseline_ks: Turn counts of the baselines.
        budget_curve: Budgets of the curve (the graphs are built by the caller).
        answer_model: ``PROVIDER:MODEL`` of the answer step, if any (recorded).
        grader_model: ``PROVIDER:MODEL`` of the grader (recorded).
        keep_namespaces: Keep every question's namespace in the journal after its question.
        embedding_cache: The embedding cache file, if one is used (recorded).
        plots: Whether to draw the plots.
        filler: Files or folders of other conversations; with ``history_tokens``, each
            question's history is put inside filler up to that many WordPiece tokens
            (:mod:`~mnemon_langgraph.eval.filler`; its own sessions left out by content).
        history_tokens: The history size with filler (``None``: the question's own).
        filler_seed: The seed of the filler's choice and dates.
        tokens_per_day: The simulated life's pace, which dates the filler.
        resume: Keep the rows an earlier run of the same settings wrote to the output
            folder and ask only the missing questions (:class:`~.runlog.RunLog`).
        as_of_evidence: Ask only the questions whose evidence spans two dates, each as of
            the midpoint between the old value's session and the next evidence session
            (:mod:`.as_of`); no baselines or budget curve (they do not read as of a date).
    """

    budget_chars: int | None = None
    judge: str = "local"
    planner: str = "rules"
    limit_questions: int | None = None
    question_types: Sequence[str] | None = None
    baseline_ks: Sequence[int] = BASELINE_KS
    budget_curve: Sequence[int] = BUDGET_CURVE
    answer_model: str | None = None
    grader_model: str | None = None
    keep_namespaces: bool = False
    embedding_cache: str | None = None
    plots: bool = True
    filler: Sequence[str] = ()
    history_tokens: int | None = None
    filler_seed: int = 0
    tokens_per_day: int = DEFAULT_TOKENS_PER_DAY
    resume: bool = False
    as_of_evidence: bool = False


def _plots_wanted(requested: bool) -> bool:
    """Plots are a bonus: without matplotlib, warn before the long work and skip them."""
    from mnemon_langgraph.eval.plots import plotting_available

    if requested and not plotting_available():
        log.warning(
            "plots skipped: matplotlib is not installed (pip install 'mnemon-langgraph[eval]')"
        )
        return False
    return requested


def _bar(total: int, enabled: bool) -> Any:
    """A tqdm bar over questions on stderr (its rate and ETA cover a question's whole work)."""
    from tqdm import tqdm

    return tqdm(total=total, desc="questions", unit="q", dynamic_ncols=True, disable=not enabled)


def _hits(gold: Sequence[str], shown: set[str], prefix: str = "") -> dict[str, Any]:
    """``all_hit`` / ``any_hit`` / ``recall`` (``None`` when there is no gold)."""
    keys = (f"{prefix}all_hit", f"{prefix}any_hit", f"{prefix}recall")
    if not gold:
        return dict.fromkeys(keys)
    got = evidence_hits(gold, shown)
    return dict(zip(keys, (got["all_hit"], got["any_hit"], got["recall"]), strict=True))


def _evidence(q: LongMemEvalQuestion, message_ids: set[str]) -> dict[str, Any]:
    """Turn- and session-level evidence metrics of a context holding ``message_ids``."""
    sessions = {session_of(m) for m in message_ids}
    turns = {first_telling(m) for m in message_ids}  # a repeated session's turn is its turn
    return {
        **_hits(q.gold_turns, turns),
        **_hits(q.answer_sessions, sessions, "session_"),
    }


@dataclass
class _Prepared:
    """One question after ingest: namespace, baseline index, token counts, ingest facts."""

    question: LongMemEvalQuestion
    namespace: tuple[str, str]
    index: TurnIndex | None  # None: no baselines (an as-of run)
    turn_tokens: list[int]
    message_ids_of: dict[str, Sequence[str]]
    ingest_seconds: float
    as_of: datetime | None = None

    @property
    def c_full(self) -> int:
        """Tokens of the whole history."""
        return sum(self.turn_tokens)


def _prepare(
    q: LongMemEvalQuestion,
    store: Any,
    embedder: Embeddings,
    tokens: TokenCounter,
    *,
    embed_headers: bool = True,
    baselines: bool = True,
) -> _Prepared:
    """Ingest one question's history and build its turn-level baseline index (not without
    ``baselines``: the turns are then only counted)."""
    from mnemon_langgraph.records._chunking import chunk_messages

    ns = ("longmemeval", q.question_id)
    source = f"longmemeval:{q.question_id}"
    if store.holds_namespace(ns):  # left by a stopped run: built again from nothing
        store.erase_namespace(ns, actor="eval")
    t0 = time.perf_counter()
    store.ingest(ns, q.messages, origin=source)
    seconds = time.perf_counter() - t0
    store.warm(ns)  # the questions meet the indexes the store settles on (no load pending)
    turns = chunk_messages(
        q.messages, namespace=("longmemeval-turns", q.question_id), origin=source, pack=False
    )
    index = TurnIndex.build(turns, embedder, embed_headers=embed_headers) if baselines else None
    rendered = index.rendered if index is not None else [t.render() for t in turns]
    return _Prepared(
        question=q,
        namespace=ns,
        index=index,
        turn_tokens=[tokens.count(t) for t in rendered],
        message_ids_of={r.id: r.message_ids for r in store.records(ns)},
        ingest_seconds=seconds,
    )


def _ask(graph: Any, prep: _Prepared) -> tuple[Any, float]:
    """The View of the question through ``graph`` at the question's date, and wall time."""
    from mnemon_langgraph.read.state import ReadContext

    q = prep.question
    t0 = time.perf_counter()
    # as of a date, the question is asked then (``now`` follows ``as_of``)
    now = q.question_date if prep.as_of is None else None
    state = graph.invoke(
        {"messages": [HumanMessage(q.question)]},
        context=ReadContext(namespace=prep.namespace, now=now, as_of=prep.as_of),
    )
    return state["view"], time.perf_counter() - t0


def _baselines(prep: _Prepared, view_chars: int, ks: Sequence[int]) -> dict[str, Any]:
    index = prep.index
    assert index is not None  # built unless the run asks as of a date
    contexts = index.contexts(prep.question.question, ks=ks, view_chars=view_chars)
    return {
        name: {
            **_evidence(prep.question, index.message_ids(idx)),
            "chars": index.chars(idx),
            "tokens": sum(prep.turn_tokens[i] for i in idx),
            "records": len(idx),
        }
        for name, idx in contexts.items()
    }


def _curve(
    prep: _Prepared, graphs: Mapping[int, Any], main: tuple[int, Any]
) -> dict[str, dict[str, Any]]:
    """The budget curve: the question's View at each budget (the main View at its own)."""
    out: dict[str, dict[str, Any]] = {}
    for budget, graph in sorted(graphs.items()):
        view = main[1] if budget == main[0] else _ask(graph, prep)[0]
        out[str(budget)] = {
            **_evidence(prep.question, set(view.message_ids)),
            "chars": len(view.text),
            "read_seconds": view_counts(view)["read_seconds"],
            "reused_main_view": budget == main[0],
        }
    return out


def _row(prep: _Prepared, view: Any, wall: float, tokens: TokenCounter) -> dict[str, Any]:
    """One question's row: identity, gold, the View's evidence metrics, counts and sizes."""
    q = prep.question
    shown = list(view.message_ids)
    row: dict[str, Any] = {
        "conversation": q.question_id,
        "question_id": q.question_id,
        "question_index": 0,
        "category": ABSTENTION if q.is_abstention else q.question_type,
        "question_type": q.question_type,
        "abstention": q.is_abstention,
        "scored": not q.is_abstention,
        "question": q.question,
        "asked_at": q.question_date.isoformat(),
        "answer": q.answer,
        "gold_evidence": list(q.gold_turns),
        "gold_sessions": list(q.answer_sessions),
        "unresolved_sessions": list(q.unresolved_sessions),
        "view_message_ids": shown,
        "view_sessions": sorted({session_of(m) for m in shown}),
        **_evidence(q, set(shown)),
        "view_chars": len(view.text),
        "view_tokens": tokens.count(view.text),
        "view_records": len(view.records),
        **view_counts(view),
        "wall_seconds": wall,
        "c_full_tokens": prep.c_full,
        "messages": len(q.messages),
        "records": len(prep.message_ids_of),
        "empty_turns": q.empty_turns,
        "empty_gold_turns": q.empty_gold_turns,
        "repeated_sessions": q.repeated_sessions,
        "ingest_seconds": prep.ingest_seconds,
    }
    scores = judge_scores(view, q.gold_turns, prep.message_ids_of)
    row["pool_scores"] = [[rid, p, g] for rid, p, g in scores]
    row["gold_fates"] = gold_fates(view, q.gold_turns, prep.message_ids_of)
    return row


@dataclass
class _Run:
    """What every question of a run shares: graphs, store, models, counters."""

    graph: Any
    store: Any
    embedder: Embeddings
    cfg: LongMemEvalConfig
    curve_graphs: Mapping[int, Any]
    main_budget: int
    answer_model: BaseChatModel | None
    grader: BaseChatModel | None
    tokens: TokenCounter
    pool: FillerPool | None = None


def _with_filler(run: _Run, q: LongMemEvalQuestion) -> tuple[LongMemEvalQuestion, dict[str, Any]]:
    """The question with its history inside filler up to ``history_tokens`` (when set)."""
    if run.pool is None or run.cfg.history_tokens is None:
        return q, {}
    history = build_history(
        q.messages,
        run.pool,
        run.cfg.history_tokens,
        seed=run.cfg.filler_seed,
        tokens=run.tokens,
        tokens_per_day=run.cfg.tokens_per_day,
    )
    return replace(q, messages=history.messages), history.info()


def _question(run: _Run, q: LongMemEvalQuestion) -> tuple[dict[str, Any], Any]:
    """Ingest, read, baselines, curve and answer of one question; its row and settings."""
    q, history = _with_filler(run, q)
    prep = _prepare(
        q,
        run.store,
        run.embedder,
        run.tokens,
        embed_headers=not history,
        baselines=not run.cfg.as_of_evidence,
    )
    try:
        asked = _as_of_asked(q) if run.cfg.as_of_evidence else None
        prep.as_of = asked[0] if asked else None
        view, wall = _ask(run.graph, prep)
        row = _row(prep, view, wall, run.tokens)
        row.update(history)
        if asked is not None:
            row.update(_as_of_fields(q, view, *asked))
        else:
            row["baselines"] = _baselines(prep, len(view.text), run.cfg.baseline_ks)
            row["budget_curve"] = _curve(prep, run.curve_graphs, (run.main_budget, view))
        if run.answer_model is not None and run.grader is not None:
            generated = answer_longmemeval(
                run.answer_model, q.question, view.text, asked_at=q.question_date
            )
            grade = grade_longmemeval(
                run.grader,
                q.question_type,
                q.question,
                q.answer,
                generated,
                abstention=q.is_abstention,
            )
            row.update(generated_answer=generated, correct=grade.correct, grader_raw=grade.raw)
    finally:
        if not run.cfg.keep_namespaces:
            run.store.erase_namespace(prep.namespace, actor="eval")
    return row, (getattr(view, "trace", None) or {}).get("settings")


def _as_of_asked(q: LongMemEvalQuestion) -> tuple[datetime, list[str]] | None:
    """When to ask ``q`` as of, and its old value's evidence turns (``None``: its evidence
    is of one date)."""
    return longmemeval_as_of(q.gold_turns, message_dates(q.messages))


def _as_of_fields(
    q: LongMemEvalQuestion, view: Any, as_of: datetime, old: Sequence[str]
) -> dict[str, Any]:
    """The as-of facts of one row: the date, the old evidence and whether the View holds
    it, and how many pooled / shown records hold a turn dated after ``as_of``."""
    shown = {first_telling(m) for m in view.message_ids}
    return {
        "as_of": as_of.isoformat(),
        "old_evidence": list(old),
        "old_evidence_shown": bool(shown & set(old)),
        **after_as_of(view, message_dates(q.messages), as_of),
    }


def _questions(path: Path, cfg: LongMemEvalConfig) -> list[LongMemEvalQuestion]:
    """The selected questions (``as_of_evidence``: those whose evidence spans two dates)."""
    found = load_longmemeval(path, question_types=cfg.question_types, limit=cfg.limit_questions)
    if cfg.as_of_evidence:
        return [q for q in found if _as_of_asked(q) is not None]
    return list(found)


def _selection(file: Path, cfg: LongMemEvalConfig) -> list[str]:
    """Validate every selected question first (bad input fails before any work); their ids."""
    ids = [q.question_id for q in _questions(file, cfg)]
    if not ids:
        raise InputError(f"{file}: no question matches the selection")
    return ids


def _run_questions(
    run: _Run, path: Path, out: Path, total: int, progress: bool
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, int]:
    """Every selected question in file order; each row appended to ``results.jsonl`` at
    once (with ``resume``, the questions an earlier run answered are skipped). The rows,
    the read settings and how many rows were resumed."""
    cfg = run.cfg
    read_settings: dict[str, Any] | None = None
    questions = _questions(path, cfg)
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("resume", "plots")}
    log = RunLog(out, {"file": str(path.resolve()), **settings}, resume=cfg.resume)
    try:
        with _bar(total, progress) as bar:
            for q in questions:
                if not log.done(q.question_id):
                    row, used = _question(run, q)
                    read_settings = read_settings or used
                    log.add_row(row)
                bar.update(1)
    finally:
        log.close()
    return log.rows, read_settings, log.resumed_rows


def run_longmemeval_eval(
    file: str | Path,
    out_dir: str | Path,
    *,
    graph: Any,
    store: Any,
    embeddings: Embeddings | None = None,
    config: LongMemEvalConfig | None = None,
    curve_graphs: Mapping[int, Any] | None = None,
    answer_model: BaseChatModel | None = None,
    grader_model: BaseChatModel | None = None,
    command: Sequence[str] | str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run the evaluation; write ``results.jsonl``, ``summary.json``, ``summary.md``, plots.

    The file is read twice: once to validate every selected question (a malformed one
    fails the run before anything is ingested, and gives the progress bar its total), then
    question by question. The progress bar's rate and time estimate cover the whole work of
    a question (ingest, reads, baselines, answer).

    Args:
        file: A LongMemEval-format JSON file.
        out_dir: Output folder (created).
        graph: The read graph of the main View.
        store: The graph's store (each question's history is ingested into it).
        embeddings: Embedder of the baselines (default: the store's).
        config: Run settings.
        curve_graphs: Budget → read graph at that budget (the budget curve); a budget equal
            to the main View's reuses the main View.
        answer_model: Answers from the View (optional).
        grader_model: Grades answers (default ``answer_model``).
        command: Command line recorded in the metadata.
        progress: Show a progress bar on stderr.

    Returns:
        The summary (also written to ``summary.json``).
    """
    cfg = config or LongMemEvalConfig()
    plots = _plots_wanted(cfg.plots)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = Path(file)
    selected = _selection(path, cfg)
    from mnemon_langgraph.read.settings import ReadSettings

    run = _Run(
        graph=graph,
        store=store,
        embedder=embeddings if embeddings is not None else store.embeddings,
        cfg=cfg,
        curve_graphs=dict(curve_graphs or {}),
        main_budget=cfg.budget_chars or ReadSettings().view_chars,
        answer_model=answer_model,
        grader=grader_model or answer_model,
        tokens=TokenCounter(),
    )
    if bool(cfg.filler) != (cfg.history_tokens is not None):
        raise InputError("a filler history needs both the filler sources and the history size")
    if cfg.history_tokens is not None:
        run.pool = load_filler_pool(cfg.filler, run.tokens)
    started = time.perf_counter()
    rows, read_settings, resumed = _run_questions(run, path, out, len(selected), progress)
    summary = summarize_longmemeval(rows, names=baseline_names(cfg.baseline_ks))
    summary.update(
        token_method=run.tokens.method,
        config={k: (list(v) if isinstance(v, tuple | list) else v) for k, v in asdict(cfg).items()},
        read_settings=read_settings,
        metadata={
            **run_metadata(command),
            "elapsed_seconds": round(time.perf_counter() - started, 1),
            "resumed_rows": resumed,
        },
    )
    summary["ingest"].update(_cache_counts(run.embedder))
    if run.pool is not None:
        summary["filler_pool"] = _filler_summary(run.pool, cfg, rows)
    _write(summary, out, plots=plots)
    return summary


def _filler_summary(
    pool: FillerPool, cfg: LongMemEvalConfig, rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """What the histories were put inside: the size, the pool, the filler per question."""
    return {
        "history_tokens": cfg.history_tokens,
        "tokens_by_source": pool.tokens_by_source(),
        "repeated_messages_dropped": pool.dropped_repeats,
        "filler_tokens_median": _median([r.get("filler_tokens") for r in rows]),
    }


def _cache_counts(embedder: Embeddings) -> dict[str, Any]:
    """Hits and misses of an embedding cache, if the embedder is one."""
    hits, misses = getattr(embedder, "hits", None), getattr(embedder, "misses", None)
    if not isinstance(hits, int) or not isinstance(misses, int):
        return {"embedding_cache": None}
    return {"embedding_cache": {"hits": hits, "misses": misses}}


def _agg(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    """:func:`aggregate` with LongMemEval's types scored and ``abstention`` apart."""
    return aggregate(rows, fields, scored=QUESTION_TYPES)


def _baseline_aggregates(
    rows: Sequence[Mapping[str, Any]], names: Sequence[str], gold_key: str, fields: Sequence[str]
) -> dict[str, Any]:
    return {
        name: _agg(
            [
                {"category": r.get("category"), **r["baselines"][name]}
                for r in rows
                if r.get(gold_key) and name in (r.get("baselines") or {})
            ],
            fields,
        )
        for name in names
    }


def _curve_aggregates(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    budgets = sorted({int(b) for r in rows for b in (r.get("budget_curve") or {})})
    curve: dict[str, Any] = {}
    for b in budgets:
        points = [
            {"category": r.get("category"), **r["budget_curve"][str(b)]}
            for r in rows
            if str(b) in (r.get("budget_curve") or {})
        ]
        turns = _agg([p for p in points if p.get("all_hit") is not None], CURVE_FIELDS)
        sessions = _agg([p for p in points if p.get("session_all_hit") is not None], SESSION_FIELDS)
        curve[str(b)] = {"turns": turns, "sessions": sessions}
    return curve


def _judge_auc(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r.get("gold_evidence") and r.get("scored")]
    pooled = [(p, bool(g)) for r in scored for _, p, g in r.get("pool_scores") or []]
    return {
        "auc": roc_auc([p for p, _ in pooled], [g for _, g in pooled]),
        "records": len(pooled),
        "gold": sum(1 for _, g in pooled if g),
        "questions": len(scored),
        "note": "P(needed) per pooled record (screen p where never asked), gold = record "
        "holds a has_answer turn; pooled over non-abstention questions",
    }


def _median(values: Sequence[Any]) -> float | None:
    nums = [float(v) for v in values if v is not None]
    return statistics.median(nums) if nums else None


def _ingest_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    warm = [p.get("read_seconds") for r in rows for p in (r.get("budget_curve") or {}).values()]
    return {
        "questions": len(rows),
        "messages": sum(int(r.get("messages") or 0) for r in rows),
        "records": sum(int(r.get("records") or 0) for r in rows),
        "empty_turns_skipped": sum(int(r.get("empty_turns") or 0) for r in rows),
        "empty_gold_turns_skipped": sum(int(r.get("empty_gold_turns") or 0) for r in rows),
        # sessions a history lists twice (same id and turns, two dates): kept as told twice
        "sessions_told_twice": sum(int(r.get("repeated_sessions") or 0) for r in rows),
        "ingest_seconds_total": sum(float(r.get("ingest_seconds") or 0.0) for r in rows),
        "ingest_seconds_median": _median([r.get("ingest_seconds") for r in rows]),
        "c_full_tokens_mean": mean(float(r.get("c_full_tokens") or 0) for r in rows),
        # the main View is the first read of a fresh namespace; the curve's reads are warm
        "read_seconds_first_median": _median([r.get("read_seconds") for r in rows]),
        "read_seconds_warm_median": _median(warm),
    }


def summarize_longmemeval(
    rows: Sequence[Mapping[str, Any]], *, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Aggregate result rows: View (turns and sessions), baselines, curve, judge, answers.

    Turn-level figures count the questions with at least one ``has_answer`` turn, session
    figures those with an answer session; ``overall`` leaves abstention questions out (they
    are the ``abstention`` category row).
    """
    with_turns = [r for r in rows if r.get("gold_evidence")]
    with_sessions = [r for r in rows if r.get("gold_sessions")]
    if names is None:
        names = sorted({n for r in rows for n in (r.get("baselines") or {})})
    summary: dict[str, Any] = {
        "view": _agg(with_turns, VIEW_FIELDS),
        "view_sessions": _agg(with_sessions, SESSION_FIELDS),
        "view_all_questions": _agg(rows, VIEW_FIELDS[3:]),
        "baselines": _baseline_aggregates(with_turns, names, "gold_evidence", BASELINE_FIELDS),
        "baseline_sessions": _baseline_aggregates(
            with_sessions, names, "gold_sessions", SESSION_FIELDS
        ),
        "budget_curve": _curve_aggregates(rows),
        "judge_auc": _judge_auc(rows),
        "ingest": _ingest_counts(rows),
    }
    graded = [r for r in rows if r.get("correct") is not None]
    if graded:
        summary["answers"] = _agg(graded, ("correct", "view_tokens"))
    as_of = as_of_summary(rows)
    if as_of is not None:
        summary["as_of"] = as_of
    summary["counts"] = {
        "questions": len(rows),
        "scored_questions": summary["view"]["overall"]["n"],
        "abstention_questions": sum(1 for r in rows if r.get("abstention")),
        "questions_without_gold_turns": sum(
            1 for r in rows if not r.get("gold_evidence") and not r.get("abstention")
        ),
        "questions_with_model_errors": sum(1 for r in rows if r.get("model_errors")),
    }
    return summary


def _plot_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary as :func:`~.plots.plot_evidence` draws it, the budget curve as a line."""
    baselines = dict(summary.get("baselines") or {})
    for budget, point in (summary.get("budget_curve") or {}).items():
        baselines[f"View budget@{budget}"] = point["turns"]
    return {"view": summary.get("view"), "baselines": baselines}


def _write(summary: dict[str, Any], out: Path, *, plots: bool) -> None:
    """Draw the plots (a failure is logged and recorded), then write the summary."""
    from mnemon_langgraph.eval.longmemeval_report import render_longmemeval_markdown

    if plots:
        from mnemon_langgraph.eval.plots import plot_evidence

        try:
            summary["plots"] = [str(p) for p in plot_evidence(_plot_summary(summary), out)]
        except Exception as exc:  # plots must never cost the run its summary
            summary["plots_error"] = f"{type(exc).__name__}: {exc}"
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    (out / "summary.md").write_text(render_longmemeval_markdown(summary), encoding="utf-8")


def summarize_longmemeval_results(
    out_dir: str | Path, *, plots: bool = True, command: Sequence[str] | str | None = None
) -> dict[str, Any]:
    """Rebuild ``summary.json``/``summary.md`` (and plots) from ``out_dir/results.jsonl``.

    Raises:
        InputError: If ``results.jsonl`` is missing or holds no rows.
    """
    path, rows = read_results(out_dir)
    out = path.parent
    summary = summarize_longmemeval(rows)
    summary["token_method"] = "as recorded in results.jsonl"
    summary["metadata"] = {**run_metadata(command), "source": f"rebuilt from {path}"}
    _write(summary, out, plots=_plots_wanted(plots))
    return summary


def is_longmemeval_run(out_dir: str | Path) -> bool:
    """Whether ``out_dir/results.jsonl`` holds LongMemEval rows (its first row says)."""
    row = first_result_row(out_dir)
    return "question_type" in row and "gold_sessions" in row
