"""``mnemon rename-namespace``: move one namespace's memory to another namespace, whole.

Example (memory written under the one-part convention of earlier versions, ``("ada",)``,
moved to the convention every surface uses now, ``("users", "ada")``)::

    mnemon rename-namespace --db memory.db --namespace ada --to-user ada

The move is an export, the same file with the new namespace, an import and an erase — the
steps ``mnemon export`` / ``mnemon import`` / ``mnemon erase`` take, so nothing is left behind
that an erase would not remove: the old namespace's records, vectors, items and index folder
are erased (audited: one row says an erase happened, by ``cli:rename-namespace``), and the new
one holds the same messages, index items and key-value items. The target must be empty (no
merge), and the copy is checked before the source is erased; the records are embedded again
with the store's model.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_of,
    open_store,
    print_json,
    redact_db,
)

__all__ = ["ACTOR", "register", "rename_namespace", "run"]

ACTOR = "cli:rename-namespace"
"""The actor of the audit row the erase of the old namespace writes."""


def register(sub: Any) -> None:
    """Add the ``rename-namespace`` subcommand."""
    p = sub.add_parser(
        "rename-namespace",
        help="move a namespace's memory to another namespace (e.g. ('ada',) to ('users', 'ada'))",
        description="Copy every message, index item and key-value item of a namespace into an "
        "empty one, check the copy, then erase the old namespace (audited). Moves memory "
        "written under the one-part convention of earlier versions: --namespace ada "
        "--to-user ada.",
    )
    add_db_arg(p)
    add_namespace_arg(p, help_suffix=" (the namespace moved)")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument(
        "--to-user", metavar="USER_ID", help="move it to the namespace ('users', USER_ID)"
    )
    to.add_argument(
        "--to", action="append", metavar="PART", help="move it to this namespace (repeatable)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _renamed(lines: list[str], target: tuple[str, ...]) -> list[str]:
    """The export's lines as the export of ``target`` would be: every ``namespace`` field set
    to it and every record id (a hash over the namespace) replaced by the one the store gives
    the same record in ``target``, in message lines, index item links and the header."""
    from mnemon_langgraph.records._chunking import stable_hash
    from mnemon_langgraph.transfer import read_export

    parsed = read_export(lines, name="<rename>")
    new_id = {
        r.id: "r-" + stable_hash(list(target), r.source, [[p.id, p.part] for p in r.pieces])
        for r in parsed.records
    }
    out = []
    for line in lines:
        data = json.loads(line)
        if "namespace" in data:
            data["namespace"] = list(target)
        for key in ("record", "consolidated_through"):
            if data.get(key) in new_id:
                data[key] = new_id[data[key]]
        if isinstance(data.get("record_ids"), list):
            data["record_ids"] = [new_id.get(rid, rid) for rid in data["record_ids"]]
        out.append(json.dumps(data, ensure_ascii=False))
    return out


def _counts(store: Any, ns: tuple[str, ...]) -> dict[str, int]:
    """What an export of ``ns`` holds: records, message lines, index and key-value items."""
    from mnemon_langgraph.transfer import export_lines, read_export

    parsed = read_export(export_lines(store, ns))
    return {
        "records": len(parsed.records),
        "messages": sum(len(r.pieces) for r in parsed.records),
        "items": len(parsed.items),
        "kv_items": len(parsed.kv_items),
    }


def rename_namespace(store: Any, source: Any, target: Any) -> dict[str, Any]:
    """Move ``source``'s memory to the empty namespace ``target`` (see the module docstring).

    Returns:
        ``{"from", "to", "records", "messages", "items", "kv_items", "records_erased"}``.

    Raises:
        InputError: ``source`` holds nothing, ``target`` is not empty, or they are equal.
        RuntimeMnemonError: The copy does not match the source (the source is kept).
    """
    from mnemon_langgraph.errors import InputError, RuntimeMnemonError
    from mnemon_langgraph.integrations.basestore import MnemonBaseStore
    from mnemon_langgraph.transfer import export_lines, import_jsonl, read_export
    from mnemon_langgraph.types import normalize_namespace

    src, dst = normalize_namespace(source), normalize_namespace(target)
    if src == dst:
        raise InputError(f"namespace {list(src)!r} is already where it should be")
    spaces = set(store.namespaces())
    if src not in spaces:
        raise InputError(f"namespace {list(src)!r} holds no records; nothing to move")
    if dst in spaces:
        raise InputError(f"namespace {list(dst)!r} is not empty; rename-namespace never merges")
    before = _counts(store, src)
    import_jsonl(store, read_export(_renamed(export_lines(store, src), dst), name="<rename>"))
    after = _counts(store, dst)
    if after != before:
        raise RuntimeMnemonError(
            f"the copy in {list(dst)!r} holds {after}, the source {before}; the source "
            "was kept: erase the copy (mnemon erase) and report this"
        )
    with MnemonBaseStore(store) as items:
        erased = items.erase_namespace(src, actor=ACTOR)
    return {"from": list(src), "to": list(dst), **after, "records_erased": erased["records"]}


def run(args: argparse.Namespace) -> int:
    """Move the namespace; prints what moved."""
    from mnemon_langgraph.read.namespaces import user_namespace
    from mnemon_langgraph.types import normalize_namespace

    source = namespace_of(args)
    target = user_namespace(args.to_user) if args.to_user is not None else args.to
    with open_store(args.db) as store:
        result = rename_namespace(store, source, normalize_namespace(target))
    if args.json:
        print_json({"db": redact_db(args.db), **result})
    else:
        print(
            f"moved {result['messages']} messages, {result['items']} index items and "
            f"{result['kv_items']} key-value items from {result['from']} to {result['to']} "
            f"in {redact_db(args.db)}; the old namespace was erased (audited)"
        )
    return 0
