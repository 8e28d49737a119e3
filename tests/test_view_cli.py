"""``mnemon view``: text and JSON output over a small journal (fake embeddings)."""

from __future__ import annotations

import json

import pytest
from _paths import LOCOMO_DEV

from mnemon_langgraph.cli import main

DATA = LOCOMO_DEV / "conv-30.json"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="LoCoMo dev data not available")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    mp = pytest.MonkeyPatch()
    mp.setenv("MNEMON_EMBEDDINGS", "fake")
    path = str(tmp_path_factory.mktemp("view") / "j.db")
    assert main(["ingest", str(DATA), "--db", path, "--namespace", "conv30", "--no-progress"]) == 0
    yield path
    mp.undo()


@pytest.fixture(autouse=True)
def fake_embeddings(monkeypatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")


def test_view_prints_delimited_records(db, capsys) -> None:
    code = main(
        [
            "view",
            "What kind of flooring is Jon looking for in his dance studio?",
            "--db",
            db,
            "--namespace",
            "conv30",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("<record id=") >= 1 and out.count("<record id=") == out.count("</record>")
    assert "judge (System 1) calls" in out and "planner (System 2) calls" in out


def test_view_json_has_the_documented_keys_and_explains(db, capsys) -> None:
    code = main(
        [
            "view",
            "What is Jon's favorite style of dance?",
            "--db",
            db,
            "--namespace",
            "conv30",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"text", "records", "items", "trace"} <= set(data)
    rec = data["records"][0]
    assert {"id", "message_ids", "session", "date", "text"} <= set(rec)
    assert data["trace"]["counts"]["searches"] >= 2
    code = main(
        [
            "view",
            "What is Jon's favorite style of dance?",
            "--db",
            db,
            "--namespace",
            "conv30",
            "--json",
            "--explain",
            rec["id"],
        ]
    )
    again = json.loads(capsys.readouterr().out)
    assert "found by:" in again["explain"][rec["id"]]


def test_empty_namespace_reports_reason(db, capsys) -> None:
    assert main(["view", "anything at all?", "--db", db, "--namespace", "nobody"]) == 0
    assert "empty View" in capsys.readouterr().out


def test_bad_judge_spec_is_a_clean_error(db, capsys) -> None:
    code = main(["view", "q?", "--db", db, "--namespace", "conv30", "--judge", "oracle"])
    assert code == 2 and "--judge" in capsys.readouterr().err


def test_bad_planner_spec_is_a_clean_error(db, capsys) -> None:
    code = main(["view", "q?", "--db", db, "--namespace", "conv30", "--planner", "gpt"])
    assert code == 2 and "--planner" in capsys.readouterr().err


def test_judge_and_planner_specs_build_backends(monkeypatch) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from mnemon_langgraph import backends
    from mnemon_langgraph.cli import _common  # what view, explain and mcp resolve names with
    from mnemon_langgraph.judges.chat import ChatDecisionModel

    built: list[str] = []

    def fake_chat(spec: str):
        built.append(spec)
        return FakeListChatModel(responses=["{}"])

    monkeypatch.setattr(backends, "chat_model_from_spec", fake_chat)
    judge = _common.judge("llm:openai:gpt-4.1-mini")
    assert isinstance(judge, ChatDecisionModel) and built == ["openai:gpt-4.1-mini"]
    assert _common.planner("rules") is None
    assert _common.planner("anthropic:claude-x") is not None
    assert built[-1] == "anthropic:claude-x"


def test_backend_names_mean_the_same_everywhere(monkeypatch) -> None:
    # The CLI's read commands and eval and the Studio entry points resolve names through
    # mnemon_langgraph.backends, so the same name builds the same kind of backend.
    import mnemon_langgraph.cli._eval as cli_eval
    from mnemon_langgraph import backends
    from mnemon_langgraph.cli import _common
    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.integrations import studio
    from mnemon_langgraph.judges import ScriptedDecisionModel

    spec = "mnemon_langgraph.judges:ScriptedDecisionModel"
    for judge in (
        _common.judge(spec),
        cli_eval.build_judge(spec),
        studio.judge_from_env({"MNEMON_JUDGE": spec}),
    ):
        assert isinstance(judge, ScriptedDecisionModel)
    for bad in ("nonsense", "gpt-4.1-mini", "openai:gpt-4.1-mini", "no_such_module_xyz:thing"):
        with pytest.raises(ConfigurationError):
            backends.judge_from_spec(bad)
    with pytest.raises(ConfigurationError, match="PROVIDER:MODEL"):
        backends.chat_model_from_spec("gpt-4.1-mini")
    assert studio.judge_from_env({"MNEMON_JUDGE": "local"}) is None
