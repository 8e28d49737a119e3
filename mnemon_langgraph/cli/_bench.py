"""``mnemon bench NAME``: benchmarks that report figures and ratios (never pass/fail).

Subcommands come from :data:`mnemon_langgraph.bench.BENCHMARKS` (name → module); each module
provides ``HELP``, ``add_arguments(parser)``, ``run(args) -> dict`` and ``render(result)``.
Every benchmark accepts ``--json`` (print the result as JSON) and ``--out FILE`` (also write
the JSON there).
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add ``bench`` and one sub-subcommand per registered benchmark."""
    from mnemon_langgraph.bench import BENCHMARKS

    p = sub.add_parser(
        "bench",
        help="benchmarks (ingest speed, search scaling, …)",
        description="Benchmarks of the package, one per NAME below, on synthetic or LoCoMo "
        "records. Each prints a table, or its figures as JSON with --json.",
    )
    bench_sub = p.add_subparsers(dest="bench", metavar="NAME", required=True)
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        bp = bench_sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(bp)
        bp.add_argument("--json", action="store_true", help="print the result as JSON")
        bp.add_argument("--out", metavar="FILE", help="also write the JSON result to FILE")
        bp.set_defaults(func=_runner(module))


def _runner(module: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        result = module.run(args)
        text = json.dumps(result, indent=2, default=str)
        if args.out:
            Path(args.out).write_text(text + "\n", encoding="utf-8")
        print(text if args.json else module.render(result))
        return 0

    return run
