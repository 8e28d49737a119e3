"""Example authentication for a deployed mnemon server (``langgraph.auth.json`` names it).

With it, the server's login decides whose memory every run reads and writes: the graphs read
``configurable["langgraph_auth_user_id"]`` (set by the server from :func:`authenticate`, never
by the client) and refuse a run that names another user (``docs/security.md``). What this
file adds on top:

- :func:`authenticate`: a bearer token → the user. Tokens come from ``MNEMON_AUTH_TOKENS``, a
  JSON object ``{"<token>": "<user id>"}`` or ``{"<token>": {"identity": "<user id>",
  "org_id": "..."}}`` (extra fields fill namespace templates such as
  ``["orgs", "{org_id}", "users", "{user_id}"]``). A real deployment replaces the lookup
  with its identity provider's check (verify a JWT, call the session service); what must stay
  is: no valid credential → 401, and the returned ``identity`` is the stable user id.
- :func:`own_namespaces`: the server's store API (``client.store``, Studio's memory tab) hands
  the store no caller, so this handler is where it is confined: a user reaches only
  ``("users", <identity>, ...)``; a search or listing of a wider prefix (the root, ``("users",)``)
  is narrowed to it, anything else is 403.
- :func:`own_threads`: threads (they hold the conversation) are visible to their creator only.

``langgraph.auth.json`` sets ``"disable_studio_auth": true``: otherwise ``langgraph dev``
lets a request with the header ``x-auth-scheme: langsmith`` and no token in as the Studio
user, past this file.
"""

from __future__ import annotations

import hmac
import json
import os
from typing import Any

from langgraph_sdk import Auth

from mnemon_langgraph.read.namespaces import user_namespace

auth = Auth()

TOKENS_VARIABLE = "MNEMON_AUTH_TOKENS"


def _users() -> dict[str, dict[str, Any]]:
    """``MNEMON_AUTH_TOKENS`` as ``{token: user dict}`` (read per request: rotate by restart)."""
    raw = os.environ.get(TOKENS_VARIABLE, "").strip()
    if not raw:
        return {}
    table = json.loads(raw)
    users: dict[str, dict[str, Any]] = {}
    for token, user in table.items():
        entry = {"identity": user} if isinstance(user, str) else dict(user)
        if not token or not isinstance(entry.get("identity"), str) or not entry["identity"]:
            raise ValueError(f"{TOKENS_VARIABLE}: every token needs a non-empty identity")
        users[token] = entry
    return users


def _unauthorized(detail: str) -> Exception:
    return Auth.exceptions.HTTPException(status_code=401, detail=detail)


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The user a ``Authorization: Bearer <token>`` header names, or 401."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("send Authorization: Bearer <token>")
    found = None
    for known, user in _users().items():  # compare every token: no early exit to time
        if hmac.compare_digest(known.encode(), token.strip().encode()):
            found = user
    if found is None:
        raise _unauthorized("unknown token")
    return found  # type: ignore[return-value]


@auth.on.store()
async def own_namespaces(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Confine the store API to the caller's namespace ``("users", identity)`` and below."""
    own = user_namespace(ctx.user.identity)
    asked = tuple(value.get("namespace") or ())
    if asked[: len(own)] == own:
        return
    if ctx.action in ("search", "list_namespaces") and own[: len(asked)] == asked:
        value["namespace"] = own  # a wider prefix (the root, ("users",)): only one's own
        return
    raise Auth.exceptions.HTTPException(
        status_code=403, detail="the store API reaches only your own namespace"
    )


@auth.on.threads.create
async def own_new_thread(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    """A new thread is owned by its creator."""
    metadata = value.setdefault("metadata", {})
    metadata["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    """Every other thread action (read, search, runs, update, delete): one's own threads only."""
    return {"owner": ctx.user.identity}
