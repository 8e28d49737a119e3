"""The ``retrieve`` node (sync and async): run the pending searches and pool their pages.

A page search asks the store for the next page of a planned search; a ``new_search``
action asks the planner for a new wording of an open need first; a ``follow`` action adds
searches worded from a positive record (:func:`~mnemon_langgraph.read.planner.record_query`).
The searches of one round run side by side; their pages are merged into the pool (round 1:
the first pool by reciprocal rank fusion).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from mnemon_langgraph.read._as_of import as_of_bound, as_of_filters, known_at
from mnemon_langgraph.read._drive import Body, Call, Gather, adrive, drive, in_thread
from mnemon_langgraph.read._instructions import line_similarities, standing_lines, standing_texts
from mnemon_langgraph.read._nodes_sources import INSTRUCTIONS, SourcesNode
from mnemon_langgraph.read._packing import pack_hits, pack_records, sources_naming
from mnemon_langgraph.read._pooling import (
    Candidates,
    build_first_pool,
    dict_to_record,
    fused_keys,
    keyword_order,
    keyword_rerank,
    merge_pages,
    record_to_dict,
    take_page,
)
from mnemon_langgraph.read._rules import Need
from mnemon_langgraph.read._sessions import SESSION, dense_sessions, session_nearness
from mnemon_langgraph.read._source_match import named_terms, pool_quotas, source_weights
from mnemon_langgraph.read._topics import topic_lane
from mnemon_langgraph.read._trace import degraded, timing_event
from mnemon_langgraph.read.planner import (
    NewSearchResult,
    Planner,
    latest_text,
    message_text,
    record_query,
)
from mnemon_langgraph.read.settings import LOOKAHEAD, ReadSettings
from mnemon_langgraph.read.sources.binding import BoundSource, offered
from mnemon_langgraph.read.state import PoolRecord, ReadState, needs_of, recent_messages
from mnemon_langgraph.types import Record, SearchFilters, SearchHit, SearchSource

__all__ = ["INSTRUCTIONS", "RetrieveNode"]

TOPIC = "topic"
"""Origin of the search for a topic's mentions in every session (``read.topics``)."""

_UNPLANNED = (INSTRUCTIONS, TOPIC, "date")
"""First-round searches whose hits do not count toward a dense session: the lanes (their
own records) and the date search (kept to a window)."""


def _standing(
    idx: int,
    hits: Sequence[SearchHit],
    round_no: int,
    sims: Mapping[str, float],
    floor: float = 0.0,
) -> list[PoolRecord]:
    """The instruction search's records that hold a standing instruction of the user, as pool
    entries marked with those lines (``standing``) and, where ``sims`` has one, their lines'
    nearness to the message (``standing_sim``); the rest of its page is dropped, and so is a
    record whose nearness is below ``floor`` (``ReadSettings.instruction_floor``)."""
    out: list[PoolRecord] = []
    for hit in hits:
        lines = standing_lines(hit.record)
        if lines and sims.get(hit.record.id, floor) >= floor:
            entry = PoolRecord(
                **record_to_dict(hit.record),
                found=[[idx, hit.rank]],
                round=round_no,
                bm25_rank=hit.bm25_rank,
                dense_rank=hit.dense_rank,
            )
            entry["standing"] = lines
            if hit.record.id in sims:
                entry["standing_sim"] = sims[hit.record.id]
            out.append(entry)
    return out


def _topic(
    idx: int, hits: Sequence[SearchHit], round_no: int, per_session: int
) -> list[PoolRecord]:
    """The topic search's records that hold a line of the user's, at most ``per_session``
    of each session (``read.topics.topic_lane``), as pool entries; the rest is dropped."""
    out: list[PoolRecord] = []
    for hit in topic_lane(hits, per_session):
        entry = PoolRecord(
            **record_to_dict(hit.record),
            found=[[idx, hit.rank]],
            round=round_no,
            bm25_rank=hit.bm25_rank,
            dense_rank=hit.dense_rank,
        )
        entry["topic_rank"] = hit.rank
        out.append(entry)
    return out


def _with_lane(pool: list[PoolRecord], lane: Sequence[PoolRecord]) -> tuple[list[PoolRecord], int]:
    """The pool with the lane's records: marked where already pooled, appended otherwise."""
    if not lane:
        return pool, 0
    where = {p["id"]: i for i, p in enumerate(pool)}
    added = 0
    for entry in lane:
        i = where.get(entry["id"])
        if i is None:
            where[entry["id"]] = len(pool)
            pool.append(entry)
            added += 1
        else:
            found = [*pool[i].get("found", []), *entry.get("found", [])]
            merged = cast(PoolRecord, {**pool[i], "found": found})
            for mark in ("standing", "standing_sim", "topic_rank"):
                if mark in entry:
                    merged[mark] = entry[mark]  # type: ignore[literal-required]
            pool[i] = merged
    return pool, added


def _search_event(
    s: Mapping[str, Any], idx: int, offset: int, returned: int, new: int, round_no: int
) -> dict[str, Any]:
    """The trace event of one search page (with its ``source`` when the graph has several)."""
    where = {"source": s["read_source"]} if "read_source" in s else {}
    return {
        **where,
        "event": "search",
        "index": idx,
        "query": s["query"],
        "origin": s["origin"],
        "offset": offset,
        "returned": returned,
        "new": new,
        "round": round_no,
    }


def _fused_candidates(searches: Sequence[Mapping[str, Any]], over: str) -> list[Mapping[str, Any]]:
    """The candidates of ``over``'s asking searches, fused by reciprocal rank."""
    lists = [
        list(a["cache"])
        for a in searches
        if a.get("read_source") == over and a.get("cache") is not None
    ]
    if len(lists) == 1:
        return lists[0]
    first = {d["id"]: d for entries in lists for d in reversed(entries)}
    return [first[key] for key in fused_keys([[d["id"] for d in entries] for entries in lists])]


def _entry(hit: SearchHit) -> dict[str, Any]:
    """A dense-only candidate as kept in its asking search: the record's state data and
    its two ranks."""
    entry: dict[str, Any] = record_to_dict(hit.record)  # type: ignore[assignment]
    entry["dense_rank"] = hit.dense_rank
    entry["bm25_rank"] = hit.bm25_rank
    return entry


class _Served:
    """What a round's searches served from dense-only sources' candidates share: each
    source's fused candidates with their BM25 collection (``unions``), and the records
    rebuilt from candidate entries, by entry (the entries stay in the searches, unchanged,
    for the whole round, so an entry's identity names it there)."""

    def __init__(self, namespace: tuple[str, ...]) -> None:
        self.namespace = namespace
        self.unions: dict[str, tuple[list[Mapping[str, Any]], Candidates]] = {}
        self._records: dict[int, Record] = {}

    def record(self, entry: Mapping[str, Any]) -> Record:
        """The record of a candidate entry (:func:`dict_to_record`), once per round."""
        made = self._records.get(id(entry))
        if made is None:
            made = self._records[id(entry)] = dict_to_record(entry, self.namespace)
        return made


def _search_call(bound: BoundSource, query: str, kwargs: Mapping[str, Any]) -> Call:
    """One search of a bound source as a driver's call; a timed one (several sources) is
    started from the driving thread (``Call.start``): it runs in the timed-search pool."""
    start = bound.start_search if bound.timeout_s is not None else None
    return Call(bound.search, bound.asearch, (query,), kwargs, start=start)


def _cached(search: Mapping[str, Any]) -> bool:
    """Whether a search is served from a dense-only source's candidates of the turn (it
    derives from the asking search, or is that search once it has asked)."""
    return "over" in search or "cache" in search


def _known(
    hits: list[SearchHit] | BaseException, as_of: datetime | None
) -> list[SearchHit] | BaseException:
    """The hits known at ``as_of``. Both stores already apply the bound inside the search
    (``SearchFilters.date_to``); this guards against a source that ignores date bounds."""
    if as_of is None or isinstance(hits, BaseException):
        return hits
    return [h for h in hits if known_at(h.record, as_of)]


def _packed_documents(
    limit: int | None,
    searches: Sequence[Mapping[str, Any]],
    fetched: list[tuple[int, int, list[SearchHit] | BaseException]],
    focus: Sequence[str],
) -> list[tuple[int, int, list[SearchHit] | BaseException]]:
    """The round's hits with a dense-only source's records packed
    (``ReadSettings.document_record_chars``, :mod:`~mnemon_langgraph.read._packing`):
    one packing over every record the source returned to the round's searches (its
    asking searches: the turn's candidates), so each of its searches sees the same
    records; only a source whose results name as many of the turn's names (``focus``:
    the latest message and the needs) as any source's. Other sources' hits, and
    everything when the setting is off (``limit`` ``None``), unchanged."""
    if limit is None:
        return fetched
    got = [(i, o, r) for i, o, r in fetched if not isinstance(r, BaseException)]
    names = {searches[i].get("read_source") for i, _, _ in got if searches[i].get("candidates")}
    names.discard(None)
    if not names:
        return fetched
    texts: dict[str, list[str]] = {}
    for i, _, hits in got:
        texts.setdefault(str(searches[i].get("read_source")), []).extend(
            h.record.text for h in hits
        )
    names &= sources_naming(texts, named_terms(focus))
    mine = [r for i, _, r in got if searches[i].get("read_source") in names]
    packed = pack_records((h.record for hits in mine for h in hits), limit)
    return [
        (i, o, pack_hits(r, packed))
        if not isinstance(r, BaseException) and searches[i].get("read_source") in names
        else (i, o, r)
        for i, o, r in fetched
    ]


class RetrieveNode(SourcesNode):
    """Mixin: the ``retrieve`` node. Needs ``sources``, ``planner``, ``settings``."""

    source: SearchSource
    planner: Planner
    settings: ReadSettings

    # --- retrieve ---------------------------------------------------------------------
    def _new_search_result(
        self,
        searches: list[dict[str, Any]],
        need: Need,
        out: NewSearchResult,
        round_no: int,
        trace: list[dict[str, Any]],
        fetch: list[tuple[int, int]],
        names: list[str | None],
    ) -> float:
        query, calls, secs, errors = out
        trace.append(
            {
                "event": "new_search",
                "need_index": need.index,
                "query": query,
                "calls": calls,
                "errors": errors,
                "model_seconds": secs,
            }
        )
        if errors:
            trace.append(degraded("new_search", "; ".join(errors)))
        tried = {s["query"].casefold() for s in searches}
        if query and query.casefold() not in tried:
            for name in names:  # every source (one source: [None])
                idx = len(searches)
                search: dict[str, Any] = {
                    "index": idx,
                    "query": query,
                    "origin": "new_search",
                    "next_offset": 0,
                    "exhausted": False,
                    "round": round_no,
                    "need_index": need.index,
                    **({"read_source": name} if name is not None else {}),
                }
                if self._asked_once(name):
                    search = self._over(search, idx, cast(str, name))
                searches.append(search)
                fetch.append((idx, 0))
        return secs

    def _fetch_plan(
        self, state: ReadState
    ) -> tuple[list[dict[str, Any]], list[tuple[int, int]], list[Need]]:
        searches = [dict(s) for s in state.get("searches", [])]
        fetch: list[tuple[int, int]] = []
        asks: list[Need] = []
        needs = {n.index: n for n in needs_of(state)}
        for action in state.get("pending", []):
            if action["kind"] == "page":
                key = (action["search_index"], action["offset"])
                if key not in fetch:
                    fetch.append(key)
            elif action["kind"] == "new_search":
                asks.append(needs[action["need_index"]])
            elif action["kind"] == "follow":
                self._follow_searches(state, action, searches, fetch)
        return searches, fetch, asks

    def _follow_searches(
        self,
        state: ReadState,
        action: Mapping[str, Any],
        searches: list[dict[str, Any]],
        fetch: list[tuple[int, int]],
    ) -> None:
        """Add the searches that follow a positive record, worded from its text.

        ``follow_scope`` ``session`` searches only the record's own session, ``memory``
        every session, ``both`` does each. A search already in the turn (same words, same
        session bound) is not repeated.
        """
        record = next((p for p in state.get("pool", []) if p["id"] == action["record_id"]), None)
        need = next((n for n in state.get("needs", []) if n["index"] == action["need_index"]), None)
        if record is None or need is None:
            return
        query = record_query(record.get("text", ""), need["text"], self.settings.follow_words)
        if not query:
            return
        own: int | None = record.get("session")
        scope = self.settings.follow_scope
        bounds = [own] if scope == "session" else [None] if scope == "memory" else [own, None]
        # a follow search looks around the record in its own source (sessions are a source's)
        name = record.get("read_source")
        tried = {(s["query"], s.get("session"), s.get("read_source")) for s in searches}
        for session in bounds:
            if (query, session, name) in tried:
                continue
            idx = len(searches)
            search: dict[str, Any] = {
                "index": idx,
                "query": query,
                "origin": "follow" if session is None else "follow:session",
                "next_offset": 0,
                "exhausted": False,
                "round": state.get("rounds", 0) + 1,
                "need_index": action["need_index"],
                "record_id": record["id"],
                "session": session,
                "k": self.settings.follow_records,
                **({"read_source": name} if name is not None else {}),
            }
            if name is not None and self._asked_once(name):  # from the turn's candidates
                search = self._over(search, idx, name)
            searches.append(search)
            fetch.append((idx, 0))

    def _retrieve_finish(
        self,
        state: ReadState,
        searches: list[dict[str, Any]],
        fetched: list[tuple[int, int, list[SearchHit] | BaseException]],
        trace: list[dict[str, Any]],
        start: float,
        model_seconds: float,
        pooled: set[str],
        sims: Mapping[str, float],
    ) -> dict[str, Any]:
        round_no = state.get("rounds", 0) + 1
        seen = set(pooled)
        pages: list[tuple[int, int, list[SearchHit]]] = []
        fill: list[tuple[int, int, list[SearchHit]]] = []  # the dense sessions' searches
        lane: list[PoolRecord] = []
        for idx, offset, hits in fetched:
            s = searches[idx]
            if isinstance(hits, BaseException):
                if "read_source" in s:  # one of several sources: the others build the View
                    trace.extend(self._source_failed(searches, idx, hits))
                    continue
                trace.append(
                    degraded("search", f"search {idx} failed: {type(hits).__name__}: {hits!s:.200}")
                )
                s["exhausted"] = True
                continue
            if s["origin"] in (INSTRUCTIONS, TOPIC):
                kept = (
                    _standing(idx, hits, round_no, sims, self.settings.instruction_floor)
                    if s["origin"] == INSTRUCTIONS
                    else _topic(idx, hits, round_no, self.settings.experiments.topic_records)
                )
                lane.extend(kept)
                s["exhausted"] = True
                # as for a page: "new" counts what it brings that no earlier round pooled
                unseen = sum(1 for e in kept if e["id"] not in pooled)
                trace.append(_search_event(s, idx, offset, len(hits), unseen, round_no))
                continue
            k = s.get("k") or self.settings.page_records
            skip = seen if self.settings.skip_pooled else ()
            page = take_page(hits, max_records=k, max_chars=self.settings.page_chars, pooled=skip)
            fresh = {h.record.id for h in page} - seen
            if pooled:  # the round's later pages skip these too (first pool: RRF decides)
                seen |= fresh
            s["next_offset"] = offset + len(page)
            # a follow search is a look around one record, never paged
            s["exhausted"] = len(page) == len(hits) < self._fetch_k(s, pooled)
            s["exhausted"] |= "record_id" in s or s["origin"] == SESSION
            (fill if s["origin"] == SESSION else pages).append((idx, offset, page))
            trace.append(_search_event(s, idx, offset, len(page), len(fresh), round_no))
        pool = list(state.get("pool", []))
        if not pool and round_no == 1:
            names = [searches[i].get("read_source") or "" for i, _, _ in pages]
            weights = self._source_weights(searches, pages, names, trace)
            quotas = None
            if weights and self.settings.source_share is None:
                quotas = pool_quotas(self.settings.pool_size, list(dict.fromkeys(names)), weights)
            pool = build_first_pool(
                pages,
                cap=self.settings.pool_size,
                rrf_k=self.settings.rrf_k,
                sources=names,
                source_share=self.settings.source_share,
                source_quotas=quotas,
                fill=fill,
                fill_places=self.settings.experiments.session_places,
            )
            added = len(pool)
        else:
            pool, added = merge_pages(pool, [*pages, *fill], round_no)
        pool, gained = _with_lane(pool, lane)
        pool = self._tag(pool)
        added += gained
        trace.append({"event": "pool", "round": round_no, "added": added, "size": len(pool)})
        trace.append(timing_event("retrieve", start, model_seconds))
        return {"searches": searches, "pool": pool, "pending": [], "trace": trace}

    def _source_weights(
        self,
        searches: list[dict[str, Any]],
        pages: list[tuple[int, int, list[SearchHit]]],
        names: list[str],
        trace: list[dict[str, Any]],
    ) -> dict[str, float]:
        """The turn's source weights from the first round's pages (``source_match``,
        :mod:`~mnemon_langgraph.read._source_match`); empty when off, with one source, or
        when there is nothing to weigh."""
        power = self.settings.source_match
        if not power or len(set(names)) < 2:
            return {}
        texts: dict[str, list[str]] = {}
        for name, (_, _, page) in zip(names, pages, strict=True):
            texts.setdefault(name, []).extend(h.record.text for h in page)
        weights = source_weights(searches, texts, power)
        if weights:
            trace.append({"event": "source_match", "weights": weights})
        return weights

    def _retrieve(self, state: ReadState) -> Body[dict[str, Any]]:
        start = time.perf_counter()
        searches, fetch, asks = self._fetch_plan(state)
        trace: list[dict[str, Any]] = []
        model_seconds = 0.0
        round_no = state.get("rounds", 0) + 1
        recent = recent_messages(state, self.settings)
        pooled = {p["id"] for p in state.get("pool", [])}
        as_of = as_of_bound(state.get("as_of"))
        for need in asks:
            tried = [s["query"] for s in searches]
            out = yield Call(
                self.planner.next_search,
                self.planner.anext_search,
                (recent, need, tried, self.settings),
            )
            names = self._search_sources(state, searches)
            model_seconds += self._new_search_result(
                searches, need, out, round_no, trace, fetch, names
            )
        # a dense-only source's searches after its asking one are served from its candidates
        local = [(i, o) for i, o in fetch if _cached(searches[i])]
        asked = [(i, o) for i, o in fetch if not _cached(searches[i])]
        # the searches are independent: they run side by side
        bound = {
            name: self._bound(state, name)
            for name in dict.fromkeys(searches[i].get("read_source") for i, _ in asked)
        }
        results = yield Gather(
            tuple(
                _search_call(
                    bound[searches[i].get("read_source")],
                    searches[i]["query"],
                    self._search_kwargs(searches[i], o, pooled, as_of),
                )
                for i, o in asked
            )
        )
        fetched = [(i, o, _known(r, as_of)) for (i, o), r in zip(asked, results, strict=True)]
        focus = [message_text(m) for m in recent[-1:]] + [n.text for n in needs_of(state)]
        fetched = _packed_documents(self.settings.document_record_chars, searches, fetched, focus)
        fetched = [(i, o, self._keep_candidates(searches[i], r)) for i, o, r in fetched]
        served = _Served(tuple(state["namespace"]))  # shared by the round's local searches
        fetched += [
            (i, o, _known(self._from_candidates(searches, i, o, pooled, as_of, served), as_of))
            for i, o in local
        ]
        if round_no == 1 and not pooled:
            fetched += yield from self._session_pages(state, searches, fetched, recent, as_of)
        sims = yield from self._instruction_sims(state, searches, fetched, recent, trace)
        return self._retrieve_finish(
            state, searches, fetched, trace, start, model_seconds, pooled, sims
        )

    def _session_pages(
        self,
        state: ReadState,
        searches: list[dict[str, Any]],
        fetched: Sequence[tuple[int, int, list[SearchHit] | BaseException]],
        recent: Sequence[Any],
        as_of: datetime | None,
    ) -> Body[list[tuple[int, int, list[SearchHit] | BaseException]]]:
        """The first round's searches of its dense sessions (``session_searches``,
        :mod:`~mnemon_langgraph.read._sessions`): the latest message kept to each of the
        sessions the planned searches' first ``session_depth`` hits (at least a page) come
        back to most, in the source that returned them (a dense-only source's candidates
        are not counted)."""
        most = self.settings.session_searches
        if not most:
            return []
        depth = max(self.settings.page_records, self.settings.session_depth)
        counted = [
            (searches[i].get("read_source"), hits[:depth])
            for i, _, hits in fetched
            if not isinstance(hits, BaseException) and self._counts_sessions(searches[i])
        ]
        near = self.settings.experiments.session_nearness
        chosen = dense_sessions(counted, max(most, near))
        if not chosen:
            return []
        message = latest_text(list(recent))
        if near > most:
            chosen = yield from _nearest_sessions(
                chosen, message, lambda name: self._bound(state, name).capabilities()
            )
        chosen = chosen[:most]
        new: list[int] = []
        for name, session in chosen:
            counts = self._counts_sessions
            also = self.settings.experiments.session_queries
            for query in _session_queries(searches, fetched, name, message, counts, also):
                new.append(len(searches))
                searches.append(
                    {
                        "index": len(searches),
                        "query": query,
                        "origin": SESSION,
                        "next_offset": 0,
                        "exhausted": True,
                        "round": 1,
                        "session": session,
                        "k": self.settings.session_records,
                        **({"read_source": name} if name is not None else {}),
                    }
                )
        results = yield Gather(
            tuple(
                _search_call(
                    self._bound(state, searches[i].get("read_source")),
                    searches[i]["query"],
                    self._search_kwargs(searches[i], 0, (), as_of),
                )
                for i in new
            )
        )
        return [(i, 0, _known(r, as_of)) for i, r in zip(new, results, strict=True)]

    def _instruction_sims(
        self,
        state: ReadState,
        searches: Sequence[Mapping[str, Any]],
        fetched: Sequence[tuple[int, int, list[SearchHit] | BaseException]],
        recent: Sequence[Any],
        trace: list[dict[str, Any]],
    ) -> Body[dict[str, float]]:
        """Record id → the nearness of its standing lines to the latest message, for the
        instruction searches' records (``ReadSettings.instruction_match``; only where there
        are two or more to order or a floor to check, and the search's source embeds
        queries). An embedder error is traced and leaves the search's order, unfloored."""
        sims: dict[str, float] = {}
        if not self.settings.instruction_match:
            return sims
        message = latest_text(list(recent))
        for idx, _, hits in fetched:
            s = searches[idx]
            if s["origin"] != INSTRUCTIONS or isinstance(hits, BaseException) or not message:
                continue
            lines = {h.record.id: standing_texts(h.record) for h in hits}
            lines = {rid: texts for rid, texts in lines.items() if texts}
            source = self._bound(state, s.get("read_source")).capabilities()
            # one line needs no order, only the floor's check
            few = 1 if self.settings.instruction_floor > 0 else 2
            if len(lines) < few or not offered(source)[0]:  # not a VectorSource
                continue
            embed = source.query_vector
            try:
                got = yield Call(
                    line_similarities, in_thread(line_similarities), (message, lines, embed)
                )
            except Exception as exc:  # the search's order stays: the lead is still shown
                trace.append(degraded("instructions", f"{type(exc).__name__}: {exc!s:.200}"))
                continue
            sims.update(got)
        return sims

    def _keep_candidates(
        self, search: dict[str, Any], hits: list[SearchHit] | BaseException
    ) -> list[SearchHit] | BaseException:
        """A dense-only source's asking search: its candidates re-ranked by the words of the
        turn's planned searches, kept in the search (``cache``) for the turn's other
        searches of the source and its later pages."""
        if search.get("candidates") is None or isinstance(hits, BaseException):
            return hits
        ranked = keyword_rerank(hits, search["rerank"], self.settings.rrf_k)
        search["cache"] = [_entry(h) for h in ranked]
        return ranked

    def _from_candidates(
        self,
        searches: Sequence[Mapping[str, Any]],
        idx: int,
        offset: int,
        pooled: Container[str],
        as_of: datetime | None,
        served: _Served,
    ) -> list[SearchHit]:
        """One page of a search served from a dense-only source's candidates of the turn:
        the asking search's later pages in its order, another search's re-ranked by its own
        words; its date or session bounds applied here. ``served``: what the round's
        searches served so share (each source's fused candidates, rebuilt records)."""
        s = searches[idx]
        over = s.get("over")
        if over is None:  # the asking search's later page: its own candidates, in order
            cache: list[Mapping[str, Any]] = list(s.get("cache") or ())
        else:  # the candidates of the source's asking searches, fused by rank
            if over not in served.unions:
                union = _fused_candidates(searches, over)
                served.unions[over] = union, Candidates([str(d.get("text", "")) for d in union])
            cache, collection = served.unions[over]
        if over is None:
            order = [(i, d.get("dense_rank"), d.get("bm25_rank")) for i, d in enumerate(cache)]
        else:
            ranked = keyword_order(collection, s["rerank"], self.settings.rrf_k)
            order = [(i, i, kr) for i, _, kr in ranked]
        kwargs = self._search_kwargs(s, offset, pooled, as_of)
        bounds: SearchFilters | None = kwargs.get("filters")
        want = offset + kwargs["k"]
        if bounds is None:  # the page's own records only: the ones before it are not rebuilt
            return [
                SearchHit(served.record(cache[i]), rank, 0.0, kr, dense)
                for rank, (i, dense, kr) in enumerate(order[:want])
                if rank >= offset
            ]
        hits: list[SearchHit] = []
        for rank, (i, dense, kr) in enumerate(order):  # rebuilt as far as the page reaches
            record = served.record(cache[i])
            if bounds.accepts(record):
                hit = SearchHit(record, rank, 0.0, bm25_rank=kr, dense_rank=dense)
                hits.append(hit)
                if len(hits) >= want:
                    break
        return hits[offset:]

    def _fetch_k(self, search: Mapping[str, Any], pooled: Container[str]) -> int:
        """How many hits to ask the store for: the page's size, or :data:`LOOKAHEAD` times
        that once records are pooled and ``skip_pooled`` keeps only new ones on a page."""
        if search.get("candidates"):
            return int(search["candidates"])
        k = int(search.get("k") or self.settings.page_records)
        if not pooled and self._counts_sessions(search):  # its page is cut from these
            return max(k, self.settings.session_depth)
        return k * LOOKAHEAD if self.settings.skip_pooled and pooled else k

    def _counts_sessions(self, search: Mapping[str, Any]) -> bool:
        """Whether a first-round search's hits count toward the dense sessions
        (``session_searches``): a planned search of the whole memory, asked of its source."""
        return (
            self.settings.session_searches > 0
            and search.get("origin") not in _UNPLANNED
            and search.get("session") is None
            and "record_id" not in search
            and not _cached(search)
        )

    def _search_kwargs(
        self,
        search: Mapping[str, Any],
        offset: int,
        pooled: Container[str],
        as_of: datetime | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of one search call (a follow search may keep to a session;
        an as-of View searches only the records dated at or before ``as_of``); the bound
        source adds its namespace (:class:`~.sources.binding.BoundSource`)."""
        kwargs: dict[str, Any] = {
            "k": self._fetch_k(search, pooled),
            "offset": offset,
        }
        filters: SearchFilters | None = None
        session = search.get("session")
        if session is not None:
            filters = SearchFilters(session_from=session, session_to=session)
        elif search.get("date_from"):
            filters = SearchFilters(
                date_from=datetime.fromisoformat(search["date_from"]),
                date_to=datetime.fromisoformat(search["date_to"]),
            )
        filters = as_of_filters(as_of, filters)
        if filters is not None:
            kwargs["filters"] = filters
        return kwargs

    def retrieve(self, state: ReadState) -> dict[str, Any]:
        """Node ``retrieve`` under ``invoke``."""
        return drive(self._retrieve(state))

    async def aretrieve(self, state: ReadState) -> dict[str, Any]:
        """Node ``retrieve`` under ``ainvoke``."""
        return await adrive(self._retrieve(state))


def _nearest_sessions(
    chosen: list[tuple[str | None, int]], message: str, capabilities: Callable[[str | None], Any]
) -> Body[list[tuple[str | None, int]]]:
    """``chosen`` (the densest sessions, densest first) ordered by their records' nearness
    to the message (``_sessions.session_nearness``; ``capabilities``: a source name → its
    bound source's capabilities); a source that stores no vectors or reads no sessions, or
    fails, keeps the count's order."""
    score: dict[tuple[str | None, int], float] = {}
    for name in dict.fromkeys(n for n, _ in chosen):
        source = capabilities(name)
        vectors, _, journal = offered(source)
        if not (vectors and journal):
            continue
        sessions = [s for n, s in chosen if n == name]
        fn = session_nearness
        try:
            got = yield Call(fn, in_thread(fn), (source, sessions, message))
        except Exception:  # the count's order stays
            continue
        score.update({(name, s): v for s, v in got.items()})
    if not score:
        return chosen
    order = {key: i for i, key in enumerate(chosen)}
    return sorted(chosen, key=lambda key: (-score.get(key, -2.0), order[key]))


def _session_queries(
    searches: Sequence[Mapping[str, Any]],
    fetched: Sequence[tuple[int, int, list[SearchHit] | BaseException]],
    name: str | None,
    message: str,
    counts: Callable[[Mapping[str, Any]], bool],
    also_planned: bool,
) -> list[str]:
    """The queries a dense session of source ``name`` is searched with: the latest message,
    then (``also_planned``: ``experiments.session_queries``) each other distinct query of
    the round's planned searches of that source (``counts``: whether a search's hits count
    toward the dense sessions)."""
    queries = [message]
    if also_planned:
        for i, _, hits in fetched:
            s = searches[i]
            if isinstance(hits, BaseException) or not counts(s):
                continue
            if s.get("read_source") == name and s["query"] not in queries:
                queries.append(s["query"])
    return queries
