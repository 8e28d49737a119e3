"""The View's types: :class:`View` (what the main agent reads, with its trace) and
:class:`ViewRecord` (one record in it), and :func:`render_block`, the one place a record
block's header is written."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemon_langgraph.read._view_text import escape_data, quote_attr

__all__ = ["View", "ViewRecord", "render_block"]


@dataclass(frozen=True, slots=True)
class ViewRecord:
    """One record in the View.

    Attributes:
        id: Record id.
        message_ids: Ids of the messages it holds (e.g. LoCoMo ``dia_id`` s).
        session: Session number.
        date: Session date (ISO), if known.
        text: The record's ``speaker: text`` lines.
        placed_by: The rule that placed it (``needed``, ``ranking``, ``fused order``).
        shown_id: The id as the block shows it (:func:`short_ids`); ``""``: the whole id.
        source: The read source it came from (a name of ``create_read_graph(sources=...)``);
            ``""`` when the read graph reads one source. With several, :attr:`id` is
            qualified by it (``"docs:doc-7"``) and the block names it.
        status: What the View says of it beside its text, e.g. ``"no longer current as of
            2023-08-01: replaced on 2023-07-02"`` (:mod:`._replaced`); ``""``: nothing.
    """

    id: str
    message_ids: tuple[str, ...]
    session: int
    date: str | None
    text: str
    placed_by: str = ""
    shown_id: str = ""
    source: str = ""
    status: str = ""

    def __post_init__(self) -> None:
        # a checkpoint's msgpack gives sequences back as lists: keep the declared tuple
        if not isinstance(self.message_ids, tuple):
            object.__setattr__(self, "message_ids", tuple(self.message_ids))

    def render(self) -> str:
        """The record as a delimited block."""
        return render_block((self,))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``source`` only for a record of a read graph of several sources)."""
        out: dict[str, Any] = {
            "id": self.id,
            "message_ids": list(self.message_ids),
            "session": self.session,
            "date": self.date,
            "text": self.text,
            "placed_by": self.placed_by,
            "shown_id": self.shown_id or self.id,
        }
        if self.source:
            out["source"] = self.source
        if self.status:
            out["status"] = self.status
        return out


@dataclass(frozen=True)
class View:
    """What the main agent reads, and an account of how it was chosen.

    Attributes:
        text: The View as the agent reads it (preamble, index, delimited records).
        records: Records in the View, in the order the rules took them (the text shows
            consecutive ones together, in blocks of up to
            :data:`~mnemon_langgraph.read._view_fill.BLOCK_RECORDS`).
        items: Index items shown (as dicts: id, kind, text, group).
        trace: Searches, pool, judgments, actions, errors, timings and counts.
        empty_reason: Why the View holds no records, when it holds none.
    """

    text: str
    records: tuple[ViewRecord, ...] = ()
    items: tuple[dict[str, Any], ...] = ()
    trace: dict[str, Any] = field(default_factory=dict)
    empty_reason: str | None = None

    def __post_init__(self) -> None:
        # a checkpoint's msgpack gives sequences back as lists: keep the declared tuples
        for name in ("records", "items"):
            if not isinstance(getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def message_ids(self) -> list[str]:
        """Ids of every message in the View's records, in the order of :attr:`records`."""
        return [m for r in self.records for m in r.message_ids]

    @property
    def record_ids(self) -> list[str]:
        """Ids of the View's records, in order."""
        return [r.id for r in self.records]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: ``text``, ``records``, ``items``, ``trace``, ``empty_reason``."""
        return json.loads(
            json.dumps(
                {
                    "text": self.text,
                    "records": [r.to_dict() for r in self.records],
                    "items": list(self.items),
                    "trace": self.trace,
                    "empty_reason": self.empty_reason,
                },
                default=str,
            )
        )

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:  # short: a notebook shows it beside the HTML (read.html)
        return f"View({len(self.records)} records, {len(self.text):,} chars)"

    def _repr_html_(self) -> str:
        from mnemon_langgraph.read.html import view_html

        return view_html(self)


def render_block(block: Sequence[ViewRecord]) -> str:
    """One block: a record, or consecutive records in their conversation's order, under one
    header naming each one's shown id in that order (the only place a header is written).
    A record with a ``status`` has a block of its own, and the header says it."""
    head = block[0]
    ids = " ".join(quote_attr(vr.shown_id or vr.id) for vr in block)
    date = f' date="{quote_attr(head.date[:10])}"' if head.date else ""
    source = f' source="{quote_attr(head.source)}"' if head.source else ""
    status = f' status="{quote_attr(head.status)}"' if head.status else ""
    body = "\n".join(escape_data(vr.text) for vr in block)
    return f'<record id="{ids}"{source} session="{head.session}"{date}{status}>\n{body}\n</record>'
