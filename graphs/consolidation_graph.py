"""LangGraph entry point of the consolidation graph (``mnemon_consolidation``).

Builds the compiled graph from environment variables and does nothing else at import:
``MNEMON_DB`` (journal path), ``MNEMON_NAMESPACE`` (namespace when a run names none; a run
names its user in its input ``{"namespace": [...]}`` or its context ``{"user_id": "ada"}``, and
on a server with authentication the login decides),
``MNEMON_CONSOLIDATION_MODEL`` (``provider:model`` of the chat model that folds batches).
"""

from __future__ import annotations

from mnemon_langgraph.integrations.studio import consolidation_graph_from_env

graph = consolidation_graph_from_env()
