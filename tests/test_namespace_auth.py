"""On an authenticated LangGraph server the authenticated identity decides whose memory.

No server here: the configs are built as langgraph-api 0.16 builds a run's config
(``langgraph_api.models.run``): a run's ``context`` is copied into ``configurable``, then the
server sets ``langgraph_auth_user`` / ``langgraph_auth_user_id`` from the login (a client's
own copies of those keys are stripped before). tests/test_langgraph_auth_dev.py drives the
same rule through a real ``langgraph dev``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage
from langgraph.graph import MessagesState, StateGraph

from mnemon_langgraph import MnemonStore, add_memory, create_read_graph
from mnemon_langgraph.errors import ConfigurationError, NamespaceAccessError
from mnemon_langgraph.integrations._common import namespace_from
from mnemon_langgraph.read.namespaces import (
    auth_identity,
    granted_namespace,
    resolve_namespace,
    run_actor,
)
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.types import Message


class ServerUser:
    """Stands in for the server's ``ProxyUser``: ``identity`` plus the handler's fields."""

    def __init__(self, identity: str, **fields: Any) -> None:
        self.identity = identity
        self._fields = {"identity": identity, **fields}

    def get(self, key: str, default: Any = None) -> Any:
        return self._fields.get(key, default)


def server_config(
    user: str | None,
    *,
    context: dict[str, Any] | None = None,
    configurable: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A run's config as the server builds it (see the module docstring)."""
    conf = dict(configurable or {})
    if context:
        conf = {**context, "__context_provided__": True}
    conf.setdefault("user_id", "")
    if user is not None:
        conf["langgraph_auth_user"] = ServerUser(user, **fields)
        conf["langgraph_auth_user_id"] = user
        conf["langgraph_auth_permissions"] = []
    conf["langgraph_request_id"] = "req-1"
    return {"configurable": conf}


@dataclass
class Ctx:
    user_id: Any = None
    namespace: Any = None
    org_id: Any = None


# each: (context, configurable) a client of bob's could send, naming ada
ADA_CLAIMS: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = [
    ({"user_id": "ada"}, None),
    (None, {"user_id": "ada"}),
    ({"namespace": ["users", "ada"]}, None),
    (None, {"namespace": ["users", "ada"]}),
    ({"namespace": ["ada"]}, None),
    (None, {"namespace": ["ada"]}),
    ({"namespace": "users/ada"}, None),
    (None, {"namespace": "ada"}),
    ({"user_id": "bob", "namespace": ["users", "ada"]}, None),
    ({"user_id": "ada", "namespace": ["users", "bob"]}, None),
]


@pytest.mark.parametrize(("context", "configurable"), ADA_CLAIMS)
def test_a_claim_of_another_user_is_refused(
    context: dict[str, Any] | None, configurable: dict[str, Any] | None
) -> None:
    config = server_config("bob", context=context, configurable=configurable)
    with pytest.raises(NamespaceAccessError, match="authenticated this run as 'bob'"):
        resolve_namespace(context, config)
    with pytest.raises(NamespaceAccessError):
        namespace_from(context=context, config=config, default=("users", "{user_id}"))
    with pytest.raises(NamespaceAccessError):  # a default namespace changes nothing
        namespace_from(context=context, config=config, default="ada")


def test_the_identity_decides_and_no_default_is_used() -> None:
    config = server_config("bob")
    assert resolve_namespace(None, config) == ("users", "bob")
    assert resolve_namespace(None, config, default="ada") == ("users", "bob")
    assert resolve_namespace(None, config, default=("users", "ada")) == ("users", "bob")
    # naming oneself is fine, in any place and spelling the rule knows
    for context in ({"user_id": "bob"}, {"namespace": ["users", "bob"]}, Ctx(user_id="bob")):
        assert resolve_namespace(context, server_config("bob")) == ("users", "bob")
    # the server's "" for an unset user_id is no claim
    assert resolve_namespace({"user_id": ""}, config) == ("users", "bob")


def test_without_auth_the_run_names_its_user_as_before() -> None:
    config = server_config(None, context={"user_id": "ada"})
    assert auth_identity(config) is None
    assert resolve_namespace({"user_id": "ada"}, config) == ("users", "ada")
    assert resolve_namespace(None, {"configurable": {"namespace": ["teams", "x"]}}) == (
        "teams",
        "x",
    )
    assert resolve_namespace(None, None, default="shared") == ("shared",)
    with pytest.raises(ConfigurationError):
        resolve_namespace(None, server_config(None))


def test_templates_take_the_authenticated_users_fields() -> None:
    template = ("orgs", "{org_id}", "users", "{user_id}")
    config = server_config("bob", org_id="acme")
    assert namespace_from(config=config, default=template) == ("orgs", "acme", "users", "bob")
    # the client's own org_id, when the auth user has one, is refused if different
    claimed = server_config("bob", context={"org_id": "rival"}, org_id="acme")
    with pytest.raises(NamespaceAccessError, match="org_id='rival'"):
        namespace_from(context={"org_id": "rival"}, config=claimed, default=template)
    same = server_config("bob", context={"org_id": "acme"}, org_id="acme")
    assert namespace_from(context=Ctx(org_id="acme"), config=same, default=template) == (
        "orgs",
        "acme",
        "users",
        "bob",
    )
    # a field the auth handler does not return is never taken from the client
    missing = server_config("bob", context={"org_id": "acme"})
    with pytest.raises(ConfigurationError, match="auth handler must return it"):
        namespace_from(context={"org_id": "acme"}, config=missing, default=template)


def test_a_granted_namespace_is_accepted_only_within_its_block() -> None:
    granted = ("orgs", "acme", "users", "bob")
    config = server_config("bob", configurable={"namespace": list(granted)})
    with granted_namespace(granted):
        assert resolve_namespace(ReadContext(namespace=granted), config) == granted
    with pytest.raises(NamespaceAccessError):
        resolve_namespace(ReadContext(namespace=granted), config)


def test_audit_actor_names_the_authenticated_user() -> None:
    assert run_actor("tool:forget", server_config("bob")) == "auth:bob via tool:forget"
    assert run_actor("tool:forget", server_config(None)) == "tool:forget"
    assert run_actor("api") == "api"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MnemonStore(tmp_path / "m.db", embeddings=DeterministicFakeEmbedding(size=32))
    for ns, fact in (
        (("users", "ada"), "My secret word is heliotrope."),
        (("users", "bob"), "My secret word is marigold."),
        (("orgs", "acme", "users", "bob"), "At acme my badge number is 5150."),
    ):
        s.ingest(
            ns, [Message(fact, "u", id=f"{ns[-1]}-1", timestamp=datetime(2024, 1, 2))], origin="t"
        )
    yield s
    s.close()


def _view(graph: Any, config: dict[str, Any], context: Any = None) -> str:
    out = graph.invoke(
        {"messages": [HumanMessage("What is my secret word?")]}, config, context=context
    )
    return str(out["view"].text)


def test_the_read_graph_obeys_the_identity(store: Any) -> None:
    graph = create_read_graph(source=store)
    assert "heliotrope" in _view(graph, server_config("ada"))
    bob = _view(graph, server_config("bob"))
    assert "marigold" in bob and "heliotrope" not in bob
    for context, configurable in ADA_CLAIMS:
        with pytest.raises(NamespaceAccessError):
            _view(graph, server_config("bob", context=context, configurable=configurable), context)


def test_a_surface_with_a_template_runs_its_nested_read_graph(store: Any) -> None:
    """add_memory resolves ("orgs", org, "users", id) and the nested read graph accepts it."""
    seen: list[str] = []

    def model(state: MessagesState) -> dict[str, Any]:
        seen.append(state["messages"][0].text)
        return {"messages": [("ai", "ok")]}

    template = ("orgs", "{org_id}", "users", "{user_id}")
    builder = StateGraph(MessagesState).add_node("model", model)
    graph = add_memory(builder, store, namespace=template).compile()
    turn = {"messages": [HumanMessage("What is my badge number?")]}
    graph.invoke(turn, server_config("bob", org_id="acme"))
    assert "5150" in seen[-1] and "heliotrope" not in seen[-1]
    asyncio.run(graph.ainvoke(turn, server_config("bob", org_id="acme")))  # the async face
    assert len(seen) == 2 and "5150" in seen[-1]
    with pytest.raises(NamespaceAccessError):
        graph.invoke(turn, server_config("bob", context={"user_id": "ada"}, org_id="acme"))
    assert len(seen) == 2


def test_audit_rows_of_an_authenticated_run_name_the_user(store: Any) -> None:
    """forget, an item delete and an erase made in bob's run record bob as the actor."""
    from typing_extensions import TypedDict

    from mnemon_langgraph import MnemonBaseStore
    from mnemon_langgraph.integrations.actions import forget_record

    class State(TypedDict, total=False):
        done: bool

    bob = ("users", "bob")
    (record,) = store.get_records(bob, [r.id for r in store.journal.records(bob)])
    items = MnemonBaseStore(store)
    items.put(bob, "k1", {"text": "tea"})

    def act(state: State) -> State:
        forget_record(store, bob, record.id, actor="tool:forget")
        items.delete(bob, "k1")
        items.erase_namespace(bob)
        return {"done": True}

    graph = StateGraph(State).add_node("act", act)
    graph.set_entry_point("act")
    graph.compile().invoke({}, server_config("bob"))
    actors = [a.actor for a in store.audit_log(bob)]
    assert actors == ["auth:bob via tool:forget", "auth:bob via api"]
    item_actors = [a.actor for a in items.audit_log(bob)]
    assert item_actors == ["auth:bob via basestore", "auth:bob via api"]
    items.close()


def test_consolidation_takes_the_user_as_the_other_graphs_do(tmp_path: Path) -> None:
    """context={"user_id": "ada"} once raised a bare KeyError: 'namespace' (issue 43 §3)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from _consolidation_fakes import deriving_model, fake_embeddings, make_journal, make_messages

    from mnemon_langgraph.consolidation import EmbeddedItemStore, create_consolidation_graph

    ada, bob = ("users", "ada"), ("users", "bob")
    journal = make_journal(tmp_path / "c.db", ada, make_messages(8))
    items = EmbeddedItemStore(journal, fake_embeddings())
    graph = create_consolidation_graph(model=deriving_model(), store=items)
    out = graph.invoke({}, context={"user_id": "ada"})
    assert out["report"].namespace == ada and out["report"].items_added > 0
    # on an authenticated server: bob's run consolidates bob, and naming ada is refused
    assert graph.invoke({}, server_config("bob"))["report"].namespace == bob
    for state, context in (({"namespace": list(ada)}, None), ({}, {"user_id": "ada"})):
        config = server_config("bob", context=context)
        with pytest.raises(NamespaceAccessError):
            graph.invoke(state, config, context=context)
    assert items.watermark(bob) == 0
    items.close()
    journal.close()
