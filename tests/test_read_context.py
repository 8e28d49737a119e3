"""``ReadContext`` takes ``user_id`` and template fields; every "no user" hint works."""

from __future__ import annotations

import ast
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mnemon_langgraph import create_memory_tools
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations import studio
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext, read_context_schema
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

USER = "user-1"  # the example user every hint names
FACTS = {
    (USER,): "My cat is called Pixel.",
    ("users", USER): "My bike is called Comet.",
    ("org", USER, "user", USER): "My boat is called Wave.",
}


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    for key in ("MNEMON_NAMESPACE", "MNEMON_PLANNER_MODEL", "MNEMON_JUDGE"):
        monkeypatch.delenv(key, raising=False)
    path = tmp_path / "journal.db"
    store = MnemonStore(path)
    for i, (ns, fact) in enumerate(FACTS.items()):
        store.ingest(
            ns,
            [Message(fact, "u", id=f"m{i}", timestamp=datetime(2024, 1, 2))],
            origin="seed",
        )
    store.close()
    monkeypatch.setenv("MNEMON_DB", str(path))
    return path


def recommended_calls(message: str) -> list[tuple[str, Any]]:
    """Every ``context=...`` / ``config=...`` the message recommends, evaluated.

    Each is a Python expression (a dict literal or ``ReadContext(...)``), read up to the
    bracket that closes it.
    """
    calls = []
    for match in re.finditer(r"\b(context|config)=", message):
        start, depth = match.end(), 0
        for end in range(start, len(message)):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(message[end], 0)
            if depth == 0 and message[end] in ")]}":
                break
        expr = message[start : end + 1]
        tree = ast.parse(expr, mode="eval")
        value = eval(compile(tree, "<hint>", "eval"), {"ReadContext": ReadContext})
        calls.append((match.group(1), value))
    return calls


def _view_text(graph: Any, kind: str | None = None, value: Any = None) -> str:
    kwargs = {kind: value} if kind else {}
    out = graph.invoke({"messages": [HumanMessage("What is it called?")]}, **kwargs)
    return str(out["view"].text)


def _run_every_hint(graph: Any, *expected: str) -> int:
    """Run the graph with no user, then with each call its refusal recommends.

    Each recommended run must read one of the example user's namespaces (``expected``: the
    facts that prove it); returns how many calls were recommended.
    """
    with pytest.raises(ConfigurationError) as caught:
        _view_text(graph)
    calls = recommended_calls(str(caught.value))
    assert calls, caught.value
    for kind, value in calls:
        text = _view_text(graph, kind, value)
        assert any(fact in text for fact in expected), (kind, value, text)
    return len(calls)


def test_read_context_takes_user_id(db: Path) -> None:
    store = MnemonStore(db)
    graph = create_read_graph(source=store)
    # user_id "user-1" is the namespace ("users", "user-1"): the one convention
    assert "Comet" in _view_text(graph, "context", ReadContext(user_id=USER))
    assert "Comet" in _view_text(graph, "context", {"user_id": USER})
    # namespace wins over user_id
    both = _view_text(graph, "context", {"user_id": "x", "namespace": [USER]})
    assert "Pixel" in both and "Comet" not in both
    store.close()


def test_read_graph_no_user_hints_all_work(db: Path) -> None:
    store = MnemonStore(db)
    graph = create_read_graph(source=store)
    with pytest.raises(ConfigurationError) as caught:
        _view_text(graph)
    kinds = [kind for kind, _ in recommended_calls(str(caught.value))]
    assert kinds.count("context") >= 2 and "config" in kinds
    assert _run_every_hint(graph, "Pixel", "Comet") == len(kinds)
    store.close()


def test_studio_graph_no_user_hints_all_work(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = studio.read_graph_from_env()
    assert _run_every_hint(graph, "Pixel", "Comet") >= 3
    with pytest.raises(ConfigurationError, match="MNEMON_NAMESPACE=<namespace>"):
        _view_text(graph)
    monkeypatch.setenv("MNEMON_NAMESPACE", USER)  # the hint's last recommendation
    assert "Pixel" in _view_text(studio.read_graph_from_env())


def test_studio_template_namespace_fields_in_context(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_NAMESPACE", '["org", "{org}", "user", "{user_id}"]')
    graph = studio.read_graph_from_env()
    form = graph.get_context_jsonschema()["properties"]
    assert {"namespace", "now", "user_id", "org"} <= set(form)
    assert _run_every_hint(graph, "Wave") == 2  # the context dict and the configurable dict
    with pytest.raises(ConfigurationError) as caught:
        _view_text(graph, "context", {"user_id": USER})  # org missing
    assert "MNEMON_NAMESPACE" not in str(caught.value)  # it is set: that hint would not help
    other = _view_text(graph, "context", {"org": "acme", "user_id": USER})
    assert "Wave" not in other


def test_studio_context_form_shows_user_id(db: Path) -> None:
    graph = studio.read_graph_from_env()
    assert {"namespace", "now", "user_id"} <= set(graph.get_context_jsonschema()["properties"])


def test_bad_namespace_env_and_fields_are_refused() -> None:
    for bad in ("[oops", "[]", "[1]", '[""]'):
        with pytest.raises(ConfigurationError, match="MNEMON_NAMESPACE"):
            studio.default_namespace({"MNEMON_NAMESPACE": bad})
    with pytest.raises(ConfigurationError, match="identifiers"):
        read_context_schema(["not a name"])
    assert read_context_schema([]) is ReadContext
    assert read_context_schema(["user_id", "namespace"]) is ReadContext
    schema = read_context_schema(["org"])
    assert issubclass(schema, ReadContext) and schema(org="acme").org == "acme"  # type: ignore[call-arg,attr-defined]


class _ToolCallingFake(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> _ToolCallingFake:  # type: ignore[override]
        return self


def test_agent_with_read_context_schema_takes_user_id(tmp_path: Path) -> None:
    store = MnemonStore(tmp_path / "a.db", embeddings=DeterministicFakeEmbedding(size=32))
    store.ingest(
        ("users", USER),
        [Message("I live in Lisbon.", "u", id="m1", timestamp=datetime(2024, 1, 2))],
        origin="seed",
    )
    call = AIMessage(
        "", tool_calls=[{"name": "search_memory", "args": {"query": "live"}, "id": "1"}]
    )
    model = _ToolCallingFake(messages=iter([call, AIMessage("Lisbon.")]))
    agent = create_agent(model, tools=create_memory_tools(store), context_schema=ReadContext)
    out = agent.invoke({"messages": [("user", "Where?")]}, context={"user_id": USER})
    (result,) = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Lisbon" in result
    store.close()


def test_middleware_with_a_template_context_schema(tmp_path: Path) -> None:
    """``read_context_schema`` gives a ``create_agent`` the fields its namespace template names."""
    from mnemon_langgraph import MnemonMiddleware

    store = MnemonStore(tmp_path / "t.db", embeddings=DeterministicFakeEmbedding(size=32))
    template = ("org", "{org}", "user", "{user_id}")
    model = _ToolCallingFake(messages=iter([AIMessage("Noted.")]))
    agent = create_agent(
        model,
        middleware=[MnemonMiddleware(store, namespace=template)],
        context_schema=read_context_schema(["org"]),
    )
    agent.invoke(
        {"messages": [("user", "My boat is Wave.")]}, context={"org": "a", "user_id": USER}
    )
    assert any("Wave" in r.text for r in list(store.records(("org", "a", "user", USER))))
    assert list(store.records(("org", "b", "user", USER))) == []
    with pytest.raises(ConfigurationError, match="org"):
        agent.invoke({"messages": [("user", "hi")]}, context={"user_id": USER})
    store.close()
