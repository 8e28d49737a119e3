"""``mnemon mcp``: serve one user's memory to MCP clients (Claude Desktop, Cursor, agents).

Examples::

    mnemon mcp --db memory.db --user ada                  # stdio (what desktop clients start)
    mnemon mcp --db memory.db --namespace teams --namespace blue --http 8765
    mnemon mcp --db postgresql://me@localhost/mem --user ada --http
    mnemon mcp --db memory.db --user ada \
        --sources '{"team": {"shared": ["teams", "{team_id}"]}}' --field team_id=blue

Every tool call is confined to the namespace given here; stdout carries the MCP protocol
(stdio transport), so nothing else is printed there. ``--http`` serves streamable HTTP at
``http://127.0.0.1:PORT/mcp`` (loopback only: the server has no authentication).
``--sources`` reads further sources beside the user's memory into the ``view`` and
``search_memory`` tools (the ``MNEMON_SOURCES`` format of the LangGraph server), and
``--field NAME=VALUE`` fills their namespace templates: fixed for the server's life, as its
namespace is, so no client can read another team's memory.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    add_read_args,
    namespace_of,
    open_store,
)

__all__ = ["DEFAULT_HTTP_PORT", "register"]

DEFAULT_HTTP_PORT = 8765
"""Port of ``--http`` given without one."""


def register(sub: Any) -> None:
    """Add the ``mcp`` subcommand."""
    p = sub.add_parser(
        "mcp",
        help="serve one user's memory as an MCP server (stdio, or --http on loopback)",
        description="An MCP server with the tools search_memory, remember, forget, view and "
        "list_recent, confined to one namespace.",
    )
    add_db_arg(p)
    add_namespace_arg(p, help_suffix="; the memory served")
    p.add_argument(
        "--http",
        nargs="?",
        type=int,
        const=DEFAULT_HTTP_PORT,
        default=None,
        metavar="PORT",
        help=f"serve streamable HTTP on 127.0.0.1:PORT/mcp (default port {DEFAULT_HTTP_PORT}) "
        "instead of stdio",
    )
    p.add_argument("--name", default="mnemon", help="the server name clients show")
    p.add_argument(
        "--sources",
        metavar="JSON|@FILE",
        help="further read sources beside the user's memory, as MNEMON_SOURCES takes them: "
        'e.g. \'{"team": {"shared": ["teams", "{team_id}"]}}\' (a read-only namespace of the '
        'same store) or {"docs": {"import": "package.module:attribute"}}',
    )
    p.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a run field the sources' namespace templates name ({team_id}); repeatable; "
        "fixed for the server's life",
    )
    add_read_args(p)  # the view tool's planner, judge and budgets
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP)."""
    from mnemon_langgraph.cli import _common
    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.integrations.mcp import create_mcp_server
    from mnemon_langgraph.read.graph import create_read_graph

    namespace = namespace_of(args)
    if namespace is None:  # argparse's group is required; this keeps mypy and callers honest
        raise ConfigurationError("mnemon mcp: pass --namespace or --user")
    if args.http is not None and not 0 < args.http < 65536:
        raise ConfigurationError(f"--http: {args.http} is not a TCP port")
    settings = _common.read_settings(args.read_setting, args.budget_chars)
    planner = _common.planner(args.planner)
    fields = _fields(args.field)
    if fields and not args.sources:
        raise ConfigurationError("--field fills the templates of --sources: pass --sources too")
    store = open_store(args.db, create=True)
    try:
        hint = _common.old_namespace_hint(store, namespace, args.db)
        if hint:  # stderr: stdout carries the protocol
            print(
                f"mnemon mcp: serving {list(namespace)!r}, which is empty; {hint}", file=sys.stderr
            )
        judge = _common.judge(args.judge, getattr(store, "embeddings", None))
        sources = _sources(store, args.sources, fields)
        graph = create_read_graph(
            source=None if sources else store,
            sources=sources or None,
            judge=judge,
            planner=planner,
            settings=settings,
        )
        server = create_mcp_server(
            store,
            namespace,
            read_graph=graph,
            name=args.name,
            port=args.http or DEFAULT_HTTP_PORT,
            fields=fields,
        )
        server.run("streamable-http" if args.http is not None else "stdio")
    finally:
        _reopen_closed_stdout()
        close = getattr(store, "close", None)
        if callable(close):
            close()
    return 0


def _fields(pairs: list[str]) -> dict[str, str]:
    """``--field NAME=VALUE`` pairs as a dict (a name given twice is an error)."""
    from mnemon_langgraph.errors import ConfigurationError

    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ConfigurationError(f"--field: expected NAME=VALUE, got {pair!r}")
        if name.strip() in out:
            raise ConfigurationError(f"--field: {name.strip()!r} given twice")
        out[name.strip()] = value.strip()
    return out


def _sources(store: Any, spec: str | None, fields: dict[str, str]) -> dict[str, Any]:
    """The read sources of ``--sources`` (``{}`` without it), every template field of theirs
    given by ``--field`` and no field that none of them names."""
    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.integrations.studio import source_fields, sources_from_env

    if not spec:
        return {}
    sources = sources_from_env(store, {"MNEMON_SOURCES": spec})
    named = source_fields(sources)
    missing = [f for f in named if f not in fields]
    if missing:
        raise ConfigurationError(
            f"--sources names the field(s) {', '.join(missing)}: give each with --field NAME=VALUE"
        )
    unused = [f for f in fields if f not in named]
    if unused:
        raise ConfigurationError(f"--field {', '.join(unused)}: no source of --sources names it")
    return sources


def _reopen_closed_stdout() -> None:
    """Point a closed ``sys.stdout`` at the null device.

    The SDK's stdio transport writes the protocol through its own wrapper of stdout's
    buffer and closes it when the client goes away; the command line's final flush must
    then find a stream, not raise on a closed file.
    """
    if sys.stdout is not None and sys.stdout.closed:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process exits
