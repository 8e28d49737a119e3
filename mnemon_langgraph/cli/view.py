"""``mnemon view "MESSAGE"``: run the read path once and print the View.

Examples::

    mnemon view "When did Caroline go to the support group?" --db memory.db --namespace conv-26
    mnemon view "How many pets?" --db memory.db --namespace ada --json
    mnemon view "…" --db memory.db --namespace ada --planner openai:gpt-4.1-mini \\
        --judge llm:openai:gpt-4.1-mini
    mnemon view "…" --db memory.db --namespace ada --explain RECORD_ID
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_arg,
    open_store,
    print_json,
)
from mnemon_langgraph.errors import ConfigurationError

__all__ = ["load_judge", "load_planner", "register"]


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
    p.add_argument(
        "--planner",
        default="rules",
        metavar="rules|PROVIDER:MODEL",
        help="System 2: 'rules' (default, no model) or a chat model for "
        "langchain's init_chat_model, e.g. openai:gpt-4.1-mini",
    )
    p.add_argument(
        "--judge",
        default="local",
        metavar="local|llm:PROVIDER:MODEL|jev",
        help="System 1: 'local' (default, offline), 'llm:PROVIDER:MODEL' or 'jev'",
    )
    p.add_argument(
        "--explain",
        metavar="RECORD_ID",
        action="append",
        help="also explain why a record is (not) in the View; repeatable",
    )
    p.set_defaults(func=run)


def load_planner(spec: str) -> Any:
    """``rules`` → ``None`` (the rule planner); ``PROVIDER:MODEL`` → a chat model."""
    from mnemon_langgraph.backends import planner_from_spec

    try:
        return planner_from_spec(spec)
    except ConfigurationError as exc:
        raise ConfigurationError(f"--planner: {exc}") from exc


def load_judge(spec: str, embeddings: Any = None) -> Any:
    """``local`` | ``llm:PROVIDER:MODEL`` | ``jev`` → a decision model."""
    from mnemon_langgraph.backends import judge_from_spec

    try:
        return judge_from_spec(spec, embeddings=embeddings)
    except ConfigurationError as exc:
        raise ConfigurationError(f"--judge: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    """Run the read path once; print the View (text or JSON)."""
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.state import ReadContext
    from mnemon_langgraph.read.view import explain

    namespace = namespace_arg(args.namespace)
    planner = load_planner(args.planner)
    store = open_store(args.db)
    try:
        judge = load_judge(args.judge, getattr(store, "embeddings", None))
        graph = create_read_graph(source=store, judge=judge, planner=planner)
        result = graph.invoke(
            {"messages": [HumanMessage(args.message)]}, context=ReadContext(namespace=namespace)
        )
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()
    view = result["view"]
    if args.json:
        data = view.to_dict()
        if args.explain:
            data["explain"] = {rid: explain(view, rid) for rid in args.explain}
        print_json(data)
        return 0
    print(view.text)
    if view.empty_reason:
        print(f"\n(empty View: {view.empty_reason})")
    counts = view.trace.get("counts", {})
    print(
        f"\n-- {len(view.records)} records, {len(view.text)} chars; searches "
        f"{counts.get('searches')}, S1 calls {counts.get('s1_calls')}, waves "
        f"{counts.get('waves')}, rounds {counts.get('rounds')}, S2 calls {counts.get('s2_calls')}"
    )
    for rid in args.explain or ():
        print("\n" + explain(view, rid))
    return 0
