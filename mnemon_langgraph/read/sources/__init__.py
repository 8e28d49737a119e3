"""Read sources: what feeds one View besides (or instead of) the user's journal.

A read graph reads named sources (``create_read_graph(sources={"memory": store, ...})``);
each is a :class:`~mnemon_langgraph.types.SearchSource`. This package holds the sources the
package offers and the code that binds them to a run (:mod:`.binding`, where the source
contract is written down):

* :class:`SharedNamespace` (:mod:`.shared`): a team's or an organisation's namespace of the
  same store, read-only.
* ``RetrieverSource`` (:mod:`.retriever`) and ``BaseStoreSource`` (:mod:`.basestore`):
  any LangChain retriever, any LangGraph ``BaseStore``.

Imports are lazy, so naming one source loads no other's dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemon_langgraph.read.sources.basestore import BaseStoreSource
    from mnemon_langgraph.read.sources.binding import (
        DEFAULT_SOURCE,
        SOURCE_ID_SEPARATOR,
        BoundSource,
        qualify_id,
        split_id,
    )
    from mnemon_langgraph.read.sources.retriever import RetrieverSource
    from mnemon_langgraph.read.sources.shared import SharedNamespace

__all__ = [
    "DEFAULT_SOURCE",
    "SOURCE_ID_SEPARATOR",
    "BaseStoreSource",
    "BoundSource",
    "RetrieverSource",
    "SharedNamespace",
    "qualify_id",
    "split_id",
]

# public name -> module of this package that defines it
_WHERE: dict[str, str] = {
    "DEFAULT_SOURCE": "binding",
    "SOURCE_ID_SEPARATOR": "binding",
    "BoundSource": "binding",
    "qualify_id": "binding",
    "split_id": "binding",
    "SharedNamespace": "shared",
    "RetrieverSource": "retriever",
    "BaseStoreSource": "basestore",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module = importlib.import_module(f"mnemon_langgraph.read.sources.{_WHERE[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'mnemon_langgraph.read.sources' has no attribute {name!r}")
