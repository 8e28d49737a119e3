"""``mnemon erase``: erase one namespace from a journal and its index folder.

Removes every record of the namespace, its vectors, message ids, consolidated index items,
their links and consolidation state (every table of the journal's SQLite file with a
``namespace`` column, see
:meth:`~mnemon_langgraph.store.embedded._journal.Journal.erase_namespace`), then
deletes the namespace's BM25/vector index folder (``<db>.indexes/<hash>/``), whose
vocabulary holds words of the erased text. The audit trail is append-only: its earlier rows
stay, and it gains one saying only that an erase happened, when, by whom (``cli``), of which
namespace and how many records.

No embedder is loaded: erasing works whatever embedding model wrote the journal.
Without ``--yes`` the command asks for confirmation on a terminal and refuses otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_of,
    print_json,
    redact_db,
)

__all__ = ["erase_namespace_files", "register", "run"]


def register(sub: Any) -> None:
    """Add the ``erase`` subcommand."""
    p = sub.add_parser(
        "erase",
        help="erase a namespace: records, vectors, index items, links and index files",
        description=(
            "Erase a namespace from the journal: its records, vectors, message ids, "
            "consolidated index items, their links and consolidation state, and its "
            "BM25/vector index folder. The audit trail (append-only, no text) keeps its "
            "earlier rows and gains one saying only that an erase happened, when, by whom, "
            "of which namespace and how many records. "
            "Irreversible; no embedding model is loaded."
        ),
    )
    add_db_arg(p)
    add_namespace_arg(p)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--actor", default="cli", help="who asks, for the audit row (default: cli)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def erase_namespace_files(db: str | Path, namespace: Any, *, actor: str = "cli") -> int:
    """Erase ``namespace`` from the journal at ``db`` and delete its index folder.

    Same effect as :meth:`MnemonStore.erase_namespace
    <mnemon_langgraph.store.MnemonStore.erase_namespace>`, without loading an embedder.
    Crash order: index files (under the journal's real path and the path as given, a
    symlinked folder's target included), then the journal's rows in one transaction
    followed by a WAL checkpoint, then the index files again. A kill at any point leaves
    either the namespace whole (rerun the erase) or no trace after the next open.

    Returns:
        Number of records erased.

    Raises:
        ConfigurationError: No journal at ``db``.
        NamespaceError: The namespace is unusable.
        EraseError: An index file could not be removed (nothing was erased from the
            journal then).
    """
    from mnemon_langgraph.store import is_postgres_url
    from mnemon_langgraph.store.embedded._index import NamespaceIndex, all_index_folders
    from mnemon_langgraph.store.embedded._journal import Journal
    from mnemon_langgraph.types import normalize_namespace

    if is_postgres_url(db):
        from mnemon_langgraph.store.postgres import PostgresStore

        with PostgresStore.for_maintenance(str(db)) as store:
            return store.erase_namespace(normalize_namespace(namespace), actor=actor)
    path = Path(db)
    _require_journal(path)
    ns = normalize_namespace(namespace)
    with Journal(path) as journal:
        model = journal.embedding_model()
        folders = all_index_folders(path, ns)
        index = NamespaceIndex(journal, ns, folders[0], model[1] if model else 1)
        index.erase_files(folders[1:])
        count = journal.erase_namespace(ns, actor=actor)
        index.erase_files(folders[1:])
    return count


def _require_journal(path: Path) -> None:
    from mnemon_langgraph.errors import ConfigurationError

    if not path.is_file():
        raise ConfigurationError(f"no journal at {path}")


def _namespace_exists(db: str | Path, ns: tuple[str, ...]) -> bool:
    """Whether the store holds any row of ``ns`` (audit rows aside: an erase of nothing
    writes none), or, embedded, an index folder of it is left."""
    from mnemon_langgraph.store import is_postgres_url
    from mnemon_langgraph.store.embedded._index import all_index_folders
    from mnemon_langgraph.store.embedded._journal import Journal

    if is_postgres_url(db):
        from mnemon_langgraph.store.postgres import PostgresStore

        with PostgresStore.for_maintenance(str(db)) as store:
            return store.holds_namespace(ns)

    with Journal(db, read_only=True) as journal:
        if journal.holds_namespace(ns):
            return True
    return any(f.exists() or f.is_symlink() for f in all_index_folders(db, ns))


def _confirm(db: str, ns: tuple[str, ...]) -> bool:
    if not sys.stdin.isatty():
        print(
            "mnemon: error: erase is irreversible; pass --yes to confirm (stdin is not a terminal)",
            file=sys.stderr,
        )
        return False
    answer = input(f"Erase every record of namespace {list(ns)!r} from {redact_db(db)}? [y/N] ")
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("nothing erased")
    return False


def run(args: argparse.Namespace) -> int:
    """Erase the namespace; exit code 1 when not confirmed or when it does not exist."""
    ns = namespace_of(args)
    assert ns is not None  # --namespace is required
    from mnemon_langgraph.store import is_postgres_url

    if not is_postgres_url(args.db):
        _require_journal(Path(args.db))
    if not _namespace_exists(args.db, ns):  # the same answer on both backends
        print(
            f"mnemon: error: namespace {list(ns)!r} does not exist in {redact_db(args.db)}; "
            "nothing erased",
            file=sys.stderr,
        )
        return 1
    if not args.yes and not _confirm(args.db, ns):
        return 1
    count = erase_namespace_files(args.db, ns, actor=args.actor)
    if args.json:
        print_json({"db": redact_db(args.db), "namespace": list(ns), "records_erased": count})
    else:
        print(f"erased {count} records of namespace {list(ns)!r} from {redact_db(args.db)}")
    return 0
