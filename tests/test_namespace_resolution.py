"""One rule resolves a run's namespace for the read graph and every integration surface."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations import namespace_from
from mnemon_langgraph.read.state import ReadContext, resolve_namespace


@dataclass
class UserContext:
    user_id: str


def test_context_namespace_wins_over_config() -> None:
    config = {"configurable": {"user_id": "bob"}}
    assert resolve_namespace(ReadContext(namespace=("users", "ada")), config) == ("users", "ada")


def test_user_id_in_context_or_config() -> None:
    assert resolve_namespace(UserContext(user_id="ada@example.com"), None) == (
        "users",
        "ada@example.com",
    )
    assert resolve_namespace(None, {"configurable": {"user_id": "bob"}}) == ("users", "bob")


def test_empty_user_id_from_the_server_does_not_shadow_the_default() -> None:
    # `langgraph dev` without auth sets configurable.user_id to "".
    config = {"configurable": {"user_id": ""}}
    assert resolve_namespace(None, config, default="shared") == ("shared",)
    with pytest.raises(ConfigurationError, match="namespace"):
        resolve_namespace(None, config)


def test_integrations_use_the_same_rule() -> None:
    for context, config in [
        (UserContext(user_id="ada"), None),
        (None, {"configurable": {"namespace": ["team", "x"]}}),
        (None, {"configurable": {"user_id": ""}}),
    ]:
        assert namespace_from(context=context, config=config, default="d") == resolve_namespace(
            context, config, "d"
        )
