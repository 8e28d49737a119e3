"""``mnemon ui``: a local page to look at a memory and at what the read path made of it.

A Starlette application (:func:`create_app`) served by uvicorn on a loopback port
(:func:`serve`): the namespaces, a namespace's records (paged in the store, searched), the
View the read graph builds for a typed message with why each record is in or out, the
consolidated items, and with ``allow_forget`` an audited forget. Every page is rendered on
the server (the fragments of :mod:`mnemon_langgraph.read.html`); one small script and one
stylesheet are served from the package, no inline script, no CDN. :mod:`.guard` refuses any
request with a foreign ``Host`` or ``Origin`` or without the start's token. Needs the
``[ui]`` extra (starlette, uvicorn).
"""

from __future__ import annotations

from mnemon_langgraph.ui.app import create_app, serve

__all__ = ["create_app", "serve"]
