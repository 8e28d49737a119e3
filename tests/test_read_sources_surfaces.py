"""The surfaces take several sources through one read graph built with them.

``add_memory``, ``MnemonMiddleware`` and the memory tools run a read graph over the user's
memory and a team's shared namespace of the same store: the View quotes both (each block
naming its source), the team comes from the run, and the write path (the turn remembered,
``remember``, ``forget``) writes only to the user's own namespace, never the shared one.
A user's View never holds another user's records through any source, on both backends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import MessagesState, StateGraph
from test_integration import RecordingChatModel, model_node
from test_integration_tools import ToolCallingFake

from mnemon_langgraph import MnemonMiddleware, add_memory, create_memory_tools
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.sources import SharedNamespace
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

ADA, ADB = ("users", "ada"), ("users", "adb")
BLUE, BLUF = ("teams", "blue"), ("teams", "bluf")


def _yes(qid: str, question: Any, state: Any) -> float:
    return 0.05 if qid.endswith(".stale") else 0.8


def _seed(store: MnemonStore) -> None:
    """Four namespaces, confusable two by two, whose messages share ids and sessions; each
    text carries a word of its own namespace."""
    for ns, word in ((ADA, "adaword"), (ADB, "adbword"), (BLUE, "blueword"), (BLUF, "blufword")):
        store.ingest(
            ns,
            [
                Message(
                    f"{word}: the garden shed roof plan number {i}",
                    "Ada" if ns[0] == "users" else "Team",
                    id=f"m{i}",
                    timestamp=datetime(2024, 5, 1 + i),
                    session=1,
                )
                for i in range(3)
            ],
            origin="seed",
        )


@pytest.fixture
def store(tmp_path: Any) -> Any:
    s = MnemonStore(tmp_path / "j.db", embeddings=DeterministicFakeEmbedding(size=32))
    _seed(s)
    yield s
    s.close()


def _graph(store: MnemonStore) -> Any:
    return create_read_graph(
        sources={"memory": store, "team": SharedNamespace(store, ("teams", "{team_id}"))},
        judge=ScriptedDecisionModel(answers=_yes),
    )


def _counts(store: MnemonStore) -> dict[tuple[str, ...], int]:
    return {ns: len(list(store.records(ns))) for ns in (ADA, ADB, BLUE, BLUF)}


def _sources_of(text: str) -> set[str]:
    return set(re.findall(r'<record id="[^"]*" source="([^"]*)"', text))


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("target", ["embedded", "postgres"])
def test_no_view_holds_another_users_records_through_any_source(
    target: str, face: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    import asyncio

    url = (
        str(tmp_path / "iso.db")
        if target == "embedded"
        else request.getfixturevalue("postgres_url")
    )
    store = MnemonStore(url, DeterministicFakeEmbedding(size=32))
    try:
        _seed(store)
        graph = _graph(store)
        for ns, team, own, foreign in (
            (ADA, "blue", {"adaword", "blueword"}, {"adbword", "blufword"}),
            (ADB, "bluf", {"adbword", "blufword"}, {"adaword", "blueword"}),
        ):
            args = (
                {"messages": [HumanMessage("What is the garden shed roof plan?")]},
                {"configurable": {"team_id": team}},
            )
            ctx = ReadContext(namespace=ns)
            if face == "sync":
                out = graph.invoke(*args, context=ctx)
            else:
                out = asyncio.run(graph.ainvoke(*args, context=ctx))
            text = out["view"].text
            assert own <= set(re.findall(r"\w+word", text)), text
            assert not foreign & set(re.findall(r"\w+word", text)), text
            assert _sources_of(text) == {"memory", "team"}
    finally:
        store.close()


def test_add_memory_reads_both_sources_and_writes_only_the_users(store: MnemonStore) -> None:
    model = RecordingChatModel()
    graph = add_memory(
        StateGraph(MessagesState).add_node("model", model_node(model)),
        store,
        read_graph=_graph(store),
    ).compile()
    before = _counts(store)
    graph.invoke(
        {"messages": [HumanMessage("What is the garden shed roof plan?", id="q1")]},
        {"configurable": {"user_id": "ada", "team_id": "blue"}},
    )
    (seen,) = model.calls
    assert "adaword" in seen[0].text and "blueword" in seen[0].text
    assert "adbword" not in seen[0].text and "blufword" not in seen[0].text
    after = _counts(store)
    assert after[ADA] > before[ADA]  # the turn went to the user's journal ...
    assert {ns: after[ns] for ns in (ADB, BLUE, BLUF)} == {
        ns: before[ns] for ns in (ADB, BLUE, BLUF)
    }  # ... and nowhere else, the shared namespace least of all


@dataclass
class TeamContext:
    user_id: str
    team_id: str


def test_middleware_fills_the_team_from_the_agents_context(store: MnemonStore) -> None:
    model = RecordingChatModel()
    agent = create_agent(
        model,
        tools=[],
        middleware=[MnemonMiddleware(store, read_graph=_graph(store))],
        context_schema=TeamContext,
    )
    before = _counts(store)
    agent.invoke(
        {"messages": [HumanMessage("What is the garden shed roof plan?", id="q1")]},
        context=TeamContext(user_id="ada", team_id="blue"),
    )
    view = next(m for m in model.calls[0] if isinstance(m, SystemMessage)).text
    assert "blueword" in view and "blufword" not in view and "adbword" not in view
    assert _counts(store)[BLUE] == before[BLUE] and _counts(store)[ADA] > before[ADA]


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}"}])


def test_tools_search_every_source_and_remember_forget_only_the_users(
    store: MnemonStore,
) -> None:
    tools = create_memory_tools(store, search="view", read_graph=_graph(store))

    def run(*replies: AIMessage) -> list[str]:
        agent = create_agent(
            ToolCallingFake(messages=iter([*replies, AIMessage("done")])),
            tools=tools,
            context_schema=TeamContext,
        )
        out = agent.invoke(
            {"messages": [("user", "the shed roof?")]}, context=TeamContext("ada", "blue")
        )
        return [m.text for m in out["messages"] if isinstance(m, ToolMessage)]

    (found,) = run(_call("search_memory", {"query": "garden shed roof plan"}))
    assert _sources_of(found) == {"memory", "team"} and "blufword" not in found
    before = _counts(store)
    (said,) = run(_call("remember", {"fact": "The shed roof is green."}))
    assert said.startswith("Remembered")
    assert _counts(store)[ADA] == before[ADA] + 1 and _counts(store)[BLUE] == before[BLUE]
    # forget with the id a team record is shown by: nothing of the team's is deleted
    team_ids = re.findall(r'<record id="([^"]*)" source="team"', found)
    assert team_ids
    (said,) = run(_call("forget", {"record_id": team_ids[0].split()[0]}))
    assert "nothing was deleted" in said
    assert _counts(store) == {**before, ADA: before[ADA] + 1}


def _pets(tmp_path: Any) -> MnemonStore:
    store = MnemonStore(tmp_path / "journal.db")  # MNEMON_EMBEDDINGS=fake, as the server's
    for ns, fact in (
        (ADA, "My cat is called Pixel."),
        (BLUE, "The blue team's pet is a parrot called Kiwi."),
        (BLUF, "The bluf team's pet is a turtle called Shelly."),
    ):
        store.ingest(
            ns, [Message(fact, ns[1], id="m1", timestamp=datetime(2024, 1, 2))], origin="seed"
        )
    return store


def test_langgraph_json_graphs_read_the_sources_the_environment_names(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_integration_studio import make_judge

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.integrations import studio

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    _pets(tmp_path).close()
    spec = tmp_path / "sources.json"
    spec.write_text('{"team": {"shared": ["teams", "{team_id}"]}}', encoding="utf-8")
    env = {
        "MNEMON_DB": str(tmp_path / "journal.db"),
        "MNEMON_JUDGE": "test_integration_studio:make_judge",
        "MNEMON_SOURCES": f"@{spec}",
    }
    assert make_judge() is not None
    graph = studio.read_graph_from_env(env)
    turn = {"messages": [HumanMessage("What is the pet called?")]}
    # the team from the context (Studio's form has the field) or from configurable
    for kwargs in (
        {"context": {"user_id": "ada", "team_id": "blue"}},
        {"config": {"configurable": {"user_id": "ada", "team_id": "blue"}}},
    ):
        text = graph.invoke(turn, **kwargs)["view"].text
        assert "Pixel" in text and "Kiwi" in text and "Shelly" not in text
        assert _sources_of(text) == {"memory", "team"}
    agent = studio.agent_graph_from_env(env)
    out = agent.invoke(turn, context={"user_id": "ada", "team_id": "bluf"})
    assert "Shelly" in out["messages"][-1].text and "Kiwi" not in out["messages"][-1].text
    for bad in ('{"memory": {"shared": ["x"]}}', '{"team": {"shared": ["x"], "more": 1}}', "[1]"):
        with pytest.raises(ConfigurationError, match="MNEMON_SOURCES"):
            studio.sources_from_env(None, {"MNEMON_SOURCES": bad})
    with pytest.raises(ConfigurationError, match="cannot import"):
        studio.sources_from_env(None, {"MNEMON_SOURCES": '{"d": {"import": "nope.nope:x"}}'})


def test_the_mcp_view_reads_every_source_and_remember_writes_the_users(
    store: MnemonStore,
) -> None:
    from mnemon_langgraph.integrations.mcp import MemoryServer

    graph = create_read_graph(
        sources={"memory": store, "team": SharedNamespace(store, BLUE)},
        judge=ScriptedDecisionModel(answers=_yes),
    )
    server = MemoryServer(store, ADA, read_graph=graph)
    text = server.view("What is the garden shed roof plan?", explain=True)
    assert _sources_of(text) == {"memory", "team"} and "blueword" in text
    assert "blufword" not in text and "adbword" not in text
    assert "from source 'team'" in text
    before = _counts(store)
    server.remember("The roof is green.")
    assert _counts(store) == {**before, ADA: before[ADA] + 1}


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_hybrid_search_memory_searches_every_source_of_the_read_graph(
    store: MnemonStore, face: str
) -> None:
    import asyncio

    from mnemon_langgraph.integrations.mcp import MemoryServer

    tools = create_memory_tools(store, read_graph=_graph(store), include=["search_memory"])
    agent = create_agent(
        ToolCallingFake(
            messages=iter([_call("search_memory", {"query": "garden shed roof"}), AIMessage("ok")])
        ),
        tools=tools,
        context_schema=TeamContext,
    )
    turn = {"messages": [("user", "the shed roof?")]}
    ctx = TeamContext("ada", "blue")
    out = (
        agent.invoke(turn, context=ctx)
        if face == "sync"
        else asyncio.run(agent.ainvoke(turn, context=ctx))
    )
    (found,) = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert _sources_of(found) == {"memory", "team"}
    assert "adaword" in found and "blueword" in found
    assert "adbword" not in found and "blufword" not in found
    server = MemoryServer(store, ADA, read_graph=_graph_fixed(store))
    text = (
        server.search_memory("garden shed roof", 4)
        if face == "sync"
        else asyncio.run(server.asearch_memory("garden shed roof", 4))
    )
    assert _sources_of(text) == {"memory", "team"} and "blufword" not in text
    assert text.count("<record ") == 2  # one record each (the seed's turns pack into one)
    assert server.search_memory("garden shed roof", 1).count("<record ") == 1


@pytest.mark.parametrize("face", ["sync", "async"])
def test_the_mcp_server_fills_a_team_template_from_its_own_fields(
    store: MnemonStore, face: str
) -> None:
    """``create_mcp_server(..., fields={"team_id": ...})``: the server's fields, fixed by
    whoever starts it, fill the team template for ``view`` and ``search_memory``; without
    them the team is left out (the read does not fail); no tool takes a team."""
    import asyncio

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.integrations.mcp import MCP_TOOLS, MemoryServer, create_mcp_server

    for team, word, other in (("blue", "blueword", "blufword"), ("bluf", "blufword", "blueword")):
        server = MemoryServer(store, ADA, read_graph=_graph(store), fields={"team_id": team})
        if face == "sync":
            view, found = server.view("garden shed roof plan?"), server.search_memory("roof", 6)
        else:
            view = asyncio.run(server.aview("garden shed roof plan?"))
            found = asyncio.run(server.asearch_memory("roof", 6))
        for text in (view, found):
            assert _sources_of(text) == {"memory", "team"}, text
            assert word in text and other not in text and "adbword" not in text
    bare = MemoryServer(store, ADA, read_graph=_graph(store))
    assert _sources_of(bare.view("garden shed roof plan?")) == {"memory"}
    mcp = create_mcp_server(store, ADA, read_graph=_graph(store), fields={"team_id": "blue"})
    tools = asyncio.run(mcp.list_tools())
    assert {t.name for t in tools} == set(MCP_TOOLS)
    assert all("team_id" not in (t.inputSchema.get("properties") or {}) for t in tools)
    for bad in ({"team_id": ""}, {"namespace": "x"}, {"": "blue"}, ["team_id"]):
        with pytest.raises(ConfigurationError):
            MemoryServer(store, ADA, fields=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("face", ["sync", "async"])
def test_mnemon_memory_reads_a_team_beside_the_user_and_writes_only_the_users(
    store: MnemonStore, face: str
) -> None:
    """The classic ``BaseMemory`` surface over a read graph built with sources: the View
    holds the user's memory and the team its ``fields`` name, never the other team's or
    user's; ``save_context`` writes the user's namespace only."""
    import asyncio

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.integrations import MnemonMemory

    memory = MnemonMemory(
        store=store, namespace=ADA, read_graph=_graph(store), fields={"team_id": "blue"}
    )
    ask = {"input": "What is the garden shed roof plan?"}
    loaded = (
        memory.load_memory_variables(ask)
        if face == "sync"
        else asyncio.run(memory.aload_memory_variables(ask))
    )
    text = loaded["history"]
    assert _sources_of(text) == {"memory", "team"}
    assert "adaword" in text and "blueword" in text
    assert "blufword" not in text and "adbword" not in text
    before = _counts(store)
    memory.save_context({"input": "The roof is green."}, {"output": "Noted."})
    assert _counts(store) == {**before, ADA: before[ADA] + 1}
    alone = MnemonMemory(store=store, namespace=ADA, read_graph=_graph(store))
    assert _sources_of(alone.load_memory_variables(ask)["history"]) == {"memory"}
    with pytest.raises(ConfigurationError):
        MnemonMemory(store=store, namespace=ADA, fields={"namespace": "users/adb"})


def _graph_fixed(store: MnemonStore) -> Any:
    return create_read_graph(
        sources={"memory": store, "team": SharedNamespace(store, BLUE)},
        judge=ScriptedDecisionModel(answers=_yes),
    )


def test_capabilities_pass_only_where_the_source_offers_them(store: MnemonStore) -> None:
    from mnemon_langgraph.read.sources import BoundSource
    from mnemon_langgraph.types import JournalSource, TermStatsSource, VectorSource

    team = SharedNamespace(store, BLUE)
    assert isinstance(team, VectorSource) and isinstance(team, JournalSource)
    bound = BoundSource("team", team, BLUE, qualify=True)
    caps = bound.capabilities()
    assert isinstance(caps, VectorSource) and isinstance(caps, JournalSource)
    assert isinstance(caps, TermStatsSource) == isinstance(store, TermStatsSource)
    # the team's records come back qualified, from the team's namespace only
    (rec,) = caps.session_records(ADA, 1)
    assert rec.id.startswith("team:") and "blueword" in rec.text
    vectors = caps.stored_vectors(ADA, [rec.id])
    assert list(vectors) == [rec.id]

    class _Bare:
        def search(self, query: str, **kw: Any) -> list[Any]:
            return []

        async def asearch(self, query: str, **kw: Any) -> list[Any]:
            return []

    bare = BoundSource("docs", _Bare(), ADA, qualify=True).capabilities()
    assert not isinstance(bare, VectorSource | JournalSource | TermStatsSource)


def test_capability_flags_are_the_protocol_checks_per_source_object(store: MnemonStore) -> None:
    from mnemon_langgraph.read.sources.binding import capability_flags
    from mnemon_langgraph.types import JournalSource, TermStatsSource, VectorSource

    class _Bare:
        def search(self, query: str, **kw: Any) -> list[Any]:
            return []

    class _Slots:  # not weakly referable: checked on every call
        __slots__ = ()

        def search(self, query: str, **kw: Any) -> list[Any]:
            return []

        def query_vector(self, query: str) -> Any:
            return [0.0]

        def stored_vectors(self, namespace: Any, ids: Any) -> dict[str, Any]:
            return {}

    team = SharedNamespace(store, BLUE)
    for source in (store, team, _Bare(), _Slots(), store, team):
        expected = tuple(
            isinstance(source, p) for p in (VectorSource, TermStatsSource, JournalSource)
        )
        assert capability_flags(source) == expected
        assert capability_flags(source) == expected  # the kept answer
    assert capability_flags(_Slots())[0] and not any(capability_flags(_Bare()))
    # an object made where a dead one lived is checked again, not taken for it
    for _ in range(3):
        assert capability_flags(_Bare()) == (False, False, False)
        assert capability_flags(_Slots()) == (True, False, False)


def test_offered_is_the_protocol_checks_of_a_bound_sources_capabilities(
    store: MnemonStore,
) -> None:
    """``offered`` answers a capabilities object from its source's kept flags: the same as
    ``isinstance`` against each protocol, for every kind of source."""
    from mnemon_langgraph.read.sources import BoundSource
    from mnemon_langgraph.read.sources.binding import offered
    from mnemon_langgraph.types import JournalSource, TermStatsSource, VectorSource

    class _Bare:
        def search(self, query: str, **kw: Any) -> list[Any]:
            return []

        async def asearch(self, query: str, **kw: Any) -> list[Any]:
            return []

    team = SharedNamespace(store, BLUE)
    kinds = (VectorSource, TermStatsSource, JournalSource)
    for source in (store, team, _Bare(), store):
        caps = BoundSource("x", source, ADA, qualify=True).capabilities()
        assert offered(caps) == tuple(isinstance(caps, p) for p in kinds)
        assert offered(source) == tuple(isinstance(source, p) for p in kinds)
    assert offered(BoundSource("m", store, ADA).capabilities())[0]  # not all False
