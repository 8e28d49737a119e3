"""The inspector's application: what each page reads from the store, and the server.

Pages read through the store's public API only, a page at a time: the namespaces (a count
and two one-record reads each), a namespace's records by journal order (keyset on ``seq``),
by session (positions ``start .. stop``) or by a search (hybrid ranking, date and session
bounds), so a namespace of 100,000 records opens as fast as one of 100. A read runs the
read graph the command was given (planner, judge, settings) with the page's budget. Nothing
is written unless the server was started with ``allow_forget``; then a record page can
forget its record through :meth:`~mnemon_langgraph.store.MnemonStore.delete_records`
(audited, the same erase guarantees as the API).
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TextIO

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.types import Namespace, SearchFilters, normalize_namespace
from mnemon_langgraph.ui import pages
from mnemon_langgraph.ui.guard import Guard, allowed_hosts

__all__ = ["PAGE", "Inspector", "create_app", "is_loopback", "serve"]

PAGE = 50
"""Records a page shows."""

MAX_NAMESPACES = 500
"""Namespaces the first page lists (each costs three small reads)."""

BUDGETS = (200, 200_000)
"""The View budgets (characters) a read page accepts."""


def _int(value: str | None, name: str) -> int | None:
    if value is None or not value.strip():
        return None
    try:
        number = int(value)
    except ValueError:
        raise InputError(f"{name} must be a whole number, got {value!r}") from None
    if number < 0:
        raise InputError(f"{name} must not be negative, got {number}")
    return number


def _day(value: str | None, name: str, *, end: bool = False) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        day = datetime.strptime(value.strip(), "%Y-%m-%d")
    except ValueError:
        raise InputError(f"{name} must be a date YYYY-MM-DD, got {value!r}") from None
    return day + timedelta(days=1, microseconds=-1) if end else day


def _dated_note(args: dict[str, str], session: int | None) -> str:
    low, high = (args.get(k, "").strip() for k in ("from", "to"))
    what = f"dated {low or '…'} to {high or '…'}"
    return what if session is None else f"session {session}, {what}"


def _date_of(record: Any) -> str:
    return record.date.strftime("%Y-%m-%d") if record is not None and record.date else ""


class Inspector:
    """What the pages read, on one store.

    Args:
        store: A :class:`~mnemon_langgraph.store.MnemonStore` (opened read-only unless
            ``allow_forget``).
        judge: System 1 for reads (default: the offline local judge).
        planner: System 2 for reads (default: the rule planner).
        settings: The reads' :class:`~mnemon_langgraph.read.ReadSettings`; a page's budget
            replaces its ``view_chars``.
        items: The consolidated index (``store.item_store()``), or ``None``.
        allow_forget: Whether a record page may forget its record.
    """

    def __init__(
        self,
        store: Any,
        *,
        judge: Any = None,
        planner: Any = None,
        settings: Any = None,
        items: Any = None,
        allow_forget: bool = False,
    ) -> None:
        from mnemon_langgraph.read.settings import ReadSettings

        self.store, self.judge, self.planner, self.items = store, judge, planner, items
        self.settings = settings if settings is not None else ReadSettings()
        self.allow_forget = allow_forget
        self.form_token = secrets.token_urlsafe(16) if allow_forget else ""
        self._graphs: dict[int, Any] = {}
        self._saved: OrderedDict[str, tuple[Namespace, str, list[tuple[int, Any]]]] = OrderedDict()
        self._lock = threading.Lock()

    # -- namespaces and records --------------------------------------------------------

    def namespace(self, parts: Sequence[str]) -> Namespace:
        """The namespace a page names, checked; one the store does not hold is an error."""
        if not parts:
            raise InputError("no namespace given (open one from the namespaces page)")
        ns = normalize_namespace(list(parts))
        if not self.store.holds_namespace(ns):
            raise InputError(f"this store holds no namespace {' / '.join(ns)!r}")
        return ns

    def namespaces(self) -> tuple[list[dict[str, Any]], int]:
        """The first :data:`MAX_NAMESPACES` namespaces, each with its records and the dates of
        its first and last records; and how many namespaces the store holds."""
        rows = []
        every = self.store.namespaces()
        for ns in every[:MAX_NAMESPACES]:
            first = next(iter(self.store.records(ns, limit=1)), None)
            top = self.store.max_seq(ns)
            last = next(iter(self.store.records(ns, after_seq=top - 1, limit=1)), None)
            rows.append(
                {
                    "namespace": list(ns),
                    "records": self.store.count(ns),
                    "first": _date_of(first),
                    "last": _date_of(last),
                }
            )
        return rows, len(every)

    def records(self, ns: Namespace, args: dict[str, str]) -> tuple[list[Any], str | None, str]:
        """One page of records: by search, by dates (and session), by session or in journal
        order. Every page is one bounded read in the store: a search's page, or ``PAGE + 1``
        records by keyset on ``seq`` (dates and session bounds in the store's query) or on a
        session's positions.

        Returns:
            The records, the link to the next page (``None``: the last page), and a note
            saying what the page shows.
        """
        nxt: str
        q = args.get("q", "").strip()
        session = _int(args.get("session"), "session")
        offset = _int(args.get("offset"), "offset") or 0
        filters = SearchFilters(
            date_from=_day(args.get("from"), "from"),
            date_to=_day(args.get("to"), "to", end=True),
            session_from=session,
            session_to=session,
        )
        dated = filters.date_from is not None or filters.date_to is not None
        if q:
            hits = self.store.search(q, namespace=ns, k=PAGE + 1, offset=offset, filters=filters)
            found = [h.record for h in hits]
            keep = {k: args.get(k) for k in ("q", "session", "from", "to")}
            nxt = pages.href("/ns", ns, **keep, offset=offset + PAGE)
            note = f"search results from rank {offset + 1}, best first"
        elif session is not None and not dated:
            found = self.store.session_records(ns, session, start=offset, stop=offset + PAGE + 1)
            nxt = pages.href("/ns", ns, session=session, offset=offset + PAGE)
            note = f"session {session} from position {offset}"
        else:
            after = _int(args.get("after"), "after") or 0
            found = list(
                self.store.records(
                    ns, after_seq=after, limit=PAGE + 1, filters=filters if dated else None
                )
            )
            last = found[min(PAGE, len(found)) - 1].seq if found else 0
            keep = {k: args.get(k) for k in ("session", "from", "to")} if dated else {}
            nxt = pages.href("/ns", ns, **keep, after=last)
            note = "in the order they were written"
            if dated:
                note = _dated_note(args, session) + ", " + note
        return found[:PAGE], (nxt if len(found) > PAGE else None), note

    def record(self, ns: Namespace, record_id: str) -> tuple[Any, list[Any]]:
        """A record and the consolidated items that link to it."""
        got = self.store.get_records(ns, [record_id])
        if not got:
            raise InputError(f"namespace {' / '.join(ns)!r} holds no record {record_id!r}")
        linked = self.items.linked_items(ns, [record_id]) if self.items is not None else []
        return got[0], linked

    def all_items(self, ns: Namespace) -> list[Any]:
        return list(self.items.all_items(ns)) if self.items is not None else []

    def forget(self, ns: Namespace, record_id: str) -> list[str]:
        """Forget one record (audited), when the server was started with ``allow_forget``."""
        if not self.allow_forget:
            raise ConfigurationError("this server is read-only (start it with --allow-forget)")
        return list(
            self.store.delete_records(
                ns, [record_id], actor="mnemon ui", reason="forgotten in the inspector"
            )
        )

    # -- reads -------------------------------------------------------------------------

    def _graph(self, budget: int) -> Any:
        from mnemon_langgraph.read.graph import create_read_graph

        with self._lock:
            graph = self._graphs.get(budget)
            if graph is None:
                settings = replace(self.settings, view_chars=budget)
                graph = create_read_graph(
                    source=self.store,
                    judge=self.judge,
                    planner=self.planner,
                    items=self.items,
                    settings=settings,
                )
                self._graphs[budget] = graph
            return graph

    def budget(self, value: str | None) -> int | None:
        number = _int(value, "budget")
        if number is not None and not BUDGETS[0] <= number <= BUDGETS[1]:
            raise InputError(f"a budget is {BUDGETS[0]:,} to {BUDGETS[1]:,} characters")
        return number

    def read(self, ns: Namespace, message: str, budgets: Sequence[int]) -> tuple[list, str]:
        """The View for ``message`` at each budget, and the key its saved copy is kept by."""
        from langchain_core.messages import HumanMessage

        from mnemon_langgraph.read.state import ReadContext

        reads = []
        for budget in budgets:
            out = self._graph(budget).invoke(
                {"messages": [HumanMessage(message)]}, context=ReadContext(namespace=ns)
            )
            reads.append((budget, out["view"]))
        key = uuid.uuid4().hex
        with self._lock:
            self._saved[key] = (ns, message, reads)
            while len(self._saved) > 32:
                self._saved.popitem(last=False)
        return reads, key

    def saved(self, key: str) -> tuple[Namespace, str, list[tuple[int, Any]]]:
        with self._lock:
            found = self._saved.get(key)
        if found is None:
            raise InputError("this read is no longer kept (the server keeps the last 32)")
        return found


def create_app(inspector: Inspector, *, token: str, hosts: set[str], cookie: str) -> Any:
    """The ASGI application: the pages of :mod:`.routes` behind the :class:`~.guard.Guard`.

    Raises:
        ConfigurationError: starlette is not installed (the ``[ui]`` extra).
    """
    try:
        from starlette.applications import Starlette

        from mnemon_langgraph.ui.routes import ROUTES
    except ImportError as exc:  # pragma: no cover - the extra is part of [dev]
        raise ConfigurationError(
            "mnemon ui needs the [ui] extra: pip install 'mnemon-langgraph[ui]'"
        ) from exc
    app = Starlette(routes=ROUTES)
    app.state.inspector = inspector
    return Guard(app, token=token, hosts=hosts, cookie=cookie)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost`` counts)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    inspector: Inspector,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
    out: TextIO | None = None,
) -> None:
    """Serve the inspector until interrupted; prints the URL (with this start's token).

    Args:
        inspector: What the pages read.
        host: The address to listen on (a loopback address unless ``allow_remote``).
        port: The port (``0``: any free port).
        allow_remote: Listen on a non-loopback address (prints a warning).
        out: Where the URL is printed (default stdout).

    Raises:
        ConfigurationError: A non-loopback ``host`` without ``allow_remote``, or uvicorn
            missing (the ``[ui]`` extra).
    """
    out = out or sys.stdout
    if not is_loopback(host):
        if not allow_remote:
            raise ConfigurationError(
                f"mnemon ui listens on a loopback address; {host} needs --allow-remote"
            )
        print(
            f"mnemon ui: WARNING: listening on {host}: anyone who can reach it and has the "
            "token can read this memory",
            file=sys.stderr,
        )
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - the extra is part of [dev]
        raise ConfigurationError(
            "mnemon ui needs the [ui] extra: pip install 'mnemon-langgraph[ui]'"
        ) from exc
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(64)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    app = create_app(
        inspector,
        token=token,
        hosts=allowed_hosts(host.strip("[]"), port),
        cookie=f"mnemon_ui_{port}",
    )
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    print(f"mnemon ui: http://{shown}:{port}/?token={token}", file=out, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
