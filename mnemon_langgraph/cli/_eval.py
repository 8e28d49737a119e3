"""``mnemon eval``: evaluation harnesses (``mnemon eval locomo FILE... --out DIR``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mnemon_langgraph.cli._common import (
    add_embeddings_arg,
    add_read_settings_arg,
    chat_model,
    embeddings_for,
    quiet_read_path,
    read_settings,
)
from mnemon_langgraph.cli._eval_common import (
    add_documents_args,
    build_judge,
    build_planner,
    documents_flags,
    eval_store,
    read_graph,
    report_failures,
    split_store,
)
from mnemon_langgraph.errors import ConfigurationError

__all__ = ["build_judge", "build_planner", "eval_store", "register", "report_failures"]


def register(subparsers: Any) -> None:
    """Add ``eval``: ``locomo``, ``longmemeval``, ``beam``, ``summarize``, ``misses``,
    ``compare``."""
    parser = subparsers.add_parser(
        "eval",
        help="evaluate the read path on a benchmark",
        description="Evaluate the read path on a benchmark (evidence in the View, baselines, "
        "judge AUC; answers and ECI with a chat model).",
    )
    sub = parser.add_subparsers(dest="eval_command", metavar="BENCHMARK", required=True)
    loc = sub.add_parser(
        "locomo",
        help="LoCoMo: any LoCoMo-format file (one conversation or the locomo10 list)",
        description="Ingest each conversation's raw sessions into its own namespace, ask every "
        "question through the read graph, and score the View against the gold evidence, "
        "beside turn-level baselines (cosine, BM25, RRF). Writes results.jsonl, summary.json, "
        "summary.md and, when matplotlib is installed (the [eval] extra), plots to --out.",
    )
    _add_locomo_inputs(loc)
    _add_locomo_models(loc)
    loc.set_defaults(func=_run_locomo)
    from mnemon_langgraph.cli._eval_long import add_beam, add_longmemeval

    add_longmemeval(sub, _add_locomo_models)
    add_beam(sub)
    summ = sub.add_parser(
        "summarize",
        help="rebuild summary.json/summary.md/plots from DIR/results.jsonl",
        description="Rebuild summary.json, summary.md and the plots of a run (LoCoMo, "
        "LongMemEval, BEAM) from its results.jsonl (e.g. after an interrupted run).",
    )
    summ.add_argument("dir", metavar="DIR", help="output folder of a `mnemon eval` run")
    summ.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    summ.set_defaults(func=_run_summarize)
    miss = sub.add_parser(
        "misses",
        help="why the View missed gold evidence: DIR/results.jsonl's misses by bucket",
        description="Sort each all-evidence miss of a run into: 1 not pooled, 2 judged "
        "low (pooled, p < 1/2, cut), 3 judged fine but lost (budget, staleness, recent "
        "messages), 4 other; print the Markdown table. Uses the labels for scoring only.",
    )
    miss.add_argument("dir", metavar="DIR", help="output folder of a `mnemon eval` run")
    miss.set_defaults(func=_run_misses)
    comp = sub.add_parser(
        "compare",
        help="two runs of one benchmark, question by question: gained, lost, p",
        description="Pair the scored questions of two runs of the same benchmark file (say, "
        "one with another --read-setting) and print what moved: all / any evidence and the "
        "share of gold turns shown in each, how many Views changed, the questions that "
        "gained or lost all their evidence, and the exact McNemar p of that difference.",
    )
    comp.add_argument("before", metavar="BEFORE", help="output folder of the first run")
    comp.add_argument("after", metavar="AFTER", help="output folder of the second run")
    comp.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    comp.set_defaults(func=_run_compare)


def _add_locomo_inputs(loc: argparse.ArgumentParser) -> None:
    """What to evaluate and where to write: files, output, selection, budgets, baselines."""
    loc.add_argument("files", nargs="+", metavar="FILE", help="LoCoMo-format JSON files")
    loc.add_argument("--out", required=True, metavar="DIR", help="output folder")
    loc.add_argument(
        "--budget-chars",
        type=int,
        default=None,
        metavar="N",
        help="the View's character budget (default: 12000)",
    )
    loc.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="at most N questions per conversation (file order)",
    )
    loc.add_argument(
        "--conversations",
        default=None,
        metavar="ID,...",
        help="only these conversation ids (sample_id or file stem)",
    )
    loc.add_argument(
        "--baseline-k",
        default="3,6,20,30,48",
        metavar="K,...",
        help="turn counts of the baselines (default 3,6,20,30,48)",
    )
    loc.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="journal to ingest into (default: a fresh temporary one)",
    )
    loc.add_argument(
        "--record-chars",
        type=int,
        default=None,
        metavar="N",
        help="most characters of a record the journal writes (default 600)",
    )
    add_embeddings_arg(loc, what="embedder of the journal, the local judge and the baselines")
    add_documents_args(loc, distractors=True)
    loc.add_argument(
        "--embedding-cache",
        default=None,
        metavar="PATH",
        help="content-addressed embedding cache file, reused across conversations and runs "
        "(default: none, every text embedded afresh)",
    )
    loc.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    loc.add_argument("--no-progress", action="store_true", help="no progress bars")
    loc.add_argument(
        "--as-of-evidence",
        action="store_true",
        help="ask each question as of one day after its last evidence session (dates from "
        "the gold labels); reports any record dated later that was pooled or shown",
    )


def _add_locomo_models(loc: argparse.ArgumentParser) -> None:
    """Which backends read, with which settings, and (optionally) answer and grade."""
    add_read_settings_arg(loc)
    loc.add_argument(
        "--judge",
        default="local",
        metavar="SPEC",
        help="System 1 (the per-record judge): local (offline, default), llm:PROVIDER:MODEL or jev",
    )
    loc.add_argument(
        "--planner",
        default="rules",
        metavar="SPEC",
        help="System 2 (the planner): rules (offline, default) or PROVIDER:MODEL",
    )
    loc.add_argument(
        "--answer-model",
        default=None,
        metavar="PROVIDER:MODEL",
        help="answer each question from the View and grade it (accuracy, ECI)",
    )
    loc.add_argument(
        "--grader-model",
        default=None,
        metavar="PROVIDER:MODEL",
        help="grader (default: the answer model)",
    )


def _ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise ConfigurationError(f"{flag} must be comma-separated integers, got {text!r}") from exc
    if not values or any(v <= 0 for v in values):
        raise ConfigurationError(f"{flag} needs positive integers, got {text!r}")
    return values


def _run_locomo(args: argparse.Namespace) -> int:
    from mnemon_langgraph.eval.locomo import EvalConfig, load_locomo_items, run_locomo_eval

    if args.budget_chars is not None and args.budget_chars <= 0:
        raise ConfigurationError("--budget-chars must be positive")
    if args.limit_questions is not None and args.limit_questions <= 0:
        raise ConfigurationError("--limit-questions must be positive")
    config = EvalConfig(
        budget_chars=args.budget_chars,
        judge=args.judge,
        planner=args.planner,
        limit_questions=args.limit_questions,
        conversations=[c.strip() for c in args.conversations.split(",") if c.strip()]
        if args.conversations
        else None,
        baseline_ks=_ints(args.baseline_k, "--baseline-k"),
        answer_model=args.answer_model,
        grader_model=args.grader_model,
        plots=not args.no_plots,
        as_of_evidence=args.as_of_evidence,
    )
    embeddings = embeddings_for(args.embeddings)
    if args.embedding_cache:  # opt-in here: the distractors embed every history's turns
        from mnemon_langgraph.search.embeddings import CachedEmbeddings

        embeddings = CachedEmbeddings(embeddings, args.embedding_cache)
    judge = build_judge(args.judge, embeddings)
    planner = build_planner(args.planner)
    answer = chat_model(args.answer_model, "--answer-model") if args.answer_model else None
    grader = chat_model(args.grader_model, "--grader-model") if args.grader_model else None
    settings = read_settings(args.read_setting, args.budget_chars)
    histories = (
        {i.conversation_id: i.messages for i in load_locomo_items(args.files)}
        if args.distractors
        else None
    )
    with eval_store(args, embeddings) as journal:
        store, others = split_store(args, journal, embeddings, histories)
        graph = read_graph(journal, others, judge=judge, planner=planner, settings=settings)
        with quiet_read_path(args.verbose):  # failures are summed up in one line below
            summary = run_locomo_eval(
                args.files,
                args.out,
                graph=graph,
                embeddings=embeddings,
                store=store,
                config=config,
                answer_model=answer,
                grader_model=grader,
                command=_command(args),
                progress=not args.no_progress,
            )
    overall = summary["view"]["overall"]
    print(
        f"{summary['counts']['scored_questions']} scored questions: all_hit "
        f"{_pct(overall.get('all_hit'))}, any_hit {_pct(overall.get('any_hit'))}, "
        f"View {overall.get('view_chars') or 0:,.0f} chars; judge AUC "
        f"{_num(summary['judge_auc']['auc'])}; wrote {args.out}/summary.md"
    )
    return report_failures(summary)


def _run_summarize(args: argparse.Namespace) -> int:
    from mnemon_langgraph.eval.beam_eval import is_beam_run, summarize_beam_results
    from mnemon_langgraph.eval.locomo import summarize_results_file
    from mnemon_langgraph.eval.longmemeval import is_longmemeval_run, summarize_longmemeval_results

    rebuild: Any = summarize_results_file
    if is_longmemeval_run(args.dir):
        rebuild = summarize_longmemeval_results
    elif is_beam_run(args.dir):
        rebuild = summarize_beam_results
    summary = rebuild(
        args.dir, plots=not args.no_plots, command=f"mnemon eval summarize {args.dir}"
    )
    overall = summary["view"]["overall"]
    print(
        f"{summary['counts']['scored_questions']} scored questions: all_hit "
        f"{_pct(overall.get('all_hit'))}; wrote {args.dir}/summary.md"
    )
    return 0


def _run_misses(args: argparse.Namespace) -> int:
    from mnemon_langgraph.eval.misses import misses_of_results, render_misses

    print(render_misses(misses_of_results(args.dir)))
    return 0


def _run_compare(args: argparse.Namespace) -> int:
    from mnemon_langgraph.eval.compare import compare_rows, render_comparison
    from mnemon_langgraph.eval.report import read_results

    result = compare_rows(read_results(args.before)[1], read_results(args.after)[1])
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        print(render_comparison(result, (args.before, args.after)), end="")
    return 0


def _command(args: argparse.Namespace) -> str:
    """The command line, rebuilt from the parsed arguments (works under ``main([...])``)."""
    parts = ["mnemon", "eval", "locomo", *args.files, "--out", args.out]
    for flag, value in (
        ("--budget-chars", args.budget_chars),
        ("--judge", args.judge),
        ("--planner", args.planner),
        ("--limit-questions", args.limit_questions),
        ("--conversations", args.conversations),
        ("--baseline-k", args.baseline_k),
        ("--answer-model", args.answer_model),
        ("--grader-model", args.grader_model),
        ("--store", args.store),
        ("--record-chars", args.record_chars),
        ("--embeddings", args.embeddings),
        ("--embedding-cache", args.embedding_cache),
    ):
        if value is not None:
            parts += [flag, str(value)]
    parts += documents_flags(args)
    parts += [
        f for f, on in (("--no-plots", args.no_plots), ("--no-progress", args.no_progress)) if on
    ]
    return " ".join(parts)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
