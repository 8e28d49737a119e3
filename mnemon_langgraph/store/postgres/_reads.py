"""Reads on PostgreSQL: records by id and by seq, message ids, vectors, counts, the audit.

Every read is one coroutine on the store's engine (autocommit: no transaction), scoped to
one namespace by its ``nsid`` so no read returns a row of another namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import Any

import numpy as np

from mnemon_langgraph.records.schema import AuditEntry, ns_from_key, ns_to_key
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._impact import namespaced
from mnemon_langgraph.store.postgres._rows import RECORD_SQL, filter_sql, row_to_record
from mnemon_langgraph.types import Namespace, Record, SearchFilters

__all__ = ["Reads"]

_IN_NAMESPACE = "(SELECT nsid FROM mnemon_namespaces WHERE namespace = %s)"
_AUDIT_SQL = (
    "SELECT id, at, actor, action, namespace, count, record_ids, message_ids, reason "
    "FROM mnemon_audit"
)


class Reads:
    """The reads of a PostgreSQL store (coroutines; the facade runs them on its engine)."""

    def __init__(self, engine: PostgresEngine) -> None:
        self.engine = engine

    async def known(self, ns: Namespace, ids: Sequence[str], conn: Any = None) -> set[str]:
        """The subset of ``ids`` already stored in ``ns`` (on ``conn``: its transaction)."""
        sql = (
            "SELECT DISTINCT m.message_id FROM mnemon_messages m JOIN mnemon_namespaces n "
            "ON n.nsid = m.nsid WHERE n.namespace = %s AND m.message_id = ANY(%s)"
        )
        params = (ns_to_key(ns), list(ids))
        if conn is not None:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        else:
            rows = await self.engine.read(sql, params)
        return {r[0] for r in rows}

    async def next_position(self, ns: Namespace, session: int, conn: Any = None) -> int:
        """The position after the last record of ``session`` (on ``conn``: its transaction)."""
        return (await self.next_positions(ns, [session], conn))[int(session)]

    async def next_positions(
        self, ns: Namespace, sessions: Iterable[int], conn: Any = None
    ) -> dict[int, int]:
        """:meth:`next_position` of each of ``sessions``, in one statement (a bulk ingest
        holds thousands of sessions)."""
        wanted = sorted({int(s) for s in sessions})
        sql = (
            "SELECT x.s, (SELECT max(r.position) FROM mnemon_records r WHERE r.nsid = n.nsid "
            "AND r.session = x.s) FROM mnemon_namespaces n, unnest(%s::bigint[]) AS x(s) "
            "WHERE n.namespace = %s"
        )
        params = (wanted, ns_to_key(ns))
        if conn is not None:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        else:
            rows = await self.engine.read(sql, params)
        found = {int(s): int(p) + 1 for s, p in rows if p is not None}
        return {s: found.get(s, 0) for s in wanted}

    async def holds(self, ns: Namespace) -> bool:
        """A row of ``ns`` in any table but the audit (what an erase removes)."""
        async with self.engine.connection() as conn:
            nsid = await self.engine.nsid(conn, ns)
            if nsid is None:
                return False
            for table in await self.engine.nsid_tables(conn):
                sql = f"SELECT 1 FROM {table} WHERE nsid = %s LIMIT 1"
                cur = await conn.execute(sql, (nsid,))
                if await cur.fetchone() is not None:
                    return True
        return False

    async def get(self, ns: Namespace, ids: Sequence[str]) -> list[Record]:
        """Records of ``ns`` by id, in the order of ``ids`` (unknown ids skipped)."""
        rows = await self.engine.read(
            RECORD_SQL + f" r WHERE r.nsid = {_IN_NAMESPACE} AND r.id = ANY(%s)",
            (ns_to_key(ns), list(ids)),
        )
        found = {r[0]: row_to_record(r, ns) for r in rows}
        return [found[i] for i in ids if i in found]

    async def page(
        self, ns: Namespace, after: int, size: int, filters: SearchFilters | None = None
    ) -> list[Record]:
        """Up to ``size`` records of ``ns`` with ``seq > after`` that pass ``filters`` (bounds
        in the query), in seq order."""
        params: dict[str, Any] = {"ns": ns_to_key(ns), "after": int(after), "size": int(size)}
        where = filter_sql(filters, params)
        rows = await self.engine.read(
            RECORD_SQL + f" r WHERE r.nsid = (SELECT nsid FROM mnemon_namespaces WHERE "
            f"namespace = %(ns)s) AND r.seq > %(after)s{where} ORDER BY r.seq LIMIT %(size)s",
            params,
        )
        return [row_to_record(r, ns) for r in rows]

    async def session(
        self,
        ns: Namespace,
        session: int,
        start: int,
        stop: int,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Records of ``session`` with ``start <= position < stop`` inside ``filters``, in
        position order (the ``mnemon_records_ns_session`` index)."""
        params: dict[str, Any] = {
            "ns": ns_to_key(ns),
            "session": int(session),
            "start": int(start),
            "stop": int(stop),
        }
        bounds = filter_sql(filters, params)
        in_ns = _IN_NAMESPACE.replace("%s", "%(ns)s")
        rows = await self.engine.read(
            RECORD_SQL + f" r WHERE r.nsid = {in_ns} AND r.session = %(session)s "
            f"AND r.position >= %(start)s AND r.position < %(stop)s{bounds} "
            "ORDER BY r.position, r.seq",
            params,
        )
        return [row_to_record(r, ns) for r in rows]

    async def match(self, ns: Namespace, prefix: str, limit: int) -> list[str]:
        """Ids starting with ``prefix``: ``starts_with`` is literal (no ``LIKE`` wildcard)
        and independent of the database's collation, which a range over the key is not."""
        rows = await self.engine.read(
            f"SELECT r.id FROM mnemon_records r WHERE r.nsid = {_IN_NAMESPACE} "
            "AND starts_with(r.id, %s) ORDER BY r.id LIMIT %s",
            (ns_to_key(ns), prefix, limit),
        )
        return [r[0] for r in rows]

    async def vectors(self, ns: Namespace, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored (unit) vectors of these records, by id."""
        rows = await self.engine.read(
            f"SELECT v.record_id, v.embedding FROM mnemon_vectors v WHERE v.nsid = "
            f"{_IN_NAMESPACE} AND v.record_id = ANY(%s)",
            (ns_to_key(ns), list(ids)),
            binary=True,  # not 384 floats a row as text to parse (docs/results/search-scaling.md)
        )
        # pgvector hands back its Vector type (to_numpy) or, unregistered, a plain sequence
        return {
            r[0]: np.asarray(r[1].to_numpy() if hasattr(r[1], "to_numpy") else r[1], np.float32)
            for r in rows
        }

    async def term_statistics(
        self, ns: Namespace, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """``mnemon_namespaces.docs`` and ``mnemon_terms.df``: the counts search uses."""
        wanted = list(terms)
        rows = await self.engine.read(
            "SELECT nsid, docs FROM mnemon_namespaces WHERE namespace = %s", (ns_to_key(ns),)
        )
        if not rows:
            return 0, dict.fromkeys(wanted, 0)
        nsid, docs = int(rows[0][0]), int(rows[0][1])
        keys = namespaced(nsid, wanted)
        found = await self.engine.read(
            "SELECT term, df FROM mnemon_terms WHERE term = ANY(%s)", (keys,)
        )
        df = {str(r[0]): int(r[1]) for r in found}
        return docs, {t: max(0, df.get(k, 0)) for t, k in zip(wanted, keys, strict=True)}

    async def max_seq(self, ns: Namespace) -> int:
        value = await self.engine.scalar(
            "SELECT max(r.seq) FROM mnemon_records r JOIN mnemon_namespaces n "
            "ON n.nsid = r.nsid WHERE n.namespace = %s",
            (ns_to_key(ns),),
        )
        return int(value or 0)

    async def count(self, ns: Namespace) -> int:
        value = await self.engine.scalar(
            "SELECT docs FROM mnemon_namespaces WHERE namespace = %s", (ns_to_key(ns),)
        )
        return int(value or 0)

    async def namespaces(self) -> list[Namespace]:
        rows = await self.engine.read("SELECT namespace FROM mnemon_namespaces WHERE docs > 0")
        return sorted(ns_from_key(r[0]) for r in rows)

    async def audit_log(self, ns: Namespace | None) -> list[AuditEntry]:
        sql, params = _AUDIT_SQL, [] if ns is None else [ns_to_key(ns)]
        if ns is not None:
            sql += " WHERE namespace = %s"
        rows = await self.engine.read(sql + " ORDER BY id", params)
        return [
            AuditEntry(
                id=r[0],
                at=r[1].astimezone(UTC),
                actor=r[2],
                action=r[3],
                namespace=ns_from_key(r[4]),
                count=r[5],
                record_ids=tuple(r[6]),
                message_ids=tuple(r[7]),
                reason=r[8],
            )
            for r in rows
        ]
