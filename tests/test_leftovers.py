"""Nothing is left behind in the system temp folder: ``mnemon eval`` (with and without
``--store``), the cross-validated evaluation, and the test suite's own PostgreSQL server.

Each test points the temp folder (``TMPDIR`` and :mod:`tempfile`'s cached choice) at a
private, empty folder and checks that it is empty again afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _paths import REPO

from mnemon_langgraph.cli import main

SAMPLE = REPO / "notebooks" / "data" / "allotment_year.json"


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "system-temp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    return folder


def _eval(out: Path, *extra: str) -> int:
    argv = ["eval", "locomo", str(SAMPLE), "--out", str(out), "--limit-questions", "1"]
    return main([*argv, "--embeddings", "fake", "--no-plots", "--no-progress", *extra])


def test_eval_without_store_deletes_its_temporary_journal(
    private_tmp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval(tmp_path / "out") == 0
    assert "scored questions" in capsys.readouterr().out
    assert (tmp_path / "out" / "results.jsonl").is_file()
    assert sorted(p.name for p in private_tmp.iterdir()) == []


def test_eval_with_store_makes_its_folder_and_leaves_no_temporary_one(
    private_tmp: Path, tmp_path: Path
) -> None:
    journal = tmp_path / "runs" / "first" / "journal.sqlite"  # a folder that does not exist
    assert _eval(tmp_path / "out", "--store", str(journal)) == 0
    assert journal.is_file()
    assert sorted(p.name for p in private_tmp.iterdir()) == []


def test_longmemeval_deletes_its_temporary_journal(private_tmp: Path, tmp_path: Path) -> None:
    import _longmemeval_fixture as lme

    lme.write(tmp_path / "lme.json")
    assert main(lme.eval_args(tmp_path, "out", "--no-embedding-cache")) == 0
    assert (tmp_path / "out" / "results.jsonl").is_file()
    assert sorted(p.name for p in private_tmp.iterdir()) == []


def test_cross_validated_evaluation_deletes_its_journals(private_tmp: Path, tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from mnemon_langgraph.eval.crossval import evaluate_folds
    from mnemon_langgraph.judges.learned import hand_weights

    summary = evaluate_folds(
        [SAMPLE],
        {"allotment_year": hand_weights()},
        tmp_path / "cv",
        embeddings=DeterministicFakeEmbedding(size=384),
        budget_chars=2000,
        limit_questions=1,
    )
    assert summary["counts"]["questions"] == 1
    assert sorted(p.name for p in private_tmp.iterdir()) == []


@pytest.fixture
def short_private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private temp folder in the real one: short enough for PostgreSQL's socket path,
    and outside pytest's 0700 base folder, which pgserver's user cannot enter as root.

    pgserver is imported first: it fixes its lock folder (under the temp folder) when it is
    imported, and that must stay the one every other test of the process uses."""
    pytest.importorskip("pgserver")
    folder = Path(tempfile.mkdtemp(prefix="mnemon-leftovers-"))
    folder.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.integration
def test_the_test_postgres_server_deletes_its_folder(short_private_tmp: Path) -> None:
    import psycopg
    from conftest import bundled_postgres

    private_tmp = short_private_tmp
    with bundled_postgres() as url, psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert [p for p in private_tmp.iterdir() if p.name.startswith("mnemon-test-pg-")]
    assert list(private_tmp.iterdir()) == []


def test_a_missing_useradd_is_named_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import pwd

    from conftest import postgres_missing

    def no_user(name: str) -> None:
        raise KeyError(name)

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(pwd, "getpwnam", no_user)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = postgres_missing()
    assert reason is not None and "useradd" in reason and "\n" not in reason
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/sbin/useradd")
    assert postgres_missing() is None  # pgserver can create its user itself
