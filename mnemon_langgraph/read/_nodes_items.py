"""The ``judge_items`` node (sync and async): which index items does the reply need?

System 1 judges ``item_needed`` for the items linked to the judged records and the
``nearest_items`` (12) nearest the message; the needed timelines and value histories, the
standing instructions and the topic directory go to ``compose`` as plain data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.decisions import BaseDecisionModel

from mnemon_langgraph.items import IndexItem, ItemSource
from mnemon_langgraph.judges.propositions import Proposition
from mnemon_langgraph.read._as_of import as_of_bound, items_known, linked_ids
from mnemon_langgraph.read._drive import Body, Call, adrive, drive, in_thread
from mnemon_langgraph.read._judging import JudgeRequest, WaveResult, ajudge_wave, judge_wave
from mnemon_langgraph.read._rules import (
    Judgment,
    is_yes,
    rank_by,
)
from mnemon_langgraph.read._trace import timing_event, wave_events
from mnemon_langgraph.read.planner import latest_text
from mnemon_langgraph.read.settings import LOOKAHEAD, ReadSettings
from mnemon_langgraph.read.sources.binding import is_own
from mnemon_langgraph.read.state import (
    ReadState,
    judgment_entry,
    judgments_of,
    needs_of,
    recent_messages,
    s1_messages,
)
from mnemon_langgraph.types import Namespace, SearchSource

__all__ = ["ItemsNode"]


class ItemsNode:
    """Mixin: the ``judge_items`` node. Needs ``items``, ``s1``, ``settings``, ``_wave_kwargs``."""

    items: ItemSource | None
    s1: BaseDecisionModel
    settings: ReadSettings
    _own_ids: Callable[[Sequence[str]], list[str]]  # read.nodes_sources
    sources: dict[str, SearchSource]

    def _wave_kwargs(self) -> dict[str, Any]:
        raise NotImplementedError

    # --- judge_items ----------------------------------------------------------------------
    def _known_items(
        self, state: ReadState, ns: Namespace, items: Sequence[IndexItem]
    ) -> list[IndexItem]:
        """The items known at the View's ``as_of`` (all, without one): every record they link
        is dated at or before it (``read.as_of.items_known``), the dates read from the
        source's journal in one lookup."""
        as_of = as_of_bound(state.get("as_of"))
        if as_of is None or not items:
            return list(items)
        # the index links the user's own records: the journal they come from dates them
        own = next((src for src in self.sources.values() if is_own(src)), None)
        read = getattr(own, "get_records", None)
        if read is None:  # no journal to date the links by: no item is known to be earlier
            return []
        records = read(ns, linked_ids(items))
        return items_known(items, {r.id: r.date for r in records}, as_of)

    def _item_candidates(self, state: ReadState, ns: Namespace) -> list[IndexItem]:
        assert self.items is not None
        needed = [j.target_id for j in judgments_of(state) if j.proposition == "needed"]
        judged = self._own_ids(needed)  # the index links the user's own records
        text = latest_text(recent_messages(state, self.settings))
        k = self.settings.nearest_items
        cutting = bool(state.get("as_of"))
        cands: dict[str, IndexItem] = {}
        for it in self._known_items(state, ns, self.items.linked_items(ns, judged)):
            cands.setdefault(it.id, it)
        # an as-of View asks for more of the nearest, then keeps the k nearest known then
        near = self.items.nearest_items(text, namespace=ns, k=k * LOOKAHEAD if cutting else k)
        for it in self._known_items(state, ns, near)[:k]:
            cands.setdefault(it.id, it)
        return list(cands.values())

    def _topics(self, state: ReadState, ns: Namespace) -> list[str]:
        """The topic directory; as of a date, the topics of the timeline events known then."""
        assert self.items is not None
        if not state.get("as_of"):
            return list(self.items.topics(ns))
        every = getattr(self.items, "all_items", None)
        events = every(ns, "event") if every is not None else []
        return list(
            dict.fromkeys(it.topic for it in self._known_items(state, ns, events) if it.topic)
        )

    def _items_finish(
        self,
        state: ReadState,
        ns: Namespace,
        cands: list[IndexItem],
        res: WaveResult | None,
        secs: float,
        start: float,
    ) -> dict[str, Any]:
        assert self.items is not None
        trace: list[dict[str, Any]] = []
        new: list[Judgment] = []
        if res is not None:
            new = list(res.judgments)
            trace.extend(wave_events("items", state.get("rounds", 1), len(cands), res, secs))
        by_id = {it.id: it for it in cands}
        needed = [rid for rid, p in rank_by(new, "item_needed", order=list(by_id)) if is_yes(p)]
        groups: list[dict[str, Any]] = []
        seen_keys: set[tuple[str, ...]] = set()
        for iid in needed:
            item = by_id[iid]
            if item.kind == "instruction" or item.group_key in seen_keys:
                continue
            seen_keys.add(item.group_key)
            members = self._known_items(state, ns, self.items.group(ns, item)) or [item]
            title = item.topic if item.kind == "event" else f"{item.subject} — {item.attribute}"
            groups.append(
                {
                    "kind": item.kind,
                    "title": title or "",
                    "items": [
                        {
                            "id": m.id,
                            "kind": m.kind,
                            "text": m.text,
                            "line": m.render(),
                            "record_ids": list(m.record_ids),
                        }
                        for m in members
                    ],
                }
            )
        index = {
            "instructions": [
                {
                    "id": i.id,
                    "kind": i.kind,
                    "text": i.text,
                    "line": i.render(),
                    "record_ids": list(i.record_ids),
                }
                for i in self._known_items(state, ns, self.items.instructions(ns))
            ],
            "topics": self._topics(state, ns),
            "groups": groups,
            "candidates": [it.id for it in cands],
        }
        trace.append(timing_event("judge_items", start, secs))
        return {"index": index, "judgments": [judgment_entry(j) for j in new], "trace": trace}

    def _judge_items(self, state: ReadState) -> Body[dict[str, Any]]:
        start = time.perf_counter()
        if self.items is None:
            return {"index": {}, "trace": [timing_event("judge_items", start)]}
        ns = tuple(state["namespace"])
        cands = yield Call(self._item_candidates, in_thread(self._item_candidates), (state, ns))
        res, secs = None, 0.0
        if cands:
            t0 = time.perf_counter()
            request = JudgeRequest(
                [Proposition.ITEM_NEEDED],
                cands,
                messages=s1_messages(state, self.settings),
                needs=needs_of(state),
                round=state.get("rounds", 1),
            )
            res = yield Call(judge_wave, ajudge_wave, (self.s1, [request]), self._wave_kwargs())
            secs = time.perf_counter() - t0
        args = (state, ns, cands, res, secs, start)
        return (yield Call(self._items_finish, in_thread(self._items_finish), args))

    def judge_items(self, state: ReadState) -> dict[str, Any]:
        """Node ``judge_items`` under ``invoke``."""
        return drive(self._judge_items(state))

    async def ajudge_items(self, state: ReadState) -> dict[str, Any]:
        """Node ``judge_items`` under ``ainvoke`` (index reads in a worker thread)."""
        return await adrive(self._judge_items(state))
