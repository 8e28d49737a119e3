"""The ``mnemon_agent`` graph: View before the model call, the turn written after it."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

sys.path.insert(0, str(Path(__file__).parent))

from test_read_context import recommended_calls

from mnemon_langgraph import MnemonStore
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations import studio

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "journal.db"
    monkeypatch.setenv("MNEMON_DB", str(db))
    monkeypatch.setenv("MNEMON_JUDGE", "test_integration_studio:make_judge")
    for key in ("MNEMON_NAMESPACE", "MNEMON_AGENT_MODEL", "MNEMON_PLANNER_MODEL"):
        monkeypatch.delenv(key, raising=False)
    return db


def _say(graph: Any, text: str, user: str) -> str:
    out = graph.invoke({"messages": [HumanMessage(text)]}, context={"user_id": user})
    return str(out["messages"][-1].text)


def test_offline_agent_remembers_per_user(environ: Path) -> None:
    graph = runpy.run_path(str(REPO / "graphs" / "agent_graph.py"))["graph"]
    first = _say(graph, "My sister's name is Juniper.", "ann")
    assert first.startswith(studio.OFFLINE_LABEL)
    assert "Memory found nothing" in first  # nothing was stored before this turn

    asked = _say(graph, "What is my sister's name?", "ann")  # a new run: no shared thread
    assert asked.startswith(studio.OFFLINE_LABEL) and "Juniper" in asked
    other = _say(graph, "What is my sister's name?", "ben")
    assert other.startswith(studio.OFFLINE_LABEL) and "Juniper" not in other

    store = MnemonStore(environ)
    texts = [r.text for r in list(store.records(("users", "ann")))]
    assert any("Juniper" in t for t in texts)
    assert not any("Offline stand-in" in t for t in texts)  # the stand-in is never stored
    assert not any("Juniper" in r.text for r in list(store.records(("users", "ben"))))
    store.close()


class _Recording(GenericFakeChatModel):
    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - one list per test, set below

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def test_model_reads_the_view_first_and_the_reply_is_written(environ: Path) -> None:
    store = MnemonStore(environ)
    model = _Recording(messages=iter([AIMessage("Noted, Pixel!"), AIMessage("Pixel.")]))
    model.seen = []
    graph = studio.create_chat_agent(store, model=model)
    _say(graph, "My cat is called Pixel.", "ann")
    assert _say(graph, "What is my cat called?", "ann") == "Pixel."
    view = model.seen[1][0]
    assert isinstance(view, SystemMessage) and "<memory_view>" in view.text
    assert "Pixel" in view.text and model.seen[1][-1].text == "What is my cat called?"
    texts = [r.text for r in list(store.records(("users", "ann")))]
    assert any("Noted, Pixel!" in t for t in texts)  # a real model's reply is the turn's half
    store.close()


def test_agent_without_user_hints_all_work(environ: Path) -> None:
    graph = studio.agent_graph_from_env()
    with pytest.raises(ConfigurationError) as caught:
        graph.invoke({"messages": [HumanMessage("hi")]})
    calls = recommended_calls(str(caught.value))
    assert len(calls) >= 3
    for kind, value in calls:
        out = graph.invoke({"messages": [HumanMessage("hi")]}, **{kind: value})
        assert out["messages"][-1].text.startswith(studio.OFFLINE_LABEL), (kind, value)
    assert {"user_id", "namespace"} <= set(graph.get_context_jsonschema()["properties"])


def test_agent_model_from_env(environ: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_AGENT_MODEL", "no-colon")
    with pytest.raises(ConfigurationError, match="PROVIDER:MODEL"):
        studio.agent_graph_from_env()
