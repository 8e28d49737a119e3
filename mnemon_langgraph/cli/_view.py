"""``mnemon view "MESSAGE"``: run the read path once and print the View.

Examples::

    mnemon view "When did Caroline go to the support group?" --db memory.db --namespace conv-26
    mnemon view "How many pets?" --db memory.db --namespace ada --json
    mnemon view "…" --db memory.db --namespace ada --planner openai:gpt-4.1-mini \\
        --judge llm:openai:gpt-4.1-mini
    mnemon view "…" --db memory.db --namespace ada --explain RECORD_ID
    mnemon view "…" --db memory.db --namespace ada --budget-chars 2000 \\
        --read-setting excerpt_slots=none
    mnemon view "Where do I work?" --db memory.db --namespace ada --as-of 2024-03-01
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    add_read_args,
    namespace_of,
    open_store,
    print_json,
    read_settings,
    read_view,
    resolve_record_id,
    say_if_no_namespace,
)

__all__ = ["as_of_arg", "register"]


def register(sub: Any) -> None:
    """Add the ``view`` subcommand."""
    p = sub.add_parser(
        "view",
        help="run the read path for one message and print the View",
        description="Plan, retrieve, judge and compose the View for MESSAGE.",
    )
    p.add_argument("message", help="the user message to read memory for")
    add_db_arg(p)
    add_namespace_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON: text, records, items, trace")
    add_read_args(p)
    p.add_argument(
        "--as-of",
        metavar="DATE",
        type=as_of_arg,
        help="read the memory as it stood then: only records dated at or before DATE "
        "(ISO; a bare date includes that day; undated records are left out)",
    )
    p.add_argument(
        "--explain",
        metavar="RECORD_ID",
        action="append",
        help="also explain why a record is (not) in the View; repeatable",
    )
    p.set_defaults(func=run)


def as_of_arg(value: str) -> Any:
    """``--as-of`` / ``--before``: an ISO date or time (a bare date: through its end)."""
    from mnemon_langgraph.errors import InputError
    from mnemon_langgraph.read._as_of import as_of_bound

    try:
        return as_of_bound(value)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    """Run the read path once; print the View (text or JSON).

    Returns 1 when a model call failed: the read path then falls back (rule planner, local
    screening) and still prints a View, but a command run to try a model must not look as if
    the model worked.
    """
    from mnemon_langgraph.read.view import explain

    view = _read(args)
    if args.json:
        data = view.to_dict()
        if args.explain:
            data["explain"] = {rid: explain(view, rid) for rid in args.explain}
        print_json(data)
    else:
        _print_text(view, args.explain or ())
    return _report_model_errors(view)


def _read(args: argparse.Namespace) -> Any:
    namespace = namespace_of(args)
    assert namespace is not None  # --namespace is required
    settings = read_settings(args.read_setting, args.budget_chars)
    with open_store(args.db) as store:
        # An --explain id the namespace does not hold is an error, not a record "never pooled".
        args.explain = [resolve_record_id(store, namespace, rid) for rid in args.explain or ()]
        view = read_view(store, args.message, namespace, args, settings)
        if not view.records:
            say_if_no_namespace(store, namespace, args.db)
        return view


def _print_text(view: Any, explain_ids: Sequence[str]) -> None:
    from mnemon_langgraph.read.view import explain

    print(view.text)
    if view.empty_reason:
        print(f"\n(empty View: {view.empty_reason})")
    counts = view.trace.get("counts", {})
    print(
        f"\n-- {len(view.records)} records, {len(view.text):,} chars; "
        f"{counts.get('searches')} searches, {counts.get('s1_calls')} judge (System 1) calls, "
        f"{counts.get('s2_calls')} planner (System 2) calls"
    )
    for rid in explain_ids:
        print("\n" + explain(view, rid))


def _report_model_errors(view: Any) -> int:
    errors = [str(e) for e in (view.trace.get("errors") or [])]
    if not errors:
        return 0
    print(
        f"mnemon: error: {len(errors)} model call(s) failed, the View fell back to the "
        f"offline defaults; first: {errors[0]}",
        file=sys.stderr,
    )
    return 1
