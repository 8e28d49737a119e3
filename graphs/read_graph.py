"""LangGraph entry point of the read graph (named ``mnemon_read`` in ``langgraph.json``).

Builds the compiled graph from environment variables and does nothing else at import:
``MNEMON_DB`` (journal path), ``MNEMON_NAMESPACE`` (namespace when a run names none),
``MNEMON_PLANNER_MODEL`` (``provider:model``; unset: rule planner), ``MNEMON_JUDGE``
(``local`` | ``jev`` | ``llm:<provider:model>``). Input ``{"messages": [...]}``; the View is
the output's ``view``. A run's namespace comes from its context (``namespace`` / ``user_id``)
or ``config["configurable"]``, else ``MNEMON_NAMESPACE``; with neither the run is refused
with a message saying what to set. On a server with authentication (``langgraph.auth.json``)
the login decides, and a run naming another user is refused.
"""

from __future__ import annotations

from mnemon_langgraph.integrations.studio import read_graph_from_env

graph = read_graph_from_env()
