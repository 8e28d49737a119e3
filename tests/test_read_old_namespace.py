"""Issue 43's leftover: an upgraded user's memory under the one-part namespace ``("ada",)`` of
earlier versions is named, with the command that moves it, by the empty View of
``ReadContext(user_id="ada")`` (``("users", "ada")``); never another user's, under LangGraph
auth or not, and never when the View's namespace holds records."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.cli._rename import rename_namespace
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.namespaces import legacy_user_namespace
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

MOVE = "`mnemon rename-namespace --namespace ada --to-user ada`"
ASK = {"messages": [HumanMessage("what do I grow in the garden?")]}


@pytest.fixture
def store(tmp_path: Path):
    with MnemonStore(str(tmp_path / "memory.db"), fake_embeddings()) as s:
        s.ingest(
            ("ada",), [Message("I grow tomatoes in the garden", "Ada", id="m1")], origin="chat"
        )
        yield s


def _graph(store: MnemonStore):
    return create_read_graph(source=store, judge=ScriptedDecisionModel(answers=lambda *a: 0.9))


def test_the_empty_view_names_the_old_one_part_namespace_and_the_command(store) -> None:
    graph = _graph(store)
    view = graph.invoke(ASK, context=ReadContext(user_id="ada"))["view"]
    assert view.records == ()
    assert "one-part namespace ['ada'] of earlier versions holds records" in view.empty_reason
    assert MOVE in view.empty_reason
    # the async face says the same
    aview = asyncio.run(graph.ainvoke(ASK, context=ReadContext(user_id="ada")))["view"]
    assert aview.empty_reason == view.empty_reason
    # a user with no old memory is told nothing about moving any
    other = graph.invoke(ASK, context=ReadContext(user_id="bo"))["view"]
    assert other.records == () and "no records found" in other.empty_reason
    assert "rename-namespace" not in other.empty_reason
    # once moved, the View holds the records and no hint is given
    rename_namespace(store, ("ada",), ("users", "ada"))  # what the named command runs
    moved = graph.invoke(ASK, context=ReadContext(user_id="ada"))["view"]
    assert moved.records and moved.empty_reason is None


def test_under_langgraph_auth_only_the_authenticated_users_own_old_namespace(store) -> None:
    graph = _graph(store)
    auth = {"configurable": {"langgraph_auth_user_id": "ada"}}
    view = graph.invoke(ASK, config=auth)["view"]
    assert view.records == () and MOVE in view.empty_reason
    # another identity never learns whether ("ada",) holds data
    assert (
        legacy_user_namespace(("users", "ada"), {"configurable": {"langgraph_auth_user_id": "eve"}})
        is None
    )
    assert legacy_user_namespace(("users", "ada"), auth) == ("ada",)
    assert legacy_user_namespace(("teams", "ada")) is None


async def test_the_mcp_view_tool_shows_the_hint(store) -> None:
    pytest.importorskip("mcp")
    from mcp.shared.memory import create_connected_server_and_client_session

    from mnemon_langgraph.integrations.mcp import create_mcp_server

    for user, hinted in (("ada", True), ("bo", False)):
        server = create_mcp_server(store, ("users", user), read_graph=_graph(store))
        async with create_connected_server_and_client_session(server) as session:
            result = await session.call_tool("view", {"message": "what do I grow?"})
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        assert not result.isError and "(empty View: no records found" in text
        assert (MOVE in text) is hinted
