"""``mnemon eval locomo`` with a kept journal and the shared embedding cache (longmemeval.md).

The same run as ``python -m mnemon_langgraph.cli eval locomo FILES --out OUT --store
OUT/journal.db --no-plots`` (default read graph, offline defaults), except that the MiniLM
vectors go through the content-addressed embedding cache, so a second run (or
``longview_asks.reask`` over the kept journal) embeds nothing again. Extra ``field=value``
arguments after ``--`` set ``ReadSettings`` fields.

Usage::

    PYTHONPATH=benchmarks python benchmarks/longview_locomo.py OUT conv-26.json ... \
        [-- field=value ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from longview_asks import embedder

from mnemon_langgraph.cli._common import judge
from mnemon_langgraph.eval.locomo import EvalConfig, run_locomo_eval
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.store import MnemonStore


def main(out: str, files: list[str], overrides: dict[str, object]) -> None:
    emb = embedder()
    Path(out).mkdir(parents=True, exist_ok=True)
    store = MnemonStore(Path(out) / "journal.db", embeddings=emb)
    graph = create_read_graph(
        source=store, judge=judge("local", emb), planner=None, settings=ReadSettings(**overrides)
    )
    summary = run_locomo_eval(
        files, out, graph=graph, store=store, embeddings=emb, config=EvalConfig(plots=False)
    )
    store.close()
    print(summary["view"]["overall"])


def _value(text: str) -> object:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


if __name__ == "__main__":
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    main(args[0], args[1:], {k: _value(v) for k, v in (e.split("=", 1) for e in extra)})
