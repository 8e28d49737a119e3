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

Before any of that it checks the journal itself (:func:`journal_check`): an empty or
foreign file, a failed ``PRAGMA integrity_check``, message or vector rows naming no record
(``PRAGMA foreign_key_check``), namespace keys that do not decode, and stored vectors whose
length is not the model's dimension. The doctor never removes what it cannot rebuild from
the journal: on a journal it cannot trust it repairs nothing (index folders included), a
namespace whose key does not decode keeps any index folder that may be its own. Stored
vectors of the wrong length (a damaged row) are the one repair that needs the model: their
records are re-embedded with the model the journal records, when this machine builds the
same one (the default embedder, or ``MNEMON_EMBEDDINGS``); otherwise the namespace is
reported, not rebuilt, with the model to use. Each namespace is reported on its own; one
that cannot be checked does not stop the others.

On a PostgreSQL URL (nothing on local disk) it checks the database instead, through
:mod:`mnemon_langgraph.store.postgres._health`: the schema version (a migration due), the
recorded embedding model identity against the default embedder's, that every index of
the schema exists and is valid, and per namespace the BM25 packs due for a refresh.

``--check`` only reports; the exit code is then 1 when anything needs repair. Without it,
the exit code is 1 when something is left that the doctor cannot repair.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg, add_namespace_arg, namespace_of, print_json

__all__ = [
    "JournalCheck",
    "NamespaceReport",
    "diagnose",
    "diagnose_postgres",
    "journal_check",
    "register",
    "run",
]

SQLITE_HEADER = b"SQLite format 3\x00"
# Rows of these tables name a record; without it they are leftovers of nothing (the
# messages table is an index of records.message_ids, a vector is derived from its record).
DERIVED_TABLES = ("messages", "vectors")


@dataclass
class NamespaceReport:
    """What the doctor found for one namespace (or one orphaned index folder)."""

    namespace: list[str]
    records: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    unrepairable: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems


@dataclass
class JournalCheck:
    """What the doctor found in the journal file itself, before looking at any index.

    Attributes:
        problems: Damage found, in words.
        usable: ``False`` when the journal cannot be trusted at all (empty, not SQLite, not
            a mnemon journal, failed integrity check): nothing is then repaired.
        namespaces: The namespaces whose stored key decodes, sorted.
        undecodable: Stored namespace keys that are not a JSON list of strings.
        orphan_rows: Per derived table, rows naming a record that does not exist.
        bad_vectors: Per namespace, stored vectors whose length is not the model's.
    """

    problems: list[str] = field(default_factory=list)
    usable: bool = True
    namespaces: list[tuple[str, ...]] = field(default_factory=list)
    undecodable: list[str] = field(default_factory=list)
    orphan_rows: dict[str, int] = field(default_factory=dict)
    bad_vectors: dict[tuple[str, ...], int] = field(default_factory=dict)


def _decode_namespace(key: str) -> tuple[str, ...] | None:
    try:
        value = json.loads(key)
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(x, str) for x in value):
        return None
    return tuple(value)


def _read_only(path: Path) -> sqlite3.Connection:
    # A read-only URI: opening must never create or migrate anything (Journal() would
    # write a fresh schema into an empty file, hiding that it is empty).
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _file_problem(path: Path) -> str | None:
    size = path.stat().st_size
    if size == 0:
        return "the journal file is empty (0 bytes); restore it from a backup"
    with path.open("rb") as fh:
        if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            return "the journal file is not an SQLite database"
    return None


def journal_check(path: Path) -> JournalCheck:
    """Check the journal file itself: readable, intact, consistent (never writes).

    Args:
        path: The journal's SQLite file.
    """
    check = JournalCheck()
    problem = _file_problem(path)
    if problem is not None:
        check.problems.append(problem)
        check.usable = False
        return check
    conn = _read_only(path)
    try:
        _check_tables(conn, check)
    except sqlite3.DatabaseError as exc:
        check.problems.append(f"the journal cannot be read: {exc}")
        check.usable = False
    finally:
        conn.close()
    return check


def _check_tables(conn: sqlite3.Connection, check: JournalCheck) -> None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"records", "meta"} <= tables:
        check.problems.append("the file is not a mnemon journal (no records or meta table)")
        check.usable = False
        return
    integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    if integrity != ["ok"]:
        check.problems.append("PRAGMA integrity_check failed: " + "; ".join(integrity[:5]))
        check.usable = False
        return
    for table, *_ in conn.execute("PRAGMA foreign_key_check"):
        check.orphan_rows[table] = check.orphan_rows.get(table, 0) + 1
    for table, n in sorted(check.orphan_rows.items()):
        check.problems.append(f"{n} {table} rows name a record that does not exist")
    keys = {
        str(r[0]): int(r[1])
        for r in conn.execute("SELECT namespace, COUNT(*) FROM records GROUP BY namespace")
    }
    decoded = {key: _decode_namespace(key) for key in keys}
    check.undecodable = sorted(key for key, ns in decoded.items() if ns is None)
    for key in check.undecodable:
        check.problems.append(
            f"{keys[key]} records under a namespace key that does not decode: {key[:80]!r}"
        )
    check.namespaces = sorted({ns for ns in decoded.values() if ns is not None})
    if "vectors" in tables:
        _check_vector_lengths(conn, check, decoded)


def _check_vector_lengths(
    conn: sqlite3.Connection, check: JournalCheck, decoded: dict[str, tuple[str, ...] | None]
) -> None:
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key = 'embedding_dim'").fetchall())
    if "embedding_dim" not in meta:
        return
    dim = int(meta["embedding_dim"])
    rows = conn.execute(
        "SELECT namespace, COUNT(*), MIN(length(vector)), MAX(length(vector)) FROM vectors "
        "WHERE length(vector) != ? GROUP BY namespace",
        (dim * 4,),
    ).fetchall()
    for key, n, low, high in rows:
        ns = decoded.get(str(key)) or _decode_namespace(str(key))
        if ns is None:
            continue  # reported with its undecodable key
        check.bad_vectors[ns] = int(n)
        sizes = f"{low // 4}" if low == high else f"{low // 4}..{high // 4}"
        check.problems.append(
            f"{' / '.join(ns)}: {n} stored vectors hold {sizes} floats, not the "
            f"model's {dim} (re-embed them; the doctor loads no model)"
        )


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    p = sub.add_parser(
        "doctor",
        help="report and repair damaged or stale indexes",
        description=(
            "Check every namespace's BM25 and vector index files against the journal "
            "(checksums, field types, generation, record count) and rebuild the ones "
            "that are damaged, stale or behind; remove index folders left by an "
            "interrupted erase. On a postgresql:// URL: check the schema version, the "
            "embedding model identity, the indexes and the BM25 packs, and repair what "
            "can be. No embedding model is loaded."
        ),
    )
    add_db_arg(p)
    add_namespace_arg(p, required=False, help_suffix="; default: every namespace")
    p.add_argument("--check", action="store_true", help="only report; exit 1 if anything is wrong")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)


def _check_namespace(
    journal: Any, db: Path, ns: tuple[str, ...], repair: bool, bad_vectors: int = 0
) -> NamespaceReport:
    """One namespace's report; a failure of the check itself is reported, not raised."""
    try:
        return _check_index(journal, db, ns, repair, bad_vectors)
    except Exception as exc:  # one damaged namespace must not stop the others
        report = NamespaceReport(list(ns))
        report.problems.append(f"cannot be checked: {type(exc).__name__}: {exc}")
        report.unrepairable.append("not repaired: the check itself failed")
        return report


def _check_index(
    journal: Any, db: Path, ns: tuple[str, ...], repair: bool, bad_vectors: int
) -> NamespaceReport:
    from mnemon_langgraph.store.embedded._index import NamespaceIndex, index_folder
    from mnemon_langgraph.types import MAX_SESSION

    model = journal.embedding_model()
    report = NamespaceReport(list(ns), records=journal.count(ns))
    if bad_vectors:
        # Rebuilding would read vectors of the wrong shape; they need the model again.
        report.problems.append(f"{bad_vectors} stored vectors of the wrong length")
        if not repair:
            report.unrepairable.append("not rebuilt: the doctor without --check re-embeds them")
            return report
        why = _reembed_bad_vectors(db, ns, model)
        if why is not None:
            report.unrepairable.append(
                f"not rebuilt: its stored vectors must be re-embedded ({why})"
            )
            return report
        report.repaired.append(f"re-embedded {bad_vectors} records with {(model or ('?',))[0]}")
    index = NamespaceIndex(journal, ns, index_folder(db, ns), model[1] if model else 1)
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
            report.unrepairable.append(f"{len(index.skipped)} records left out of the index")
        if index.save_problem:
            report.repaired.append(f"rebuilt in memory only; cannot save: {index.save_problem}")
        else:
            report.repaired.append(f"rebuilt from the journal ({len(index.bm25)} records)")
    return report


def _reembed_bad_vectors(
    db: Path, ns: tuple[str, ...], model: tuple[str, int] | None
) -> str | None:
    """Re-embed the records of ``ns`` whose stored vector has the wrong length, with the
    journal's recorded model; ``None`` when done, else why it cannot be done here."""
    import numpy as np

    from mnemon_langgraph.records.schema import namespace_key
    from mnemon_langgraph.search._vectors import normalize_rows
    from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity

    if model is None:
        return "the journal records no embedding model"
    try:
        embeddings = default_embeddings(model[0])
        found = embedding_identity(embeddings)
    except Exception as exc:  # a missing extra, a model that cannot load here
        return f"the embedder {model[0]} cannot be loaded here: {exc}"
    if tuple(found) != tuple(model):
        return (
            f"the journal was embedded with {model[0]} ({model[1]} dimensions) and this "
            f"machine's embedder is {found[0]} ({found[1]}); run the doctor where that model "
            "is the default, or set MNEMON_EMBEDDINGS"
        )
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT r.id, r.text FROM vectors v JOIN records r ON r.id = v.record_id "
            "WHERE v.namespace = ? AND length(v.vector) != ? ORDER BY r.seq",
            (namespace_key(ns), model[1] * 4),
        ).fetchall()
        try:
            vectors = np.asarray(embeddings.embed_documents([t for _, t in rows]), np.float32)
        except Exception as exc:  # the model failed: leave the rows for a later run
            return f"the embedder failed: {exc}"
        if vectors.shape != (len(rows), model[1]) or not np.isfinite(vectors).all():
            return f"the embedder returned vectors of shape {vectors.shape}"
        with conn:
            conn.executemany(
                "UPDATE vectors SET vector = ? WHERE record_id = ?",
                [
                    (np.asarray(v, dtype=np.float32).tobytes(), rid)
                    for (rid, _), v in zip(rows, normalize_rows(vectors), strict=True)
                ],
            )
    finally:
        conn.close()
    return None


def _orphans(
    journal: Any, db: Path, repair: bool, live_namespaces: list[tuple[str, ...]]
) -> list[NamespaceReport]:
    """Index folders of namespaces with no rows left in the journal."""
    from mnemon_langgraph.store.embedded._index import (
        index_folder,
        indexes_root,
        remove_index_folder,
    )

    root = indexes_root(db)
    if not root.is_dir():
        return []
    reports = []
    live = {index_folder(db, ns).name for ns in live_namespaces}
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


def diagnose(db: str | Path, namespace: Any = None, *, repair: bool = True) -> list[Any]:
    """Check (and with ``repair``, fix) the indexes of one or every namespace of ``db``.

    A PostgreSQL URL is checked by :func:`diagnose_postgres`.

    Raises:
        ConfigurationError: No journal at ``db``.
    """
    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.store import is_postgres_url
    from mnemon_langgraph.store.embedded._journal import Journal
    from mnemon_langgraph.types import normalize_namespace

    if is_postgres_url(db):
        return diagnose_postgres(str(db), namespace, repair=repair)
    path = Path(db)
    if not path.is_file():
        raise ConfigurationError(f"no journal at {path}")
    check = journal_check(path)
    if not check.usable:
        report = NamespaceReport(["<journal>"], problems=list(check.problems))
        report.unrepairable.append("nothing repaired: the journal itself cannot be trusted")
        return [report]
    reports = [_journal_report(path, check, repair)] if check.orphan_rows else []
    if check.undecodable:
        reports.append(_undecodable_report(check))
    with Journal(path, read_only=not repair) as journal:
        spaces = [normalize_namespace(namespace)] if namespace else check.namespaces
        reports += [
            _check_namespace(journal, path, ns, repair, check.bad_vectors.get(ns, 0))
            for ns in spaces
        ]
        if namespace is None and not check.undecodable:
            # With an undecodable key, any folder may be that namespace's: keep them all.
            reports += _orphans(journal, path, repair, check.namespaces)
    return reports


def diagnose_postgres(url: str, namespace: Any = None, *, repair: bool = True) -> list[Any]:
    """The PostgreSQL doctor (:mod:`mnemon_langgraph.store.postgres._health`): the database's
    report (schema version, model identity, indexes), then one per namespace (BM25 packs).
    The store's model identity is the default embedder's (named, not loaded)."""
    from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity
    from mnemon_langgraph.store.postgres import PostgresStore
    from mnemon_langgraph.store.postgres._health import health
    from mnemon_langgraph.types import normalize_namespace

    def store_model(recorded: str | None) -> tuple[str, int]:
        return embedding_identity(default_embeddings(recorded))

    ns = normalize_namespace(namespace) if namespace else None
    store = PostgresStore.for_maintenance(url)
    try:
        return health(store, ns, repair=repair, expected_model=store_model)
    finally:
        store.close()


def _journal_report(path: Path, check: JournalCheck, repair: bool) -> NamespaceReport:
    """Rows of derived tables that name no record: removed on repair (nothing is lost)."""
    report = NamespaceReport(
        ["<journal>"], problems=[p for p in check.problems if "name a record" in p]
    )
    if repair:
        conn = sqlite3.connect(path)
        try:
            with conn:
                for table in DERIVED_TABLES:
                    if table in check.orphan_rows:
                        conn.execute(
                            f"DELETE FROM {table} WHERE record_id NOT IN (SELECT id FROM records)"
                        )
        finally:
            conn.close()
        report.repaired.append(
            "removed rows that name no record: "
            + ", ".join(f"{n} {t}" for t, n in sorted(check.orphan_rows.items()))
        )
    return report


def _undecodable_report(check: JournalCheck) -> NamespaceReport:
    report = NamespaceReport(
        ["<journal>"], problems=[p for p in check.problems if "does not decode" in p]
    )
    report.unrepairable.append(
        "records under undecodable namespace keys are left as they are, and so is every "
        "index folder the journal names no namespace for"
    )
    return report


def _database_line(details: dict[str, Any]) -> str:
    """The PostgreSQL database's report in words: schema, model, indexes."""
    words = [f"schema version {details['schema_version']}"]
    model = details.get("model_recorded")
    if model:
        words.append(f"model {model['name']} ({model['dim']} dimensions)")
    if "index_count" in details:
        words.append(f"{details['index_count']} valid indexes")
    return ", ".join(words)


def run(args: argparse.Namespace) -> int:
    """Print the diagnosis; exit 1 with ``--check`` when anything needs repair."""
    reports = diagnose(args.db, namespace_of(args), repair=not args.check)
    if args.json:
        print_json([vars(r) for r in reports])
    else:
        if not reports:
            print("no namespaces in the journal")
        for r in reports:
            name = " / ".join(r.namespace)
            state = "ok" if r.healthy else "; ".join(r.problems)
            details = getattr(r, "details", None)
            if details and "schema_version" in details:
                print(f"{name}: {_database_line(details)}; {state}")
            else:
                print(f"{name}: {r.records} records; {state}")
            for fix in r.repaired:
                print(f"  repaired: {fix}")
            for left in r.unrepairable:
                print(f"  {left}")
    if args.check:
        return 1 if any(not r.healthy for r in reports) else 0
    return 1 if any(r.unrepairable for r in reports) else 0
