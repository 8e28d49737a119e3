"""System 1 backends: decision models that answer the read path's propositions.

* :class:`JevDecisionModel` — TypeSafe's hosted Jev (``pip install 'mnemon-langgraph[jev]'``).
* :class:`ChatDecisionModel` — any LangChain chat model as a judge.
* :class:`LocalDecisionModel` — offline baseline (embeddings + lexical evidence); the default.
* :class:`ScriptedDecisionModel` — scripted answers for tests and notebooks.

All are :class:`langchain_core.decisions.BaseDecisionModel` subclasses. Backends are
imported lazily, so importing this package loads none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemon_langgraph.judges.chat import ChatDecisionModel
    from mnemon_langgraph.judges.fake import ScriptedDecisionModel
    from mnemon_langgraph.judges.jev import JevDecisionModel
    from mnemon_langgraph.judges.local import LocalDecisionModel

__all__ = [
    "ChatDecisionModel",
    "JevDecisionModel",
    "LocalDecisionModel",
    "ScriptedDecisionModel",
]

_MODULES = {
    "ChatDecisionModel": "chat",
    "JevDecisionModel": "jev",
    "LocalDecisionModel": "local",
    "ScriptedDecisionModel": "fake",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
