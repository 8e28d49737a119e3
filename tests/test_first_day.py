"""What a new user trips over on the first day (issue 43 §4), each fixed and checked here."""

from __future__ import annotations

from pathlib import Path

import pytest
from _paths import REPO

from mnemon_langgraph.cli import main
from mnemon_langgraph.errors import JournalError

SAMPLE = REPO / "notebooks" / "data" / "allotment_year.json"


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")


# -- a mistyped folder never starts a new memory ------------------------------------------


def test_a_store_in_a_missing_folder_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    from mnemon_langgraph import MnemonStore

    typo = tmp_path / "memroy" / "sub" / "m.db"
    with pytest.raises(JournalError, match=r"does not exist.*memroy"):
        MnemonStore(typo)
    assert list(tmp_path.iterdir()) == []  # no folder, no journal, no index folder


def test_a_store_in_an_existing_folder_is_still_created(tmp_path: Path) -> None:
    from mnemon_langgraph import MnemonStore

    with MnemonStore(tmp_path / "m.db") as store:
        store.add_messages(("users", "ada"), [("user", "hello")])
    assert (tmp_path / "m.db").is_file()


def test_writing_commands_make_the_folder_they_are_told_to_write_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "memory.db"
    assert main(["ingest", str(SAMPLE), "--db", str(db), "--namespace", "mira"]) == 0
    assert db.is_file()
    # a reading command never creates anything
    typo = tmp_path / "neww" / "memory.db"
    assert main(["search", "beans", "--db", str(typo), "--namespace", "mira"]) == 2
    assert "no journal at" in capsys.readouterr().err
    assert not typo.parent.exists()
