"""Deprecated alias of :mod:`mnemon_langgraph.loaders.files` (loading conversation files is
the loaders' job); kept for one release (docs/migration.md)."""

from __future__ import annotations

import warnings

from mnemon_langgraph.loaders.files import load_messages

warnings.warn(
    "mnemon_langgraph.store.files is deprecated: import load_messages from "
    "mnemon_langgraph.loaders.files",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["load_messages"]
