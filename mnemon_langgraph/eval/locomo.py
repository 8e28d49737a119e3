"""The LoCoMo evaluation harness: evidence in the View, baselines, judge AUC, answers.

For each conversation of each LoCoMo-format file (one conversation dict, or the public
``locomo10.json`` list):

1. only the raw sessions are ingested (``session_N`` turns, image captions appended by the
   loader; never ``qa``, summaries, observations or events), each conversation in its own
   namespace ``("locomo", <id>)``;
2. each question is asked as a user message to the read graph, dated one day after the
   conversation's last session (``ReadContext(now=...)``);
3. per question: the gold evidence ids (repaired, :mod:`.evidence`), the message ids the
   View holds, ``all_hit`` / ``any_hit`` / recall, View characters and tokens, and the
   read path's counts from the View's trace; the same for every baseline of
   :mod:`.baselines` (turn-level records, computed in memory); P(needed) and gold label of
   every pooled record for the judge's ROC AUC (paper §6.5);
4. with an answer model: the answer from the View alone, graded by the LLM grader.

Outputs in ``out_dir``: ``results.jsonl`` (one row per question), ``summary.json``,
``summary.md`` and the plots. Categories 1–4 are scored; 5 (adversarial) is reported
separately (``unscored`` and its own category row).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.answer import answer_question, grade_answer
from mnemon_langgraph.eval.as_of import after_as_of, as_of_summary, locomo_as_of, message_dates
from mnemon_langgraph.eval.baselines import BASELINE_KS, TurnIndex, baseline_names
from mnemon_langgraph.eval.evidence import (
    EvidenceRepair,
    count_issues,
    evidence_hits,
    repair_evidence,
)
from mnemon_langgraph.eval.metrics import aggregate, effective_cost_index, mean, roc_auc
from mnemon_langgraph.eval.misses import gold_fates, p_needed
from mnemon_langgraph.eval.report import (
    TokenCounter,
    read_results,
    render_summary_markdown,
    run_metadata,
)
from mnemon_langgraph.types import Message

__all__ = [
    "BASELINE_FIELDS",
    "VIEW_FIELDS",
    "EvalConfig",
    "LocomoItem",
    "judge_scores",
    "load_locomo_items",
    "run_locomo_eval",
    "summarize",
    "summarize_results_file",
    "view_counts",
]

log = logging.getLogger(__name__)

VIEW_FIELDS = (
    "all_hit",
    "any_hit",
    "recall",
    "view_chars",
    "view_tokens",
    "view_records",
    "searches",
    "s1_calls",
    "waves",
    "rounds",
    "read_seconds",
)
BASELINE_FIELDS = ("all_hit", "any_hit", "recall", "chars", "tokens")


@dataclass
class EvalConfig:
    """Settings of one evaluation run (recorded in ``summary.json``).

    Attributes:
        budget_chars: The View's character budget (``None``: the read settings' default).
        judge: ``local``, ``llm:PROVIDER:MODEL`` or ``jev`` (recorded; the object is built
            by the caller or :func:`run_locomo_eval`).
        planner: ``rules`` or ``PROVIDER:MODEL``.
        limit_questions: At most this many questions per conversation (file order).
        conversations: Only these conversation ids.
        baseline_ks: Turn counts for the baselines.
        answer_model: ``PROVIDER:MODEL`` of the answer step, if any.
        grader_model: ``PROVIDER:MODEL`` of the grader (default: the answer model).
        plots: Whether to draw the plots.
        as_of_evidence: Ask each question as of one day after its last evidence session
            (:mod:`.as_of`; a question with no dated evidence is asked as usual).
    """

    budget_chars: int | None = None
    judge: str = "local"
    planner: str = "rules"
    limit_questions: int | None = None
    conversations: Sequence[str] | None = None
    baseline_ks: Sequence[int] = BASELINE_KS
    answer_model: str | None = None
    grader_model: str | None = None
    plots: bool = True
    as_of_evidence: bool = False


@dataclass
class LocomoItem:
    """One conversation to evaluate: its messages (for memory) and questions (kept apart).

    Attributes:
        conversation_id: ``sample_id`` of the release, or the file's stem.
        messages: The raw session turns as messages (``id`` = ``dia_id``).
        qa: The question dicts exactly as in the file.
    """

    conversation_id: str
    messages: list[Message]
    qa: list[dict[str, Any]] = field(default_factory=list)

    @property
    def turn_ids(self) -> set[str]:
        """Every message id (``dia_id``) of the conversation."""
        return {m.id for m in self.messages if m.id is not None}

    @property
    def ask_date(self) -> datetime | None:
        """One day after the last session (when questions are asked)."""
        stamps = [m.timestamp for m in self.messages if m.timestamp is not None]
        return max(stamps) + timedelta(days=1) if stamps else None


def load_locomo_items(paths: Iterable[str | Path]) -> list[LocomoItem]:
    """Load every conversation of every file with the package's LoCoMo loader.

    The loader keeps the questions apart from the messages; only the messages are ever
    ingested.
    """
    from mnemon_langgraph.loaders.locomo import load_locomo

    items: list[LocomoItem] = []
    for p in paths:
        for conv in load_locomo(Path(p)):
            qa = [q for q in conv.qa if isinstance(q, dict)]
            items.append(LocomoItem(conv.id, list(conv.messages), qa))
    return items


def view_counts(view: Any) -> dict[str, Any]:
    """The read path's counts from a View's trace (``None`` where the trace lacks one).

    ``read_seconds`` is the read path's time excluding model calls
    (``trace["timings"]["read_path_s"]``: node time minus planner and judge time);
    ``model_errors`` counts the model calls that failed (the read path fell back).
    """
    trace = getattr(view, "trace", None) or {}
    counts = trace.get("counts") or {}
    timings = trace.get("timings") or {}
    return {
        "searches": counts.get("searches"),
        "s1_calls": counts.get("s1_calls"),
        "waves": counts.get("waves"),
        "rounds": counts.get("rounds"),
        "judgments": counts.get("judgments"),
        "pool": counts.get("pool"),
        "read_seconds": timings.get("read_path_s"),
        "model_seconds": timings.get("model_s"),
        "model_errors": len(trace.get("errors") or []),
        **_chars_by_source(view),
    }


def _chars_by_source(view: Any) -> dict[str, Any]:
    """``view_chars_by_source`` of a View read from several sources (none from one), also
    when its records all came from one of them: leaving those Views out would overstate the
    share of the source that lost its places."""
    from mnemon_langgraph.eval.documents import chars_by_source

    chars = chars_by_source(view)
    several = len((getattr(view, "trace", None) or {}).get("sources") or {}) > 1
    return {"view_chars_by_source": chars} if several or len(chars) > 1 else {}


def judge_scores(
    view: Any,
    gold_ids: Iterable[str],
    message_ids_of: Mapping[str, Sequence[str]] | None = None,
) -> list[tuple[str, float, bool]]:
    """``(record id, P(needed), gold)`` per pooled record, from the View's trace.

    P(needed) is the record's last ``needed`` judgment; a record that was only screened
    (screened out, so never asked ``needed``) is scored by its ``screen`` judgment. A record
    with neither is left out. Gold: the record holds a gold evidence turn.

    Args:
        view: The View (its ``trace`` holds ``pool`` and ``judgments``).
        gold_ids: The question's gold message ids.
        message_ids_of: Record id → message ids, for pool entries that do not carry them.
    """
    trace = getattr(view, "trace", None) or {}
    lookup = message_ids_of or {}
    gold = set(gold_ids)
    p_of = p_needed(trace)
    out: list[tuple[str, float, bool]] = []
    for rec in trace.get("pool") or []:
        rid = rec.get("id")
        p = p_of.get(rid)
        if p is None:
            continue
        mids = rec.get("message_ids") or lookup.get(rid) or ()
        out.append((rid, p, bool(gold & set(mids))))
    return out


def _evidence_metrics(gold: Sequence[str], shown: Iterable[str]) -> dict[str, Any]:
    if not gold:
        return {"all_hit": None, "any_hit": None, "recall": None}
    return dict(evidence_hits(gold, set(shown)))


@dataclass
class _Prepared:
    """One conversation after ingest: its namespace, baseline index and token counts."""

    item: LocomoItem
    namespace: tuple[str, str]
    index: TurnIndex
    turn_tokens: list[int]
    message_ids_of: dict[str, Sequence[str]]

    @property
    def c_full(self) -> int:
        """Tokens of the whole conversation (ECI's ``c_full``)."""
        return sum(self.turn_tokens)


def _select_items(files: Sequence[str | Path], cfg: EvalConfig) -> list[LocomoItem]:
    items = load_locomo_items(files)
    if not cfg.conversations:
        return items
    wanted = set(cfg.conversations)
    missing = wanted - {i.conversation_id for i in items}
    if missing:
        raise InputError(f"no conversation with id {sorted(missing)} in the files given")
    return [i for i in items if i.conversation_id in wanted]


def _plots_wanted(requested: bool) -> bool:
    """Plots are a bonus: without matplotlib, warn now (before the long work) and skip them."""
    from mnemon_langgraph.errors import install_hint
    from mnemon_langgraph.eval.plots import plotting_available

    if requested and not plotting_available():
        log.warning(
            "plots skipped: matplotlib is not installed (%s); "
            "summary.json and summary.md are still written",
            install_hint("eval"),
        )
        return False
    return requested


def _prepare(
    item: LocomoItem, store: Any, embedder: Embeddings, tokens: TokenCounter, progress: bool
) -> _Prepared:
    """Ingest one conversation's raw turns and build its turn-level baseline index."""
    from mnemon_langgraph.records._chunking import chunk_messages

    ns = ("locomo", item.conversation_id)
    with _bar(f"ingest {item.conversation_id}", "record", progress) as bar:

        def advance(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        store.ingest(ns, item.messages, origin=f"locomo:{item.conversation_id}", progress=advance)
    store.warm(ns)  # the questions meet the indexes the store settles on (no load pending)
    turns = chunk_messages(
        item.messages,
        namespace=("locomo-turns", item.conversation_id),
        origin=f"locomo:{item.conversation_id}",
        pack=False,
    )
    index = TurnIndex.build(turns, embedder)
    return _Prepared(
        item=item,
        namespace=ns,
        index=index,
        turn_tokens=[tokens.count(t) for t in index.rendered],
        message_ids_of={r.id: r.message_ids for r in store.records(ns)},
    )


def _baseline_rows(
    prep: _Prepared, question: str, gold: Sequence[str], view_chars: int, ks: Sequence[int]
) -> dict[str, dict[str, Any]]:
    index = prep.index
    contexts = index.contexts(question, ks=ks, view_chars=view_chars)
    return {
        name: {
            **_evidence_metrics(gold, index.message_ids(idx)),
            "chars": index.chars(idx),
            "tokens": sum(prep.turn_tokens[i] for i in idx),
            "records": len(idx),
        }
        for name, idx in contexts.items()
    }


def _answer_fields(
    answer_model: BaseChatModel, grader: BaseChatModel, q: Mapping[str, Any], view: Any, now: Any
) -> dict[str, Any]:
    question = str(q.get("question", ""))
    generated = answer_question(
        answer_model, question, view.text, now=now.strftime("%d %B %Y") if now else None
    )
    gold_answer = q.get("answer", q.get("adversarial_answer", ""))
    grade = grade_answer(grader, question, gold_answer, generated)
    return {"generated_answer": generated, "correct": grade.correct, "grader_raw": grade.raw}


def _question_row(
    graph: Any,
    prep: _Prepared,
    q_index: int,
    q: Mapping[str, Any],
    tokens: TokenCounter,
    as_of_evidence: bool = False,
) -> tuple[dict[str, Any], Any, EvidenceRepair]:
    """Ask one question through the read graph; the row without baselines and answers."""
    from mnemon_langgraph.read.state import ReadContext

    question = str(q.get("question", ""))
    now = prep.item.ask_date
    repair = repair_evidence(q.get("evidence") or [], prep.item.turn_ids)
    gold = list(repair.ids)
    dates = message_dates(prep.item.messages) if as_of_evidence else {}
    as_of = locomo_as_of(gold, dates) if as_of_evidence else None
    if as_of is not None:
        now = as_of
    t0 = time.perf_counter()
    state = graph.invoke(
        {"messages": [HumanMessage(question)]},
        context=ReadContext(namespace=prep.namespace, now=now, as_of=as_of),
    )
    wall = time.perf_counter() - t0
    view = state["view"]
    shown = list(view.message_ids)
    row: dict[str, Any] = {
        "conversation": prep.item.conversation_id,
        "question_index": q_index,
        "category": q.get("category"),
        "question": question,
        "asked_at": now.isoformat() if now else None,
        "answer": q.get("answer", q.get("adversarial_answer")),
        "gold_evidence": gold,
        "evidence_raw": list(q.get("evidence") or []),
        "evidence_issues": [asdict(i) for i in repair.issues],
        "view_message_ids": shown,
        **_evidence_metrics(gold, shown),
        "view_chars": len(view.text),
        "view_tokens": tokens.count(view.text),
        "view_records": len(view.records),
        **view_counts(view),
        "wall_seconds": wall,
        "c_full_tokens": prep.c_full,
    }
    if as_of is not None:
        row.update(as_of=as_of.isoformat(), **after_as_of(view, dates, as_of))
    scores = judge_scores(view, gold, prep.message_ids_of)
    row["pool_scores"] = [[rid, p, g] for rid, p, g in scores]
    row["gold_fates"] = gold_fates(view, gold, prep.message_ids_of)
    return row, view, repair


def _full_row(
    graph: Any,
    prep: _Prepared,
    q_index: int,
    q: Mapping[str, Any],
    tokens: TokenCounter,
    cfg: EvalConfig,
    answer_model: BaseChatModel | None,
    grader: BaseChatModel | None,
) -> tuple[dict[str, Any], EvidenceRepair, dict[str, Any] | None]:
    """One question's complete row (View, baselines, answer), its repair, the read settings."""
    row, view, repair = _question_row(graph, prep, q_index, q, tokens, cfg.as_of_evidence)
    row["baselines"] = _baseline_rows(
        prep, row["question"], row["gold_evidence"], len(view.text), cfg.baseline_ks
    )
    if answer_model is not None and grader is not None:
        row.update(_answer_fields(answer_model, grader, q, view, prep.item.ask_date))
    return row, repair, (getattr(view, "trace", None) or {}).get("settings")


def run_locomo_eval(
    files: Sequence[str | Path],
    out_dir: str | Path,
    *,
    graph: Any,
    store: Any,
    embeddings: Embeddings | None = None,
    config: EvalConfig | None = None,
    answer_model: BaseChatModel | None = None,
    grader_model: BaseChatModel | None = None,
    command: Sequence[str] | str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run the evaluation and write ``results.jsonl``, ``summary.json``, ``summary.md``, plots.

    Every conversation is ingested first (its own progress bar), then the questions are asked
    (one bar), so the questions' time estimate excludes ingest. Plots are a bonus: a missing
    matplotlib is reported before any work, a failed plot at the end; the summary is written.

    Args:
        files: LoCoMo-format JSON files.
        out_dir: Output folder (created).
        graph: The compiled read graph (invoked with ``{"messages": [...]}`` and
            ``context=ReadContext(namespace=..., now=...)``).
        store: The graph's :class:`~mnemon_langgraph.store.MnemonStore` (conversations are
            ingested into it; its journal maps pooled record ids to message ids).
        embeddings: Embedder of the cosine baselines (default: the store's).
        config: Run settings.
        answer_model: Answers from the View (optional).
        grader_model: Grades answers (default ``answer_model``).
        command: Command line recorded in the metadata.
        progress: Show progress bars on stderr.

    Returns:
        The summary (also written to ``summary.json``).
    """
    cfg = config or EvalConfig()
    plots = _plots_wanted(cfg.plots)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    items = _select_items(files, cfg)
    grader = grader_model or answer_model
    embedder = embeddings if embeddings is not None else store.embeddings
    tokens = TokenCounter()
    started = time.perf_counter()
    prepared = [_prepare(item, store, embedder, tokens, progress) for item in items]
    rows: list[dict[str, Any]] = []
    repairs: list[EvidenceRepair] = []
    read_settings: dict[str, Any] | None = None
    total_q = sum(len(_questions(p.item, cfg)) for p in prepared)
    with (
        (out / "results.jsonl").open("w", encoding="utf-8") as fh,
        _bar("questions", "q", progress, total=total_q) as bar,
    ):
        for prep in prepared:
            for q_index, q in enumerate(_questions(prep.item, cfg)):
                row, repair, settings = _full_row(
                    graph, prep, q_index, q, tokens, cfg, answer_model, grader
                )
                read_settings = read_settings or settings
                repairs.append(repair)
                rows.append(row)
                fh.write(json.dumps(row, default=str) + "\n")
                fh.flush()
                bar.update(1)
    c_full = {p.item.conversation_id: p.c_full for p in prepared}
    summary = summarize(rows, names=baseline_names(cfg.baseline_ks), c_full=c_full)
    summary.update(
        evidence_repairs=count_issues(repairs),
        token_method=tokens.method,
        config={k: (list(v) if isinstance(v, tuple | list) else v) for k, v in asdict(cfg).items()},
        read_settings=read_settings,
        metadata={
            **run_metadata(command),
            "elapsed_seconds": round(time.perf_counter() - started, 1),
        },
        counts=_counts(rows, summary, len(items)),
    )
    _write_summary(summary, out, plots=plots)
    return summary


def _questions(item: LocomoItem, cfg: EvalConfig) -> list[dict[str, Any]]:
    return item.qa[: cfg.limit_questions] if cfg.limit_questions else item.qa


def _counts(
    rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], conversations: int
) -> dict[str, int]:
    return {
        "conversations": conversations,
        "questions": len(rows),
        "scored_questions": summary["view"]["overall"]["n"],
        "questions_without_gold": sum(1 for r in rows if not r.get("gold_evidence")),
        # a failed planner/judge call degrades the read path; the run must say so
        "questions_with_model_errors": sum(1 for r in rows if r.get("model_errors")),
    }


def _write_summary(summary: dict[str, Any], out: Path, *, plots: bool) -> None:
    """Draw the plots (a bonus: a failure is logged and recorded), then write the summary."""
    if plots:
        from mnemon_langgraph.eval.plots import plot_evidence

        try:
            summary["plots"] = [str(p) for p in plot_evidence(summary, out)]
        except Exception as exc:  # plots must never cost the run its summary
            log.warning("plots skipped: %s: %s", type(exc).__name__, exc)
            summary["plots_error"] = f"{type(exc).__name__}: {exc}"
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    (out / "summary.md").write_text(render_summary_markdown(summary), encoding="utf-8")


def summarize(
    rows: Sequence[Mapping[str, Any]],
    *,
    names: Sequence[str] | None = None,
    c_full: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Aggregate result rows: View, baselines, judge AUC and (if graded) answers.

    Evidence metrics count only questions with at least one gold id; counts and sizes
    count every question.
    """
    with_gold = [r for r in rows if r.get("gold_evidence")]
    summary: dict[str, Any] = {"view": aggregate(with_gold, VIEW_FIELDS)}
    summary["view_all_questions"] = aggregate(rows, VIEW_FIELDS[3:])
    if names is None:
        names = sorted({n for r in rows for n in (r.get("baselines") or {})})
    summary["baselines"] = {
        name: aggregate(
            [
                {"category": r.get("category"), **r["baselines"][name]}
                for r in with_gold
                if name in (r.get("baselines") or {})
            ],
            BASELINE_FIELDS,
        )
        for name in names
    }
    scored = [r for r in with_gold if r.get("category") in (1, 2, 3, 4)]
    pooled = [(p, bool(g)) for r in scored for _, p, g in r.get("pool_scores") or []]
    summary["judge_auc"] = {
        "auc": roc_auc([p for p, _ in pooled], [g for _, g in pooled]),
        "records": len(pooled),
        "gold": sum(1 for _, g in pooled if g),
        "questions": len(scored),
        "note": "P(needed) per pooled record (screen p where never asked), gold = record "
        "holds an evidence turn; pooled over scored questions (paper §6.5)",
    }
    graded = [r for r in rows if r.get("correct") is not None]
    if graded:
        answers = aggregate(graded, ("correct", "view_tokens"))
        scored_graded = [r for r in graded if r.get("category") in (1, 2, 3, 4)]
        acc = answers["overall"].get("correct")
        ratio = mean(
            r["view_tokens"] / r["c_full_tokens"] for r in scored_graded if r.get("c_full_tokens")
        )
        if acc is not None and ratio is not None:
            answers["eci"] = effective_cost_index(acc, ratio, 1.0)
        answers["c_full_tokens"] = mean(float(v) for v in (c_full or {}).values())
        summary["answers"] = answers
    as_of = as_of_summary(rows)
    if as_of is not None:
        summary["as_of"] = as_of
    return summary


def _bar(desc: str, unit: str, enabled: bool, total: int | None = None) -> Any:
    """A tqdm progress bar on stderr (disabled: a bar that draws nothing)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, disable=not enabled)


def summarize_results_file(
    out_dir: str | Path, *, plots: bool = True, command: Sequence[str] | str | None = None
) -> dict[str, Any]:
    """Rebuild ``summary.json``/``summary.md`` (and plots) from ``out_dir/results.jsonl``.

    For a run that was interrupted, or to re-render after changing the report: everything
    is recomputed from the per-question rows (the run's config and read settings, which the
    rows do not hold, are left out; ``metadata.source`` says so).

    Raises:
        InputError: If ``results.jsonl`` is missing or holds no rows.
    """
    path, rows = read_results(out_dir)
    out = path.parent
    c_full = {r["conversation"]: int(r.get("c_full_tokens") or 0) for r in rows}
    summary = summarize(rows, c_full=c_full)
    kinds: dict[str, int] = count_issues([])
    for r in rows:
        for issue in r.get("evidence_issues") or []:
            kinds[issue["kind"]] = kinds.get(issue["kind"], 0) + 1
    summary["evidence_repairs"] = kinds
    summary["token_method"] = "as recorded in results.jsonl"
    summary["metadata"] = {**run_metadata(command), "source": f"rebuilt from {path}"}
    summary["counts"] = _counts(rows, summary, len(c_full))
    _write_summary(summary, out, plots=_plots_wanted(plots))
    return summary
