"""graphs/ entry points: the two graphs are built from environment variables only."""

from __future__ import annotations

import runpy
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations import studio
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.judges.propositions import parse_question_id
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

REPO = Path(__file__).resolve().parents[1]


def make_judge() -> ScriptedDecisionModel:
    """Named by ``MNEMON_JUDGE=test_integration_studio:make_judge`` below."""

    def answers(qid: str, question: Any, state: Any) -> float:
        return 0.1 if parse_question_id(qid).proposition == "stale" else 0.9

    return ScriptedDecisionModel(answers=answers)


@pytest.fixture
def environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")  # the store's default embedder, made small
    db = tmp_path / "journal.db"
    store = MnemonStore(db)
    for user, fact in (("ada", "My cat is called Pixel."), ("bob", "My dog is called Rex.")):
        store.ingest(
            ("users", user),
            [Message(text=fact, speaker=user, id=f"{user}-1", timestamp=datetime(2024, 1, 2))],
            origin="seed",
        )
    store.close()
    env = {
        "MNEMON_DB": str(db),
        "MNEMON_NAMESPACE": '["users", "ada"]',
        "MNEMON_JUDGE": f"{Path(__file__).stem}:make_judge",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("MNEMON_PLANNER_MODEL", "MNEMON_CONSOLIDATION_MODEL"):
        monkeypatch.delenv(key, raising=False)
    return env


def _view_text(graph: Any, config: dict[str, Any] | None = None) -> str:
    out = graph.invoke({"messages": [HumanMessage("What is my pet called?")]}, config)
    return str(out["view"].text)


def test_read_graph_from_env_default_and_per_user_namespace(environ: dict[str, str]) -> None:
    graph = studio.read_graph_from_env()
    assert "Pixel" in _view_text(graph)  # MNEMON_NAMESPACE
    bob = _view_text(graph, {"configurable": {"user_id": "bob"}})
    assert "Rex" in bob and "Pixel" not in bob
    by_namespace = _view_text(graph, {"configurable": {"namespace": ["users", "bob"]}})
    assert "Rex" in by_namespace and "Pixel" not in by_namespace
    # a LangGraph server sets configurable.user_id to "" without auth: the default applies
    assert "Pixel" in _view_text(graph, {"configurable": {"user_id": ""}})
    from mnemon_langgraph.read.state import ReadContext

    out = graph.invoke({"messages": [HumanMessage("my pet?")]}, context=ReadContext(user_id="bob"))
    assert "Rex" in out["view"].text and "Pixel" not in out["view"].text


def test_graph_files_build_from_env(environ: dict[str, str]) -> None:
    from langgraph.pregel import Pregel

    read = runpy.run_path(str(REPO / "graphs" / "read_graph.py"))["graph"]
    consolidation = runpy.run_path(str(REPO / "graphs" / "consolidation_graph.py"))["graph"]
    assert isinstance(read, Pregel) and isinstance(consolidation, Pregel)
    assert "Pixel" in _view_text(read)


def test_consolidation_without_model_says_what_to_set(environ: dict[str, str]) -> None:
    graph = studio.consolidation_graph_from_env()
    try:
        out = graph.invoke({"namespace": ("users", "ada")})
    except ConfigurationError as exc:
        assert "MNEMON_CONSOLIDATION_MODEL" in str(exc)
    else:
        report = out["report"]
        assert report.stop_reason == "failed" and report.items_added == 0
        assert "MNEMON_CONSOLIDATION_MODEL" in str(out.get("error") or report)


def test_env_parsing_errors() -> None:
    assert studio.chat_model_from_env("MNEMON_PLANNER_MODEL", {}) is None
    assert studio.judge_from_env({"MNEMON_JUDGE": "local"}) is None
    assert studio.default_namespace({}) is None  # no silent shared namespace
    with pytest.raises(ConfigurationError, match="MNEMON_JUDGE"):
        studio.judge_from_env({"MNEMON_JUDGE": "bogus"})
    with pytest.raises(ConfigurationError, match="cannot import"):
        studio.judge_from_env({"MNEMON_JUDGE": "no_such_module_xyz:thing"})


def test_run_without_user_is_refused_when_no_default(environ: dict[str, str]) -> None:
    """Without MNEMON_NAMESPACE a run naming no user is refused, never read from a shared one."""
    environ.pop("MNEMON_NAMESPACE")
    graph = studio.read_graph_from_env(environ)
    for config in (None, {"configurable": {"user_id": ""}}):  # "" is the server without auth
        with pytest.raises(ConfigurationError, match="MNEMON_NAMESPACE") as caught:
            _view_text(graph, config)
        assert "user_id" in str(caught.value)
    bob = _view_text(graph, {"configurable": {"user_id": "bob"}})
    assert "Rex" in bob and "Pixel" not in bob
