"""Helpers shared by ``mnemon`` subcommands.

Namespaces on the command line: ``--namespace`` may be repeated, one part each, so
``--namespace users --namespace ada@example.com`` is ``("users", "ada@example.com")``. A single
``--namespace ada@example.com`` is the one-part namespace ``("ada@example.com",)``; a value is
never split on ``/`` or ``.``, so e-mail addresses and paths work as they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mnemon_langgraph.types import Namespace, normalize_namespace

__all__ = [
    "add_db_arg",
    "add_namespace_arg",
    "namespace_arg",
    "open_store",
    "print_json",
]


def add_namespace_arg(
    parser: argparse.ArgumentParser, *, required: bool = True, help_suffix: str = ""
) -> None:
    """Add a repeatable ``--namespace PART`` option (see the module docstring)."""
    parser.add_argument(
        "--namespace",
        action="append",
        required=required,
        metavar="PART",
        help="namespace; repeat for a multi-part namespace "
        "(--namespace users --namespace ada@example.com)" + help_suffix,
    )


def add_db_arg(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add ``--db PATH`` (the journal's SQLite file)."""
    parser.add_argument(
        "--db",
        required=required,
        metavar="PATH|URL",
        help="the journal's SQLite file, or a postgresql:// URL",
    )


def namespace_arg(value: list[str] | str | None) -> Namespace | None:
    """The namespace given by ``args.namespace`` (``None`` when the option was not given).

    Raises:
        NamespaceError: A part is empty or otherwise unusable.
    """
    if value is None:
        return None
    return normalize_namespace([value] if isinstance(value, str) else list(value))


def open_store(db: str, **kwargs: Any) -> Any:
    """Open a :class:`~mnemon_langgraph.store.MnemonStore` with the default embedder.

    ``MNEMON_EMBEDDINGS=fake`` (for tests and CI only) swaps in a fast fake embedder.
    """
    from mnemon_langgraph.store import MnemonStore

    return MnemonStore(db, **kwargs)


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (dates as ISO strings)."""
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
