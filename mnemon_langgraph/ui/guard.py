"""The inspector's door: Host, Origin and token checks, and the headers every response carries.

A page on a loopback port is still reachable from the user's browser by any web site: a
site can send requests to ``127.0.0.1`` (cross-site requests) and, through a DNS name that
first points at its own server and then at ``127.0.0.1``, read the answers (DNS
rebinding). So every request must

- name an allowed ``Host`` (the address the server was started on; a rebound DNS name is
  not one of them),
- carry no ``Origin`` but the page's own (and no ``Sec-Fetch-Site: cross-site``),
- carry the token made at this start: as ``?token=`` in the URL ``mnemon ui`` printed (the
  answer sets a ``SameSite=Strict``, ``HttpOnly`` cookie and redirects to the URL without
  it) or as that cookie.

Every response, refusals included, sends a Content-Security-Policy that allows scripts,
styles and images from the page's own origin only (so no inline script can run, whatever a
stored record holds), forbids framing, keeps the page out of caches and its address from
other sites.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

__all__ = ["CSP", "Guard", "allowed_hosts"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""No inline script or style, nothing from another origin, no framing."""

HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # not no-referrer: with it Chromium sends `Origin: null` on the page's own form posts,
    # which the Origin check must refuse; same-origin still tells no other site our URLs
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def allowed_hosts(host: str, port: int) -> set[str]:
    """The ``Host`` values a request may name: ``host:port``, and the loopback names when
    the server listens on a loopback address (or on every address)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = {shown}
    if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names.update(LOOPBACK_NAMES)
    return {f"{name}:{port}".lower() for name in names}


class Guard:
    """ASGI middleware: refuses what :mod:`this module <.guard>` says, adds the headers.

    Args:
        app: The application behind it.
        token: This start's token.
        hosts: Allowed ``Host`` values (:func:`allowed_hosts`).
        cookie: The cookie's name (one per port: cookies are not told apart by port).
    """

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str], cookie: str) -> None:
        self.app, self.token, self.cookie = app, token, cookie
        self.hosts = {h.lower() for h in hosts}
        self.origins = {f"http://{h}" for h in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(headers)
        if refusal is not None:
            await _plain(with_headers, 403, refusal)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        if self._matches(next((v for k, v in query if k == "token"), None)):
            await self._enter(scope, query, with_headers)
            return
        if not self._matches(_cookies(headers.get("cookie", "")).get(self.cookie)):
            await _plain(
                with_headers,
                401,
                "this page needs the token of this start: open the URL `mnemon ui` printed",
            )
            return
        await self.app(scope, receive, with_headers)

    def _refusal(self, headers: dict[str, str]) -> str | None:
        if headers.get("host", "").lower() not in self.hosts:
            return "refused: the Host header names an address this server was not started on"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return "refused: a request from another origin"
        if headers.get("sec-fetch-site") == "cross-site":
            return "refused: a cross-site request"
        return None

    def _matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    async def _enter(self, scope: Scope, query: list[tuple[str, str]], send: Send) -> None:
        """The first load with ``?token=``: set the cookie, redirect to the URL without it
        (so the token stays out of the history and of links)."""
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        location = quote(scope.get("path", "/")) + (f"?{rest}" if rest else "")
        cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode())],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _cookies(header: str) -> dict[str, str]:
    out = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            out[name] = value
    return out


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
