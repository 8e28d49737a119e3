"""Writes on PostgreSQL: ingest, deletions with their audit rows, erase.

An ingest takes a transaction-level advisory lock on its namespace, decides under it which
messages are new and where each session goes on (:mod:`mnemon_langgraph.store._internal.settle`),
inserts with ``ON CONFLICT DO NOTHING`` and updates the namespace's BM25 statistics and
impact postings in the same transaction. The lock makes ``seq`` numbers of one namespace
commit in order, so a watermark reader (consolidation) never skips a record that commits
late; writers on any number of hosts, overlapping or not, store each message id once and
give one session's records unique positions in commit order.

An erase deletes every row of the namespace in every table but the audit trail, which is
append-only (earlier rows stay as they were), in one transaction with its own audit row,
then ``VACUUM``\\ s the touched tables so dead tuples holding the text are reclaimed. WAL
segments, replicas and backups can still hold it: see the README.

A message deletion writes the survivors back at the place of the records they replace
(:mod:`mnemon_langgraph.records._survivors`), the same rule as the embedded backend.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.records._survivors import SurvivorRun, kept_ranges, survivor_runs
from mnemon_langgraph.records.schema import ns_to_key, rebuild_messages
from mnemon_langgraph.search._bm25 import date_to_epoch
from mnemon_langgraph.store._internal.contract import fresh_messages, sessions_of
from mnemon_langgraph.store._internal.settle import reuse_vectors
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._impact import impact, term_counts
from mnemon_langgraph.store.postgres._packs import Packs
from mnemon_langgraph.store.postgres._reads import Reads
from mnemon_langgraph.store.postgres._rows import RECORD_SQL, row_to_record
from mnemon_langgraph.store.postgres._schema import ANN_FROM
from mnemon_langgraph.types import Message, Namespace, Record

__all__ = ["Writes"]

_NO_LENGTH = 2**31 - 1  # min_len of a removal: LEAST keeps the stored value

Plan = Callable[..., list[Record]]
"""``plan(messages, ns, source, *, pack=True, first_positions=…)``: the records to write
(the store's ``record_chars``, see ``MnemonStore._records_of``)."""
Embed = Callable[[list[str], Callable[[int, int], None] | None], np.ndarray]


class Writes:
    """Every write of a PostgreSQL store, as coroutines on its engine's loop.

    Args:
        engine: The store's engine (pool, locks).
        packs: Its BM25 packs (refreshed after a write, unpacked by a delete).
        reads: Its reads (known message ids, next positions).
        plan: Cuts messages into records (the store's settings).
        embed: Embeds record texts (unit rows, checked).
        ann_from: Records from which a namespace's vectors join the HNSW index (the
            store's ``exact_below``, from which the server searches through it).
    """

    def __init__(
        self,
        engine: PostgresEngine,
        packs: Packs,
        reads: Reads,
        plan: Plan,
        embed: Embed,
        ann_from: int = ANN_FROM,
    ) -> None:
        self.engine = engine
        self.packs = packs
        self.reads = reads
        self.plan = plan
        self.embed = embed
        self.ann_from = ann_from

    async def ingest(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        """Draft the records and embed them, then decide again under the namespace's lock
        which messages are new and where each session goes on (see
        :mod:`~mnemon_langgraph.store._internal.settle`)."""
        ids = [m.id for m in messages if m.id]
        fresh = fresh_messages(messages, await self.reads.known(ns, ids))
        if not fresh:
            return []
        first = await self.reads.next_positions(ns, sessions_of(fresh))
        drafted = self.plan(fresh, ns, source, pack=pack, first_positions=first)
        vectors = await asyncio.to_thread(self.embed, [r.text for r in drafted], progress)
        async with self.engine.connection() as conn, conn.transaction():
            await self.engine.lock_namespace(conn, ns)
            # READ COMMITTED: each statement from here sees every writer that held the lock
            fresh = fresh_messages(messages, await self.reads.known(ns, ids, conn))
            if not fresh:
                return []
            first = await self.reads.next_positions(ns, sessions_of(fresh), conn)
            records = self.plan(fresh, ns, source, pack=pack, first_positions=first)
            rows = await asyncio.to_thread(
                reuse_vectors, records, drafted, vectors, lambda t: self.embed(t, None)
            )
            nsid = await self.engine.nsid(conn, ns, create=True)
            assert nsid is not None
            written, terms = await self.write(conn, nsid, records, rows)
        await self.packs.refresh(ns, nsid, terms)
        return written

    async def write(
        self, conn: Any, nsid: int, records: Sequence[Record], vectors: np.ndarray
    ) -> tuple[list[Record], list[str]]:
        """Insert records, their message ids, vectors and BM25 statistics (caller's tx).

        Returns the records written and the terms they hold (whose packs may be due,
        :meth:`~._packs.Packs.refresh`)."""
        rows, order, lexical = self.record_rows(nsid, records)
        written: list[Record] = []
        cur = conn.cursor()
        await cur.executemany(
            "INSERT INTO mnemon_records (id, seq, nsid, origin, session, date, date_epoch, "
            "position, speakers, message_ids, roles, text, terms, tfs, length) VALUES "
            "(%s, nextval('mnemon_record_seq'), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s) ON CONFLICT (id) DO NOTHING RETURNING seq",
            rows,
            returning=True,
        )
        inserted: list[tuple[int, int]] = []  # (index into rows, seq)
        for j in range(len(rows)):
            got = await cur.fetchone()
            if got is not None:
                inserted.append((j, int(got[0])))
            if not cur.nextset():
                break
        if not inserted:
            return written, []
        cur_ns = await conn.execute(
            "SELECT ann, docs FROM mnemon_namespaces WHERE nsid = %s", (nsid,)
        )
        ann, docs_before = await cur_ns.fetchone()  # ann: the vectors join the HNSW index
        df: dict[str, int] = {}
        bounds: dict[str, tuple[float, int]] = {}  # term -> (max tf, min length)
        total_len = 0
        msg_rows, vec_rows = [], []
        for j, seq in inserted:
            rec = records[order[j]]
            written.append(dataclasses.replace(rec, seq=seq))
            msg_rows += [(nsid, mid, rec.id) for mid in dict.fromkeys(rec.message_ids)]
            vec_rows.append((rec.id, nsid, vectors[order[j]], ann))
            terms, tfs, length = lexical[j]
            for term, tf in zip(terms, tfs, strict=True):
                df[term] = df.get(term, 0) + 1
                high, low = bounds.get(term, (tf, length))
                bounds[term] = (max(high, tf), min(low, length))
            total_len += length
        await cur.executemany(
            "INSERT INTO mnemon_messages(nsid, message_id, record_id) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            msg_rows,
        )
        await cur.executemany(  # + the half-precision copy the exact search scans (v3)
            "WITH v AS (INSERT INTO mnemon_vectors(record_id, nsid, embedding, ann) VALUES "
            "(%s, %s, %s, %s) RETURNING record_id, nsid, embedding) INSERT INTO mnemon_halfvecs"
            "(record_id, nsid, embedding) SELECT record_id, nsid, embedding::halfvec FROM v",
            vec_rows,
        )
        await self.adjust_stats(conn, nsid, df, len(inserted), total_len, bounds)
        await self.write_postings(conn, nsid, [(seq, lexical[j]) for j, seq in inserted])
        if not ann and docs_before + len(inserted) >= self.ann_from:
            await self.index_namespace(conn, nsid)
        return written, sorted(df)

    @staticmethod
    async def index_namespace(conn: Any, nsid: int) -> None:
        """Flag the namespace ``ann`` and put its vectors in the HNSW index: the write that
        brings it to ``ann_from`` records does (caller's transaction, under the namespace's
        lock: no writer adds an unflagged vector meanwhile). Once per namespace: the graph's
        inserts for every vector so far, as writing them one by one would have cost."""
        await conn.execute("UPDATE mnemon_namespaces SET ann = true WHERE nsid = %s", (nsid,))
        await conn.execute(
            "UPDATE mnemon_vectors SET ann = true WHERE nsid = %s AND NOT ann", (nsid,)
        )

    @staticmethod
    def record_rows(
        nsid: int, records: Sequence[Record]
    ) -> tuple[list[tuple[Any, ...]], list[int], list[tuple[list[str], list[float], int]]]:
        """``mnemon_records`` rows of the records (first of each id), their indexes into
        ``records`` and their ``(terms, tfs, length)``."""
        rows: list[tuple[Any, ...]] = []
        order: list[int] = []
        lexical: list[tuple[list[str], list[float], int]] = []
        seen: set[str] = set()
        for i, rec in enumerate(records):
            if rec.id in seen:
                continue
            seen.add(rec.id)
            terms, tfs, length = term_counts(nsid, rec.text)
            lists = [json.dumps(list(x)) for x in (rec.speakers, rec.message_ids, rec.roles)]
            rows.append(
                (
                    rec.id,
                    nsid,
                    rec.origin,
                    int(rec.session),
                    rec.date,
                    date_to_epoch(rec.date),
                    int(rec.position),
                    *lists,
                    rec.text,
                    terms,
                    tfs,
                    length,
                )
            )
            order.append(i)
            lexical.append((terms, tfs, length))
        return rows, order, lexical

    @staticmethod
    async def write_postings(
        conn: Any, nsid: int, rows: Sequence[tuple[int, tuple[list[str], list[float], int]]]
    ) -> None:
        """One ``mnemon_postings`` row per (record, distinct term), with its impact at the
        namespace's reference average length (:func:`~._impact.impact`; the first
        write holding a term sets it, after the statistics were updated). Caller's transaction;
        the rows go with their record (``ON DELETE CASCADE`` on ``seq``)."""
        if not any(lexical[0] for _, lexical in rows):
            return
        cur = await conn.execute(  # total_len > 0 here: these records hold terms
            "UPDATE mnemon_namespaces SET ref_avgdl = COALESCE(ref_avgdl, "
            "total_len::float8 / docs) WHERE nsid = %s RETURNING ref_avgdl",
            (nsid,),
        )
        got = await cur.fetchone()
        ref = float(got[0])
        seqs: list[int] = []
        terms: list[str] = []
        impacts: list[float] = []
        tfs: list[float] = []
        lengths: list[int] = []
        for seq, (record_terms, record_tfs, length) in rows:
            seqs += [seq] * len(record_terms)
            terms += record_terms
            impacts += [impact(tf, length, ref) for tf in record_tfs]
            tfs += record_tfs
            lengths += [length] * len(record_terms)
        await conn.execute(
            "INSERT INTO mnemon_postings(seq, term, impact, tf, len) SELECT * FROM "
            "unnest(%s::bigint[], %s::text[], %s::real[], %s::real[], %s::int[])",
            (seqs, terms, impacts, tfs, lengths),
        )

    @staticmethod
    async def adjust_stats(
        conn: Any,
        nsid: int,
        df: dict[str, int],
        docs: int,
        total_len: int,
        bounds: dict[str, tuple[float, int]] | None = None,
    ) -> None:
        """Add (or, with negative counts, remove) documents to the namespace's BM25 stats.

        ``bounds`` (term -> (max tf, min length) of the added records) raise the terms'
        ``max_tf`` / lower their ``min_len``; removals leave both, which stay upper bounds
        of a term's contribution (:func:`~._impact.term_bound`).
        """
        terms = sorted(df)  # one lock order for every writer
        bounds = bounds or {}
        high = [bounds[t][0] if t in bounds else 0.0 for t in terms]
        low = [bounds[t][1] if t in bounds else _NO_LENGTH for t in terms]
        await conn.execute(
            "INSERT INTO mnemon_terms(term, nsid, df, max_tf, min_len) "
            "SELECT t, %s, d, h, l FROM unnest(%s::text[], %s::int[], %s::real[], %s::int[]) "
            "AS x(t, d, h, l) ORDER BY t "
            "ON CONFLICT (term) DO UPDATE SET df = mnemon_terms.df + excluded.df, "
            "max_tf = GREATEST(mnemon_terms.max_tf, excluded.max_tf), "
            "min_len = LEAST(mnemon_terms.min_len, excluded.min_len)",
            (nsid, terms, [df[t] for t in terms], high, low),
        )
        if any(df[t] < 0 for t in terms):
            await conn.execute(
                "DELETE FROM mnemon_terms WHERE term = ANY(%s) AND df <= 0", (terms,)
            )
        await conn.execute(
            "UPDATE mnemon_namespaces SET docs = docs + %s, total_len = total_len + %s "
            "WHERE nsid = %s",
            (docs, total_len, nsid),
        )

    async def audit(
        self,
        conn: Any,
        *,
        actor: str,
        action: str,
        ns: Namespace,
        count: int,
        record_ids: Sequence[str] = (),
        message_ids: Sequence[str] = (),
        reason: str = "",
    ) -> None:
        await conn.execute(
            "INSERT INTO mnemon_audit(actor, action, namespace, count, record_ids, "
            "message_ids, reason) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                str(actor),
                action,
                ns_to_key(ns),
                int(count),
                json.dumps(list(record_ids)),
                json.dumps(list(message_ids)),
                str(reason),
            ),
        )

    async def delete_ids(self, conn: Any, nsid: int, ids: Sequence[str]) -> list[str]:
        """Delete records by id (caller's transaction, namespace locked): their rows, the
        rows that cascade, their BM25 statistics, their postings in the packs and their
        bytes in the frame's codes."""
        unique = list(ids)  # distinct: checked at the boundary, or from a set
        cur = await conn.execute(  # before the cascade takes the postings: what packs hold
            "SELECT p.term, array_agg(p.seq), array_agg(p.impact) FROM mnemon_records r "
            "JOIN mnemon_postings p ON p.seq = r.seq JOIN mnemon_terms t ON t.term = p.term "
            "WHERE r.nsid = %s AND r.id = ANY(%s) AND t.packed > 0 AND p.seq <= t.upto "
            "GROUP BY p.term",
            (nsid, unique),
        )
        packed = await cur.fetchall()
        cur = await conn.execute(
            "DELETE FROM mnemon_records WHERE nsid = %s AND id = ANY(%s) "
            "RETURNING id, seq, terms, length",
            (nsid, unique),
        )
        rows = sorted(await cur.fetchall(), key=lambda r: r[1])
        df: dict[str, int] = {}
        for row in rows:
            for term in row[2]:
                df[term] = df.get(term, 0) - 1
        for term, seqs, impacts in packed:
            await self.packs.unpack(conn, term, np.array(seqs, np.int64), np.array(impacts))
        await self.packs.frames.forget(conn, nsid, rows)
        if rows:
            await self.adjust_stats(conn, nsid, df, -len(rows), -sum(r[3] for r in rows))
            await conn.execute(  # a term no record holds any more keeps no pack either
                "DELETE FROM mnemon_packs p WHERE p.term = ANY(%s) AND NOT EXISTS "
                "(SELECT 1 FROM mnemon_terms t WHERE t.term = p.term)",
                (sorted(df),),
            )
        return [r[0] for r in rows]

    async def delete_records(
        self, ns: Namespace, wanted: Sequence[str], actor: str, reason: str
    ) -> list[str]:
        async with self.engine.connection() as conn, conn.transaction():
            await self.engine.lock_namespace(conn, ns)
            nsid = await self.engine.nsid(conn, ns)
            if nsid is None or not wanted:
                return []
            deleted = await self.delete_ids(conn, nsid, wanted)
            if deleted:
                await self.audit(
                    conn,
                    actor=actor,
                    action="delete_records",
                    ns=ns,
                    count=len(deleted),
                    record_ids=deleted,
                    reason=reason,
                )
        return deleted

    async def holding_records(self, conn: Any, nsid: int, targets: set[str]) -> list[str]:
        """Every record holding part of ``targets``, transitively through shared messages."""
        record_ids: set[str] = set()
        seen, pending = set(targets), list(targets)
        while pending:
            cur = await conn.execute(
                "SELECT DISTINCT m2.record_id, m2.message_id FROM mnemon_messages m1 "
                "JOIN mnemon_messages m2 ON m2.record_id = m1.record_id "
                "WHERE m1.nsid = %s AND m1.message_id = ANY(%s)",
                (nsid, pending),
            )
            pending = []
            for rid, mid in await cur.fetchall():
                record_ids.add(rid)
                if mid not in seen:
                    seen.add(mid)
                    pending.append(mid)
        return sorted(record_ids)

    async def delete_messages(
        self, ns: Namespace, message_ids: Sequence[str], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        targets = set(message_ids)
        async with self.engine.connection() as conn, conn.transaction():
            await self.engine.lock_namespace(conn, ns)
            nsid = await self.engine.nsid(conn, ns)
            if nsid is None:
                return [], []
            ids = await self.holding_records(conn, nsid, targets)
            cur = await conn.execute(RECORD_SQL + " WHERE id = ANY(%s)", (ids,))
            old = [row_to_record(r, ns) for r in await cur.fetchall()]
            old.sort(key=lambda r: (r.session, r.position, r.seq))
            survivors = rebuild_messages(old, exclude=targets)
            deleted = await self.delete_ids(conn, nsid, ids)
            if deleted:
                await self.audit(
                    conn,
                    actor=actor,
                    action="delete_messages",
                    ns=ns,
                    count=len(deleted),
                    record_ids=deleted,
                    # only ids that were stored: a caller's unknown "id" (any string) never
                    # reaches the trail, which outlives an erase
                    message_ids=sorted(targets & {m for r in old for m in r.message_ids}),
                    reason=reason,
                )
            written: list[Record] = []
            terms: set[str] = set()
            if survivors:
                kept = await self.kept_positions(conn, nsid, old)
                shift: dict[int, int] = {}
                for run in survivor_runs(old, targets, kept):
                    got, run_terms = await self.put_back(conn, nsid, ns, source, run, shift)
                    written += got
                    terms.update(run_terms)
        if survivors:
            await self.packs.refresh(ns, nsid, sorted(terms))
        return deleted, written

    @staticmethod
    async def kept_positions(
        conn: Any, nsid: int, deleted: Sequence[Record]
    ) -> dict[int, list[int]]:
        """Per session of ``deleted``: the kept records' positions between its lowest and
        highest deleted position, and the first one above (:func:`.survivors.kept_ranges`)."""
        out: dict[int, list[int]] = {}
        for session, (low, high) in kept_ranges(deleted).items():
            cur = await conn.execute(
                "SELECT position FROM mnemon_records WHERE nsid = %s AND session = %s "
                "AND position > %s AND (position <= %s OR position = (SELECT min(position) "
                "FROM mnemon_records WHERE nsid = %s AND session = %s AND position > %s)) "
                "ORDER BY position",
                (nsid, session, low, high, nsid, session, high),
            )
            out[session] = [int(r[0]) for r in await cur.fetchall()]
        return out

    async def put_back(
        self,
        conn: Any,
        nsid: int,
        ns: Namespace,
        source: str,
        run: SurvivorRun,
        shift: dict[int, int],
    ) -> tuple[list[Record], list[str]]:
        """Write one run's survivors at the place of the records they replace (caller's tx).

        ``shift`` (session -> positions its later records moved down so far) grows when the
        run needs more records than it had: the kept records after it move down by the
        difference, so ``(session, position)`` stays unique and in order."""
        moved = shift.get(run.session, 0)
        first = run.first + moved
        new = self.plan(run.messages, ns, source, first_positions={run.session: first})
        end = max((r.position + 1 for r in new), default=first)
        if run.limit is not None and end > run.limit + moved:
            extra = end - (run.limit + moved)
            await conn.execute(
                "UPDATE mnemon_records SET position = position + %s WHERE nsid = %s "
                "AND session = %s AND position >= %s",
                (extra, nsid, run.session, run.limit + moved),
            )
            shift[run.session] = moved + extra
        vectors = await asyncio.to_thread(self.embed, [r.text for r in new], None)
        return await self.write(conn, nsid, new, vectors)

    async def erase(self, ns: Namespace, actor: str) -> int:
        key = ns_to_key(ns)
        async with self.engine.connection() as conn, conn.transaction():
            await self.engine.lock_namespace(conn, ns)
            nsid = await self.engine.nsid(conn, ns)
            count = 0
            if nsid is not None:
                cur = await conn.execute(
                    "SELECT count(*) FROM mnemon_records WHERE nsid = %s", (nsid,)
                )
                row = await cur.fetchone()
                count = int(row[0]) if row else 0
                tables = await self.engine.nsid_tables(conn)
                # Items first: their links go with them, so the orphan trigger audits no
                # "delete_item" for what the erase removes (its one row says it); records
                # last, so their cascades still reach tables without an nsid.
                tables.sort(key=lambda t: (t != '"mnemon_items"', t == '"mnemon_records"'))
                for table in tables:
                    await conn.execute(f"DELETE FROM {table} WHERE nsid = %s", (nsid,))
            for table in await self.engine.keyed_tables(conn):  # what a BaseStore keeps
                await conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (key,))
            await conn.execute("DELETE FROM mnemon_namespaces WHERE namespace = %s", (key,))
            await self.audit(conn, actor=actor, action="erase_namespace", ns=ns, count=count)
        await self.vacuum()
        return count

    async def vacuum(self) -> None:
        """``VACUUM`` every mnemon table so dead tuples of erased rows are reclaimed now."""
        conn = await self.engine.connect(autocommit=True)
        try:
            cur = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE "
                "table_schema = current_schema() AND table_name LIKE 'mnemon%%' "
                "AND table_type = 'BASE TABLE'"
            )
            for (name,) in await cur.fetchall():
                await conn.execute(f'VACUUM "{name}"')
        finally:
            await conn.close()
