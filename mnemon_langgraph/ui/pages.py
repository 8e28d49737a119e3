"""The inspector's pages, rendered on the server as HTML strings.

Every stored string is escaped (:func:`mnemon_langgraph.read.html.esc`); every link is
built from a fixed path and URL-encoded parameters, so a namespace part or record text
never becomes markup, a script, an event attribute or a ``javascript:`` link. The pages
link the package's stylesheet and script (``/static/``) and hold no inline script or style.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from mnemon_langgraph.read.html import (
    STYLE,
    esc,
    items_html,
    records_html,
    trace_html,
    view_html,
)

__all__ = [
    "error_page",
    "items_page",
    "namespaces_page",
    "page",
    "read_page",
    "record_page",
    "records_page",
    "saved_read",
]


def href(path: str, namespace: Sequence[str] = (), **params: object) -> str:
    """A link to one of the inspector's own paths, its parameters URL-encoded (escaped for
    an attribute by the caller)."""
    pairs = [("ns", part) for part in namespace]
    pairs += [(k, str(v)) for k, v in params.items() if v not in (None, "")]
    return path + ("?" + urlencode(pairs) if pairs else "")


def ns_label(namespace: Sequence[str]) -> str:
    return " / ".join(namespace)


def page(title: str, body: str, namespace: Sequence[str] = ()) -> str:
    """A whole page: header with the namespace's links, title, body."""
    nav = f'<a href="{esc(href("/"))}">namespaces</a>'
    if namespace:
        for label, path in (("records", "/ns"), ("read", "/read"), ("items", "/items")):
            nav += f'<a href="{esc(href(path, namespace))}">{label}</a>'
        nav += f'<span class="muted">{esc(ns_label(namespace))}</span>'
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)} · mnemon ui</title>"
        '<link rel="stylesheet" href="/static/ui.css">'
        '<script src="/static/ui.js" defer></script></head>'
        f"<body><header>{nav}</header><main><h1>{esc(title)}</h1>{body}</main></body></html>"
    )


def error_page(message: str) -> str:
    return page("Cannot show this", f'<p class="no">{esc(message)}</p>')


def namespaces_page(
    rows: Sequence[dict[str, Any]], read_only: bool, shown_of: int | None = None
) -> str:
    """The namespaces: record counts and the dates of their first and last records."""
    body = [
        "<p>"
        + (
            "Read-only: this server writes nothing to the memory."
            if read_only
            else "Started with --allow-forget: a record page can forget its record (audited)."
        )
        + "</p>"
    ]
    lines = [
        f'<tr><td><a href="{esc(href("/ns", r["namespace"]))}">{esc(ns_label(r["namespace"]))}'
        f"</a></td><td>{r['records']:,}</td><td>{esc(r['first'])}</td><td>{esc(r['last'])}</td>"
        f'<td><a href="{esc(href("/read", r["namespace"]))}">read</a></td></tr>'
        for r in rows
    ]
    body.append(
        '<table class="list"><tr><th>namespace</th><th>records</th>'
        "<th>first record's date</th><th>last record's date</th><th></th></tr>"
        + "".join(lines)
        + "</table>"
    )
    if not rows:
        body.append('<p class="muted">this store holds no records</p>')
    if shown_of is not None:
        body.append(f'<p class="muted">the first {len(rows):,} of {shown_of:,} namespaces</p>')
    return page("Namespaces", "".join(body))


def _filters(namespace: Sequence[str], args: dict[str, str]) -> str:
    hidden = "".join(f'<input type="hidden" name="ns" value="{esc(p)}">' for p in namespace)

    def field(name: str, label: str, kind: str = "text", size: int = 8) -> str:
        value = esc(args.get(name, ""))
        return (
            f'<label>{label} <input type="{kind}" name="{name}" size="{size}" '
            f'value="{value}"></label> '
        )

    return (
        f'<form class="bar" method="get" action="/ns">{hidden}'
        + field("q", "search", size=30)
        + field("session", "session", "number")
        + field("from", "from", "date")
        + field("to", "to", "date")
        + '<button type="submit">show</button> <span class="muted">(dates alone browse; '
        "with words they narrow the search)</span></form>"
    )


def records_page(
    namespace: Sequence[str],
    records: Sequence[Any],
    args: dict[str, str],
    *,
    total: int,
    next_link: str | None,
    note: str = "",
    flash: str = "",
) -> str:
    """One page of a namespace's records (a timeline: grouped by session and date)."""
    body = [f'<div class="flash">{esc(flash)}</div>' if flash else ""]
    body.append(_filters(namespace, args))
    body.append(f"<p>{total:,} records in this namespace; {esc(note)}</p>")
    body.append(records_html(records, style=False, link=href("/record", namespace) + "&id="))
    keep = {k: args.get(k) for k in ("q", "session", "from", "to")}
    nav = f'<a href="{esc(href("/ns", namespace, **keep))}">first page</a>'
    if next_link:
        nav += f' · <a id="next" href="{esc(next_link)}">next page</a>'
    body.append(f"<p>{nav}</p>")
    return page(f"Records of {ns_label(namespace)}", "".join(body), namespace)


def record_page(namespace: Sequence[str], record: Any, items: Sequence[Any], forget: str) -> str:
    """One record, the consolidated items that link to it, and (``forget``: the form's
    token) a button that forgets it."""
    when = record.date.strftime("%Y-%m-%d %H:%M") if record.date else "no date"
    body = [
        f"<p>session {esc(record.session)} · {esc(when)} · position {esc(record.position)} · "
        f"speakers {esc(', '.join(record.speakers))} · origin {esc(record.origin)}</p>",
        f'<div class="mnemon"><div class="text">{esc(record.text)}</div></div>',
        "<h4>Consolidated items from this record</h4>",
        items_html(items, style=False, link=href("/record", namespace) + "&id="),
    ]
    if forget:
        hidden = "".join(f'<input type="hidden" name="ns" value="{esc(p)}">' for p in namespace)
        body.append(
            '<form method="post" action="/forget" data-confirm="Forget this record for good?">'
            f'{hidden}<input type="hidden" name="id" value="{esc(record.id)}">'
            f'<input type="hidden" name="token" value="{esc(forget)}">'
            '<button type="submit" id="forget">forget this record (audited)</button></form>'
        )
    return page(f"Record {record.id}", "".join(body), namespace)


def items_page(namespace: Sequence[str], items: Sequence[Any]) -> str:
    body = items_html(items, style=False, link=href("/record", namespace) + "&id=")
    return page(f"Consolidated items of {ns_label(namespace)}", body, namespace)


def _read_form(namespace: Sequence[str], args: dict[str, str]) -> str:
    hidden = "".join(f'<input type="hidden" name="ns" value="{esc(p)}">' for p in namespace)
    return (
        f'<form class="bar" method="get" action="/read">{hidden}'
        f'<label>message <input type="text" name="message" id="message" '
        f'value="{esc(args.get("message", ""))}"></label> '
        f'<label>budget <input type="number" name="budget" size="7" '
        f'value="{esc(args.get("budget", ""))}"></label> '
        f'<label>compare with budget <input type="number" name="compare" size="7" '
        f'value="{esc(args.get("compare", ""))}"></label> '
        '<button type="submit" id="ask">read</button></form>'
    )


def _one_read(view: Any, budget: int, prefix: str = "") -> str:
    return f"<h4>Budget {budget:,} characters</h4>" + view_html(view, style=False, prefix=prefix)


def read_page(
    namespace: Sequence[str],
    args: dict[str, str],
    reads: Sequence[tuple[int, Any]] = (),
    saved: str = "",
) -> str:
    """The read form and, for a message, its View(s): one per budget, side by side."""
    body = [_read_form(namespace, args)]
    if reads:
        message = args.get("message", "")
        body.append(f'<p>message: <b id="asked">{esc(message)}</b>')
        if saved:
            body.append(f' · <a id="save" href="{esc(saved)}">save this read as HTML</a>')
        body.append("</p>")
        if len(reads) == 2:
            (b1, v1), (b2, v2) = reads
            only1 = [r for r in v1.record_ids if r not in set(v2.record_ids)]
            only2 = [r for r in v2.record_ids if r not in set(v1.record_ids)]
            body.append(
                f"<p>only with {b1:,}: {esc(', '.join(r[:10] for r in only1) or 'none')}; "
                f"only with {b2:,}: {esc(', '.join(r[:10] for r in only2) or 'none')}</p>"
            )
        body.append('<div class="compare">')
        body.extend(
            f'<div id="view-{i}">{_one_read(v, b, f"v{i}-")}</div>'
            for i, (b, v) in enumerate(reads)
        )
        body.append("</div><h4>Trace</h4>" + trace_html(reads[0][1], style=False))
    return page(f"Read {ns_label(namespace)}", "".join(body), namespace)


def saved_read(namespace: Sequence[str], message: str, reads: Sequence[tuple[int, Any]]) -> str:
    """One read as a static file to attach to a bug report: the message, each View, why each
    record is in or out, the trace; styled inline, no script, no link back to the server."""
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>mnemon read: {esc(message[:60])}</title>{STYLE}</head><body>",
        f"<h1>Read of {esc(ns_label(namespace))}</h1><p>message: <b>{esc(message)}</b></p>",
    ]
    parts.extend(_one_read(v, b, f"v{i}-") for i, (b, v) in enumerate(reads))
    parts.append("<h4>Trace</h4>" + trace_html(reads[0][1], style=False) + "</body></html>")
    return "".join(parts)
