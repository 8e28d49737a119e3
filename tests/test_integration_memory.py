"""Classic memory class and chat message history over the journal."""

from __future__ import annotations

import asyncio
import importlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.judges.propositions import parse_question_id
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.store import MnemonStore


def _answers(qid: str, question: Any, state: Any) -> float:
    return 0.1 if parse_question_id(qid).proposition == "stale" else 0.9


@pytest.fixture
def store(tmp_path: Any) -> Iterator[Any]:
    s = MnemonStore(tmp_path / "journal.db", embeddings=DeterministicFakeEmbedding(size=32))
    yield s
    close = getattr(s, "close", None)
    if close:
        close()


@pytest.fixture
def read_graph(store: Any) -> Any:
    return create_read_graph(source=store, judge=ScriptedDecisionModel(answers=_answers))


def _memory_module() -> Any:
    return importlib.import_module("mnemon_langgraph.integrations.memory")


# --- MnemonMemory ------------------------------------------------------------------------


def test_memory_round_trip_and_audited_clear(store: Any, read_graph: Any) -> None:
    from langchain_classic.base_memory import BaseMemory

    from mnemon_langgraph.integrations import MnemonMemory

    memory = MnemonMemory(store=store, namespace="ada", read_graph=read_graph)
    assert isinstance(memory, BaseMemory)
    assert memory.memory_variables == ["history"]

    memory.save_context({"input": "I moved to Lisbon in May."}, {"output": "Lovely city!"})
    loaded = memory.load_memory_variables({"input": "Where do I live now?"})
    assert set(loaded) == {"history"}
    assert "Lisbon" in loaded["history"] and "Lovely city!" in loaded["history"]
    assert store.journal.count(("ada",)) >= 1

    memory.clear()
    assert store.journal.count(("ada",)) == 0
    (entry,) = [e for e in store.journal.audit_log(("ada",)) if e.action == "erase_namespace"]
    assert entry.actor == "MnemonMemory.clear" and entry.count >= 1
    assert "Lisbon" not in memory.load_memory_variables({"input": "Where?"})["history"]


def test_memory_async_forms_and_messages(store: Any, read_graph: Any) -> None:
    from mnemon_langgraph.integrations import MnemonMemory

    memory = MnemonMemory(
        store=store,
        namespace=("users", "bob"),
        read_graph=read_graph,
        return_messages=True,
        input_key="question",
        output_key="answer",
    )

    async def go() -> dict[str, Any]:
        await memory.asave_context(
            {"question": "My dog is Biscuit.", "lang": "en"}, {"answer": "Cute name."}
        )
        loaded = await memory.aload_memory_variables({"question": "my dog?", "lang": "en"})
        await memory.aclear()
        return loaded

    loaded = asyncio.run(go())
    (message,) = loaded["history"]
    assert isinstance(message, SystemMessage) and "Biscuit" in message.text
    assert store.journal.count(("users", "bob")) == 0
    assert [e.action for e in store.journal.audit_log(("users", "bob"))] == ["erase_namespace"]


def test_memory_needs_an_input_key_when_ambiguous(store: Any, read_graph: Any) -> None:
    from mnemon_langgraph.errors import InputError
    from mnemon_langgraph.integrations import MnemonMemory

    memory = MnemonMemory(store=store, namespace="ada", read_graph=read_graph)
    with pytest.raises(InputError, match="input_key"):
        memory.save_context({"a": "x", "b": "y"}, {"output": "z"})
    assert store.journal.count(("ada",)) == 0


@pytest.fixture
def without_classic(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Reload the memory module as if langchain-classic were not installed."""
    monkeypatch.setitem(sys.modules, "langchain_classic.base_memory", None)
    module = importlib.reload(_memory_module())
    yield module
    monkeypatch.undo()
    importlib.reload(_memory_module())


def test_memory_keeps_its_shape_without_classic(
    without_classic: Any, store: Any, read_graph: Any
) -> None:
    module = without_classic
    assert module.CLASSIC_AVAILABLE is False
    memory = module.MnemonMemory(store=store, namespace="cy", read_graph=read_graph)
    assert isinstance(memory, module.FallbackBaseMemory)
    assert "langchain_classic" not in type(memory).__mro__[1].__module__
    for name in (
        "memory_variables",
        "load_memory_variables",
        "save_context",
        "clear",
        "aload_memory_variables",
        "asave_context",
        "aclear",
    ):
        assert hasattr(memory, name), name

    memory.save_context({"input": "I play the oboe."}, {"output": "Nice."})
    assert "oboe" in memory.load_memory_variables({"input": "instrument?"})["history"]
    asyncio.run(memory.aclear())
    assert store.journal.count(("cy",)) == 0
    assert [e.action for e in store.journal.audit_log(("cy",))] == ["erase_namespace"]


def test_memory_uses_classic_when_present() -> None:
    module = _memory_module()
    from langchain_classic.base_memory import BaseMemory

    assert module.CLASSIC_AVAILABLE is True
    assert issubclass(module.MnemonMemory, BaseMemory)


# --- MnemonChatMessageHistory ------------------------------------------------------------


def test_history_round_trip_in_order_and_audited_clear(store: Any) -> None:
    from mnemon_langgraph.integrations import MnemonChatMessageHistory

    history = MnemonChatMessageHistory(store, "session-1")
    long_text = "word " * 300  # split over several records, rejoined on the way back
    history.add_messages([HumanMessage("hello there"), AIMessage("hi! how can I help?")])
    history.add_messages([HumanMessage(long_text.strip()), AIMessage("ok")])

    got = history.messages
    assert [m.type for m in got] == ["human", "ai", "human", "ai"]
    assert [m.text for m in got] == ["hello there", "hi! how can I help?", long_text.strip(), "ok"]
    assert MnemonChatMessageHistory(store, "session-2").messages == []

    history.clear()
    assert history.messages == []
    assert [e.action for e in store.journal.audit_log(("session-1",))] == ["erase_namespace"]


def test_history_async(store: Any) -> None:
    from mnemon_langgraph.integrations import MnemonChatMessageHistory

    history = MnemonChatMessageHistory(store, "s")

    async def go() -> list[Any]:
        await history.aadd_messages([HumanMessage("one"), AIMessage("two")])
        got = await history.aget_messages()
        await history.aclear()
        return got

    assert [m.text for m in asyncio.run(go())] == ["one", "two"]
    assert history.messages == []


def test_history_with_runnable_with_message_history(store: Any) -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from mnemon_langgraph.integrations import MnemonChatMessageHistory

    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    model = GenericFakeChatModel(messages=iter([AIMessage("first"), AIMessage("second")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: MnemonChatMessageHistory(store, session_id),
            input_messages_key="question",
            history_messages_key="history",
        )
    config = {"configurable": {"session_id": "u1"}}
    chain.invoke({"question": "I like tea"}, config)
    chain.invoke({"question": "What do I like?"}, config)
    texts = [m.text for m in MnemonChatMessageHistory(store, "u1").messages]
    assert texts == ["I like tea", "first", "What do I like?", "second"]


def test_history_keeps_ids_and_names(store: Any) -> None:
    from mnemon_langgraph.integrations import MnemonChatMessageHistory

    history = MnemonChatMessageHistory(store, "named")
    history.add_messages([HumanMessage("hi", id="h1", name="Ada"), AIMessage("hello", id="a1")])
    got = history.messages
    assert [(m.id, m.name) for m in got] == [("h1", "Ada"), ("a1", None)]
    history.add_messages([HumanMessage("hi", id="h1", name="Ada")])  # same id: not written twice
    assert [m.id for m in history.messages] == ["h1", "a1"]


def test_history_docstring_quotes_the_installed_deprecation() -> None:
    from langchain_core.chat_history import BaseChatMessageHistory

    from mnemon_langgraph.integrations import MnemonChatMessageHistory

    base_doc = BaseChatMessageHistory.__doc__ or ""
    ours = " ".join((MnemonChatMessageHistory.__doc__ or "").split())
    assert 'deprecated "1.6.4' in base_doc and "langchain-core==2.0.0" in base_doc
    assert "deprecated since 1.6.4" in ours and "2.0.0" in ours
    assert "https://docs.langchain.com/oss/python/langchain/short-term-memory" in ours


def test_memory_needs_an_explicit_namespace(store: Any) -> None:
    # One memory object per user: no silent shared default that would mix users' records.
    from mnemon_langgraph.errors import NamespaceError
    from mnemon_langgraph.integrations import MnemonMemory

    with pytest.raises(NamespaceError, match="namespace is required"):
        MnemonMemory(store=store)
