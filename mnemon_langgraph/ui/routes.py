"""The inspector's routes: each reads ``request.app.state.inspector`` and renders a page.

GET pages run in Starlette's thread pool (the store's calls block); a typed error
(:class:`~mnemon_langgraph.errors.MnemonError`: a bad parameter, an unknown namespace or
record) is a 400 page saying what was wrong, never a traceback.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from mnemon_langgraph.errors import MnemonError
from mnemon_langgraph.types import Namespace
from mnemon_langgraph.ui import pages

__all__ = ["ROUTES"]

STATIC = {"ui.css": "text/css", "ui.js": "text/javascript"}
"""The files ``/static/`` serves from the package (nothing else)."""


def _inspector(request: Request) -> Any:
    return request.app.state.inspector


def html_page(render: Callable[[Request], str]) -> Callable[[Request], Response]:
    """A GET page: ``render(request)`` → HTML; a typed error is a 400 page, not a crash."""

    def endpoint(request: Request) -> Response:
        try:
            return HTMLResponse(render(request))
        except MnemonError as exc:
            return HTMLResponse(pages.error_page(str(exc)), status_code=400)

    return endpoint


def _args(request: Request) -> dict[str, str]:
    return {k: v for k, v in request.query_params.items() if k != "ns"}


def _ns(request: Request) -> Namespace:
    namespace: Namespace = _inspector(request).namespace(request.query_params.getlist("ns"))
    return namespace


def home(request: Request) -> str:
    inspector = _inspector(request)
    rows, total = inspector.namespaces()
    shown_of = total if total > len(rows) else None
    return pages.namespaces_page(rows, not inspector.allow_forget, shown_of)


def records(request: Request) -> str:
    inspector, ns, args = _inspector(request), _ns(request), _args(request)
    found, nxt, note = inspector.records(ns, args)
    return pages.records_page(
        ns,
        found,
        args,
        total=inspector.store.count(ns),
        next_link=nxt,
        note=note,
        flash=request.query_params.get("flash", ""),
    )


def record(request: Request) -> str:
    inspector, ns = _inspector(request), _ns(request)
    rec, linked = inspector.record(ns, request.query_params.get("id", ""))
    return pages.record_page(ns, rec, linked, inspector.form_token)


def items(request: Request) -> str:
    ns = _ns(request)
    return pages.items_page(ns, _inspector(request).all_items(ns))


def read(request: Request) -> str:
    inspector, ns, args = _inspector(request), _ns(request), _args(request)
    message = args.get("message", "").strip()
    if not message:
        return pages.read_page(ns, args)
    first = inspector.budget(args.get("budget")) or inspector.settings.view_chars
    other = inspector.budget(args.get("compare"))
    budgets = [first] if other is None or other == first else [first, other]
    reads, key = inspector.read(ns, message, budgets)
    return pages.read_page(ns, args, reads, saved=f"/save/{key}")


def save(request: Request) -> Response:
    """One read as a static HTML file (a download), exactly as the read page showed it."""
    try:
        ns, message, reads = _inspector(request).saved(request.path_params["key"])
    except MnemonError as exc:
        return HTMLResponse(pages.error_page(str(exc)), status_code=404)
    return HTMLResponse(
        pages.saved_read(ns, message, reads),
        headers={"content-disposition": 'attachment; filename="mnemon-read.html"'},
    )


async def forget(request: Request) -> Response:
    """POST: forget one record (audited); only with ``--allow-forget`` and the form's token."""
    inspector = _inspector(request)
    form = parse_qsl((await request.body()).decode("utf-8", "replace"))
    parts = [v for k, v in form if k == "ns"]
    fields = {k: v for k, v in form if k != "ns"}
    if not inspector.allow_forget or not secrets.compare_digest(
        fields.get("token", "").encode(), inspector.form_token.encode()
    ):
        return HTMLResponse(pages.error_page("this server forgets nothing"), status_code=403)
    try:
        ns = await run_in_threadpool(inspector.namespace, parts)
        gone = await run_in_threadpool(inspector.forget, ns, fields.get("id", ""))
    except MnemonError as exc:
        return HTMLResponse(pages.error_page(str(exc)), status_code=400)
    flash = f"forgot {', '.join(gone)}" if gone else "nothing forgotten: no such record"
    return RedirectResponse(pages.href("/ns", ns, flash=flash), status_code=303)


def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return Response("not found", status_code=404, media_type="text/plain")
    data = (resources.files("mnemon_langgraph.ui") / "static" / name).read_bytes()
    return Response(data, media_type=STATIC[name])


ROUTES = [
    Route("/", html_page(home)),
    Route("/ns", html_page(records)),
    Route("/record", html_page(record)),
    Route("/items", html_page(items)),
    Route("/read", html_page(read)),
    Route("/save/{key}", save),
    Route("/forget", forget, methods=["POST"]),
    Route("/static/{name}", static),
]
