"""Namespace templates are injective and only take str/int values (no two users share memory)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations._common import fill_namespace, namespace_from
from mnemon_langgraph.read.state import resolve_namespace


@dataclass
class Ctx:
    user_id: Any = None
    org: Any = None


class User:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name


@pytest.mark.parametrize(
    "template", [("{org}-{user_id}",), ("{org}{user_id}",), ("{org}/{user_id}",)]
)
def test_multi_field_parts_are_refused(template: tuple[str, ...]) -> None:
    for org, user in (("a", "b-c"), ("a-b", "c")):
        with pytest.raises(ConfigurationError, match="its own namespace part"):
            fill_namespace(template, context=Ctx(user_id=user, org=org))
        with pytest.raises(ConfigurationError, match="its own namespace part"):
            namespace_from(context=Ctx(user_id=user, org=org), default=template)


def test_one_field_per_part_fills_distinct_namespaces() -> None:
    template = ("org", "{org}", "user", "{user_id}")
    one = fill_namespace(template, context=Ctx(user_id="b-c", org="a"))
    two = fill_namespace(template, context=Ctx(user_id="c", org="a-b"))
    assert one == ("org", "a", "user", "b-c")
    assert two == ("org", "a-b", "user", "c")
    assert one != two


def test_plain_templates_still_fill() -> None:
    assert fill_namespace(("users", "{user_id}"), context=Ctx(user_id="ada")) == ("users", "ada")
    config = {"configurable": {"customer_id": "c-8"}}
    assert fill_namespace(("memories", "{customer_id}"), config=config) == ("memories", "c-8")
    assert fill_namespace(("users", "{user_id}"), context=Ctx(user_id=7)) == ("users", "7")
    assert fill_namespace(("users", "{user_id}"), config={"configurable": {"user_id": 7}}) == (
        "users",
        "7",
    )
    # the read graph's rule (no template): int user_id is fine, "ada" is ("users", "ada")
    assert resolve_namespace(Ctx(user_id=7), None) == ("users", "7")
    assert resolve_namespace({"user_id": "ada"}, None) == ("users", "ada")


BAD_VALUES = [User("Ada Lovelace"), object(), True, False, 1.5]


@pytest.mark.parametrize("value", BAD_VALUES, ids=lambda v: type(v).__name__)
def test_non_str_int_values_are_refused_in_templates(value: Any) -> None:
    with pytest.raises(ConfigurationError) as err:
        fill_namespace(("users", "{user_id}"), context=Ctx(user_id=value))
    assert "'user_id'" in str(err.value) and type(value).__name__ in str(err.value)
    with pytest.raises(ConfigurationError, match=type(value).__name__):
        fill_namespace(("users", "{user_id}"), config={"configurable": {"user_id": value}})


@pytest.mark.parametrize("value", BAD_VALUES, ids=lambda v: type(v).__name__)
def test_non_str_int_user_id_is_refused_without_template(value: Any) -> None:
    with pytest.raises(ConfigurationError, match=type(value).__name__):
        resolve_namespace(Ctx(user_id=value), None)
    with pytest.raises(ConfigurationError, match=type(value).__name__):
        resolve_namespace(None, {"configurable": {"user_id": value}})
    with pytest.raises(ConfigurationError, match=type(value).__name__):
        namespace_from(context=Ctx(user_id=value), default=("fallback",))


@pytest.mark.parametrize("value", [None, ""])
def test_missing_or_empty_required_field_is_refused(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="needs 'user_id'"):
        fill_namespace(("users", "{user_id}"), context=Ctx(user_id=value))


def test_end_to_end_add_memory(tmp_path: Path) -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langgraph.graph import MessagesState, StateGraph

    from mnemon_langgraph import MnemonStore, add_memory

    store = MnemonStore(str(tmp_path / "memory.db"))
    model = GenericFakeChatModel(messages=iter(["Noted!"] * 10))
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph = add_memory(builder, store, namespace=("users", "{user_id}")).compile()

    with pytest.raises(ConfigurationError, match="User"):
        graph.invoke(
            {"messages": [("user", "I am Ada.")]}, {"configurable": {"user_id": User("Ada")}}
        )
    assert store.namespaces() == []

    graph.invoke({"messages": [("user", "I moved to Lisbon.")]}, {"configurable": {"user_id": 7}})
    graph.invoke({"messages": [("user", "I moved to Oslo.")]}, {"configurable": {"user_id": "8"}})
    assert sorted(store.namespaces()) == [("users", "7"), ("users", "8")]
