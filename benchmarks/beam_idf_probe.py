"""``mnemon eval beam`` with the local judge weighing words by their rarity in the pool, not
in the whole memory (a probe of why per-question judgments grow with the history).

Usage: python benchmarks/beam_idf_probe.py <the arguments of mnemon eval beam>

The local judge's ``memory_idf`` rule is switched off for the run by replacing
``judges.local.idf_of_memory`` with the pool's own IDF (what ``memory_idf=False`` does);
nothing else changes. Compare its ``tier_ratios`` with the default run's.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import mnemon_langgraph.judges.local as local
from mnemon_langgraph.cli import main


def _pool_idf(memory: Any, pool_idf: Mapping[str, float]) -> dict[str, float]:
    return dict(pool_idf)


if __name__ == "__main__":
    local.idf_of_memory = _pool_idf  # type: ignore[assignment]
    sys.exit(main(sys.argv[1:]))
