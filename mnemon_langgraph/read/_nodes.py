"""The read graph's nodes: plan, retrieve, judge, act, compose (sync and async).

Each node is a method of :class:`Reader`, which holds the backends (closures, never
state). Sync and async faces share pure helpers; only the backend calls differ.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Literal, cast

from langchain_core.decisions import BaseDecisionModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import get_runtime
from langgraph.types import Overwrite

from mnemon_langgraph.items import ItemSource
from mnemon_langgraph.judges._features import named_date_range
from mnemon_langgraph.judges.propositions import Proposition
from mnemon_langgraph.read._as_of import as_of_bound, known_at, run_as_of
from mnemon_langgraph.read._dates import relative_date_range
from mnemon_langgraph.read._drive import Body, Call, Gather, Step, adrive, drive, in_thread
from mnemon_langgraph.read._evidence import EvidenceBuilder
from mnemon_langgraph.read._instructions import instruction_query
from mnemon_langgraph.read._judging import JudgeRequest, ajudge_wave, judge_wave
from mnemon_langgraph.read._nodes_items import ItemsNode
from mnemon_langgraph.read._nodes_retrieve import INSTRUCTIONS, TOPIC, RetrieveNode
from mnemon_langgraph.read._nodes_sources import as_named
from mnemon_langgraph.read._pooling import dict_to_record, record_to_dict
from mnemon_langgraph.read._questions import (
    opening_windows,
    openings,
    questions,
    reads,
    replies_judged,
    sessions_opened,
    windows,
)
from mnemon_langgraph.read._rules import (
    FollowRecord,
    Judgment,
    NewSearch,
    PageSearch,
    decide,
    is_yes,
    rank_by,
    should_continue,
)
from mnemon_langgraph.read._topics import is_coverage, topic_query
from mnemon_langgraph.read._trace import build_trace, degraded, timing_event, wave_events
from mnemon_langgraph.read.namespaces import legacy_namespace_hint, legacy_user_namespace
from mnemon_langgraph.read.planner import (
    Planner,
    PlanResult,
    RulePlanner,
    latest_text,
    message_text,
)
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.sources.binding import BoundSource, capability_flags, is_own
from mnemon_langgraph.read.state import (
    PoolRecord,
    ReadState,
    judgment_entry,
    judgments_of,
    needs_of,
    recent_messages,
    resolve_namespace,
    s1_messages,
    statuses_of,
)
from mnemon_langgraph.read.view import compose_view, seen_in_recent
from mnemon_langgraph.types import Namespace, Record, SearchFilters, SearchSource

__all__ = ["NODES", "Reader"]


def _journal(
    bound: BoundSource, session: int, start: int, stop: int, as_of: str = ""
) -> list[Record]:
    """The records of ``session`` at positions ``start .. stop - 1`` in a bound source (an
    as-of View: only those dated at or before ``as_of``, the bound in the read's own SQL)."""
    limit = as_of_bound(as_of)
    if limit is None:
        return list(bound.session_records(bound.namespace, session, start=start, stop=stop))
    got = bound.session_records(
        bound.namespace, session, start=start, stop=stop, filters=SearchFilters(date_to=limit)
    )
    return [r for r in got if known_at(r, limit)]  # a source that ignores the bound


async def _ajournal(
    bound: BoundSource, session: int, start: int, stop: int, as_of: str = ""
) -> list[Record]:
    """:func:`_journal` under ``ainvoke``: the source's own ``asession_records`` (both
    stores; PostgreSQL's reads its async pool), else ``session_records`` in a thread."""
    limit = as_of_bound(as_of)
    if limit is None:
        return list(await bound.asession_records(bound.namespace, session, start=start, stop=stop))
    got = await bound.asession_records(
        bound.namespace, session, start=start, stop=stop, filters=SearchFilters(date_to=limit)
    )
    return [r for r in got if known_at(r, limit)]


def _old_namespace_hint(sources: Sequence[Any], namespace: Namespace) -> Body[str | None]:
    """For an empty View of ``("users", X)``: the hint that the one-part ``(X,)`` of earlier
    versions holds records (and the command moving them), when ``namespace`` holds none in
    the user's own journal (``sources``: the own sources) and ``(X,)`` does; else ``None``.
    Under LangGraph auth only about the authenticated user's own old namespace
    (:func:`~mnemon_langgraph.read.namespaces.legacy_user_namespace`). Asked only when the
    pool is empty, so a View with records costs nothing; a failed check gives no hint."""
    old = legacy_user_namespace(namespace)
    store = next((s for s in sources if callable(getattr(s, "holds_namespace", None))), None)
    if old is None or store is None:
        return None
    ask = getattr(store, "aholds_namespace", None) or in_thread(store.holds_namespace)
    got = yield Gather(tuple(Call(store.holds_namespace, ask, (ns,)) for ns in (namespace, old)))
    return legacy_namespace_hint(old) if got == [False, True] else None


def _run_context() -> Any:
    """The run's context (``context=`` of ``invoke``), through langgraph's public API."""
    try:
        return get_runtime().context
    except (RuntimeError, KeyError, AttributeError):
        return None


NODES = ("plan", "retrieve", "judge", "act", "judge_items", "compose")


class Reader(RetrieveNode, ItemsNode):
    """Holds the backends; its methods are the graph's nodes (sync and async).

    ``source``: one search source, or named sources (``{"memory": store, "docs": ...}``,
    :mod:`mnemon_langgraph.read._nodes_sources`).
    """

    def __init__(
        self,
        source: SearchSource | Mapping[str, SearchSource],
        judge: BaseDecisionModel,
        planner: Planner,
        items: ItemSource | None,
        settings: ReadSettings,
    ) -> None:
        self.sources = as_named(source)
        self.source = next(iter(self.sources.values()))
        self.s1 = judge
        self.planner = planner
        self.items = items
        self.settings = settings
        self.evidence = EvidenceBuilder(self.source, settings.rrf_k)

    # --- plan -----------------------------------------------------------------------
    def _plan_start(
        self, state: ReadState, config: RunnableConfig
    ) -> tuple[Namespace, list[BaseMessage], str, tuple[dict[str, Any], list[dict[str, Any]]], str]:
        context = _run_context()
        namespace = resolve_namespace(context, config)
        recent = recent_messages(state, self.settings)
        latest_text(recent)
        now = getattr(context, "now", None)
        if now is None and isinstance(context, dict):
            now = context.get("now")
        bound = self._bind_run(context, config, namespace)
        as_of = run_as_of(context, config)
        if now is None:  # an as-of View is asked on its date unless told otherwise
            now = as_of
        as_of_text = as_of.isoformat() if as_of is not None else ""
        return namespace, recent, now.isoformat() if now is not None else "", bound, as_of_text

    def _plan_finish(
        self,
        namespace: Namespace,
        now: str,
        plan: PlanResult,
        start: float,
        latest: str,
        as_of: str = "",
    ) -> dict[str, Any]:
        searches: list[dict[str, Any]] = [
            {
                "index": i,
                "query": s.query,
                "origin": s.origin,
                "next_offset": 0,
                "exhausted": False,
                "round": 1,
            }
            for i, s in enumerate(plan.searches)
        ]
        bounds = self._date_bounds(latest, now)
        if bounds is not None:
            searches.append(
                {
                    "index": len(searches),
                    "query": latest,
                    "origin": "date",
                    "next_offset": 0,
                    "exhausted": False,
                    "round": 1,
                    "date_from": bounds[0].isoformat(),
                    "date_to": bounds[1].isoformat(),
                }
            )
        searches += self._lane_searches(latest, len(searches))
        needs = [
            {**asdict(n), "state": "open", "lead_step": 0, "positives": []} for n in plan.needs
        ]
        trace: list[dict[str, Any]] = [
            {
                "event": "plan",
                "planner": plan.planner,
                "calls": plan.calls,
                "notes": list(plan.notes),
                "errors": list(plan.errors),
                "model_seconds": plan.model_seconds,
                "searches": [{"query": s.query, "origin": s.origin} for s in plan.searches],
                "needs": [asdict(n) for n in plan.needs],
            }
        ]
        for note in plan.notes:
            trace.append(degraded("plan", note))
        trace.append(timing_event("plan", start, plan.model_seconds))
        return {
            "namespace": list(namespace),
            "now": now,
            "as_of": as_of,
            "plan": {"planner": plan.planner, "notes": list(plan.notes)},
            "searches": searches,
            "needs": needs,
            "pool": [],
            "pending": [
                {"kind": "page", "search_index": s["index"], "offset": 0} for s in searches
            ],
            "rounds": 0,
            "trace": Overwrite(trace),  # a new turn on a checkpointed thread starts afresh
            "judgments": Overwrite([]),
            "index": {},
        }

    def _lane_searches(self, latest: str, first: int) -> list[dict[str, Any]]:
        """The first round's searches whose records join the pool outside the fused
        ranking: the user's standing instructions (``read.instructions``) and, for a
        question about a topic across the whole history, its mentions in every session
        (``read.topics``)."""
        lanes: list[tuple[str, str, int]] = []
        if self.settings.instruction_records > 0:
            depth = self.settings.instruction_depth
            lanes.append((instruction_query(latest), INSTRUCTIONS, depth))
        if self.settings.experiments.topic_records > 0 and is_coverage(latest):
            lanes.append((topic_query(latest), TOPIC, self.settings.topic_depth))
        return [
            {
                "index": first + i,
                "query": query,
                "origin": origin,
                "next_offset": 0,
                "exhausted": False,
                "round": 1,
                "k": k,
            }
            for i, (query, origin, k) in enumerate(lanes)
        ]

    def _date_bounds(self, latest: str, now: str) -> tuple[datetime, datetime] | None:
        """The window of the first round's date search: the months the message names with
        their year (``date_search``), else the days it names relative to ``now``
        (``relative_date_search``), else ``None``."""
        bounds = named_date_range(latest) if self.settings.date_search else None
        if bounds is None and self.settings.experiments.relative_date_search and now:
            asked = datetime.fromisoformat(now)
            if asked.tzinfo is not None:
                asked = asked.astimezone(UTC).replace(tzinfo=None)
            bounds = relative_date_range(latest, asked)
        return bounds

    def _safe_plan_fallback(self, recent: list[BaseMessage], exc: Exception) -> PlanResult:
        plan = RulePlanner().plan(recent, self.settings)
        plan.notes.append(f"planner failed ({type(exc).__name__}: {exc!s:.200}); rule planner used")
        return plan

    def _plan(self, state: ReadState, config: RunnableConfig) -> Body[dict[str, Any]]:
        start = time.perf_counter()
        namespace, recent, now, (bound, failed), as_of = self._plan_start(state, config)
        try:
            plan = yield Call(
                self.planner.plan, self.planner.aplan, (recent, self.settings, now or None)
            )
        except Exception as exc:
            plan = self._safe_plan_fallback(recent, exc)
        update = self._plan_finish(namespace, now, plan, start, latest_text(recent), as_of)
        if failed:
            update["trace"] = Overwrite([*update["trace"].value, *failed])
        return self._with_sources(update, bound)

    def plan(self, state: ReadState, config: RunnableConfig) -> dict[str, Any]:
        """Node ``plan`` under ``invoke``."""
        return drive(self._plan(state, config))

    async def aplan(self, state: ReadState, config: RunnableConfig) -> dict[str, Any]:
        """Node ``plan`` under ``ainvoke``."""
        return await adrive(self._plan(state, config))

    # --- judge --------------------------------------------------------------------------
    def _screen_targets(self, state: ReadState) -> list[PoolRecord]:
        """Pooled records not screened yet (earlier rounds' records keep their screen)."""
        done = {j["target"] for j in state.get("judgments", []) if j["proposition"] == "screen"}
        return [p for p in state.get("pool", []) if p["id"] not in done]

    def _deep_targets(self, state: ReadState, screen: Sequence[Judgment]) -> list[PoolRecord]:
        """Records screened in (or in the candidates floor) and not yet judged in depth."""
        prior = judgments_of(state)
        order = [p["id"] for p in state.get("pool", [])]
        deep = {j.target_id for j in prior if j.proposition == "needed"}
        ranked = rank_by([*prior, *screen], "screen", order=order)
        floor = {rid for rid, _ in ranked[: self.settings.candidates_floor]}
        chosen = [rid for rid, p in ranked if (is_yes(p) or rid in floor) and rid not in deep]
        cap = self.settings.deep_records
        if cap is not None:  # a budget on depth: the best-screened first, per turn
            chosen = chosen[: max(0, cap - len(deep))]
        by_id = {p["id"]: p for p in state.get("pool", [])}
        return [by_id[r] for r in chosen]

    def _request(
        self,
        state: ReadState,
        props: Sequence[Proposition],
        entries: Sequence[PoolRecord],
        evidence: Mapping[str, Any],
        memory: Mapping[str, Any] | None = None,
    ) -> JudgeRequest:
        ns = tuple(state["namespace"])
        return JudgeRequest(
            props,
            [dict_to_record(p, ns) for p in entries],
            messages=s1_messages(state, self.settings),
            needs=needs_of(state),
            round=state.get("rounds", 0) + 1,
            evidence={p["id"]: evidence[p["id"]] for p in entries if p["id"] in evidence},
            memory=memory,
            sources={p["id"]: p["read_source"] for p in entries if p.get("read_source")},
        )

    def _evidence(
        self, state: ReadState, entries: Sequence[PoolRecord], evidence: dict[str, Any]
    ) -> Generator[Step, Any, float]:
        """Add the evidence of ``entries`` not built yet to ``evidence``; the model seconds.

        Only the records a wave judges get evidence, each once per round: a record pooled
        in an earlier round was screened then, so it is not looked up again unless a wave
        of this round judges it.
        """
        todo = [p for p in entries if p["id"] not in evidence]
        if not todo:
            return 0.0
        total = 0.0
        for ns, builder, part in self._evidence_parts(state, todo, self.evidence):
            built, model_s = yield Call(
                builder.build,
                builder.abuild,
                (ns, part, s1_messages(state, self.settings), needs_of(state)),
            )
            evidence.update(built)
            total += float(model_s)
        return total

    def _memory_terms(self, state: ReadState) -> Generator[Step, Any, dict[str, Any] | None]:
        """The query words' counts in the whole namespace (``state["memory"]`` of the calls);
        with bound sources, summed over those that can count them."""
        if self.binds:
            return (
                yield from self._memory_terms_all(
                    state, s1_messages(state, self.settings), needs_of(state)
                )
            )
        found = yield Call(
            self.evidence.memory_terms,
            self.evidence.amemory_terms,
            (tuple(state["namespace"]), s1_messages(state, self.settings), needs_of(state)),
        )
        return found if isinstance(found, dict) else None

    def _wave_kwargs(self) -> dict[str, Any]:
        return {
            "timeout_s": self.settings.judge_timeout_s,
            "max_records_per_call": self.settings.max_records_per_call,
            # + 1: room for the date note s1_messages puts before the last six messages.
            "max_messages": self.settings.recent_messages + 1,
        }

    def _wave(
        self, name: str, req: JudgeRequest, trace: list[dict[str, Any]]
    ) -> Generator[Step, Any, tuple[list[Judgment], float]]:
        """One System 1 wave: its judgments and model seconds; its events go to ``trace``."""
        t0 = time.perf_counter()
        res = yield Call(judge_wave, ajudge_wave, (self.s1, [req]), self._wave_kwargs())
        secs = time.perf_counter() - t0
        trace.extend(wave_events(name, req.round, len(req.targets), res, secs))
        return list(res.judgments), secs

    def _judge(self, state: ReadState) -> Body[dict[str, Any]]:
        start = time.perf_counter()
        trace: list[dict[str, Any]] = []
        new: list[Judgment] = []
        evidence: dict[str, Any] = {}
        model_s = 0.0
        entries = self._screen_targets(state)
        memory: dict[str, Any] | None = None
        if entries:
            memory = yield from self._memory_terms(state)
            model_s += yield from self._evidence(state, entries, evidence)
            req = self._request(state, [Proposition.SCREEN], entries, evidence, memory)
            judged, secs = yield from self._wave("screen", req, trace)
            new.extend(judged)
            model_s += secs
        entries = self._deep_targets(state, new)
        if entries:
            if memory is None:
                memory = yield from self._memory_terms(state)
            model_s += yield from self._evidence(state, entries, evidence)
            props = [Proposition.NEEDED, Proposition.STALE]
            if needs_of(state):
                props.append(Proposition.SATISFIES)
            req = self._request(state, props, entries, evidence, memory)
            judged, secs = yield from self._wave("judge", req, trace)
            new.extend(judged)
            model_s += secs
        trace.append(timing_event("judge", start, model_s))
        return {"judgments": [judgment_entry(j) for j in new], "trace": trace}

    def judge(self, state: ReadState) -> dict[str, Any]:
        """Node ``judge`` under ``invoke``."""
        return drive(self._judge(state))

    async def ajudge(self, state: ReadState) -> dict[str, Any]:
        """Node ``judge`` under ``ainvoke``."""
        return await adrive(self._judge(state))

    # --- act (pure) ---------------------------------------------------------------------
    def act(self, state: ReadState) -> dict[str, Any]:
        start = time.perf_counter()
        round_no = state.get("rounds", 0) + 1
        searches = state.get("searches", [])
        found: dict[int, dict[str, int]] = {}
        for p in state.get("pool", []):
            for search, rank in p.get("found", []):
                found.setdefault(search, {})
                found[search][p["id"]] = min(rank, found[search].get(p["id"], rank))
        actions, statuses = decide(
            needs_of(state),
            statuses_of(state),
            judgments_of(state),
            found=found,
            next_offset={s["index"]: s["next_offset"] for s in searches},
            exhausted=[s["index"] for s in searches if s["exhausted"]],
            order=[p["id"] for p in state.get("pool", [])],
            follow=self.settings.follow_positives,
        )
        go = should_continue(actions, round_no, self.settings.max_rounds)
        trace: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        for a in actions:
            entry = {
                "event": "action",
                "round": round_no,
                "kind": a.kind,
                "need_index": a.need_index,
                "reason": a.reason,
                "executed": go or a.kind == "drop",
            }
            if isinstance(a, PageSearch):
                entry.update(search_index=a.search_index, offset=a.offset)
            elif isinstance(a, FollowRecord):
                entry.update(record_id=a.record_id)
            trace.append(entry)
            if go and isinstance(a, PageSearch | NewSearch | FollowRecord):
                pending.append({k: v for k, v in entry.items() if k != "event"})
        if actions and not go:
            trace.append(
                {
                    "event": "note",
                    "detail": f"round {round_no}: no further round "
                    f"(max_rounds={self.settings.max_rounds} or no fetching action)",
                }
            )
        needs_out = []
        for n, s in zip(state.get("needs", []), statuses, strict=True):
            needs_out.append(
                dict(n, state=s.state, lead_step=s.lead_step, positives=list(s.positives))
            )
        trace.append(timing_event("act", start))
        return {"needs": needs_out, "pending": pending, "rounds": round_no, "trace": trace}

    @staticmethod
    def route(state: ReadState) -> Literal["retrieve", "judge_items"]:
        """Back to ``retrieve`` while the round produced fetching actions and rounds remain."""
        return "retrieve" if state.get("pending") else "judge_items"

    # --- compose -------------------------------------------------------------------------
    def _with_turns(self, state: ReadState) -> Body[list[PoolRecord]]:
        """The pool with the user's turns brought beside what System 1 judged
        (``read.questions``): the questions of the replies judged in depth and, for an
        ``ALL`` need, the opening turns of the best records' sessions; marked on the records
        that bring them, and added when the journal had to be read for them."""
        pool = list(state.get("pool", []))
        settings = self.settings
        order = [p["id"] for p in pool]
        deep = [rid for rid, _ in rank_by(judgments_of(state), "needed", order=order)]
        replies = replies_judged(pool, deep) if settings.reply_questions else []
        every = any(n.kind == "ALL" for n in needs_of(state))  # a count, a list, an order
        opened = sessions_opened(pool, deep, settings.opening_turns) if every else []
        if not replies and not opened:
            return pool
        records = yield from self._turns_read(state, pool, replies, opened)
        asked, added = questions(pool, replies, records)
        first, more = openings(pool, opened, records)
        rounds = state.get("rounds", 0)
        out: list[PoolRecord] = []
        for p in pool:
            rec = PoolRecord(**p)
            if p["id"] in asked:
                rec["question"] = asked[p["id"]]
            if p["id"] in first:
                rec["opening"] = first[p["id"]]
            out.append(rec)
        new = {q["id"]: q for q in [*added, *more]}
        return out + [cast(PoolRecord, {**q, "found": [], "round": rounds}) for q in new.values()]

    def _turns_read(
        self,
        state: ReadState,
        pool: list[PoolRecord],
        replies: Sequence[str],
        opened: Sequence[str],
    ) -> Body[list[PoolRecord]]:
        """The records read from each source's journal (a :class:`JournalSource`; in its
        own namespace) for the replies' questions and the sessions' opening turns the pool
        does not hold, as pool data (with their ``read_source`` when several)."""
        calls: list[Call] = []
        names: list[str] = []
        ids = {*replies, *opened}
        for bound, group in self._groups(state, pool):
            mine = {p["id"] for p in group} & ids
            wanted = reads(
                [
                    *windows(group, [r for r in replies if r in mine]),
                    *opening_windows(group, [r for r in opened if r in mine]),
                ]
            )
            if wanted and bound.is_journal():
                as_of = state.get("as_of", "")
                calls += [Call(_journal, _ajournal, (bound, *part, as_of)) for part in wanted]
                names += [bound.name] * len(wanted)
        records: list[PoolRecord] = []
        for name, got in zip(names, (yield Gather(tuple(calls))) if calls else [], strict=True):
            # a failed read finds no turn for its record: the View is as without
            if not isinstance(got, BaseException):
                tag = {"read_source": name} if self.multi else {}
                records += [cast(PoolRecord, {**record_to_dict(r), **tag}) for r in got]
        return records

    def _compose(self, state: ReadState) -> Body[dict[str, Any]]:
        start = time.perf_counter()
        pool = yield from self._with_turns(state)
        events = list(state.get("trace", []))
        trace = build_trace(state, events, self.settings)
        reason = None
        if not pool:
            namespace = tuple(state.get("namespace", []))
            reason = (
                f"no records found in namespace {namespace!r}: the "
                "journal is empty for this namespace or no search matched"
            )
            own_sources = [s for s in self.sources.values() if is_own(s)]
            hint = yield from _old_namespace_hint(own_sources, namespace)
            reason += f"; {hint}" if hint else ""
        recent = recent_messages(state, self.settings)
        # the conversation's own messages are the user's memory's, never another source's
        own = self._own_entries(pool)
        seen = seen_in_recent(own, recent) if self.settings.leave_out_recent else []
        view = compose_view(
            pool,
            judgments_of(state),
            needs_named=bool(state.get("needs")),
            index=state.get("index") or {},
            settings=self.settings,
            trace=trace,
            empty_reason=reason,
            seen=seen,
            all_needs=[n.index for n in needs_of(state) if n.kind == "ALL"],
            focus=[message_text(m) for m in recent[-1:]] + [n.text for n in needs_of(state)],
            sources=list(self.sources) if self.multi else (),
            journals=[n for n, s in self.sources.items() if self.multi and capability_flags(s)[2]],
            as_of=state.get("as_of", ""),
            dated=state.get("as_of") or state.get("now") or "",
            coverage=any(is_coverage(message_text(m)) for m in recent[-1:]),
        )
        elapsed = time.perf_counter() - start
        view.trace["timings"]["compose_s"] = elapsed
        view.trace["timings"]["read_path_s"] += elapsed
        view.trace["timings"]["total_s"] += elapsed
        view.trace["timings"]["by_node"].append(
            {"node": "compose", "seconds": elapsed, "model_seconds": 0.0}
        )
        return {"view": view, "trace": [timing_event("compose", start)]}

    def compose(self, state: ReadState) -> dict[str, Any]:
        """Node ``compose`` under ``invoke``."""
        return drive(self._compose(state))

    async def acompose(self, state: ReadState) -> dict[str, Any]:
        """Node ``compose`` under ``ainvoke``."""
        return await adrive(self._compose(state))
