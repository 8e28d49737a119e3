"""``mnemon retention``: apply a retention policy to one namespace, or place a legal hold.

``mnemon retention --db memory.db --user ada --older-than 30d [--keep-last N] [--dry-run]``
removes what :meth:`MnemonStore.apply_retention
<mnemon_langgraph.store.MnemonStore.apply_retention>` removes (records dated before the
cut-off with their message ids, vectors and BM25 statistics, consolidated items linked only
to them, the text other items quote from them, key-value items written before the cut-off),
with the no-residue guarantee of ``mnemon erase``, and prints the receipt. ``--dry-run``
prints what would go and removes nothing. ``--hold`` / ``--release`` place or lift a legal
hold: a held namespace is skipped by every retention run. No embedding model is loaded.
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_of,
    open_for_reading,
    print_json,
    redact_db,
)

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``retention`` subcommand."""
    p = sub.add_parser(
        "retention",
        help="remove a namespace's records older than an age (erase-grade), or hold it",
        description=(
            "Apply a retention policy to one namespace: records whose conversation date is "
            "older than --older-than go, with their message ids, vectors and BM25 statistics, "
            "the consolidated items linked only to them, the text other items quote from "
            "them, and the key-value items under the namespace last written before the "
            "cut-off. Undated records are never removed by age. One audit row (ids and "
            "counts, never text); the same no-residue scrub as erase. A namespace under a "
            "legal hold (--hold) is skipped."
        ),
    )
    add_db_arg(p)
    add_namespace_arg(p)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--older-than", metavar="AGE", help="remove what is older than AGE (30d, 12w, 36h …)"
    )
    what.add_argument("--hold", action="store_true", help="place a legal hold on the namespace")
    what.add_argument("--release", action="store_true", help="lift the namespace's legal hold")
    p.add_argument(
        "--keep-last",
        type=int,
        metavar="N",
        help="keep the newest N dated records whatever their age",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would go; remove nothing")
    p.add_argument("--reason", default="", help="why (the audit row of --hold / --release)")
    p.add_argument("--actor", default="cli", help="who asks, for the audit row (default: cli)")
    p.add_argument("--json", action="store_true", help="print the receipt as JSON")
    p.set_defaults(func=run)


def _describe(receipt: Any) -> str:
    ns = list(receipt.namespace)
    if receipt.held:
        return f"namespace {ns!r} is under a legal hold: skipped, nothing removed"
    verb = "would remove" if receipt.dry_run else "removed"
    text = (
        f"{verb} {receipt.records} records ({receipt.messages} messages, {receipt.vectors} "
        f"vectors), {receipt.items_removed} consolidated items, trimmed {receipt.items_trimmed}, "
        f"and {receipt.kv_items} key-value items of namespace {ns!r} dated before "
        f"{receipt.cutoff:%Y-%m-%d %H:%M} UTC; kept {receipt.undated_kept} undated records"
    )
    if receipt.failures_redacted:
        text += f"; redacted {receipt.failures_redacted} consolidation failure messages"
    if receipt.kept_by_keep_last:
        text += f" and {receipt.kept_by_keep_last} older records (--keep-last)"
    return text + ("; dry run: nothing removed" if receipt.dry_run else "")


def run(args: argparse.Namespace) -> int:
    """Apply the policy (or place / lift the hold) and print the receipt."""
    from mnemon_langgraph.store._internal.retention import parse_age

    ns = namespace_of(args)
    assert ns is not None  # --user / --namespace is required
    age = parse_age(args.older_than) if args.older_than is not None else None
    with open_for_reading(args.db) as store:
        if age is None:
            held = bool(args.hold)
            call = store.hold if held else store.release
            changed = call(ns, actor=args.actor, reason=args.reason)
            state = "held" if held else "not held"
            if args.json:
                print_json({"namespace": list(ns), "held": held, "changed": changed})
            else:
                print(f"namespace {list(ns)!r} is {state}" + ("" if changed else " (unchanged)"))
            return 0
        receipt = store.apply_retention(
            ns, older_than=age, keep_last=args.keep_last, dry_run=args.dry_run, actor=args.actor
        )
    if args.json:
        print_json({"db": redact_db(args.db), **receipt.as_dict()})
    else:
        print(_describe(receipt))
    return 0
