"""Memory as tools in a real ``create_agent``, namespace templates, and the one date rule."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import MessagesState, StateGraph

from mnemon_langgraph import MnemonMemory, MnemonMiddleware, add_memory, create_memory_tools
from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.integrations import fill_namespace, namespace_from
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.judges.propositions import parse_question_id
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

ADA = ("memories", "ada")
BOB = ("memories", "bob")


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools (it replies from its script either way)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:  # type: ignore[override]
        return self


@dataclass
class Customer:
    customer_id: str


def _judge() -> ScriptedDecisionModel:
    return ScriptedDecisionModel(
        answers=lambda qid, q, s: 0.1 if parse_question_id(qid).proposition == "stale" else 0.9
    )


@pytest.fixture
def store(tmp_path: Any) -> Any:
    s = MnemonStore(tmp_path / "j.db", embeddings=DeterministicFakeEmbedding(size=32))
    for ns, text in ((ADA, "I moved to Lisbon last spring."), (BOB, "My dog Biscuit is a beagle.")):
        s.ingest(
            ns,
            [Message(text, ns[1], id=f"{ns[1]}-1", timestamp=datetime(2024, 5, 1))],
            origin="seed",
        )
    yield s
    s.close()


def _call(name: str, args: dict[str, Any], call_id: str = "c1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _agent(store: MnemonStore, replies: list[AIMessage], **kwargs: Any) -> Any:
    model = ToolCallingFake(messages=iter(replies))
    tools = create_memory_tools(store, namespace=("memories", "{customer_id}"), **kwargs)
    return create_agent(model, tools=tools, context_schema=Customer)


def _tool_results(out: dict[str, Any]) -> list[str]:
    return [m.text for m in out["messages"] if isinstance(m, ToolMessage)]


def test_search_memory_tool_reads_only_the_runs_customer(store: MnemonStore) -> None:
    agent = _agent(store, [_call("search_memory", {"query": "which city"}), AIMessage("Lisbon.")])
    out = agent.invoke({"messages": [("user", "Where do I live?")]}, context=Customer("ada"))
    (result,) = _tool_results(out)
    (ada_record,) = list(store.records(ADA))
    assert "Lisbon" in result and f'id="{ada_record.id[:10]}"' in result
    assert "Biscuit" not in result  # bob's record is in another namespace
    assert out["messages"][-1].text == "Lisbon."


def test_remember_and_forget_tools_write_and_delete_with_audit(store: MnemonStore) -> None:
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=5)
    agent = _agent(store, [_call("remember", {"fact": "Ada's tea is sencha."}), AIMessage("Ok")])
    out = agent.invoke({"messages": [("user", "Remember my tea: sencha")]}, context=Customer("ada"))
    assert _tool_results(out)[0].startswith("Remembered")
    note = [r for r in list(store.records(ADA)) if "sencha" in r.text]
    assert len(note) == 1 and note[0].date is not None and note[0].date >= before
    assert not any("sencha" in r.text for r in list(store.records(BOB)))

    record_id = note[0].id
    agent = _agent(store, [_call("forget", {"record_id": record_id}), AIMessage("Forgotten")])
    out = agent.invoke({"messages": [("user", "Forget my tea")]}, context=Customer("ada"))
    assert "Forgot record" in _tool_results(out)[0]
    assert not any("sencha" in r.text for r in list(store.records(ADA)))
    (entry,) = store.journal.audit_log(ADA)
    assert entry.actor == "tool:forget" and entry.record_ids == (record_id,)


def test_forget_cannot_reach_another_users_record(store: MnemonStore) -> None:
    (bob_record,) = list(store.records(BOB))
    agent = _agent(store, [_call("forget", {"record_id": bob_record.id}), AIMessage("Sorry")])
    out = agent.invoke({"messages": [("user", "Forget that")]}, context=Customer("ada"))
    assert "nothing was deleted" in _tool_results(out)[0]
    assert [r.id for r in list(store.records(BOB))] == [bob_record.id]
    assert store.journal.audit_log(BOB) == []


def test_forget_takes_the_id_as_the_memory_shows_it(store: MnemonStore) -> None:
    """search_memory shows ids shortened (view.SHORT_ID_CHARS); forget finds the record."""
    (record,) = list(store.records(ADA))
    agent = _agent(store, [_call("search_memory", {"query": "Lisbon"}), AIMessage("Found")])
    out = agent.invoke({"messages": [("user", "Where do I live?")]}, context=Customer("ada"))
    shown = re.findall(r'<record id="([^"]+)"', _tool_results(out)[0])
    assert shown == [record.id[:10]]
    agent = _agent(store, [_call("forget", {"record_id": shown[0]}), AIMessage("Forgotten")])
    out = agent.invoke({"messages": [("user", "Forget that")]}, context=Customer("ada"))
    assert "Forgot record" in _tool_results(out)[0]
    assert list(store.records(ADA)) == []
    (entry,) = store.journal.audit_log(ADA)
    assert entry.record_ids == (record.id,)  # the audit names the whole id


@pytest.mark.parametrize("ref", ["r-", "r", "", "%", "r-%", "x" * 500, "r-\udc80"])
def test_forget_deletes_nothing_on_a_short_ambiguous_or_odd_id(
    store: MnemonStore, ref: str
) -> None:
    store.ingest(ADA, [Message("My bike is red.", "user", id="m-bike")], origin="chat")
    before = [r.id for r in list(store.records(ADA))]
    assert len(before) == 2
    agent = _agent(store, [_call("forget", {"record_id": ref}), AIMessage("Sorry")])
    out = agent.invoke({"messages": [("user", "Forget it")]}, context=Customer("ada"))
    assert "nothing was deleted" in _tool_results(out)[0]
    assert [r.id for r in list(store.records(ADA))] == before
    assert store.journal.audit_log(ADA) == []


def test_forget_refuses_a_blocks_list_of_ids(store: MnemonStore) -> None:
    """A View block of consecutive records names all their ids; forget takes one."""
    store.ingest(ADA, [Message("My bike is red.", "user", id="m-bike")], origin="chat")
    ids = [r.id for r in list(store.records(ADA))]
    both = " ".join(i[:10] for i in ids)
    agent = _agent(store, [_call("forget", {"record_id": both}), AIMessage("Which one?")])
    out = agent.invoke({"messages": [("user", "Forget it")]}, context=Customer("ada"))
    assert "names several records; nothing was deleted" in _tool_results(out)[0]
    assert [r.id for r in list(store.records(ADA))] == ids


def test_forget_by_shown_id_cannot_reach_another_user(store: MnemonStore) -> None:
    (bob_record,) = list(store.records(BOB))
    agent = _agent(store, [_call("forget", {"record_id": bob_record.id[:10]}), AIMessage("No")])
    out = agent.invoke({"messages": [("user", "Forget that")]}, context=Customer("ada"))
    assert "nothing was deleted" in _tool_results(out)[0]
    assert [r.id for r in list(store.records(BOB))] == [bob_record.id]


def test_view_search_async_and_include(store: MnemonStore) -> None:
    graph = create_read_graph(source=store, judge=_judge())
    replies = [_call("search_memory", {"query": "Where do I live?"}), AIMessage("Lisbon")]
    agent = _agent(store, replies, search="view", read_graph=graph, include=["search_memory"])
    out = asyncio.run(
        agent.ainvoke({"messages": [("user", "Where do I live?")]}, context=Customer("ada"))
    )
    (result,) = _tool_results(out)
    assert "<memory_view>" in result and "Lisbon" in result and "Biscuit" not in result
    names = [t.name for t in create_memory_tools(store, include=["search_memory", "forget"])]
    assert names == ["search_memory", "forget"]
    with pytest.raises(ConfigurationError, match="unknown tool"):
        create_memory_tools(store, include=["recall"])  # type: ignore[list-item]


def test_tool_without_the_template_field_fails_clearly(store: MnemonStore) -> None:
    agent = create_agent(
        ToolCallingFake(messages=iter([_call("search_memory", {"query": "x"})])),
        tools=create_memory_tools(store, namespace=("memories", "{customer_id}")),
    )
    with pytest.raises(ConfigurationError) as caught:
        agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"user_id": "ada"}})
    message = str(caught.value)
    assert "'customer_id'" in message and "context" in message and "configurable" in message
    assert "'user_id'" in message  # the keys it did find


# --- namespace templates: one rule for every surface -------------------------------------------


def test_fill_namespace_from_context_or_configurable() -> None:
    template = ("memories", "{customer_id}")
    assert fill_namespace(template, context=Customer("c-7")) == ("memories", "c-7")
    config = {"configurable": {"customer_id": "c-8", "org": "acme"}}
    assert fill_namespace(template, config=config) == ("memories", "c-8")
    assert fill_namespace(("{org}", "u-{customer_id}"), config=config) == ("acme", "u-c-8")
    # the context wins over configurable; an empty value (server without auth) counts as absent
    assert namespace_from(context=Customer("c-1"), config=config, default=template) == (
        "memories",
        "c-1",
    )
    with pytest.raises(ConfigurationError, match="customer_id"):
        fill_namespace(template, config={"configurable": {"customer_id": ""}})
    with pytest.raises(ConfigurationError, match="plain field name"):
        fill_namespace(("{0}",))


def test_middleware_and_nodes_use_the_template(store: MnemonStore) -> None:
    graph = create_read_graph(source=store, judge=_judge())
    template = ("memories", "{customer_id}")
    config = {"configurable": {"customer_id": "ada"}}

    seen: list[str] = []
    model = ToolCallingFake(messages=iter(["Noted", "Noted again"]))
    agent = create_agent(
        model, middleware=[MnemonMiddleware(store, read_graph=graph, namespace=template)]
    )
    agent.invoke({"messages": [HumanMessage("I like oboes.", id="m1")]}, config)

    def call_model(state: MessagesState) -> dict[str, Any]:
        seen.append(state["messages"][0].text)
        return {"messages": [AIMessage("ok")]}

    nodes = add_memory(
        StateGraph(MessagesState).add_node("model", call_model),
        store,
        read_graph=graph,
        namespace=template,
    ).compile()
    nodes.invoke({"messages": [HumanMessage("Where do I live?", id="m2")]}, config)
    assert "Lisbon" in seen[0] and "Biscuit" not in seen[0]
    assert store.journal.known_message_ids(ADA, ["m1", "m2"]) == {"m1", "m2"}


# --- one date rule ------------------------------------------------------------------------------


def test_every_surface_dates_records_when_written(store: MnemonStore) -> None:
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=5)
    graph = create_read_graph(source=store, judge=_judge())
    memory = MnemonMemory(store=store, namespace=("memories", "cy"), read_graph=graph)
    memory.save_context({"input": "I play the oboe."}, {"output": "Lovely!"})
    nodes = add_memory(
        StateGraph(MessagesState).add_node("model", lambda s: {"messages": [AIMessage("ok")]}),
        store,
        read_graph=graph,
    ).compile()
    nodes.invoke({"messages": [("user", "hello")]}, {"configurable": {"namespace": "dee"}})
    for ns in (("memories", "cy"), ("dee",)):
        records = list(store.records(ns))
        assert records and all(r.date is not None and r.date >= before for r in records), ns
    # a message that carries its own time keeps it
    own = HumanMessage("Back in 2020.", id="old", additional_kwargs={"timestamp": "2020-02-03"})
    nodes.invoke({"messages": [own]}, {"configurable": {"namespace": "eve"}})
    assert [r.date for r in list(store.records(("eve",))) if "2020" in r.text] == [
        datetime(2020, 2, 3)
    ]


# --- the plain per-user API on MnemonStore ------------------------------------------------------


def test_per_user_api_add_search_list_delete_export(store: MnemonStore) -> None:
    result = store.add_messages(
        "zoe",
        [
            ("user", "I started learning the cello in March."),
            {"role": "assistant", "content": "How is it going?"},
            HumanMessage("Slowly, but I love it."),
        ],
    )
    assert result.messages_written == 3
    records = list(store.records("zoe"))
    assert records and all(r.date is not None for r in records)
    assert "cello" in store.search("cello lessons", namespace="zoe", k=3)[0].record.text
    assert list(store.records("zoe", limit=1)) == records[:1]

    # deletion is scoped to the user: another user's id is not deleted
    (bob_record,) = list(store.records(BOB))
    assert store.delete_records("zoe", [bob_record.id]) == []
    assert store.delete_records("zoe", [records[0].id], reason="user request") == [records[0].id]
    assert records[0].id not in {r.id for r in list(store.records("zoe"))}

    exported = json.loads(store.export("zoe"))
    assert exported["namespace"] == ["zoe"]
    assert {r["id"] for r in exported["records"]} == {r.id for r in list(store.records("zoe"))}
    assert [a["action"] for a in exported["audit"]] == ["delete_records"]
    assert exported["audit"][0]["record_ids"] == [records[0].id]
    assert json.loads(store.export("nobody")) == {
        "namespace": ["nobody"],
        "records": [],
        "audit": [],
        "items": [],
    }


def test_per_user_api_bad_input(store: MnemonStore) -> None:
    with pytest.raises(InputError):
        store.add_messages("zoe", [{"role": "wizard", "content": "hi"}])
    assert store.delete_records("zoe", "r-1") == []  # one string is one id (none such)
    assert list(store.records("zoe")) == []  # nothing half-written
