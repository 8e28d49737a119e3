"""The View: what the main agent reads before it replies (Mnemon §4.3, "The View").

The View leads with the index — standing instructions, a one-line topic directory, and
the timelines and value histories System 1 judged needed — each block within its fixed
share of the character budget. Records follow: those judged needed, then (when the
planner named a need) the rest in System 1's ranking, up to the View's budget (12,000
characters by default; a record cap only when ``view_records`` sets one), trimmed from
the end to make room for the index. With ``ReadSettings.leave_out_stale`` on, records judged
no longer current are left out when a later record judged needed or satisfying a need
replaces them (:func:`replaced_stale`); by default the judgment is only noted. With
no judgments at all (System 1 failed), the records are ranked by fused search order. The
pooled neighbours of the best records (same
session, just before and after) move up behind the first few records: an answer often
continues in the next turn, which shares few words with the question. Records next to each
other in one session and day are shown as one block under one header that names their
(shortened) ids in order, placed where the best of them ranks.

:func:`compose_view` is pure: it reads only the order of judgments and ``p >= 1/2``.
:func:`explain` answers "why is this record in the View?" (or why not) from the trace.

The View's parts live in modules of their own: its types (:mod:`._view_types`), its text
and escaping (:mod:`._view_text`), the optional re-rankers (:mod:`._view_order`), filling the
budget (:mod:`._view_fill`) and :func:`explain` (:mod:`._view_explain`); this module composes
them and still exports every name it did.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from mnemon_langgraph.read._as_of import as_of_line
from mnemon_langgraph.read._questions import is_reply as is_reply  # imported from here before
from mnemon_langgraph.read._replaced import replaced_marks
from mnemon_langgraph.read._rules import Judgment, is_yes, rank_by
from mnemon_langgraph.read._source_match import named_terms, stranger_records, unnamed_records
from mnemon_langgraph.read._view_explain import explain
from mnemon_langgraph.read._view_fill import BLOCK_RECORDS as BLOCK_RECORDS
from mnemon_langgraph.read._view_fill import fill, index_block
from mnemon_langgraph.read._view_order import (
    STRANGER_NOTE,
    arranged,
    blend_with_fused,
    coverage_first,
    demote_replies,
    one_per_session_first,
    placed_when,
    replaced_stale,
    seen_in_recent,
    spread_pieces,
    spread_sessions,
    unnamed_last,
    with_openings,
    with_questions,
)
from mnemon_langgraph.read._view_text import LESS_THAN_LOOKALIKES as LESS_THAN_LOOKALIKES
from mnemon_langgraph.read._view_text import (
    PREAMBLE,
    PREAMBLE_SOURCES,
    SHORT_ID_CHARS,
    escape_data,
    short_ids,
)
from mnemon_langgraph.read._view_types import View, ViewRecord, render_block
from mnemon_langgraph.read.settings import ReadSettings

__all__ = [
    "PREAMBLE",
    "SHORT_ID_CHARS",
    "View",
    "ViewRecord",
    "blend_with_fused",
    "compose_view",
    "demote_replies",
    "escape_data",
    "explain",
    "replaced_stale",
    "seen_in_recent",
    "short_ids",
    "spread_pieces",
    "spread_sessions",
    "with_openings",
    "with_questions",
]

_BY_RANKING = (
    "System 1 ranking (planner named a need): not judged needed, but budget remained and "
    "the need may still use it"
)
_SEEN = "left out: all its messages are among the recent messages the agent already sees"
_STALE = (
    "left out: judged no longer current (p >= 1/2 on 'stale'), and a later pooled record "
    "judged needed or satisfying a need takes its place"
)
_STALE_KEPT = (
    "p >= 1/2 on 'stale', yet kept among the candidates: no later pooled record judged "
    "needed or satisfying a need replaces it, or ReadSettings.experiments.leave_out_stale is off"
)


def _all_block(
    needed_yes: Sequence[str],
    judged: Sequence[Judgment],
    order: Sequence[str],
    skip: set[str],
    all_needs: Sequence[int],
    session_of: Mapping[str, Hashable],
) -> list[tuple[str, str]]:
    """The lead block when a need asks for every instance: needed records and the records
    satisfying an ``ALL`` need, one per session first, so the View covers the instances
    across sessions before it adds more of one session."""
    why: dict[str, str] = {rid: "judged needed (p >= 1/2)" for rid in needed_yes}
    for n in all_needs:
        for rid, p in rank_by(judged, "satisfies", need_index=n, order=order):
            if is_yes(p) and rid not in skip:
                why.setdefault(rid, f"satisfies ALL need {n} (p >= 1/2)")
    ids = one_per_session_first(list(why), session_of)
    return [(rid, why[rid] + "; one per session first") for rid in ids]


def _candidates(
    order: Sequence[str],
    judged: Sequence[Judgment],
    skip: set[str],
    needs_named: bool,
    placement: dict[str, str],
    all_needs: Sequence[int] = (),
    session_of: Mapping[str, Hashable] | None = None,
) -> list[tuple[str, str]]:
    """The records that may enter, best first, each with the rule that ranks it.

    ``skip`` (judged no longer current, or already in the recent messages) never enter;
    records left out here get their reason in ``placement``.
    """
    if not judged:
        return [(rid, "fused order (no System 1 judgments)") for rid in order if rid not in skip]
    needed = rank_by(judged, "needed", order=order)
    screen = rank_by(judged, "screen", order=order)
    needed_yes = [rid for rid, p in needed if is_yes(p) and rid not in skip]
    if all_needs:
        candidates = _all_block(needed_yes, judged, order, skip, all_needs, session_of or {})
    else:
        candidates = [(rid, "judged needed (p >= 1/2)") for rid in needed_yes]
    lead = {rid for rid, _ in candidates}
    if not needs_named:
        for rid in order:
            if rid not in placement and rid not in lead:
                placement[rid] = "left out: not judged needed, and the planner named no need"
        return candidates
    taken = lead | skip
    rest = [rid for rid, _ in needed if rid not in taken]
    rest += [rid for rid, _ in screen if rid not in taken and rid not in set(rest)]
    have = taken | set(rest)
    unjudged = [rid for rid in order if rid not in have]
    candidates.extend((rid, _BY_RANKING) for rid in rest)
    candidates.extend((rid, "fused order (System 1 gave no judgment)") for rid in unjudged)
    return candidates


def _stale(
    pool: Sequence[Mapping[str, Any]],
    judged: Sequence[Judgment],
    order: Sequence[str],
    settings: ReadSettings,
) -> tuple[set[str], set[str]]:
    """The records judged no longer current, and those of them the View leaves out."""
    judged_stale = {rid for rid, p in rank_by(judged, "stale", order=order) if is_yes(p)}
    if judged_stale and settings.experiments.leave_out_stale:
        return judged_stale, replaced_stale(pool, judged, judged_stale)
    return judged_stale, set()


def _view_text(
    preamble: str,
    index_text: str,
    chosen: Sequence[ViewRecord],
    shown_blocks: Sequence[Any],
    by_id: Mapping[str, Mapping[str, Any]],
    dated: bool = False,
) -> str:
    """The View's text: the preamble, the index, then each block's records in their
    conversation's order (``dated``: the blocks too, earliest first)."""
    taken = {vr.id: vr for vr in chosen}
    position = {vr.id: by_id[vr.id].get("position", 0) for vr in chosen}
    blocks = [preamble]
    if index_text:
        blocks.append(index_text)
    if dated:
        shown_blocks = sorted(shown_blocks, key=lambda b: min(placed_when(by_id[r]) for r in b.ids))
    for block in shown_blocks:
        block.ids.sort(key=position.__getitem__)
        blocks.append(render_block([taken[rid] for rid in block.ids]))
    return "\n\n".join(blocks)


def _with_mentions(
    candidates: Sequence[tuple[str, str]],
    pool: Sequence[Mapping[str, Any]],
    per_session: int,
    budget: int,
    settings: ReadSettings,
    marks: Any,
) -> list[tuple[str, str]]:
    """A coverage View's candidates (:func:`coverage_first`): the topic search's records
    (``read.topics``) ranked by their place in the session, earliest first."""
    if not per_session:
        return list(candidates)
    room = int(budget * settings.coverage_share)
    earliest = {r["id"]: placed_when(r)[2] for r in pool if "topic_rank" in r}
    return coverage_first(candidates, pool, per_session, room, marks, earliest)


def _names_first(
    candidates: Sequence[tuple[str, str]],
    pool: Sequence[Mapping[str, Any]],
    focus: Sequence[str],
    sources: Sequence[str],
    settings: ReadSettings,
    journals: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """With several sources and ``source_names``, the records of a source that names fewer
    of the turn's names (its message and needs) than another, and that name none, last;
    with ``source_speakers``, another party's conversations (:func:`stranger_records`)
    after them."""
    if len(sources) < 2:
        return list(candidates)
    if settings.source_names:
        candidates = unnamed_last(candidates, unnamed_records(pool, named_terms(focus)))
    if settings.source_speakers and journals:
        strangers = stranger_records(pool, journals)
        candidates = unnamed_last(candidates, strangers, STRANGER_NOTE)
    return list(candidates)


_RECORD_PROPS = frozenset({"screen", "needed", "stale", "satisfies"})
"""The propositions judged of a pooled record (the others are of index items)."""


def _preamble(sources: Sequence[str], as_of: str) -> str:
    """The View's first lines: what its records are, and the date of an as-of View."""
    base = PREAMBLE_SOURCES if len(sources) > 1 else PREAMBLE
    return f"{base}\n{as_of_line(as_of)}" if as_of else base


def compose_view(
    pool: Sequence[Mapping[str, Any]],
    judgments: Sequence[Judgment],
    *,
    needs_named: bool,
    index: Mapping[str, Any] | None,
    settings: ReadSettings,
    trace: dict[str, Any] | None = None,
    empty_reason: str | None = None,
    seen: Sequence[str] = (),
    all_needs: Sequence[int] = (),
    focus: Sequence[str] = (),
    sources: Sequence[str] = (),
    journals: Sequence[str] = (),
    as_of: str = "",
    dated: str = "",
    coverage: bool = False,
) -> View:
    """Compose the View from the pool, the judgments and the index (pure).

    Args:
        pool: Pooled records in fused pool order (dicts as kept in the graph's state).
        judgments: Every judgment of the turn.
        needs_named: Whether the planner named a need (the rest of the pool then fills in).
        index: ``{"instructions": [...], "topics": [...], "groups": [...]}`` or ``None``.
        settings: Budgets.
        trace: Trace dict to attach (``placement`` is added to it).
        empty_reason: Reason to report when no record enters.
        seen: Records the agent already sees (:func:`seen_in_recent`): left out.
        all_needs: The ``ALL`` needs' indices: their records enter one per session first.
        focus: The turn's message and needs, which pick an excerpt's lines.
        sources: The source names of a graph of several (:data:`._view_text.PREAMBLE_SOURCES`).
        journals: Those of them that are journals (``ReadSettings.source_speakers``).
        as_of: The ISO bound of an as-of View (``read.as_of``): the preamble says it.
        dated: The date of the no-longer-current marks (:mod:`._replaced`); ``""``: unknown.
        coverage: The turn asks about a topic across the history (:func:`coverage_first`).

    Returns:
        The View.
    """
    order = [r["id"] for r in pool]
    by_id = {r["id"]: r for r in pool}
    judged = [j for j in judgments if j.proposition in _RECORD_PROPS and j.target_id in by_id]
    judged_stale, stale = _stale(pool, judged, order, settings)
    switches = settings.experiments
    placement = {rid: _STALE for rid in stale}
    for rid in seen:
        placement.setdefault(rid, _SEEN)
    skip = stale | set(seen)
    session_of = {r["id"]: (r.get("read_source"), int(r.get("session") or 0)) for r in pool}
    candidates = _candidates(order, judged, skip, needs_named, placement, all_needs, session_of)
    if judged:
        candidates = blend_with_fused(candidates, order, switches.fused_weight, settings.rrf_k)
    candidates = spread_pieces(candidates, pool, settings.message_pieces)
    if all_needs and switches.spread_sessions:
        lead = sum(1 for _, why in candidates if why.endswith("one per session first"))
        candidates = spread_sessions(candidates, session_of, lead)
    candidates = _names_first(candidates, pool, focus, sources, settings, journals)
    candidates, marks = arranged(candidates, pool, skip, settings)
    index_text, shown_items = index_block(index or {}, settings)
    preamble = _preamble(sources, as_of)
    budget = settings.view_chars - len(preamble) - (len(index_text) + 2 if index_text else 0)
    per_session = switches.coverage_records * coverage
    candidates = _with_mentions(candidates, pool, per_session, budget, settings, marks)
    status = replaced_marks(pool, sorted(judged_stale - stale), dated or as_of)
    chosen, shown_blocks = fill(
        candidates, by_id, budget, settings, placement, focus, marks, status
    )
    for rid in order:
        placement.setdefault(rid, "left out")
    for rid in judged_stale - stale:
        placement[rid] = f"{placement[rid]} ({_STALE_KEPT})"
    text = _view_text(preamble, index_text, chosen, shown_blocks, by_id, dated=bool(per_session))
    reason = None
    if not chosen:
        reason = empty_reason or ("no record was judged needed" if pool else "no record found")
    tr = dict(trace or {}, placement=placement)
    return View(
        text=text, records=tuple(chosen), items=tuple(shown_items), trace=tr, empty_reason=reason
    )
