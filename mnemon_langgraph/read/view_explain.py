"""Deprecated path of :mod:`mnemon_langgraph.read._view_explain`.

The module is internal now; this old path gives the same module object, with a
``DeprecationWarning``, for one release (docs/migration.md).
"""

from mnemon_langgraph.errors import moved_module

moved_module(__name__, "mnemon_langgraph.read._view_explain")
