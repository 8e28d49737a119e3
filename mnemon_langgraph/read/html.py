"""HTML pictures of what the read path did: a View, ``explain``, the trace, a namespace.

Jupyter shows an object through its ``_repr_html_``; ``print`` keeps showing the text. This
module renders every picture once, for the notebooks (``View._repr_html_``,
:class:`Explanation`, :func:`show_trace`, :func:`show_memory`) and for the local inspector
(``mnemon ui``), which puts the same fragments in its pages (``style=False``: the page links
its own stylesheet, because its Content-Security-Policy refuses inline styles).

Records are data: every stored string (record text, speaker names, namespace parts, item
text, search queries, the message) goes through :func:`html.escape` before it is written, and
nothing here writes a script, an event attribute or a link built from stored text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from mnemon_langgraph.read._rules import is_yes

if TYPE_CHECKING:
    from mnemon_langgraph.items import IndexItem
    from mnemon_langgraph.types import Record


class View(Protocol):
    """What these pictures read of a :class:`~mnemon_langgraph.read.view.View`: the View
    imports this module for its ``_repr_html_``, so this module names its shape instead of
    importing it (no import circle, for the type checker either)."""

    @property
    def text(self) -> str: ...
    @property
    def records(self) -> Sequence[Any]: ...
    @property
    def items(self) -> Sequence[dict[str, Any]]: ...
    @property
    def trace(self) -> dict[str, Any]: ...
    @property
    def empty_reason(self) -> str | None: ...
    @property
    def record_ids(self) -> list[str]: ...


__all__ = [
    "STYLE",
    "Explanation",
    "Html",
    "explanation_html",
    "items_html",
    "left_out_html",
    "records_html",
    "show_memory",
    "show_trace",
    "trace_html",
    "view_html",
]

STYLE = """<style>
.mnemon{font-family:system-ui,sans-serif;font-size:13px;line-height:1.4}
.mnemon table{border-collapse:collapse;margin:4px 0}
.mnemon td,.mnemon th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
.mnemon .block{border-left:3px solid #4a7;padding:2px 8px;margin:6px 0}
.mnemon .text{white-space:pre-wrap;font-family:ui-monospace,monospace;margin:2px 0}
.mnemon .muted{color:#666}
.mnemon .yes{color:#175;font-weight:600}
.mnemon .no{color:#a33}
.mnemon .used{background:#e6f4ea}
</style>"""
"""The notebooks' inline style (the inspector serves the same rules as ``ui.css``)."""


def esc(value: object) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe in an attribute)."""
    return html.escape(str(value), quote=True)


def anchor(record_id: str) -> str:
    """The element id of a record in a page: ``rec-`` and the id's hex/dash characters only."""
    return "rec-" + re.sub(r"[^0-9A-Za-z_-]", "", record_id)


class Html:
    """A picture for Jupyter (``_repr_html_``) that prints as plain text.

    Attributes:
        html: The HTML fragment.
        text: What ``str()``, ``repr()`` and ``print`` show.
    """

    def __init__(self, html_text: str, text: str) -> None:
        self.html = html_text
        self.text = text

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def _wrap(body: str, style: bool) -> str:
    return (STYLE if style else "") + f'<div class="mnemon">{body}</div>'


def _verdict(p: float) -> str:
    return '<span class="yes">yes</span>' if is_yes(p) else '<span class="no">no</span>'


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table whose cells are already HTML (callers escape what they put in)."""
    hs = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{hs}</tr>{body}</table>"


def _judgments(trace: Mapping[str, Any], record_id: str) -> list[Mapping[str, Any]]:
    return [j for j in trace.get("judgments", []) if j.get("target") == record_id]


def judgments_table(trace: Mapping[str, Any], record_id: str) -> str:
    """Every System 1 judgment of ``record_id``: proposition (and need), p, verdict, round."""
    rows = []
    for j in _judgments(trace, record_id):
        need = j.get("need_index")
        prop = esc(j.get("proposition", "")) + ("" if need is None else f" (need {esc(need)})")
        p = float(j.get("p", 0.0))
        rows.append([prop, f"{p:.3f}", _verdict(p), esc(j.get("round", 1))])
    if not rows:
        return '<div class="muted">no System 1 judgment</div>'
    return _table(["proposition", "p", "verdict", "round"], rows)


def _needs_served(trace: Mapping[str, Any], record_id: str) -> list[int]:
    latest: dict[int, float] = {}
    for j in _judgments(trace, record_id):
        if j.get("proposition") == "satisfies" and j.get("need_index") is not None:
            latest[int(j["need_index"])] = float(j["p"])
    return sorted(i for i, p in latest.items() if is_yes(p))


def needs_table(trace: Mapping[str, Any], shown: Sequence[str]) -> str:
    """The planner's needs and which records of the View satisfy each (``p >= 1/2``)."""
    needs = trace.get("needs") or []
    if not needs:
        return '<div class="muted">the planner named no need</div>'
    by_need: dict[int, list[str]] = {}
    for rid in shown:
        for i in _needs_served(trace, rid):
            by_need.setdefault(i, []).append(rid)
    rows = []
    for n in needs:
        ids = by_need.get(int(n.get("index", 0)), [])
        links = ", ".join(f'<a href="#{anchor(r)}">{esc(r[:10])}</a>' for r in ids)
        rows.append([esc(n.get("index")), esc(n.get("kind", "")), esc(n.get("text")), links])
    return _table(["need", "kind", "what the reply needs", "satisfied by (in the View)"], rows)


def _blocks(view: View) -> list[list[Any]]:
    """The View's records grouped as its text shows them (one block per ``<record>`` header)."""
    by_shown = {(r.shown_id or r.id): r for r in view.records}
    blocks: list[list[Any]] = []
    placed: set[str] = set()
    for m in re.finditer(r'<record id="([^"]*)"', view.text):
        block = [by_shown[s] for s in html.unescape(m.group(1)).split() if s in by_shown]
        if block:
            blocks.append(block)
            placed.update(r.id for r in block)
    blocks.extend([r] for r in view.records if r.id not in placed)
    return blocks


def _record_card(rec: Any, trace: Mapping[str, Any]) -> str:
    served = _needs_served(trace, rec.id)
    need = f" · serves need {', '.join(map(str, served))}" if served else ""
    return (
        f'<div id="{anchor(rec.id)}"><b>{esc(rec.shown_id or rec.id)}</b>'
        f'<span class="muted"> · {esc(rec.placed_by)}{need}</span>'
        f'<div class="text">{esc(rec.text)}</div>'
        f"<details><summary>judgments</summary>{judgments_table(trace, rec.id)}</details></div>"
    )


def left_out_html(view: View) -> str:
    """The pooled records the View left out, each with why (its placement)."""
    placement = view.trace.get("placement", {})
    inside = set(view.record_ids)
    rows = [
        [f'<span id="{anchor(rid)}">{esc(rid[:10])}</span>', esc(why)]
        for rid, why in placement.items()
        if rid not in inside
    ]
    if not rows:
        return '<div class="muted">no pooled record was left out</div>'
    return _table(["record", "why it is not in the View"], rows)


def view_html(view: View, *, style: bool = True, prefix: str = "") -> str:
    """The View as a person reads it: budget used, needs, index items, record blocks as the
    agent sees them (each record with its judgments and the need it serves), left-out records.

    ``prefix`` (letters, digits, ``-``) starts the element ids of its records, so two Views
    on one page keep apart (stored text cannot hold ``id="``: its quotes are escaped)."""
    trace = view.trace
    budget = (trace.get("settings") or {}).get("view_chars")
    used = f"{len(view.text):,} of {budget:,} characters" if budget else f"{len(view.text):,} chars"
    counts = trace.get("counts") or {}
    parts = [
        f"<div><b>View</b>: {len(view.records)} records, {used}; "
        f"{esc(counts.get('pool', 0))} pooled, {esc(counts.get('judgments', 0))} judgments, "
        f"{esc(counts.get('rounds', 0))} rounds</div>"
    ]
    if view.empty_reason:
        parts.append(f'<div class="no">empty View: {esc(view.empty_reason)}</div>')
    parts.append("<h4>Needs</h4>" + needs_table(trace, view.record_ids))
    if view.items:
        rows = [[esc(i.get("group", "")), esc(i.get("text") or i.get("line"))] for i in view.items]
        parts.append("<h4>Index items shown</h4>" + _table(["group", "item"], rows))
    cards = []
    for block in _blocks(view):
        head = block[0]
        date = f" · {esc(head.date[:10])}" if head.date else ""
        date += f" · <b>{esc(head.status)}</b>" if head.status else ""  # read.replaced
        inner = "".join(_record_card(r, trace) for r in block)
        cards.append(f'<div class="block"><div class="muted">session {head.session}{date}</div>')
        cards.append(inner + "</div>")
    parts.append("<h4>Records, as the agent reads them</h4>" + "".join(cards))
    parts.append(
        "<details><summary>Pooled but left out</summary>" + left_out_html(view) + "</details>"
    )
    body = "".join(parts)
    if prefix:
        safe = re.sub(r"[^0-9A-Za-z-]", "", prefix)
        body = body.replace('id="rec-', f'id="{safe}rec-').replace(
            'href="#rec-', f'href="#{safe}rec-'
        )
    return _wrap(body, style)


class Explanation(str):
    """What :func:`~mnemon_langgraph.read.view.explain` returns: its text (a ``str``, so
    printing, comparing and ``splitlines`` work as before) that Jupyter shows as a table.

    Attributes:
        view: The View explained.
        record_id: The id asked about (as given).
    """

    view: View
    record_id: str

    def __new__(cls, text: str, view: View, record_id: str) -> Explanation:
        obj = super().__new__(cls, text)
        obj.view, obj.record_id = view, record_id
        return obj

    def __getnewargs__(self) -> tuple[str, Any, str]:  # type: ignore[override]  # copy, pickle
        return (str(self), self.view, self.record_id)

    def _repr_html_(self) -> str:
        return explanation_html(self.view, str(self))


def explanation_html(view: View, text: str, *, style: bool = True) -> str:
    """``explain``'s answer as a table: found by, judgments, rules and placement."""
    first = text.split("\n", 1)[0]
    rid = first.removeprefix("record ").removesuffix(":")
    trace = view.trace
    known = {*view.record_ids, *trace.get("placement", {})}
    known.update(p.get("id") for p in trace.get("pool", []))
    if rid not in known:
        return _wrap(f'<div class="text">{esc(text)}</div>', style)  # unknown or ambiguous
    searches = {s.get("index"): s for s in trace.get("searches", [])}
    entry = next((p for p in trace.get("pool", []) if p.get("id") == rid), None)
    rows: list[list[str]] = []
    if entry is None:
        rows.append(["pooled", "no: no search of this turn returned it"])
    else:
        found = [
            f"search {esc(i)} ({esc(searches.get(i, {}).get('origin', '?'))}: "
            f"{esc(str(searches.get(i, {}).get('query', ''))[:80])}) at rank {esc(rank)}"
            for i, rank in entry.get("found", [])
        ]
        rows.append(["pooled", f"round {esc(entry.get('round', 1))}; " + "<br>".join(found)])
    rows.append(["judgments", judgments_table(trace, rid)])
    for a in trace.get("actions", []):
        if rid and rid in a.get("reason", ""):
            rows.append([f"rule (round {esc(a.get('round'))})", esc(a["reason"])])
    place = trace.get("placement", {}).get(rid, "not in the View")
    rows.append(["placement", esc(place)])
    return _wrap(f"<div><b>record {esc(rid)}</b></div>" + _table(["", ""], rows), style)


def trace_html(view: View, *, style: bool = True) -> str:
    """The read graph's trace: plan, searches, actions, counts, timings and errors."""
    t = view.trace
    parts = [
        f"<div><b>Trace</b> · namespace {esc(' / '.join(map(str, t.get('namespace', []))))}"
        f" · planner {esc(t.get('planner'))}</div>",
        "<h4>Needs</h4>" + needs_table(t, view.record_ids),
    ]
    searches = [
        [esc(s.get("index")), esc(s.get("round")), esc(s.get("origin")), esc(s.get("query"))]
        for s in t.get("searches", [])
    ]
    parts.append("<h4>Searches</h4>" + _table(["#", "round", "origin", "query"], searches))
    actions = [[esc(a.get("round")), esc(a.get("reason", ""))] for a in t.get("actions", [])]
    if actions:
        parts.append("<h4>Actions</h4>" + _table(["round", "action and why"], actions))
    counts = [[esc(k), esc(v)] for k, v in (t.get("counts") or {}).items()]
    parts.append("<h4>Counts</h4>" + _table(["", ""], counts))
    timings = (t.get("timings") or {}).get("by_node", [])
    rows = [[esc(x["node"]), f"{x['seconds']:.3f}", f"{x['model_seconds']:.3f}"] for x in timings]
    parts.append("<h4>Time by node (s)</h4>" + _table(["node", "total", "models"], rows))
    if t.get("errors"):
        parts.append("<h4>Errors</h4>" + "".join(f"<div>{esc(e)}</div>" for e in t["errors"]))
    return _wrap("".join(parts), style)


def show_trace(view: View) -> Html:
    """The View's trace as a picture for Jupyter (prints as a one-line summary)."""
    c = view.trace.get("counts") or {}
    text = (
        f"trace: {c.get('searches')} searches, {c.get('pool')} pooled, "
        f"{c.get('judgments')} judgments in {c.get('rounds')} rounds, "
        f"{len(view.trace.get('actions', []))} actions"
    )
    return Html(trace_html(view), text)


def _record_link(record_id: str, link: str) -> str:
    """``record_id`` shown short, linking to ``link`` + the id (``#``: its anchor here)."""
    target = f"#{anchor(record_id)}" if link == "#" else link + quote(record_id, safe="")
    return f'<a href="{esc(target)}">{esc(record_id[:10])}</a>'


def records_html(
    records: Sequence[Record], used: Iterable[str] = (), *, style: bool = True, link: str = ""
) -> str:
    """Records grouped by session (a timeline: sessions in the order given, each with its
    date); records in ``used`` (e.g. a View's) are marked; with ``link``, each id links to
    ``link`` + the id."""
    marked = set(used)
    sessions: list[tuple[tuple[int, str], list[Record]]] = []
    for r in records:
        key = (r.session, r.date.strftime("%Y-%m-%d %H:%M") if r.date else "")
        if not sessions or sessions[-1][0] != key:
            sessions.append((key, []))
        sessions[-1][1].append(r)
    parts = []
    for (session, date), recs in sessions:
        rows = [
            [
                f'<span id="{anchor(r.id)}">'
                + (_record_link(r.id, link) if link else esc(r.id[:10]))
                + "</span>"
                + (' <span class="yes">in the View</span>' if r.id in marked else ""),
                esc(r.position),
                f'<div class="text">{esc(r.text)}</div>',
            ]
            for r in recs
        ]
        cls = ' class="used"' if any(r.id in marked for r in recs) else ""
        parts.append(
            f"<div{cls}><b>session {esc(session)}</b> · {esc(date or 'no date')} · "
            f"{len(recs)} records</div>" + _table(["record", "position", "text"], rows)
        )
    if not parts:
        parts.append('<div class="muted">no records</div>')
    return _wrap("".join(parts), style)


def items_html(items: Sequence[IndexItem], *, link: str = "#", style: bool = True) -> str:
    """Consolidated items by kind and group, each with links to its records (``link``: the
    prefix of a link to a record, ``#`` for anchors in the same page)."""
    rows = []
    for it in items:
        group = it.topic or " / ".join(x for x in (it.subject, it.attribute) if x) or ""
        date = it.date.strftime("%Y-%m-%d") if it.date else ""
        refs = " ".join(_record_link(r, link) for r in it.record_ids)
        rows.append([esc(it.kind), esc(group), esc(date), esc(it.text), refs])
    if not rows:
        return _wrap('<div class="muted">no consolidated items</div>', style)
    return _wrap(_table(["kind", "topic / value", "date", "item", "records"], rows), style)


def show_memory(
    store: Any,
    namespace: str | Sequence[str],
    *,
    view: View | None = None,
    items: Any = None,
    limit: int = 200,
) -> Html:
    """A namespace's records as a timeline (sessions by date; the records ``view`` used
    marked) and, with ``items`` (an item store), its consolidated items linked to them.

    Args:
        store: A :class:`~mnemon_langgraph.store.MnemonStore`.
        namespace: Whose memory.
        view: A View of this namespace; its records are marked.
        items: ``store.item_store()``, to show the consolidated items too.
        limit: Most records shown (the first ``limit`` in write order).

    Returns:
        The picture (``print`` gives a line per session).
    """
    records = list(store.records(namespace, limit=limit))
    used = view.record_ids if view is not None else []
    body = records_html(records, used, style=False)
    all_items = list(items.all_items(tuple(_parts(namespace)))) if items is not None else []
    if items is not None:
        body += "<h4>Consolidated items</h4>" + items_html(all_items, style=False)
    total = store.count(namespace)
    head = f"<div><b>{esc(' / '.join(_parts(namespace)))}</b>: {total} records"
    head += f" (first {len(records)} shown)</div>" if len(records) < total else "</div>"
    lines = [f"{' / '.join(_parts(namespace))}: {total} records"]
    last: tuple[int, Any] | None = None
    for r in records:
        if (r.session, r.date) != last:
            when = r.date.strftime("%Y-%m-%d") if r.date else "no date"
            lines.append(f"  session {r.session} · {when}")
            last = (r.session, r.date)
        mark = " *" if r.id in used else ""
        lines.append(f"    {r.id[:10]}{mark} {r.text.splitlines()[0][:60] if r.text else ''}")
    if items is not None:
        lines.append(f"  {len(all_items)} consolidated items")
    return Html(_wrap(head + body, True), "\n".join(lines))


def _parts(namespace: str | Sequence[str]) -> list[str]:
    return [namespace] if isinstance(namespace, str) else [str(p) for p in namespace]
