"""Integration surfaces: subgraph nodes, create_agent middleware, per-user namespaces."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from pydantic import Field

from mnemon_langgraph.integrations import VIEW_MESSAGE_ID, add_memory, memory_nodes
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.judges.propositions import parse_question_id
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

ADA_FACT = "I moved to Lisbon last spring and I teach chemistry there."
BOB_FACT = "My dog Biscuit is a beagle who loves the Oslo fjords."


# --- fakes -------------------------------------------------------------------------------


class RecordingChatModel(BaseChatModel):
    """A chat model that records every input it receives and replies from a script."""

    replies: list[AIMessage] = Field(default_factory=list)
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls.append(list(messages))
        if self.replies:
            reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        else:
            reply = AIMessage(content=f"reply {len(self.calls)}")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingChatModel:  # type: ignore[override]
        return self


def _answers(qid: str, question: Any, state: Any) -> float:
    """Every record is relevant and current (a deterministic System 1 for these tests)."""
    return 0.1 if parse_question_id(qid).proposition == "stale" else 0.9


def judge() -> ScriptedDecisionModel:
    return ScriptedDecisionModel(answers=_answers)


def fill(store: MnemonStore, user: str, fact: str) -> None:
    store.ingest(
        ("users", user),
        [
            Message(
                text=fact,
                speaker=user.title(),
                role="user",
                id=f"{user}-1",
                session=1,
                timestamp=datetime(2024, 5, 1, 10, 0),
            ),
            Message(
                text="Noted, thanks for telling me.",
                speaker="assistant",
                role="assistant",
                id=f"{user}-2",
                session=1,
                timestamp=datetime(2024, 5, 1, 10, 1),
            ),
        ],
        origin="seed",
    )


@pytest.fixture
def store(tmp_path: Any) -> Any:
    s = MnemonStore(tmp_path / "journal.db", embeddings=DeterministicFakeEmbedding(size=32))
    fill(s, "ada", ADA_FACT)
    fill(s, "bob", BOB_FACT)
    yield s
    close = getattr(s, "close", None)
    if close:
        close()


@pytest.fixture
def read_graph(store: Any) -> Any:
    return create_read_graph(source=store, judge=judge())


def journal_texts(store: Any, user: str) -> str:
    return "\n".join(r.text for r in store.journal.records(("users", user)))


def model_node(model: RecordingChatModel) -> Any:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return call_model


def views_in(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if isinstance(m, SystemMessage) and m.id == VIEW_MESSAGE_ID]


# --- subgraph ----------------------------------------------------------------------------


def test_subgraph_view_reaches_model_and_turn_is_journaled(store: Any, read_graph: Any) -> None:
    model = RecordingChatModel()
    with_view, remember = memory_nodes(store, read_graph=read_graph)
    builder = StateGraph(MessagesState)
    builder.add_sequence([("model", with_view(model_node(model))), ("remember", remember)])
    builder.add_edge(START, "model")
    graph = builder.compile()

    question = HumanMessage("Which city did I move to?", id="ada-q1")
    out = graph.invoke({"messages": [question]}, {"configurable": {"user_id": "ada"}})

    (seen,) = model.calls
    assert isinstance(seen[0], SystemMessage) and seen[0].id == VIEW_MESSAGE_ID
    assert "Lisbon" in seen[0].text and "<memory_view>" in seen[0].text
    assert "Biscuit" not in seen[0].text  # another user's record never shows
    assert seen[-1].text == question.text
    assert views_in(out["messages"]) == []  # the View went to the model, not into state
    # the turn (question and reply) is in ada's journal, the View is not
    reply_id = out["messages"][-1].id
    known = store.journal.known_message_ids(("users", "ada"), ["ada-q1", reply_id])
    assert known == {"ada-q1", reply_id}
    assert "memory_view" not in journal_texts(store, "ada")
    assert store.journal.known_message_ids(("users", "bob"), ["ada-q1", reply_id]) == set()


QUESTIONS = ["Where do I live?", "What subject do I teach?", "And since when?", "Thanks!"]


def _checkpointed(graph: Any, config: dict[str, Any]) -> list[list[BaseMessage]]:
    """The ``messages`` of every checkpoint of the thread, oldest first."""
    history = list(graph.get_state_history(config))
    return [list(snap.values.get("messages", [])) for snap in reversed(history)]


def _assert_exact_conversation(
    graph: Any, config: dict[str, Any], model: RecordingChatModel, out: dict[str, Any]
) -> None:
    turns = len(QUESTIONS)
    # the state is exactly the conversation: each question, then its reply, nothing else
    assert [m.type for m in out["messages"]] == ["human", "ai"] * turns
    assert [m.text for m in out["messages"][::2]] == QUESTIONS
    # and no checkpoint of the thread ever held a View, or lost a message of an earlier turn
    snapshots = _checkpointed(graph, config)
    assert all(not views_in(messages) for messages in snapshots)
    assert all(not any("memory_view" in m.text for m in ms) for ms in snapshots)
    previous: list[str] = []
    for messages in snapshots:
        ids = [str(m.id) for m in messages]
        assert ids[: len(previous)] == previous  # only appended to, never rewritten
        previous = ids
    # each model call saw one View, first, then the conversation so far
    for n, call in enumerate(model.calls):
        assert len(views_in(call)) == 1 and call[0].text.count("<memory_view>\n") == 1
        assert [m.text for m in call[1:] if m.type == "human"] == QUESTIONS[: n + 1]


def test_node_surface_checkpoints_hold_exactly_the_conversation(
    store: Any, read_graph: Any
) -> None:
    model = RecordingChatModel()
    graph = add_memory(
        StateGraph(MessagesState).add_node("model", model_node(model)), store, read_graph=read_graph
    ).compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "t1", "user_id": "ada"}}
    for question in QUESTIONS:
        out = graph.invoke({"messages": [HumanMessage(question)]}, config)
    assert len(model.calls) == len(QUESTIONS)
    _assert_exact_conversation(graph, config, model, out)
    texts = journal_texts(store, "ada")
    assert all(texts.count(q) == 1 for q in QUESTIONS)  # each turn written once


def test_middleware_checkpoints_hold_exactly_the_conversation(store: Any, read_graph: Any) -> None:
    from langchain.agents import create_agent

    from mnemon_langgraph.integrations import MnemonMiddleware

    model = RecordingChatModel()
    agent = create_agent(
        model,
        middleware=[MnemonMiddleware(store, read_graph=read_graph)],
        checkpointer=InMemorySaver(),
    )
    config: dict[str, Any] = {"configurable": {"thread_id": "t2", "user_id": "ada"}}
    for question in QUESTIONS:
        out = agent.invoke({"messages": [HumanMessage(question)]}, config)
    assert len(model.calls) == len(QUESTIONS)
    _assert_exact_conversation(agent, config, model, out)


def test_node_wrapper_keeps_config_and_returned_lists_clean(store: Any, read_graph: Any) -> None:
    """A model node taking ``config`` and returning the whole list never stores the View."""
    model = RecordingChatModel()
    seen_configs: list[Any] = []

    def call_model(
        state: MessagesState, config: RunnableConfig, runtime: Runtime[UserContext]
    ) -> dict[str, Any]:
        # LangGraph's own injection of config and runtime still works inside the wrapper
        seen_configs.append((config["configurable"].get("thread_id"), runtime.context.user_id))
        return {"messages": [*state["messages"], model.invoke(state["messages"])]}

    graph = add_memory(
        StateGraph(MessagesState, context_schema=UserContext).add_node("model", call_model),
        store,
        read_graph=read_graph,
    ).compile()
    out = graph.invoke(
        {"messages": [HumanMessage("my city?")]},
        {"configurable": {"thread_id": "t3"}},
        context=UserContext(user_id="ada"),
    )
    assert seen_configs == [("t3", "ada")]
    assert "Lisbon" in model.calls[0][0].text  # namespace from the runtime context
    assert views_in(out["messages"]) == [] and [m.type for m in out["messages"]] == ["human", "ai"]


def test_add_memory_needs_the_model_node(store: Any, read_graph: Any) -> None:
    from mnemon_langgraph.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="no node 'model'"):
        add_memory(StateGraph(MessagesState), store, read_graph=read_graph)


def test_one_graph_serves_two_users(store: Any, read_graph: Any) -> None:
    model = RecordingChatModel()
    graph = add_memory(
        StateGraph(MessagesState).add_node("model", model_node(model)), store, read_graph=read_graph
    ).compile()
    graph.invoke(
        {"messages": [HumanMessage("Tell me about my pet", id="b1")]},
        {"configurable": {"user_id": "bob"}},
    )
    graph.invoke(
        {"messages": [HumanMessage("Tell me about my city", id="a1")]},
        {"configurable": {"user_id": "ada"}},
    )

    bob_view, ada_view = model.calls[0][0].text, model.calls[1][0].text
    assert "Biscuit" in bob_view and "Lisbon" not in bob_view
    assert "Lisbon" in ada_view and "Biscuit" not in ada_view
    assert store.journal.known_message_ids(("users", "bob"), ["b1", "a1"]) == {"b1"}
    assert store.journal.known_message_ids(("users", "ada"), ["b1", "a1"]) == {"a1"}


def test_subgraph_without_namespace_fails_clearly(store: Any, read_graph: Any) -> None:
    from mnemon_langgraph.errors import ConfigurationError

    model = RecordingChatModel()
    graph = add_memory(
        StateGraph(MessagesState).add_node("model", model_node(model)), store, read_graph=read_graph
    ).compile()
    with pytest.raises(ConfigurationError, match="namespace"):
        graph.invoke({"messages": [HumanMessage("hi")]})
    assert model.calls == []


def test_subgraph_async(store: Any, read_graph: Any) -> None:
    model = RecordingChatModel()
    graph = add_memory(
        StateGraph(MessagesState).add_node("model", model_node(model)),
        store,
        read_graph=read_graph,
        namespace=("users", "ada"),
    ).compile()
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("Where do I live?", id="aq")]}))
    assert "Lisbon" in model.calls[0][0].text
    assert store.journal.known_message_ids(("users", "ada"), ["aq", out["messages"][-1].id]) == {
        "aq",
        out["messages"][-1].id,
    }


def test_read_graph_itself_is_a_node(store: Any, read_graph: Any) -> None:
    """The compiled read graph drops straight into a parent whose state has a ``view`` key."""

    class State(MessagesState):
        view: Any

    builder = StateGraph(State)
    builder.add_node("read", read_graph)
    builder.add_edge(START, "read")
    builder.add_edge("read", END)
    out = builder.compile().invoke(
        {"messages": [HumanMessage("my city?")]}, {"configurable": {"user_id": "ada"}}
    )
    assert "Lisbon" in out["view"].text


# --- middleware --------------------------------------------------------------------------


@dataclass
class UserContext:
    user_id: str


class CountingGraph:
    """Wraps a compiled read graph and counts its runs."""

    def __init__(self, graph: Any) -> None:
        self.graph, self.runs = graph, 0

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.graph.invoke(*args, **kwargs)

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return await self.graph.ainvoke(*args, **kwargs)


def test_middleware_injects_view_without_persisting_it(store: Any, read_graph: Any) -> None:
    from langchain.agents import create_agent

    from mnemon_langgraph.integrations import MnemonMiddleware

    model = RecordingChatModel()
    agent = create_agent(
        model,
        tools=[],
        system_prompt="You are kind.",
        middleware=[MnemonMiddleware(store, read_graph=read_graph)],
        context_schema=UserContext,
    )
    out = agent.invoke(
        {"messages": [HumanMessage("Which city do I live in?", id="m1")]},
        context=UserContext(user_id="ada"),
    )

    (seen,) = model.calls
    assert isinstance(seen[0], SystemMessage)
    assert seen[0].text.startswith("You are kind.") and "Lisbon" in seen[0].text
    assert "Biscuit" not in seen[0].text
    assert not any("memory_view" in m.text for m in out["messages"])  # not in state
    reply = out["messages"][-1]
    assert store.journal.known_message_ids(("users", "ada"), ["m1", reply.id]) == {"m1", reply.id}


def test_middleware_view_once_per_turn_in_tool_loop(store: Any, read_graph: Any) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from mnemon_langgraph.integrations import MnemonMiddleware

    @tool
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"forecast for {city}: 24C"

    model = RecordingChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "lookup", "args": {"city": "Lisbon"}, "id": "c1"}]),
            AIMessage("It is sunny in Lisbon."),
        ]
    )
    counting = CountingGraph(read_graph)
    agent = create_agent(
        model,
        tools=[lookup],
        middleware=[MnemonMiddleware(store, read_graph=counting)],
        context_schema=UserContext,
    )
    out = agent.invoke(
        {"messages": [HumanMessage("Weather where I live?")]}, context=UserContext(user_id="ada")
    )
    assert len(model.calls) == 2 and counting.runs == 1
    assert all("Lisbon" in call[0].text for call in model.calls)
    assert out["messages"][-1].text == "It is sunny in Lisbon."
    assert "It is sunny in Lisbon." in journal_texts(store, "ada")
    assert "24C" not in journal_texts(store, "ada")  # the tool result is not journaled


def test_middleware_async_and_config_namespace(store: Any, read_graph: Any) -> None:
    from langchain.agents import create_agent

    from mnemon_langgraph.integrations import MnemonMiddleware

    model = RecordingChatModel()
    agent = create_agent(model, middleware=[MnemonMiddleware(store, read_graph=read_graph)])
    out = asyncio.run(
        agent.ainvoke(
            {"messages": [HumanMessage("my pet?", id="q")]}, {"configurable": {"user_id": "bob"}}
        )
    )
    assert "Biscuit" in model.calls[0][0].text
    assert store.journal.known_message_ids(("users", "bob"), ["q", out["messages"][-1].id]) == {
        "q",
        out["messages"][-1].id,
    }


def test_remembered_turns_are_dated_and_continue_the_session(store: Any) -> None:
    from mnemon_langgraph.integrations._common import new_messages

    turn = [HumanMessage("hello again", id="n1"), AIMessage("hi", id="n2")]
    soon = new_messages(store, ("users", "ada"), turn, now=datetime(2024, 5, 1, 11, 0))
    assert [(m.id, m.session, m.timestamp) for m in soon] == [
        ("n1", 1, datetime(2024, 5, 1, 11, 0)),
        ("n2", 1, datetime(2024, 5, 1, 11, 0)),
    ]
    later = new_messages(store, ("users", "ada"), turn, now=datetime(2024, 6, 1, 9, 0))
    assert {m.session for m in later} == {2}  # more than 4 hours after the last record
    # messages already in the journal and the View message are never returned
    assert new_messages(store, ("users", "ada"), [HumanMessage("x", id="ada-1")]) == []
    view = SystemMessage("<memory_view>…</memory_view>", id=VIEW_MESSAGE_ID)
    assert new_messages(store, ("users", "ada"), [view]) == []
