"""``mnemon view`` / ``mnemon explain`` with ``--budget-chars`` and ``--read-setting``, over
the bundled sample conversation (no benchmark data needed, fake embeddings)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from mnemon_langgraph.cli import main

QUESTION = "Where do I live now and what do I eat?"


@pytest.fixture(autouse=True)
def fake_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")


@pytest.fixture
def db(tmp_path: Path, fake_embeddings: None) -> str:
    sample = resources.files("mnemon_langgraph") / "data" / "sample_conversation.jsonl"
    path = str(tmp_path / "j.db")
    with resources.as_file(sample) as file:
        assert (
            main(["ingest", str(file), "--db", path, "--namespace", "noor", "--no-progress"]) == 0
        )
    return path


def _view_json(db: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["view", QUESTION, "--db", db, "--namespace", "noor", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_budget_and_read_settings_shape_the_view(db: str, capsys) -> None:
    default = _view_json(db, capsys)
    small = _view_json(db, capsys, "--budget-chars", "1000")
    one = _view_json(db, capsys, "--read-setting", "view_records=1")
    # The default View is bigger than either bound, so each bound is what cut it.
    assert len(default["text"]) > 1000 and len(default["records"]) > 1
    assert 0 < len(small["text"]) <= 1000
    assert len(one["records"]) == 1
    assert one["records"][0]["id"] in {r["id"] for r in default["records"]}


def test_explain_reads_with_the_same_settings(db: str, capsys) -> None:
    default = _view_json(db, capsys)
    last = default["records"][-1]["id"]  # in the default View, not in a one-record View
    args = ["explain", last, QUESTION, "--db", db, "--namespace", "noor", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["in_view"] is True
    assert main([*args, "--read-setting", "view_records=1"]) == 0
    assert json.loads(capsys.readouterr().out)["in_view"] is False


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--budget-chars", "0"], "view_chars"),
        (["--read-setting", "no_such_field=1"], "no field 'no_such_field'"),
        (["--read-setting", "view_records"], "NAME=VALUE"),
    ],
)
@pytest.mark.parametrize("command", ["view", "explain"])
def test_bad_read_settings_are_clean_errors(
    tmp_path: Path, capsys, command: str, extra: list[str], said: str
) -> None:
    path = tmp_path / "never.db"
    head = [command, "r-1", "q?"] if command == "explain" else [command, "q?"]
    code = main([*head, "--db", str(path), "--namespace", "noor", *extra])
    assert code == 2 and said in capsys.readouterr().err
    assert not path.exists()  # checked before any journal is opened
