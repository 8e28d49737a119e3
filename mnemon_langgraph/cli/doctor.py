"""``mnemon doctor``: report, and repair, damaged or stale indexes of a journal.

Indexes are derived from the journal, so repairing is always the same step: rebuild from
the journal's records and stored vectors (nothing is re-embedded, no model is loaded).
The doctor checks, per namespace:

* the checkpoint files load (checksums, field types, shapes) and match the journal
  (same generation, not ahead of it); otherwise *damaged* or *stale* → rebuilt;
* the index is not behind the journal (records written while saves failed) → caught up;
* a vector index due for conversion (flat past the threshold, or IVF grown fourfold
  since its cells were trained) → rebuilt (writes never convert);
* records with a session number no index can hold (journals written before validation);
* index folders whose namespace has no rows left (an erase interrupted between its
  steps, or a namespace erased by an older version) → removed, as they hold its words.

``--check`` only reports; the exit code is then 1 when anything needs repair.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg, add_namespace_arg, namespace_arg, print_json

__all__ = ["NamespaceReport", "diagnose", "register", "run"]


@dataclass
class NamespaceReport:
    """What the doctor found for one namespace (or one orphaned index folder)."""

    namespace: list[str]
    records: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    p = sub.add_parser(
        "doctor",
        help="report and repair damaged or stale indexes",
        description=(
            "Check every namespace's BM25 and vector index files against the journal "
            "(checksums, field types, generation, record count) and rebuild the ones "
            "that are damaged, stale or behind; remove index folders left by an "
            "interrupted erase. No embedding model is loaded."
        ),
    )
    add_db_arg(p)
    add_namespace_arg(p, required=False, help_suffix="; default: every namespace")
    p.add_argument("--check", action="store_true", help="only report; exit 1 if anything is wrong")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)


def _check_namespace(journal: Any, db: Path, ns: tuple[str, ...], repair: bool) -> NamespaceReport:
    from mnemon_langgraph.search.hybrid import NamespaceIndex, index_folder
    from mnemon_langgraph.types import MAX_SESSION

    model = journal.embedding_model()
    index = NamespaceIndex(journal, ns, index_folder(db, ns), model[1] if model else 1)
    report = NamespaceReport(list(ns), records=journal.count(ns))
    generation, journal_max = journal.generation(ns), journal.max_seq(ns)
    problem = index.checkpoint_problem()
    if problem is not None:
        report.problems.append(f"index files unusable: {problem}")
    elif index.max_seq < journal_max:
        report.problems.append(f"index behind the journal (seq {index.max_seq} < {journal_max})")
    elif len(index.bm25) < report.records:
        report.problems.append(f"{report.records - len(index.bm25)} records missing from the index")
    elif index.vectors.needs_conversion:
        report.problems.append(
            f"{index.vectors.kind} vector index due for conversion (past the threshold or "
            "grown fourfold since its IVF cells were trained)"
        )
    bad = sum(1 for r in journal.records(ns) if not 1 <= r.session <= MAX_SESSION)
    if bad:
        report.problems.append(
            f"{bad} records with a session outside 1..{MAX_SESSION} (indexed as {MAX_SESSION})"
        )
    if repair and report.problems:
        index.rebuild(generation)
        if index.skipped:
            report.problems.append(f"{len(index.skipped)} records the index cannot take")
        if index.save_problem:
            report.repaired.append(f"rebuilt in memory only; cannot save: {index.save_problem}")
        else:
            report.repaired.append(f"rebuilt from the journal ({len(index.bm25)} records)")
    return report


def _orphans(journal: Any, db: Path, repair: bool) -> list[NamespaceReport]:
    """Index folders of namespaces with no rows left in the journal."""
    from mnemon_langgraph.search.hybrid import index_folder, indexes_root, remove_index_folder

    root = indexes_root(db)
    if not root.is_dir():
        return []
    reports = []
    live = {index_folder(db, ns).name for ns in journal.namespaces()}
    for folder in sorted(root.iterdir()):
        if folder.name in live:
            continue  # a namespace with records: checked (and repaired) by _check_namespace
        try:
            ns = json.loads((folder / "namespace.json").read_text(encoding="utf-8"))
            ns = [str(x) for x in ns] if isinstance(ns, list) and ns else None
        except (OSError, ValueError):
            ns = None
        if ns is not None and journal.holds_namespace(tuple(ns)):
            continue
        report = NamespaceReport(ns or [f"<unknown: {folder.name}>"])
        report.problems.append(f"index folder {folder} belongs to no namespace in the journal")
        if repair:
            remove_index_folder(folder)
            report.repaired.append("removed")
        reports.append(report)
    return reports


def diagnose(
    db: str | Path, namespace: Any = None, *, repair: bool = True
) -> list[NamespaceReport]:
    """Check (and with ``repair``, fix) the indexes of one or every namespace of ``db``.

    Raises:
        ConfigurationError: No journal at ``db``, or ``db`` is a PostgreSQL URL (the doctor
            checks SQLite journals and their index files; PostgreSQL keeps no index files).
    """
    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.storage.journal import Journal
    from mnemon_langgraph.store import is_postgres_url
    from mnemon_langgraph.types import normalize_namespace

    if is_postgres_url(db):
        raise ConfigurationError(
            "doctor checks SQLite journals and their index files; for PostgreSQL use "
            "`mnemon stats --db URL`"
        )
    path = Path(db)
    if not path.is_file():
        raise ConfigurationError(f"no journal at {path}")
    with Journal(path, read_only=not repair) as journal:
        spaces = [normalize_namespace(namespace)] if namespace else journal.namespaces()
        reports = [_check_namespace(journal, path, ns, repair) for ns in spaces]
        if namespace is None:
            reports += _orphans(journal, path, repair)
    return reports


def run(args: argparse.Namespace) -> int:
    """Print the diagnosis; exit 1 with ``--check`` when anything needs repair."""
    reports = diagnose(args.db, namespace_arg(args.namespace), repair=not args.check)
    if args.json:
        print_json([vars(r) for r in reports])
    else:
        if not reports:
            print("no namespaces in the journal")
        for r in reports:
            name = " / ".join(r.namespace)
            state = "ok" if r.healthy else "; ".join(r.problems)
            print(f"{name}: {r.records} records; {state}")
            for fix in r.repaired:
                print(f"  repaired: {fix}")
    needs = any(not r.healthy for r in reports)
    return 1 if (args.check and needs) else 0
