"""How the View fills its budget: the index block within its shares, then the candidates
in order, joined into blocks of one session and day, cut to excerpts where the settings say
so, until the View's records or characters run out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mnemon_langgraph.read._excerpts import Lead, excerpt, excerpt_text, focus_weights, line_scores
from mnemon_langgraph.read._view_order import Marks
from mnemon_langgraph.read._view_text import escape_data, quote_attr, short_ids
from mnemon_langgraph.read._view_types import ViewRecord
from mnemon_langgraph.read.settings import ReadSettings

__all__ = ["BLOCK_RECORDS", "fill", "index_block"]


def _fit(lines: Sequence[str], budget: int) -> list[str]:
    out, used = [], 0
    for line in lines:
        if used + len(line) + 1 > budget:
            break
        out.append(line)
        used += len(line) + 1
    return out


def index_block(
    index: Mapping[str, Any], settings: ReadSettings
) -> tuple[str, list[dict[str, Any]]]:
    """The index block within its shares, and the items it shows."""
    shown: list[dict[str, Any]] = []
    parts: list[str] = []
    instr = index.get("instructions") or []
    lines = _fit(
        [f"- {escape_data(i['text'])}" for i in instr],
        int(settings.view_chars * settings.instructions_share) - 40,
    )
    if lines:
        parts.append("<instructions>\n" + "\n".join(lines) + "\n</instructions>")
        shown.extend(dict(i, group="instructions") for i in instr[: len(lines)])
    topics = index.get("topics") or []
    if topics:
        budget = int(settings.view_chars * settings.directory_share) - 20
        line = ""
        for t in topics:
            cand = f"{line}; {t}" if line else str(t)
            if len(cand) > budget:
                break
            line = cand
        if line:
            parts.append(f"<topics>{escape_data(line)}</topics>")
    budget = int(settings.view_chars * settings.groups_share)
    for group in index.get("groups") or []:
        tag = "timeline" if group.get("kind") == "event" else "values"
        head = f'<{tag} name="{quote_attr(group.get("title", ""))}">'
        room = budget - len(head) - len(tag) - 5
        rows = _fit([escape_data(it["line"]) for it in group.get("items", [])], room)
        if not rows:
            continue
        block = head + "\n" + "\n".join(rows) + f"\n</{tag}>"
        budget -= len(block) + 1
        parts.append(block)
        shown.extend(dict(it, group=group.get("title", "")) for it in group["items"][: len(rows)])
    if not parts:
        return "", shown
    return "<index>\n" + "\n".join(parts) + "\n</index>", shown


def _view_record(
    rec: Mapping[str, Any], placed_by: str, shown_id: str = "", status: str = ""
) -> ViewRecord:
    return ViewRecord(
        id=rec["id"],
        message_ids=tuple(rec.get("message_ids") or ()),
        session=int(rec.get("session") or 0),
        date=rec.get("date"),
        text=rec.get("text", ""),
        placed_by=placed_by,
        shown_id=shown_id,
        source=str(rec.get("read_source") or ""),
        status=status,
    )


def _shown_ids(by_id: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each pooled record's shown id, told apart over the whole pool: a record of a read
    graph of several sources shows its id without the source's name (its block names the
    source), told apart from the other records of that source."""
    sources: dict[str, list[str]] = {}
    for rid, rec in by_id.items():
        sources.setdefault(str(rec.get("read_source") or ""), []).append(rid)
    if list(sources) == [""]:
        return short_ids(list(by_id))
    shown: dict[str, str] = {}
    for name, ids in sources.items():
        raw = {rid: rid.removeprefix(f"{name}:") if name else rid for rid in ids}
        short = short_ids(list(raw.values()))
        shown.update({rid: short[r] for rid, r in raw.items()})
    return shown


BLOCK_RECORDS = 3
"""Most records one block of the View shows under one header (:func:`fill`).

Consecutive records of one session and day share a block, which spends one header where each
would spend ~60 characters (on LoCoMo dev a good share of a large View's records continue
another one: docs/results/log.md, "Figures behind the code's defaults") and shows a question
with its reply in one piece. Three is
a record, the one before and the one after: the block stays near the rank of its best
record instead of growing into the whole session when a View holds most of a small
history (on the dev conversations 3 and no limit give the same Views' evidence)."""


def _place(rec: Mapping[str, Any]) -> tuple[tuple[Any, ...], int] | None:
    """Where a record sits: ((read source, origin, session, day), position), or ``None``."""
    position = rec.get("position")
    if not isinstance(position, int) or isinstance(position, bool):
        return None
    day = str(rec.get("date") or "")[:10]
    return (rec.get("read_source"), rec.get("source"), rec.get("session"), day), position


@dataclass
class _Block:
    """A stretch of one session and day in the View: its first and last positions."""

    where: tuple[Any, ...] | None
    low: int
    high: int
    ids: list[str]

    def takes(self, place: tuple[tuple[Any, ...], int] | None) -> bool:
        if place is None or self.where is None or len(self.ids) >= BLOCK_RECORDS:
            return False
        where, position = place
        return where == self.where and position in (self.low - 1, self.high + 1)


class _Excerpts:
    """Cuts each record after the View's first ``after`` to its best lines, at most ``cap``
    characters (:mod:`._excerpts`); the focus weights are computed on the first record
    that needs them."""

    def __init__(
        self,
        after: int | None,
        cap: int,
        focus: Sequence[str],
        pool: Iterable[Mapping[str, Any]],
    ) -> None:
        self.after, self.cap, self.focus, self.pool = after, cap, focus, pool
        self.weights: dict[str, float] | None = None

    def apply(
        self,
        vr: ViewRecord,
        why: str,
        taken: int,
        only: Sequence[int] | None = None,
        lead: Lead = "best",
    ) -> tuple[ViewRecord, str]:
        """``vr`` cut to an excerpt when the rules say so (``only``: exactly those lines;
        ``lead``: which end to keep when no line matches the focus)."""
        lines = vr.text.split("\n")
        if len(lines) != len(vr.message_ids):
            return vr, why
        if only is not None:
            kept = sorted({i for i in only if 0 <= i < len(lines)}) or list(range(len(lines)))
        elif self.after is None or taken < self.after or len(vr.text) <= self.cap:
            return vr, why
        else:
            if self.weights is None:
                texts = (line for r in self.pool for line in str(r.get("text", "")).split("\n"))
                self.weights = focus_weights(self.focus, texts)
            kept = excerpt(lines, line_scores(lines, self.weights), self.cap, lead)
        if len(kept) == len(lines):
            return vr, why
        mids = tuple(dict.fromkeys(vr.message_ids[i] for i in kept))
        text = excerpt_text(lines, kept)
        why = f"{why}; an excerpt: {len(kept)} of its {len(lines)} lines"
        return replace(vr, text=text, message_ids=mids), why


def fill(
    candidates: Sequence[tuple[str, str]],
    by_id: Mapping[str, Mapping[str, Any]],
    budget: int,
    settings: ReadSettings,
    placement: dict[str, str],
    focus: Sequence[str] = (),
    marks: Marks | None = None,
    status: Mapping[str, str] | None = None,
) -> tuple[list[ViewRecord], list[_Block]]:
    """Take candidates in order until the View's records or characters run out.

    A record right before or after a block's records (same source, session and day) joins
    that block while it holds fewer than :data:`BLOCK_RECORDS`: it costs its text and its
    shown id, not a header. Blocks keep the order of their first record. With
    ``settings.excerpt_slots`` set, each record after the first
    ``settings.excerpt_after`` longer than ``budget / excerpt_slots`` shows its best lines
    for ``focus`` (:mod:`mnemon_langgraph.read._excerpts`); ``marks`` says which records
    show only their instruction lines and which end of a neighbour an excerpt keeps;
    ``status`` what the View says of a record (:mod:`._replaced`): such a record is shown
    in a block of its own, so its header speaks of it alone.

    Returns:
        The records taken, in order, and the blocks that show them.
    """
    chosen: list[ViewRecord] = []
    blocks: list[_Block] = []
    used = 0
    cap = settings.view_records
    slots = settings.excerpt_slots
    after = None if slots is None else settings.excerpt_after
    cutter = _Excerpts(after, budget // (slots or 1), focus, by_id.values())
    # shown ids told apart over the whole pool, so they are whichever records enter
    shown = _shown_ids(by_id)
    marks = marks or Marks()
    status = status or {}
    leading = 0  # instructions and mentions taken: not counted as the View's first records
    for pos, (rid, why) in enumerate(candidates):
        only = marks.only(rid)
        vr = _view_record(by_id[rid], why, shown[rid], status.get(rid, ""))
        vr, why = cutter.apply(vr, why, len(chosen) - leading, only, marks.sides.get(rid, "best"))
        leading += only is not None
        place = None if rid in status else _place(by_id[rid])
        block = next((b for b in blocks if b.takes(place)), None)
        if block is not None:
            size = len(escape_data(vr.text)) + 1 + len(vr.shown_id) + 1
        else:
            size = len(vr.render()) + 2
        full = cap is not None and len(chosen) >= cap
        if full or used + size > budget:
            chars = f"{settings.view_chars} characters, index included"
            limit = f"{cap} records" if full else chars
            for later, why_later in candidates[pos:]:
                placement.setdefault(
                    later,
                    f"left out: over the View's budget ({limit}); was ranked for '{why_later}'",
                )
            break
        chosen.append(vr)
        used += size
        if block is not None and place is not None:
            block.low, block.high = min(block.low, place[1]), max(block.high, place[1])
            block.ids.append(rid)
        elif place is not None:
            blocks.append(_Block(place[0], place[1], place[1], [rid]))
        else:
            blocks.append(_Block(None, 0, 0, [rid]))
        placement[rid] = f"in the View, taken at rank {len(chosen)}: {why}"
    return chosen, blocks
