"""LangGraph entry point of the chat agent with memory (``mnemon_agent`` in ``langgraph.json``).

Builds the compiled graph from environment variables and does nothing else at import:
``MNEMON_DB`` (journal path or PostgreSQL URL), ``MNEMON_AGENT_MODEL`` (``provider:model``;
unset: a labelled offline stand-in that quotes what memory found), ``MNEMON_NAMESPACE``
(namespace, or JSON-array template, for runs that name none), ``MNEMON_PLANNER_MODEL`` and
``MNEMON_JUDGE`` (the read path). Input ``{"messages": [...]}``; each run reads the View of
its user before the model call and writes the turn after it. A run names its user in its
context (``{"user_id": "ada"}``: the namespace ``("users", "ada")``; Studio's context form) or
``config["configurable"]``; on a server with authentication (``langgraph.auth.json``) the
login decides, and a run naming another user is refused.
"""

from __future__ import annotations

from mnemon_langgraph.integrations.studio import agent_graph_from_env

graph = agent_graph_from_env()
