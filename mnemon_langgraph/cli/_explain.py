"""``mnemon explain RECORD_ID "MESSAGE"``: why one record is or is not in the View.

Runs the read path once for MESSAGE (as ``mnemon view`` does) and tells the story of one
record: the searches that pooled it and at which ranks, System 1's judgments of it, the
rule that kept or cut it, and where the View placed it. An id the namespace does not hold
is an error (exit 2), not a record "never pooled".

Example::

    mnemon explain r-3f2a9c "Where does Ada live?" --db memory.db --namespace ada
"""

from __future__ import annotations

import argparse
import sys
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
)

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``explain`` subcommand."""
    p = sub.add_parser(
        "explain",
        help="why a record is (not) in the View for a message",
        description="Run the read path for MESSAGE and explain RECORD_ID's fate: its pooled "
        "ranks, its judgments, the rule that kept or cut it and its place in the View.",
    )
    p.add_argument("record_id", metavar="RECORD_ID", help="a record id (a unique prefix works)")
    p.add_argument("message", help="the user message to read memory for")
    add_db_arg(p)
    add_namespace_arg(p)
    add_read_args(p)
    p.add_argument("--json", action="store_true", help="print JSON: record, in_view, details")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Explain the record; exit code 1 when a model call of the read path failed."""
    from mnemon_langgraph.read.view import explain

    ns = namespace_of(args)
    assert ns is not None  # --namespace is required
    settings = read_settings(args.read_setting, args.budget_chars)
    with open_store(args.db) as store:
        record_id = resolve_record_id(store, ns, args.record_id)
        view = read_view(store, args.message, ns, args, settings)
    text = explain(view, record_id)
    errors = [str(e) for e in (view.trace.get("errors") or [])]
    if args.json:
        print_json(_details(view, record_id, text))
    else:
        print(text)
    if errors:
        print(
            f"mnemon: error: {len(errors)} model call(s) failed, the View fell back to the "
            f"offline defaults; first: {errors[0]}",
            file=sys.stderr,
        )
        return 1
    return 0


def _details(view: Any, record_id: str, text: str) -> dict[str, Any]:
    """The trace's facts about ``record_id``, for ``--json``."""
    trace = view.trace
    return {
        "record": record_id,
        "in_view": record_id in view.record_ids,
        "pool": next((p for p in trace.get("pool", []) if p["id"] == record_id), None),
        "judgments": [j for j in trace.get("judgments", []) if j["target"] == record_id],
        "rules": [
            a["reason"] for a in trace.get("actions", []) if record_id in a.get("reason", "")
        ],
        "placement": trace.get("placement", {}).get(record_id),
        "explain": text,
    }
