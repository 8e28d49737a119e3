"""``mnemon mcp``: serve one user's memory to MCP clients (Claude Desktop, Cursor, agents).

Examples::

    mnemon mcp --db memory.db --user ada                  # stdio (what desktop clients start)
    mnemon mcp --db memory.db --namespace teams --namespace blue --http 8765
    mnemon mcp --db postgresql://me@localhost/mem --user ada --http

Every tool call is confined to the namespace given here; stdout carries the MCP protocol
(stdio transport), so nothing else is printed there. ``--http`` serves streamable HTTP at
``http://127.0.0.1:PORT/mcp`` (loopback only: the server has no authentication).
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
    store = open_store(args.db, create=True)
    try:
        hint = _common.old_namespace_hint(store, namespace, args.db)
        if hint:  # stderr: stdout carries the protocol
            print(
                f"mnemon mcp: serving {list(namespace)!r}, which is empty; {hint}", file=sys.stderr
            )
        judge = _common.judge(args.judge, getattr(store, "embeddings", None))
        graph = create_read_graph(source=store, judge=judge, planner=planner, settings=settings)
        server = create_mcp_server(
            store,
            namespace,
            read_graph=graph,
            name=args.name,
            port=args.http or DEFAULT_HTTP_PORT,
        )
        server.run("streamable-http" if args.http is not None else "stdio")
    finally:
        _reopen_closed_stdout()
        close = getattr(store, "close", None)
        if callable(close):
            close()
    return 0


def _reopen_closed_stdout() -> None:
    """Point a closed ``sys.stdout`` at the null device.

    The SDK's stdio transport writes the protocol through its own wrapper of stdout's
    buffer and closes it when the client goes away; the command line's final flush must
    then find a stream, not raise on a closed file.
    """
    if sys.stdout is not None and sys.stdout.closed:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process exits
