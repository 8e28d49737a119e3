"""BM25 on PostgreSQL: the impact-ordered top-``k`` query as one object.

The statistics, postings and packs it reads are written by the store's writes and packs
(:mod:`._writes`, :mod:`._packs`); the scoring rule and the bounds are the pure functions of
:mod:`._impact`. A query either runs the one full statement (:func:`~._impact.bm25_sql`:
every matching record scored, the reference ranking) or reads impact postings in rounds
until the exact top ``k`` is proven (:meth:`BM25Query.top`), or, when every query word has a
code row in the namespace's frame (:mod:`._frames`), bounds every record from one byte per
word and scores only those whose bound reaches the ``k``-th exact score
(:meth:`BM25Query._framed`). All three score with the same SQL, so the same floats and ties.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from mnemon_langgraph.search._bounds import CODE_MAX, code_weights, sum_codes
from mnemon_langgraph.search._formula import idf
from mnemon_langgraph.store.postgres._frames import (
    CODES_SQL,
    FRAME_FROM,
    Rosters,
    best_positions,
)
from mnemon_langgraph.store.postgres._impact import (
    COLUMN_TERMS_MAX,
    DEEPEN_MARGIN,
    DELTA_SQL,
    IMPACT_SLACK,
    LOOKUP_SQL,
    PARTS_SQL,
    CorpusStats,
    PackPart,
    TermRead,
    TermStats,
    bm25_params,
    bm25_sql,
    candidate_bounds,
    cut_bound,
    decode_array,
    impact_scale,
    int_array,
    lexical_terms,
    plan_depths,
    reaches,
    reaching,
    record_bounds,
    term_bound,
)
from mnemon_langgraph.store.postgres._rows import filter_sql
from mnemon_langgraph.store.postgres._settings import PostgresSettings
from mnemon_langgraph.types import SearchFilters

__all__ = ["BM25Query"]

_TINY = float(np.finfo(np.float32).tiny)
"""The least threshold a framed query's records must reach (fewer than ``k`` matches scored
yet: every record with a query word)."""


_ALL = 2**31 - 1
"""A depth past every part of a pack (:meth:`BM25Query._read_parts` reads it whole)."""


def _frame_fits(corpus: CorpusStats) -> bool:
    """Whether the namespace's frame may bound the query: there is one, the query has a
    word in it and at most :data:`~._impact.COLUMN_TERMS_MAX` words, and the postings of
    its uncoded words, read whole, are no more than the frame's records (else the impact
    rounds, which read them by parts, are the cheaper)."""
    live = [s for s in corpus.stats.values() if s.df > 0]
    whole = sum(s.df for s in live if not s.coded)
    frame = corpus.frame
    return frame is not None and 0 < len(live) <= COLUMN_TERMS_MAX and whole <= frame[0]


class BM25Query:
    """The BM25 ranking of one namespace: ``(seq, id, score)``, best first (ties: older)."""

    def __init__(self, settings: PostgresSettings) -> None:
        self.settings = settings
        self.rosters = Rosters()
        self.last_route = ""
        """How the last query was answered: ``"full"``, ``"rounds"`` or ``"frame"``."""

    async def top(
        self,
        conn: Any,
        nsid: int,
        query: str,
        k: int,
        filters: SearchFilters | None,
        share: float = 1.0,
    ) -> list[tuple[int, str, float]]:
        """``(seq, id, score)`` of the top ``k`` BM25 matches, best first (ties: older).

        With ``settings.bm25_prune``: impact postings read score at a time (:meth:`_impact`),
        or the namespace's frame bounds every record (:meth:`_framed`, unfiltered queries
        only), unless the query's postings, times ``share``, are fewer than
        ``settings.bm25_full_below`` (the one full query is cheaper there) and, with a frame,
        fewer than :data:`~._frames.FRAME_FROM` per result wanted (the full query reads a
        record row per posting, the frame about ``LEVEL_SAMPLE`` per result wanted).
        ``share`` is the fraction of the namespace's records that ``filters`` pass, when the
        caller knows it (a namespace's cached vectors do): the full query reads only the
        filtered records' rows, while impact rounds read the best postings of every record
        and drop those the filters reject, round after round. Every route gives the same
        ranking, so an estimate is enough. Statistics, postings and scores read one snapshot
        (``REPEATABLE READ``), so concurrent writers cannot make the bounds disagree with
        the scores.
        """
        terms = sorted({f"{nsid}:{t}" for t in lexical_terms(query)})
        if not terms or k <= 0:
            return []
        params: dict[str, Any] = {"terms": terms, "cand": terms, "nsid": nsid, "k": int(k)}
        params.update(bm25_params(terms))  # per-term parameters of the column form
        where = filter_sql(filters, params)
        self.last_route = "full"
        if not self.settings.bm25_prune:
            return await self._bm25_rows(conn, bm25_sql(len(terms), where), params)
        # Decide on the autocommit connection first: when the full query is cheap (few
        # postings) it needs no transaction, whose BEGIN / SET / COMMIT would be most of its
        # cost (docs/results/log.md, "Figures behind the code's defaults").
        corpus = await self._term_stats(conn, nsid, terms)
        postings = sum(s.df for s in corpus.stats.values())
        frame_first = not where and postings >= FRAME_FROM * k and _frame_fits(corpus)
        if postings * share < self.settings.bm25_full_below and not frame_first:
            return await self._bm25_rows(conn, bm25_sql(len(terms), where), params)
        async with conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            corpus = await self._term_stats(conn, nsid, terms)  # the transaction's snapshot
            if not where:  # the frame bounds every record; filters are the rounds' work
                framed = await self._framed(conn, corpus, params)
                if framed is not None:
                    self.last_route = "frame"
                    return framed
            self.last_route = "rounds"
            return await self._impact(conn, corpus, where, params)

    async def _impact(
        self, conn: Any, corpus: CorpusStats, where: str, params: dict[str, Any]
    ) -> list[tuple[int, str, float]]:
        """Read impact postings in rounds until the exact top ``k`` is proven.

        The first round reads every term's postings that no pack holds (all of a term
        without one) and the first parts of each pack (:meth:`_read_first`); each round
        bounds every record (:func:`candidate_bounds`) and scores the best-bounded
        candidates exactly (:meth:`_complete`). Done when ``theta`` (the ``k``-th exact
        score) is strictly above the bound of every record never named and every candidate
        left unscored; else :func:`plan_depths` deepens the cuts and their parts are read
        (:meth:`_read_parts`).
        """
        k = int(params["k"])
        n_docs, avgdl = corpus.docs, corpus.avgdl
        scale = impact_scale(avgdl, corpus.ref_avgdl)
        live = {t: s for t, s in corpus.stats.items() if s.df > 0}
        weight = {t: idf(n_docs, s.df) for t, s in live.items()}
        caps = {t: term_bound(n_docs, avgdl, s) for t, s in live.items()}
        per_impact = {t: w * scale * (1 + IMPACT_SLACK) for t, w in weight.items()}
        packed = {t: max(s.packed, 1) for t, s in live.items()}  # plan_depths' "df"
        reads = await self._read_first(conn, live)
        exact: dict[int, tuple[str, float] | None] = {}  # seq -> (id, score); None: no match
        while True:
            cuts = {t: cut_bound(weight[t], r, scale, caps[t]) for t, r in reads.items()}
            candidates = candidate_bounds(reads, cuts, per_impact)
            complete = all(r.full for r in reads.values())  # bounds tight already
            theta = await self._complete(
                conn, candidates, per_impact, exact, where, params, complete
            )
            unread = candidates[2]
            if unread == 0 or not reaches(unread, theta):
                break
            depth = plan_depths(reads, packed, per_impact, DEEPEN_MARGIN * theta)
            reads |= await self._read_parts(conn, depth, reads)
        found = [(s, hit[0], hit[1]) for s, hit in exact.items() if hit is not None]
        return sorted(found, key=lambda r: (-r[2], r[0]))[:k]

    async def _framed(
        self, conn: Any, corpus: CorpusStats, params: dict[str, Any]
    ) -> list[tuple[int, str, float]] | None:
        """The exact top ``k`` bounded from the namespace's frame (:mod:`._frames`), or
        ``None`` when the frame cannot bound it (then the impact rounds answer).

        Each record of the frame is bounded by its coded words' ``unit · Σ W · code`` (the
        query's weights :func:`~mnemon_langgraph.search._bounds.code_weights` of ``idf ·
        top · scale / 255``) plus its other words' exact ``idf · impact · scale``, their
        postings read whole and placed at their records' positions (:meth:`_frame_bounds`);
        each record written since, by its exact postings. The records above a level about
        ``LEVEL_SAMPLE`` per result wanted reach are scored exactly
        (:func:`~._frames.best_positions`); the ``k``-th of those scores, ``theta``, is a
        lower bound of the final one, and every record whose bound reaches ``theta`` is
        scored too: the top ``k`` and all its ties are among them, scored by the same SQL
        as the full query.
        """
        bounded = await self._frame_bounds(conn, corpus, int(params["nsid"]))
        if bounded is None:
            return None
        roster, bounds, tail_seqs, tail = bounded
        k = int(params["k"])
        exact: dict[int, tuple[str, float] | None] = {}
        pos, idx = best_positions(bounds, tail, k)
        await self._score_rows(
            conn, self._fresh(roster[pos], tail_seqs[idx], exact), exact, "", params
        )
        scores = sorted((hit[1] for hit in exact.values() if hit is not None), reverse=True)
        theta = max(scores[k - 1] if len(scores) >= k else 0.0, _TINY)
        more = np.flatnonzero((bounds > 0) & reaching(bounds, theta))  # 0: no query word
        idx = np.flatnonzero(reaching(tail, theta))
        await self._score_rows(
            conn, self._fresh(roster[more], tail_seqs[idx], exact), exact, "", params
        )
        found = [(s, hit[0], hit[1]) for s, hit in exact.items() if hit is not None]
        return sorted(found, key=lambda r: (-r[2], r[0]))[:k]

    @staticmethod
    def _fresh(
        seqs: np.ndarray, tail_seqs: np.ndarray, exact: dict[int, tuple[str, float] | None]
    ) -> list[int]:
        """These frame records and records written since that are not scored yet."""
        return [s for s in np.concatenate([seqs, tail_seqs]).tolist() if s not in exact]

    async def _frame_bounds(
        self, conn: Any, corpus: CorpusStats, nsid: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(roster, bounds, tail seqs, tail bounds)``: each frame position's upper bound
        and each record written since the frame's (``seq > upto``), or ``None`` when the
        frame cannot bound the query (no frame, a code row or roster not the frame's, a
        posting outside it, or more postings to read whole than the frame has records).

        Coded terms: their code rows, and their postings above ``upto``
        (:data:`~._impact.DELTA_SQL`). The other terms (in fewer than one record of
        :data:`~._frames.CODE_SHARE`, or too few postings for a code row) are read whole,
        their packs' parts and their postings since (:meth:`_read_whole`), and each posting
        adds ``weight · impact`` at its record's position in the roster
        (:class:`~._frames.Rosters`) or to the record's tail bound.
        """
        live = {t: s for t, s in corpus.stats.items() if s.df > 0}
        frame = corpus.frame
        if frame is None or not _frame_fits(corpus):
            return None
        coded = sorted(t for t, s in live.items() if s.coded)
        roster = await self.rosters.get(conn, nsid, frame)
        if roster is None:
            return None
        scale = impact_scale(corpus.avgdl, corpus.ref_avgdl) * (1 + IMPACT_SLACK)
        weight = {t: idf(corpus.docs, s.df) * scale for t, s in live.items()}
        bounds = np.zeros(len(roster))
        if coded:
            cur = await conn.execute(CODES_SQL, (coded,), binary=True)
            rows = {str(t): (float(top), bytes(raw)) for t, top, raw in await cur.fetchall()}
            if sorted(rows) != coded or any(len(r[1]) != frame[0] for r in rows.values()):
                return None
            codes = [np.frombuffer(rows[t][1], dtype=np.uint8) for t in coded]
            weights, unit = code_weights([weight[t] * rows[t][0] / CODE_MAX for t in coded])
            bounds = unit * sum_codes(codes, weights, frame[0]).astype(np.float64)
        reads = await self._read_whole(conn, live, frame[1])
        if reads is None or not self._place(reads, live, roster, frame[1], weight, bounds):
            return None
        tail_seqs, tail, _ = candidate_bounds(reads, dict.fromkeys(reads, 0.0), weight)
        return roster, bounds, tail_seqs.astype(np.int64), tail

    @staticmethod
    def _place(
        reads: dict[str, TermRead],
        live: dict[str, TermStats],
        roster: np.ndarray,
        upto: int,
        weight: dict[str, float],
        bounds: np.ndarray,
    ) -> bool:
        """Add the uncoded terms' postings inside the frame (``seq <= upto``) to ``bounds``
        at their records' positions (``weight · impact``), leaving in ``reads`` only their
        postings written since; ``False`` if a posting's record is not in the roster."""
        seqs, gains = [], []
        for term, read in list(reads.items()):
            if live[term].coded:
                continue
            inside = read.seqs <= upto
            seqs.append(read.seqs[inside])
            gains.append(weight[term] * read.impacts[inside].astype(np.float64))
            reads[term] = dataclasses.replace(
                read, seqs=read.seqs[~inside], impacts=read.impacts[~inside]
            )
        if not seqs:
            return True
        every = np.concatenate(seqs)
        at = np.minimum(np.searchsorted(roster, every), len(roster) - 1)
        if np.any(roster[at] != every):  # cannot happen: the frame is built under the lock
            return False
        bounds += np.bincount(at, weights=np.concatenate(gains), minlength=len(roster))
        return True

    async def _read_whole(
        self, conn: Any, live: dict[str, TermStats], upto: int
    ) -> dict[str, TermRead] | None:
        """The coded terms' postings above the frame's ``upto`` and every posting of the
        others (above their pack's ``upto`` from the index, the rest from every part of
        their pack); ``None`` if a pack ends short of its last part."""
        terms = sorted(live)
        whole = {t: s.packed > 0 and not s.coded for t, s in live.items()}
        since = [upto if live[t].coded else (live[t].upto if whole[t] else 0) for t in terms]
        cur = await conn.execute(DELTA_SQL, {"dterms": terms, "dupto": since}, binary=True)
        reads = {
            str(term): TermRead(
                depth=0,
                seqs=decode_array(seqs, ">i8").astype(np.int64),
                impacts=decode_array(imps, ">f4").astype(np.float32),
                full=not whole[str(term)],
                low=math.inf,
            )
            for term, seqs, imps in await cur.fetchall()
        }
        reads |= await self._read_parts(conn, dict.fromkeys(filter(whole.get, terms), _ALL), reads)
        return reads if all(r.full for r in reads.values()) else None

    async def _read_first(self, conn: Any, live: dict[str, TermStats]) -> dict[str, TermRead]:
        """The first round: each term's postings above its pack's ``upto`` (all of a term
        without a pack: :data:`~._impact.DELTA_SQL`), then the first
        ``settings.bm25_first_parts`` parts of each pack."""
        terms = sorted(live)
        cur = await conn.execute(  # binary: the bytea arrive as bytes, not hex text
            DELTA_SQL, {"dterms": terms, "dupto": [live[t].upto for t in terms]}, binary=True
        )
        reads: dict[str, TermRead] = {}
        for term, seqs, imps in await cur.fetchall():
            packed = live[term].packed > 0
            reads[term] = TermRead(
                depth=0,
                seqs=decode_array(seqs, ">i8").astype(np.int64),
                impacts=decode_array(imps, ">f4").astype(np.float32),
                full=not packed,
                low=math.inf,
            )
        first = {
            t: self.settings.bm25_first_parts * self.settings.bm25_pack_part
            for t in terms
            if not reads[t].full
        }
        return reads | await self._read_parts(conn, first, reads)

    async def _read_parts(
        self, conn: Any, depth: dict[str, int], reads: dict[str, TermRead]
    ) -> dict[str, TermRead]:
        """Each packed term of ``depth`` read on to (at least) that many of its pack's
        postings, by whole parts (:data:`~._impact.PARTS_SQL`)."""
        size = max(1, self.settings.bm25_pack_part)
        plan = {
            t: (reads[t].parts, max(reads[t].parts + 1, -(-d // size))) for t, d in depth.items()
        }
        terms = sorted(plan)
        if not terms:
            return {}
        cur = await conn.execute(
            PARTS_SQL,
            {
                "pterms": terms,
                "pfrom": [plan[t][0] for t in terms],
                "pto": [plan[t][1] for t in terms],
            },
            binary=True,  # the parts' bytea as bytes: no hex encoding and decoding
        )
        got: dict[str, list[PackPart]] = {t: [] for t in terms}
        for term, low, last, seqs, imps in await cur.fetchall():
            got[term].append(PackPart.from_row(low, last, seqs, imps))
        out = {}
        for term, parts in got.items():
            if parts:
                out[term] = reads[term].extended(parts)
            else:  # the pack is gone (a delete took its last record): nothing more to read
                out[term] = dataclasses.replace(reads[term], full=True)
        return out

    async def _complete(
        self,
        conn: Any,
        candidates: tuple[np.ndarray, np.ndarray, float],
        per_impact: dict[str, float],
        exact: dict[int, tuple[str, float] | None],
        where: str,
        params: dict[str, Any],
        complete: bool = False,
    ) -> float:
        """Rule out or score candidates, best bound first, while one left may reach ``theta``.

        A chunk of the candidates whose bound reaches ``theta`` gets its tight bound from
        all its postings of the query's terms (:meth:`_record_bounds`); those still reaching
        ``theta`` are scored on their record rows (:func:`bm25_sql` matching ``seq``: the
        very expression of the full query; a record the filters exclude is kept as
        ``None``). With ``complete`` (every query term read whole) the candidates' bounds
        already hold all their postings, which is what the lookup would add, so it is
        skipped. ``theta`` only rises, so a candidate ruled out stays out. Stops early
        when the records never named may still reach ``theta`` (``unread``): the next round
        reads deeper postings anyway. Returns ``theta`` (0 while fewer than ``k`` matches
        are known).
        """
        seqs, bounds, unread = candidates
        k, chunk = int(params["k"]), max(2 * int(params["k"]), 64)
        unseen = np.ones(len(seqs), dtype=bool)
        while True:
            scores = sorted((hit[1] for hit in exact.values() if hit is not None), reverse=True)
            theta = scores[k - 1] if len(scores) >= k else 0.0
            if len(scores) >= k and reaches(unread, theta):
                return theta
            # the unseen candidates that may reach theta, best bound first (a partial sort:
            # at 1M records there are ~10^5 candidates and a few thousand get looked at)
            open_ = np.flatnonzero(unseen & reaching(bounds, theta))
            if not len(open_):
                return theta
            if len(open_) > chunk:
                open_ = open_[np.argpartition(-bounds[open_], chunk - 1)[:chunk]]
            unseen[open_] = False
            fresh = np.array([s not in exact for s in seqs[open_].tolist()], dtype=bool)
            batch = seqs[open_][fresh].astype(np.int64)
            if complete:
                tight = bounds[open_][fresh]
            else:
                tight = await self._record_bounds(conn, batch, per_impact)
            batch = batch[reaching(tight, theta)]
            await self._score_rows(conn, batch.tolist(), exact, where, params)
            chunk *= 2

    @staticmethod
    async def _record_bounds(
        conn: Any, batch: np.ndarray, per_impact: dict[str, float]
    ) -> np.ndarray:
        """Each record's bound from all its postings of the query's terms (:data:`LOOKUP_SQL`,
        :func:`~._impact.record_bounds`)."""
        if not len(batch):
            return np.zeros(0)
        terms = sorted(per_impact)
        cur = await conn.execute(
            LOOKUP_SQL, {"lseqs": int_array(batch), "lterms": terms}, binary=True
        )
        row = await cur.fetchone()
        assert row is not None  # an aggregate without GROUP BY: always one row
        return record_bounds(
            decode_array(row[0], ">i8").astype(np.int64),
            decode_array(row[1], ">i4").astype(np.int64),
            decode_array(row[2], ">f4"),
            np.array([per_impact[t] for t in terms]),
            batch,
        )

    async def _score_rows(
        self,
        conn: Any,
        seqs: list[int],
        exact: dict[int, tuple[str, float] | None],
        where: str,
        params: dict[str, Any],
    ) -> None:
        """Exact scores of these records from their rows, into ``exact`` (``None``: the
        filters exclude it)."""
        if not seqs:
            return
        rows = await self._bm25_rows(
            conn,
            bm25_sql(len(params["terms"]), where, "r.seq = ANY(%(seqs)s::bigint[])"),
            params | {"seqs": int_array(seqs), "k": len(seqs)},
        )
        exact.update(dict.fromkeys(seqs))
        exact.update({s: (rid, score) for s, rid, score in rows})

    @staticmethod
    async def _bm25_rows(
        conn: Any, sql: str, params: dict[str, Any]
    ) -> list[tuple[int, str, float]]:
        cur = await conn.execute(sql, params)
        return [(int(s), rid, float(score)) for s, rid, score in await cur.fetchall()]

    @staticmethod
    async def _term_stats(conn: Any, nsid: int, terms: list[str]) -> CorpusStats:
        """The namespace's records, average and reference lengths, per-term statistics."""
        cur = await conn.execute(
            "SELECT n.docs, n.total_len, n.ref_avgdl, f.n, f.upto, t.term, t.df, t.max_tf, "
            "t.min_len, t.packed, t.upto, c.term IS NOT NULL FROM mnemon_namespaces n "
            "LEFT JOIN mnemon_frames f ON f.nsid = n.nsid "
            "LEFT JOIN mnemon_terms t ON t.term = ANY(%s) "
            "LEFT JOIN mnemon_codes c ON c.term = t.term WHERE n.nsid = %s",
            (terms, nsid),
        )
        rows = await cur.fetchall()
        docs, total = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
        avgdl = total / docs if total > 0 and docs > 0 else 1.0
        ref = float(rows[0][2]) if rows and rows[0][2] is not None else avgdl
        frame = (int(rows[0][3]), int(rows[0][4])) if rows and rows[0][3] is not None else None
        stats = {
            str(t): TermStats(int(df), float(mt), int(ml), int(pk), int(up), bool(coded))
            for *_, t, df, mt, ml, pk, up, coded in rows
            if t is not None
        }
        return CorpusStats(docs, avgdl, ref, stats, frame)
