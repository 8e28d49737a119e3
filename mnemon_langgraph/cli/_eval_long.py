"""``mnemon eval longmemeval FILE`` and ``mnemon eval beam DIR``: the long-history harnesses."""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import (
    add_embeddings_arg,
    add_read_settings_arg,
    chat_model,
    embeddings_for,
    read_settings,
)
from mnemon_langgraph.cli._eval_common import add_documents_args, documents_flags
from mnemon_langgraph.errors import ConfigurationError

__all__ = ["add_beam", "add_longmemeval", "cached_embeddings", "ints_or_none"]


def add_longmemeval(sub: Any, add_models: Any) -> None:
    """Add ``eval longmemeval`` to ``sub`` (``add_models``: the read path's models, settings)."""
    lme = sub.add_parser(
        "longmemeval",
        help="LongMemEval: the release file (longmemeval_s_cleaned.json, _m) or a subset",
        description="Ingest each question's own history into its own namespace (sessions "
        "dated), ask the question at its question_date through the read graph, and score the "
        "View against the has_answer turns and answer_session_ids, beside turn-level "
        "baselines and the View at each budget of the budget curve. Abstention questions are "
        "reported apart. Writes results.jsonl, summary.json, summary.md (and plots) to --out.",
    )
    lme.add_argument("file", metavar="FILE", help="a LongMemEval-format JSON file")
    lme.add_argument("--out", required=True, metavar="DIR", help="output folder")
    lme.add_argument(
        "--budget-chars",
        type=int,
        default=None,
        metavar="N",
        help="the View's character budget (default: 12000)",
    )
    lme.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="at most N questions (after --question-types, file order)",
    )
    lme.add_argument(
        "--question-types",
        default=None,
        metavar="TYPE,...",
        help="only these question types (e.g. multi-session,temporal-reasoning)",
    )
    lme.add_argument(
        "--baseline-k",
        default="3,6,20,30,48",
        metavar="K,...",
        help="turn counts of the baselines (default 3,6,20,30,48)",
    )
    lme.add_argument(
        "--budget-curve",
        default="1000,2000,3000,6000,12000",
        metavar="N,...",
        help="View budgets of the budget curve, or 'none' (default 1000,2000,3000,6000,12000)",
    )
    lme.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="journal to ingest into (default: a fresh temporary one)",
    )
    lme.add_argument(
        "--keep-namespaces",
        action="store_true",
        help="keep each question's namespace in the journal (default: erased "
        "after its question, so the journal stays one history large)",
    )
    lme.add_argument(
        "--record-chars",
        type=int,
        default=None,
        metavar="N",
        help="most characters of a record the journal writes (default 600)",
    )
    add_embeddings_arg(lme, what="embedder of the journal, the local judge and the baselines")
    lme.add_argument(
        "--embedding-cache",
        default=None,
        metavar="PATH",
        help="content-addressed embedding cache file, reused across questions "
        "and runs (default: embeddings.sqlite under $MNEMON_CACHE_DIR or "
        "~/.cache/mnemon-langgraph)",
    )
    lme.add_argument(
        "--no-embedding-cache", action="store_true", help="embed every text afresh (no cache file)"
    )
    _add_lme_output_and_history(lme)
    _add_as_of(lme)
    add_models(lme)
    lme.set_defaults(func=_run)


def _add_as_of(lme: argparse.ArgumentParser) -> None:
    """``--as-of-evidence`` (:mod:`mnemon_langgraph.eval.as_of`)."""
    lme.add_argument(
        "--as-of-evidence",
        action="store_true",
        help="ask only the questions whose evidence spans two dates, each as of the midpoint "
        "between the old value's session and the next evidence session (dates from the gold "
        "labels); reports whether the View holds the old value's evidence and that no "
        "record dated later is pooled (no baselines or budget curve)",
    )


def _add_lme_output_and_history(lme: argparse.ArgumentParser) -> None:
    """``--no-plots``, ``--no-progress`` and ``--filler``/``--history-tokens`` (one size) of
    ``eval longmemeval``."""
    add_documents_args(lme)
    lme.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    lme.add_argument("--no-progress", action="store_true", help="no progress bar")
    lme.add_argument(
        "--filler",
        action="append",
        default=[],
        metavar="PATH",
        help="a file or folder of other conversations (e.g. the LongMemEval file itself); "
        "repeatable (with --history-tokens)",
    )
    lme.add_argument(
        "--history-tokens",
        default=None,
        metavar="N",
        help="put each question's history inside filler up to N WordPiece tokens (e.g. "
        "1M), its own sessions left out by content (with --filler)",
    )
    lme.add_argument("--filler-seed", type=int, default=0, metavar="N", help="default 0")
    lme.add_argument(
        "--tokens-per-day",
        type=int,
        default=None,
        metavar="N",
        help="pace of the simulated life that dates the filler (default 14000)",
    )
    lme.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows a stopped run with the same settings wrote to --out and ask "
        "only the missing questions",
    )


def _lme_history(args: argparse.Namespace) -> dict[str, Any]:
    from mnemon_langgraph.eval.filler import DEFAULT_TOKENS_PER_DAY, parse_token_count

    if bool(args.filler) != (args.history_tokens is not None):
        raise ConfigurationError("--filler and --history-tokens go together")
    return {
        "filler": list(args.filler),
        "history_tokens": parse_token_count(args.history_tokens)
        if args.history_tokens is not None
        else None,
        "filler_seed": args.filler_seed,
        "tokens_per_day": args.tokens_per_day or DEFAULT_TOKENS_PER_DAY,
        "resume": args.resume,
    }


def ints_or_none(text: str, flag: str) -> tuple[int, ...]:
    """Comma-separated positive integers (``none`` or empty: no values)."""
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise ConfigurationError(f"{flag} must be comma-separated integers, got {text!r}") from exc
    if any(v <= 0 for v in values):
        raise ConfigurationError(f"{flag} needs positive integers, got {text!r}")
    return values


def cached_embeddings(args: argparse.Namespace) -> tuple[Any, str | None]:
    """The run's embedder, wrapped in the embedding cache unless ``--no-embedding-cache``."""
    inner = embeddings_for(args.embeddings)
    if args.no_embedding_cache:
        return inner, None
    from mnemon_langgraph.search.embeddings import CachedEmbeddings

    cached = CachedEmbeddings(inner, args.embedding_cache)
    return cached, str(cached.path)


def _config(args: argparse.Namespace, cache: str | None) -> Any:
    from mnemon_langgraph.eval.longmemeval import LongMemEvalConfig

    for flag, value in (
        ("--budget-chars", args.budget_chars),
        ("--limit-questions", args.limit_questions),
    ):
        if value is not None and value <= 0:
            raise ConfigurationError(f"{flag} must be positive")
    baseline_ks = ints_or_none(args.baseline_k, "--baseline-k")
    if not baseline_ks:
        raise ConfigurationError("--baseline-k needs at least one turn count")
    types = (
        [t.strip() for t in args.question_types.split(",") if t.strip()]
        if (args.question_types)
        else None
    )
    return LongMemEvalConfig(
        budget_chars=args.budget_chars,
        judge=args.judge,
        planner=args.planner,
        limit_questions=args.limit_questions,
        question_types=types,
        baseline_ks=baseline_ks,
        budget_curve=ints_or_none(args.budget_curve, "--budget-curve"),
        answer_model=args.answer_model,
        grader_model=args.grader_model,
        keep_namespaces=args.keep_namespaces,
        embedding_cache=cache,
        plots=not args.no_plots,
        as_of_evidence=args.as_of_evidence,
        **_lme_history(args),
    )


def _run(args: argparse.Namespace) -> int:
    from mnemon_langgraph.cli._common import quiet_read_path
    from mnemon_langgraph.cli._eval_common import (
        build_judge,
        build_planner,
        eval_store,
        read_graph,
        report_failures,
        split_store,
    )
    from mnemon_langgraph.eval.longmemeval import run_longmemeval_eval

    embeddings, cache = cached_embeddings(args)
    config = _config(args, cache)
    judge = build_judge(args.judge, embeddings)
    planner = build_planner(args.planner)
    answer = chat_model(args.answer_model, "--answer-model") if args.answer_model else None
    grader = chat_model(args.grader_model, "--grader-model") if args.grader_model else None

    def graph_at(journal: Any, others: Any, budget: int | None) -> Any:
        settings = read_settings(args.read_setting, budget)
        return read_graph(journal, others, judge=judge, planner=planner, settings=settings)

    try:
        with eval_store(args, embeddings) as journal, quiet_read_path(args.verbose):
            store, others = split_store(args, journal, embeddings)
            summary = run_longmemeval_eval(
                args.file,
                args.out,
                graph=graph_at(journal, others, args.budget_chars),
                store=store,
                embeddings=embeddings,
                config=config,
                curve_graphs={b: graph_at(journal, others, b) for b in config.budget_curve},
                answer_model=answer,
                grader_model=grader,
                command=_command(args),
                progress=not args.no_progress,
            )
    finally:
        close = getattr(embeddings, "close", None)
        if callable(close):
            close()
    overall = summary["view"]["overall"]
    sessions = summary["view_sessions"]["overall"]
    print(
        f"{summary['counts']['scored_questions']} scored questions "
        f"({summary['counts']['abstention_questions']} abstention apart): all_hit "
        f"{_pct(overall.get('all_hit'))}, any_hit {_pct(overall.get('any_hit'))}, session all "
        f"{_pct(sessions.get('session_all_hit'))}, View {overall.get('view_chars') or 0:,.0f} "
        f"chars; judge AUC {_num(summary['judge_auc']['auc'])}; "
        f"{summary['ingest']['empty_turns_skipped']} empty turns skipped; wrote "
        f"{args.out}/summary.md"
    )
    return report_failures(summary)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _command(args: argparse.Namespace) -> str:
    parts = ["mnemon", "eval", "longmemeval", args.file, "--out", args.out]
    for flag in (
        "budget_chars",
        "judge",
        "planner",
        "limit_questions",
        "question_types",
        "baseline_k",
        "budget_curve",
        "answer_model",
        "grader_model",
        "store",
        "record_chars",
        "embeddings",
        "embedding_cache",
        "history_tokens",
        "tokens_per_day",
    ):
        value = getattr(args, flag)
        if value is not None:
            parts += ["--" + flag.replace("_", "-"), str(value)]
    for path in args.filler:
        parts += ["--filler", path]
    if args.filler:
        parts += ["--filler-seed", str(args.filler_seed)]
    parts += documents_flags(args)
    for flag in ("keep_namespaces", "no_embedding_cache", "no_plots", "no_progress", "resume"):
        if getattr(args, flag):
            parts.append("--" + flag.replace("_", "-"))
    return " ".join(parts)


def add_beam(sub: Any) -> None:
    """Add ``eval beam DIR`` to ``sub``."""
    beam = sub.add_parser(
        "beam",
        help="BEAM: every <tier>/<n>/chat.json + probing_questions under DIR",
        description="Ingest each BEAM conversation into its own namespace (batches as "
        "sessions), ask its probing questions through the read graph, and score the View "
        "against source_chat_ids by ability and tier, beside turn-level baselines; the "
        "per-question read work is reported per tier. Writes results.jsonl, summary.json "
        "and summary.md to --out.",
    )
    beam.add_argument("dir", metavar="DIR", help="a BEAM folder (chats/, one tier, or one chat)")
    beam.add_argument("--out", required=True, metavar="DIR", help="output folder")
    beam.add_argument(
        "--budget-chars",
        type=int,
        default=None,
        metavar="N",
        help="the View's character budget (default: 12000)",
    )
    beam.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="at most N questions per conversation (file order)",
    )
    beam.add_argument(
        "--per-ability",
        type=int,
        default=None,
        metavar="N",
        help="at most N questions per ability of each source conversation (file order; "
        "before --limit-questions)",
    )
    beam.add_argument(
        "--conversations",
        default=None,
        metavar="TIER/N,...",
        help="only these conversations (e.g. 100K/1,100K/2)",
    )
    beam.add_argument(
        "--concat",
        action="append",
        default=[],
        metavar="LABEL=TIER/N,...",
        help="also run one long conversation made of these, in order (sessions renumbered, "
        "each next one dated a day after the last, ids renumbered), as tier LABEL; "
        "TIER/A-B is a range; repeatable. Without --conversations, only these run "
        "(e.g. 1M-cat=100K/1-10)",
    )
    beam.add_argument(
        "--baseline-k",
        default="3,6,20,30,48",
        metavar="K,...",
        help="turn counts of the baselines (default 3,6,20,30,48)",
    )
    beam.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="journal to ingest into (default: a fresh temporary one)",
    )
    beam.add_argument(
        "--keep-namespaces",
        action="store_true",
        help="keep each conversation's namespace in the journal",
    )
    beam.add_argument(
        "--record-chars",
        type=int,
        default=None,
        metavar="N",
        help="most characters of a record the journal writes (default 600)",
    )
    _add_beam_backends(beam)
    _add_beam_history(beam, sub)
    beam.set_defaults(func=_run_beam)


def _add_beam_history(beam: argparse.ArgumentParser, sub: Any) -> None:
    """The long-history switches of ``eval beam`` (docs/results/ten-million.md), and
    ``eval filler`` (the filler pool of ``--history-tokens``, cached ahead) beside it."""
    from mnemon_langgraph.cli._eval_filler import add_cold_open, add_filler

    add_cold_open(beam)
    add_filler(sub)
    beam.add_argument(
        "--filler",
        action="append",
        default=[],
        metavar="PATH",
        help="a file or folder of other conversations (LongMemEval, BEAM chat.json, LoCoMo) "
        "to build long histories from; repeatable (with --history-tokens)",
    )
    beam.add_argument(
        "--history-tokens",
        default=None,
        metavar="N,...",
        help="ask each conversation inside histories of these sizes in WordPiece tokens "
        "(e.g. 100K,1M,10M): the conversation plus filler, dated before and among its "
        "sessions, no text repeated; only these tiers run (with --filler)",
    )
    beam.add_argument(
        "--filler-seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the filler's choice and dates (default 0)",
    )
    beam.add_argument(
        "--tokens-per-day",
        type=int,
        default=None,
        metavar="N",
        help="pace of the simulated life that dates the filler (default 14000: 10M "
        "tokens in about two years)",
    )
    beam.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows a stopped run with the same settings wrote to --out and ask "
        "only the missing questions",
    )


def _history_config(args: argparse.Namespace) -> dict[str, Any]:
    """``BeamEvalConfig`` fields of the long-history switches."""
    from mnemon_langgraph.eval.filler import DEFAULT_TOKENS_PER_DAY, parse_token_count

    sizes = [x for x in (args.history_tokens or "").split(",") if x.strip()]
    if bool(sizes) != bool(args.filler):
        raise ConfigurationError("--filler and --history-tokens go together")
    return {
        "filler": list(args.filler),
        "history_tokens": [parse_token_count(x) for x in sizes],
        "filler_seed": args.filler_seed,
        "tokens_per_day": args.tokens_per_day or DEFAULT_TOKENS_PER_DAY,
        "resume": args.resume,
    }


def _add_beam_backends(beam: argparse.ArgumentParser) -> None:
    """The embedder, cache, judge, planner and output switches of ``eval beam``."""
    add_embeddings_arg(beam, what="embedder of the journal, the local judge and the baselines")
    add_read_settings_arg(beam)
    beam.add_argument(
        "--embedding-cache",
        default=None,
        metavar="PATH",
        help="content-addressed embedding cache file (default under "
        "$MNEMON_CACHE_DIR or ~/.cache/mnemon-langgraph)",
    )
    beam.add_argument("--no-embedding-cache", action="store_true", help="no cache file")
    beam.add_argument(
        "--judge",
        default="local",
        metavar="SPEC",
        help="System 1: local (offline, default), llm:PROVIDER:MODEL or jev",
    )
    beam.add_argument(
        "--planner",
        default="rules",
        metavar="SPEC",
        help="System 2: rules (offline, default) or PROVIDER:MODEL",
    )
    beam.add_argument(
        "--consolidation-model",
        default=None,
        metavar="PROVIDER:MODEL",
        help="consolidate each namespace with this chat model before its questions (the "
        "batch job of mnemon consolidate) and read the View with its index (default: no "
        "index, the offline read path)",
    )
    add_documents_args(beam)
    beam.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    beam.add_argument("--no-progress", action="store_true", help="no progress bar")


def _run_beam(args: argparse.Namespace) -> int:
    from mnemon_langgraph.cli._common import quiet_read_path
    from mnemon_langgraph.cli._eval_common import (
        build_judge,
        build_planner,
        eval_store,
        read_graph,
        report_failures,
        split_store,
    )
    from mnemon_langgraph.cli._eval_filler import cold_reader
    from mnemon_langgraph.eval.beam import parse_concat_spec
    from mnemon_langgraph.eval.beam_eval import BeamEvalConfig, run_beam_eval

    for flag, value in (
        ("--budget-chars", args.budget_chars),
        ("--limit-questions", args.limit_questions),
        ("--per-ability", args.per_ability),
    ):
        if value is not None and value <= 0:
            raise ConfigurationError(f"{flag} must be positive")
    concat = [parse_concat_spec(spec) for spec in args.concat]
    labels = [label for label, _ in concat]
    if len(set(labels)) < len(labels):
        raise ConfigurationError(f"--concat labels must differ, got {labels}")
    ks = ints_or_none(args.baseline_k, "--baseline-k")
    if not ks:
        raise ConfigurationError("--baseline-k needs at least one turn count")
    config = BeamEvalConfig(
        budget_chars=args.budget_chars,
        judge=args.judge,
        planner=args.planner,
        limit_questions=args.limit_questions,
        per_ability=args.per_ability,
        conversations=[c.strip() for c in args.conversations.split(",") if c.strip()]
        if args.conversations
        else None,
        concat=concat,
        baseline_ks=ks,
        keep_namespaces=args.keep_namespaces,
        plots=not args.no_plots,
        consolidation_model=args.consolidation_model,
        **_history_config(args),
    )
    embeddings, _cache = cached_embeddings(args)
    judge = build_judge(args.judge, embeddings)
    planner = build_planner(args.planner)
    settings = read_settings(args.read_setting, args.budget_chars)
    try:
        with eval_store(args, embeddings) as journal, quiet_read_path(args.verbose):
            store, others = split_store(args, journal, embeddings)
            items = journal.item_store() if args.consolidation_model else None
            graph = read_graph(
                journal, others, judge=judge, planner=planner, settings=settings, items=items
            )
            summary = run_beam_eval(
                args.dir,
                args.out,
                graph=graph,
                store=store,
                embeddings=embeddings,
                config=config,
                command=_beam_command(args),
                progress=not args.no_progress,
                cold_read=cold_reader(args, journal),
                consolidate=_consolidate(args.consolidation_model, items),
            )
    finally:
        close = getattr(embeddings, "close", None)
        if callable(close):
            close()
    o = summary["view"]["overall"]
    print(
        f"{summary['counts']['scored_questions']} scored questions "
        f"({summary['counts']['unscored_questions']} apart): all_hit {_pct(o.get('all_hit'))}, "
        f"any_hit {_pct(o.get('any_hit'))}; judge AUC {_num(summary['judge_auc']['auc'])}; "
        f"wrote {args.out}/summary.md"
    )
    return report_failures(summary)


def _consolidate(spec: str | None, items: Any) -> Any:
    """``--consolidation-model``: the run's ``consolidate`` (``None`` without it)."""
    if spec is None:
        return None
    from mnemon_langgraph.cli._common import chat_model
    from mnemon_langgraph.eval.beam_eval import consolidator

    return consolidator(chat_model(spec, "--consolidation-model"), items)


def _beam_command(args: argparse.Namespace) -> str:
    """The ``eval beam`` command line as run (recorded in the summary)."""
    parts = ["mnemon", "eval", "beam", args.dir, "--out", args.out]
    for flag in (
        "budget_chars",
        "limit_questions",
        "per_ability",
        "conversations",
        "baseline_k",
        "store",
        "record_chars",
        "embeddings",
        "embedding_cache",
        "judge",
        "planner",
        "consolidation_model",
        "history_tokens",
        "filler_seed",
        "tokens_per_day",
    ):
        value = getattr(args, flag)
        if value is not None:
            parts += ["--" + flag.replace("_", "-"), str(value)]
    for spec in args.concat:
        parts += ["--concat", spec]
    parts += documents_flags(args)
    for path in args.filler:
        parts += ["--filler", path]
    for flag in (
        "keep_namespaces",
        "no_embedding_cache",
        "no_plots",
        "no_progress",
        "resume",
        "cold_open",
    ):
        if getattr(args, flag):
            parts.append("--" + flag.replace("_", "-"))
    return " ".join(parts)
