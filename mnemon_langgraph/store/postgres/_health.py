"""Health of a PostgreSQL store: schema version, model identity, indexes, BM25 packs.

What ``mnemon doctor --db postgresql://…`` checks (and, with ``repair``, fixes):

* the schema version against this package's (:data:`~._schema.SCHEMA_VERSION`): an older
  one is migrated by :func:`~._schema.setup_schema` with the recorded model identity; a
  newer one needs a newer package;
* the embedding model identity in ``mnemon_meta`` against the store's default embedder
  and the dimension of the ``mnemon_vectors.embedding`` column (never repaired: the
  vectors would have to be re-embedded);
* every index the schema creates exists and every index of a ``mnemon_`` table is valid
  (``pg_index.indisvalid``): a missing one is created again by the schema's own
  ``CREATE INDEX IF NOT EXISTS`` statement, an invalid one is rebuilt by ``REINDEX``;
* per namespace, the BM25 packs due for a refresh (the test of :meth:`._packs.Packs.refresh_on`),
  refreshed through that method.

Nothing here loads an embedding model or rewrites a row of the records.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mnemon_langgraph.records.schema import namespace_key, ns_from_key
from mnemon_langgraph.store.postgres._impact import PACK_GROWTH
from mnemon_langgraph.store.postgres._schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    setup_schema,
    vector_ddl,
)
from mnemon_langgraph.types import Namespace

__all__ = ["HealthReport", "check_health", "expected_indexes", "health"]

DATABASE = "<database>"
"""The name of the report on what the whole database shares (schema, model, indexes)."""

ModelIdentity = Callable[[str | None], tuple[str, int]]
"""Given the recorded model name, the identity ``(name, dim)`` the store would embed with."""

_CREATE = re.compile(r"CREATE INDEX IF NOT EXISTS (\w+)")
_DROP = re.compile(r"DROP INDEX IF EXISTS (\w+)")

_INDEXES_SQL = """
SELECT c.relname, i.indisvalid, am.amname
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_am am ON am.oid = c.relam
WHERE t.relname LIKE 'mnemon\\_%' AND pg_table_is_visible(t.oid)
ORDER BY c.relname"""

_DUE_SQL = (
    "SELECT count(*) FROM mnemon_terms WHERE nsid = %(nsid)s AND df > %(min)s AND "
    f"df - packed > GREATEST(%(min)s, packed / {PACK_GROWTH})"
)


@dataclass
class HealthReport:
    """What the doctor found for the database (:data:`DATABASE`) or one namespace.

    Same fields as the SQLite doctor's report, plus ``details``: what was checked
    (schema version, model identities, index count) even when all is well.
    """

    namespace: list[str]
    records: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    unrepairable: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return not self.problems


def expected_indexes(dim: int) -> dict[str, str]:
    """Index name → the schema's idempotent statement creating it (the latest version's
    set: an index a later migration drops is not expected)."""
    found: dict[str, str] = {}
    for statement in [s for step in MIGRATIONS for s in step] + vector_ddl(dim):
        for name in _DROP.findall(statement):
            found.pop(name, None)
        match = _CREATE.search(statement)
        if match:
            found[match.group(1)] = statement
    return found


async def _meta(conn: Any) -> dict[str, str] | None:
    cur = await conn.execute("SELECT to_regclass('mnemon_meta') IS NOT NULL")
    row = await cur.fetchone()
    if not (row and row[0]):
        return None
    cur = await conn.execute("SELECT key, value FROM mnemon_meta")
    return {str(k): str(v) for k, v in await cur.fetchall()}


async def _vector_column_dim(conn: Any) -> int | None:
    cur = await conn.execute(
        "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass('mnemon_vectors') "
        "AND a.attname = 'embedding'"
    )
    row = await cur.fetchone()
    return None if row is None or int(row[0]) <= 0 else int(row[0])


async def _check_schema(
    conn: Any, meta: dict[str, str], report: HealthReport, repair: bool
) -> bool:
    """Schema version; migrate an older one on repair. ``False``: go no further."""
    version = int(meta.get("schema_version") or 0)
    report.details["schema_version"] = version
    report.details["package_schema_version"] = SCHEMA_VERSION
    if version > SCHEMA_VERSION:
        report.problems.append(
            f"schema version {version} is newer than this package's {SCHEMA_VERSION}"
        )
        report.unrepairable.append("not checked further: upgrade mnemon-langgraph")
        return False
    if version < SCHEMA_VERSION:
        report.problems.append(f"schema version {version}: migration to {SCHEMA_VERSION} due")
        if repair:
            model, dim = meta.get("embedding_model", ""), int(meta.get("embedding_dim") or 0)
            await setup_schema(conn, model, dim)
            report.repaired.append(f"migrated to schema version {SCHEMA_VERSION}")
    return True


async def _check_model(
    conn: Any, meta: dict[str, str], expected_model: ModelIdentity | None, report: HealthReport
) -> None:
    recorded = (meta.get("embedding_model"), int(meta.get("embedding_dim") or 0))
    expected = None if expected_model is None else expected_model(recorded[0])
    column = await _vector_column_dim(conn)
    report.details["model_recorded"] = {"name": recorded[0], "dim": recorded[1]}
    report.details["vector_column_dim"] = column
    if recorded[0] is None:
        report.problems.append("no embedding model identity recorded in mnemon_meta")
        report.unrepairable.append("model identity: open the store once with its embedder")
        return
    if column is not None and column != recorded[1]:
        report.problems.append(
            f"mnemon_vectors holds {column}-dimensional vectors, mnemon_meta records {recorded[1]}"
        )
        report.unrepairable.append("vector dimension: the vectors must be re-embedded")
    if expected is not None:
        report.details["model_store"] = {"name": expected[0], "dim": expected[1]}
        if (recorded[0], recorded[1]) != expected:
            report.problems.append(
                f"recorded embedding model {recorded[0]!r} ({recorded[1]} dimensions) is not "
                f"the store's {expected[0]!r} ({expected[1]} dimensions)"
            )
            report.unrepairable.append(
                "model identity: use the recorded model, or re-embed into another database"
            )


async def _check_indexes(conn: Any, dim: int, report: HealthReport, repair: bool) -> None:
    cur = await conn.execute(_INDEXES_SQL)
    present = {str(name): (bool(valid), str(am)) for name, valid, am in await cur.fetchall()}
    expected = expected_indexes(dim)
    missing = sorted(set(expected) - set(present))
    invalid = sorted(name for name, (valid, _) in present.items() if not valid)
    report.details["indexes"] = {
        name: am for name, (_, am) in sorted(present.items()) if name not in invalid
    }
    for name in missing:
        report.problems.append(f"index {name} is missing")
    for name in invalid:
        report.problems.append(f"index {name} is invalid (pg_index.indisvalid is false)")
    if not repair:
        return
    for name in missing:
        await conn.execute(expected[name])
        report.repaired.append(f"created index {name}")
    for name in invalid:
        await conn.execute(f'REINDEX INDEX "{name}"')
        report.repaired.append(f"rebuilt index {name}")


async def _check_namespaces(
    store: Any, conn: Any, only: Namespace | None, repair: bool
) -> list[HealthReport]:
    cur = await conn.execute(
        "SELECT n.nsid, n.namespace, (SELECT count(*) FROM mnemon_records r "
        "WHERE r.nsid = n.nsid) FROM mnemon_namespaces n ORDER BY n.namespace"
    )
    rows = await cur.fetchall()
    if only is not None:
        rows = [row for row in rows if row[1] == namespace_key(only)]
    reports = []
    for nsid, key, count in rows:
        ns = ns_from_key(key)
        report = HealthReport(list(ns), records=int(count))
        params = {"nsid": int(nsid), "min": store.settings.bm25_pack_min}
        due = int((await (await conn.execute(_DUE_SQL, params)).fetchone())[0])
        report.details["packs_due"] = due
        if due:
            report.problems.append(f"{due} BM25 packs due for a refresh")
            if repair:
                await store.packs.refresh_on(conn, ns, int(nsid), None)
                left = int((await (await conn.execute(_DUE_SQL, params)).fetchone())[0])
                report.repaired.append(f"refreshed {due - left} BM25 packs")
                if left:
                    report.unrepairable.append(f"{left} BM25 packs still due")
        reports.append(report)
    return reports


async def check_health(
    store: Any,
    namespace: Namespace | None = None,
    *,
    repair: bool = True,
    expected_model: ModelIdentity | None = None,
) -> list[HealthReport]:
    """The database's report, then one per namespace (``namespace``: that one only).

    Args:
        store: A :class:`~._store.PostgresStore` (opened for maintenance is enough).
        namespace: Check only this namespace's packs.
        repair: Fix what can be fixed (migration, indexes, packs).
        expected_model: Given the recorded model name, the store's model identity
            ``(name, dim)`` to compare with the recorded one (``None``: not compared).
    """
    report = HealthReport([DATABASE])
    async with store.engine.connection() as conn:
        meta = await _meta(conn)
        if meta is None:
            report.problems.append("no mnemon schema in this database (no mnemon_meta table)")
            report.unrepairable.append("nothing to check: open the store once to create it")
            return [report]
        if not await _check_schema(conn, meta, report, repair):
            return [report]
        await _check_model(conn, meta, expected_model, report)
        dim = int(meta.get("embedding_dim") or 0)
        await _check_indexes(conn, dim, report, repair)
        report.details["index_count"] = len(report.details["indexes"])
        spaces = await _check_namespaces(store, conn, namespace, repair)
    return [report, *spaces]


def health(
    store: Any,
    namespace: Namespace | None = None,
    *,
    repair: bool = True,
    expected_model: ModelIdentity | None = None,
) -> list[HealthReport]:
    """Sync :func:`check_health`, on the store's loop."""
    return list(
        store._run(check_health(store, namespace, repair=repair, expected_model=expected_model))
    )
