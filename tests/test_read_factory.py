"""create_read_graph takes every kind of planner and judge; callbacks see every model call."""

from __future__ import annotations

from typing import Any

import langchain.chat_models
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from test_planner import NEED_JSON, SEARCH_JSON, RoutingFakeChat
from test_read_graph import CTX, ask, by_text, support_judge, toy_records

from mnemon_langgraph.backends import resolve_judge
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges.chat import ChatDecisionModel
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource
from mnemon_langgraph.read.planner import (
    ChatPlanner,
    NewSearchResult,
    Planner,
    PlanResult,
    RulePlanner,
    SearchSpec,
    resolve_planner,
)


def _chat() -> RoutingFakeChat:
    return RoutingFakeChat(
        script={"search": [SEARCH_JSON], "need": [NEED_JSON], "new": ['{"search": "x"}']},
        prompts=[],
    )


def _run(planner: Any) -> dict[str, Any]:
    graph = create_read_graph(
        source=InMemorySearchSource(toy_records()),
        judge=ScriptedDecisionModel(answers=by_text(support_judge)),
        planner=planner,
    )
    assert isinstance(graph, CompiledStateGraph)
    return graph.invoke(ask(), context=CTX)["view"].trace


@pytest.fixture
def fake_provider(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """``init_chat_model`` answers with a scripted fake: no provider, no network."""
    built: list[tuple[str, str | None]] = []

    def init_chat_model(model: str, *, model_provider: str | None = None, **_: Any) -> Any:
        built.append((model, model_provider))
        return _chat()

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    return built


@pytest.mark.parametrize("planner", [None, "rules", RulePlanner()])
def test_rule_planner_kinds_plan_with_rules_and_no_degradation(planner: Any) -> None:
    trace = _run(planner)
    assert trace["planner"] == "rules"
    assert trace["degradations"] == [] and trace["errors"] == []


def test_a_chat_planner_object_is_used_as_given() -> None:
    chat = _chat()
    trace = _run(ChatPlanner(chat))
    assert trace["planner"] == "RoutingFakeChat" and trace["counts"]["s2_calls"] == 2
    assert trace["degradations"] == [] and len(chat.prompts) == 2
    assert [s["origin"] for s in trace["searches"]][:5] == [
        "message", "plan", "plan", "plan", "hyde"
    ]  # fmt: skip


def test_a_bare_chat_model_becomes_a_chat_planner() -> None:
    chat = _chat()
    trace = _run(chat)
    assert trace["planner"] == "RoutingFakeChat" and len(chat.prompts) == 2
    assert trace["degradations"] == []


def test_a_provider_model_string_goes_through_backends(
    fake_provider: list[tuple[str, str | None]],
) -> None:
    trace = _run("openai:gpt-4.1-mini")
    assert fake_provider == [("gpt-4.1-mini", "openai")]
    assert trace["planner"] == "RoutingFakeChat" and trace["counts"]["s2_calls"] == 2


def test_any_object_with_the_planner_methods_is_a_planner() -> None:
    class OneSearch:
        name = "custom"

        def plan(self, messages: Any, settings: Any, now: str | None = None) -> PlanResult:
            return PlanResult([SearchSpec("support group", "plan")], [], self.name)

        async def aplan(self, messages: Any, settings: Any, now: str | None = None) -> PlanResult:
            return self.plan(messages, settings, now)

        def next_search(self, *a: Any) -> NewSearchResult:
            return NewSearchResult(None, 0, 0.0, [])

        async def anext_search(self, *a: Any) -> NewSearchResult:
            return self.next_search(*a)

    planner = OneSearch()
    assert isinstance(planner, Planner) and resolve_planner(planner) is planner
    trace = _run(planner)
    planned = [s["query"] for s in trace["searches"] if s["origin"] != "instructions"]
    assert trace["planner"] == "custom" and planned == ["support group"]


def test_a_wrong_planner_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="planner must be"):
        resolve_planner(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="PROVIDER:MODEL"):
        resolve_planner("no-colon")


def test_judge_names_and_objects_resolve(fake_provider: list[tuple[str, str | None]]) -> None:
    emb = DeterministicFakeEmbedding(size=8)
    local = resolve_judge("local", embeddings=emb)
    assert isinstance(local, LocalDecisionModel) and local.embeddings is emb
    assert isinstance(resolve_judge(None, embeddings=emb), LocalDecisionModel)
    chat = resolve_judge("llm:anthropic:claude-x")
    assert isinstance(chat, ChatDecisionModel) and isinstance(chat.llm, RoutingFakeChat)
    assert fake_provider == [("claude-x", "anthropic")]
    scripted = ScriptedDecisionModel(answers=by_text(support_judge))
    assert resolve_judge(scripted) is scripted
    with pytest.raises(ConfigurationError, match="judge must be"):
        resolve_judge("nonsense")
    with pytest.raises(ConfigurationError, match="judge must be"):
        resolve_judge(object())  # type: ignore[arg-type]


def test_judge_by_name_at_the_factory(fake_provider: list[tuple[str, str | None]]) -> None:
    graph = create_read_graph(
        source=InMemorySearchSource(toy_records()), judge="llm:openai:gpt-x", planner="rules"
    )
    assert fake_provider == [("gpt-x", "openai")]
    # the fake chat model cannot answer the judge's questions: System 1 degrades to the
    # fused order and the View is still made, from the judge the name built.
    view = graph.invoke({"messages": [HumanMessage("support group?")]}, context=CTX)["view"]
    assert any("RoutingFakeChat" in e or "routing-fake" in e for e in view.trace["errors"])
    assert view.records


# --- tracing: a callback handler in config sees every model call, sync and async -------


class _Counter(BaseCallbackHandler):
    def __init__(self) -> None:
        self.chat_calls = 0
        self.runs: list[str] = []

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.chat_calls += 1

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.runs.append(str(kwargs.get("name")))


def _never(prop: str, text: str, need: int | None) -> float:
    return 0.1  # nothing satisfies the need: the rules page, then ask for a new search


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_callbacks_see_every_planner_and_judge_call(mode: str) -> None:
    graph = create_read_graph(
        source=InMemorySearchSource(toy_records()),
        judge=ScriptedDecisionModel(answers=by_text(_never)),
        planner=_chat(),
    )
    handler = _Counter()
    config: RunnableConfig = {"callbacks": [handler]}
    if mode == "invoke":
        out = graph.invoke(ask(), context=CTX, config=config)
    else:
        out = await graph.ainvoke(ask(), context=CTX, config=config)
    counts = out["view"].trace["counts"]
    assert counts["s2_calls"] == 4  # search plan, need plan, a new search for each of 2 needs
    assert handler.chat_calls == counts["s2_calls"]
    assert handler.runs.count("ScriptedDecisionModel") == counts["s1_calls"] > 0
