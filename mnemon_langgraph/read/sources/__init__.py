"""Read sources: stores the read graph searches beside (or instead of) the user's journal.

The sources helper owns this file; this minimal version exports the two adapters.
"""

from __future__ import annotations

from mnemon_langgraph.read.sources.basestore import BaseStoreSource
from mnemon_langgraph.read.sources.retriever import RetrieverSource

__all__ = ["BaseStoreSource", "RetrieverSource"]
