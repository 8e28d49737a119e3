"""Deprecated alias of :mod:`mnemon_langgraph.loaders` (the file loaders' old name).

"Source" now means a store the read path searches (:class:`~mnemon_langgraph.types.SearchSource`);
the loaders that turn files and LangChain messages into messages live in
:mod:`mnemon_langgraph.loaders`. This alias, and its submodules (``sources.locomo`` …), are the
very same modules under the old names, kept for one release (docs/migration.md).
"""

from __future__ import annotations

import sys
import warnings

from mnemon_langgraph import loaders
from mnemon_langgraph.loaders import *  # noqa: F403 (the old package's public names)
from mnemon_langgraph.loaders import jsonl, locomo, longmemeval, messages, transcript

warnings.warn(
    "mnemon_langgraph.sources is deprecated: import from mnemon_langgraph.loaders",
    DeprecationWarning,
    stacklevel=2,
)

# The old submodule paths resolve to the same module objects (so patching one patches both).
for _module in (jsonl, locomo, longmemeval, messages, transcript):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
del _module

__all__ = list(loaders.__all__)
