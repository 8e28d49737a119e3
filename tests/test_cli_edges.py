"""The CLI's edges a new user trips over (issue 14): clear one-line errors, no journal created
by a reading command, no traceback when the reader of stdout goes away, help for everything."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mnemon_langgraph.cli import build_parser, main
from mnemon_langgraph.cli._common import EMBEDDING_CHOICES


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A small journal with one namespace ``ada`` (fake embeddings: fast, offline)."""
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    convo = tmp_path / "c.jsonl"
    lines = [
        f'{{"id": "m{i}", "role": "{"user" if i % 2 == 0 else "assistant"}", '
        f'"content": "Turn {i}: I moved from Leeds to Rotterdam and adopted a cat named Pepper."}}'
        for i in range(40)
    ]
    convo.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = str(tmp_path / "m.db")
    assert main(["ingest", str(convo), "--db", db, "--namespace", "ada", "--no-progress"]) == 0
    return db


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("mnemon: error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "where", "--namespace", "ada"],
        ["view", "where do I live?", "--namespace", "ada"],
        ["stats"],
    ],
)
def test_reading_commands_never_create_a_journal(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "memroy.db"
    assert main([*argv, "--db", str(typo)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "no journal at" in line and str(typo) in line
    assert not typo.exists() and list(tmp_path.iterdir()) == []


def _without_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai")
    for key in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(key, raising=False)


def test_missing_key_is_one_line(
    journal: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_openai_key(monkeypatch)
    model = "openai:gpt-4.1-mini"
    for argv in (
        ["consolidate", "--db", journal, "--namespace", "ada", "--model", model],
        ["view", "hi", "--db", journal, "--namespace", "ada", "--planner", model],
        ["view", "hi", "--db", journal, "--namespace", "ada", "--judge", f"llm:{model}"],
    ):
        assert main(argv) == 2, argv
        line = _one_error_line(capsys.readouterr().err)
        assert "OPENAI_API_KEY" in line and model in line, line


def test_missing_provider_package_is_one_line(
    journal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langchain")
    try:
        import langchain_groq  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only where the package happens to be installed
        pytest.skip("langchain-groq is installed here")
    argv = ["view", "hi", "--db", journal, "--namespace", "ada", "--planner", "groq:llama-3"]
    assert main(argv) == 2
    assert "pip install langchain-groq" in _one_error_line(capsys.readouterr().err)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_model_is_one_line_and_nonzero(
    journal: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The read path falls back to the offline planner; the command still says it failed."""
    pytest.importorskip("langchain_openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    argv = ["view", "where do I live?", "--db", journal, "--namespace", "ada"]
    assert main([*argv, "--planner", "openai:gpt-4.1-mini"]) == 1
    captured = capsys.readouterr()
    assert "<record id=" in captured.out  # the fallback View is still printed
    line = _one_error_line(captured.err)
    assert "model call(s) failed" in line and "Connection" in line


def _run_with_closed_stdout(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``mnemon ARGV`` whose stdout reader has gone away (as ``… | head`` does)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mnemon_langgraph.cli", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


def test_closed_pipe_is_no_traceback(journal: str) -> None:
    env = {**os.environ, "MNEMON_EMBEDDINGS": "fake"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]
    )
    for argv in (
        ["view", "where do I live?", "--db", journal, "--namespace", "ada"],
        ["search", "Leeds", "--db", journal, "--namespace", "ada"],
        ["stats", "--db", journal, "--json"],
        ["export", "--db", journal, "--namespace", "ada"],
        ["list", "--db", journal],
    ):
        code, err = _run_with_closed_stdout(argv, env)
        assert code == 141, (argv, err)
        assert "Traceback" not in err and "BrokenPipeError" not in err, err


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub, None
                yield from _walk(sub, (*path, name))
        else:
            yield path, parser, action


def test_every_command_and_option_has_help() -> None:
    missing = []
    commands = 0
    for path, parser, action in _walk(build_parser(), ()):
        if action is None:
            commands += 1
            if not parser.description:
                missing.append(" ".join(path))
        elif not action.help and not isinstance(action, argparse._HelpAction):
            missing.append(f"{' '.join(path)} {action.option_strings or action.dest}")
    assert commands >= 10
    assert any(path[:1] == ("bench",) for path, _, _ in _walk(build_parser(), ()))  # covered
    assert missing == []
    help_text = _help(["consolidate"])
    assert "seconds" in help_text and "--batch-chars" in help_text


def _help(argv: list[str]) -> str:
    parser = build_parser()
    for path, sub, action in _walk(parser, ()):
        if action is None and list(path) == argv:
            return sub.format_help()
    raise AssertionError(argv)


def test_one_spelling_for_embeddings_choices() -> None:
    seen = [
        (path, tuple(action.choices))
        for path, _, action in _walk(build_parser(), ())
        if action is not None and "--embeddings" in action.option_strings
    ]
    assert len(seen) >= 2
    assert all(set(choices) == set(EMBEDDING_CHOICES) for _, choices in seen), seen
    old = build_parser().parse_args(
        ["consolidate", "--db", "x", "--namespace", "a", "--model", "p:m", "--embeddings", "model"]
    )
    assert old.embeddings == "minilm"  # the earlier spelling is still accepted
