"""Erase under hostile conditions: killed at every step, symlinks, unremovable files, CLI.

Issue 13 §2: an erase must be crash-ordered so that no interruption leaves the erased
words on disk after the next open, must fail loudly when it cannot remove something, and
must find a journal's indexes however the journal was opened (symlink or real path).
Every test first checks that the scan *does* find the marker words before the erase, so
the negative result means something.
"""

from __future__ import annotations

import builtins
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _erase_child import NS, STEPS
from _reliability_common import (
    all_files,
    fake_embeddings,
    files_containing,
    start_child,
    tagged_messages,
    utf16,
)

from mnemon_langgraph.cli import main as cli_main
from mnemon_langgraph.errors import EraseError
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._index import index_folder, indexes_root
from mnemon_langgraph.store.embedded._journal import Journal

CHILD = Path(__file__).parent / "_erase_child.py"
TAG = "QzvEraseCrash4417"
N = 12


def _ns_args(ns: tuple[str, ...] = NS) -> list[str]:
    return [arg for part in ns for arg in ("--namespace", part)]


def _needles() -> list[bytes]:
    return [TAG.encode(), TAG.lower().encode(), utf16(TAG), utf16(TAG.lower())]


def _seed(db: Path, ns: tuple[str, ...] = NS) -> None:
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(ns, tagged_messages(TAG, N), origin="chat")
        store.ingest(("users", "bystander"), tagged_messages("KeepMe", 3), origin="chat")


def _residue(root: Path) -> list[str]:
    return files_containing(all_files(root), _needles())


@pytest.mark.parametrize("via", ["store", "cli"])
@pytest.mark.parametrize("step", STEPS)
def test_erase_killed_at_every_step_leaves_all_or_nothing_after_reopen(
    tmp_path: Path, step: str, via: str
) -> None:
    db = tmp_path / "m.db"
    _seed(db)
    assert _residue(tmp_path), "the scan must see the marker before the erase"
    child = start_child(CHILD, str(db), step, via)
    assert child.stdout is not None
    # Blocking read (not select): start_child's buffered readline may already hold it;
    # a child that dies instead gives EOF (b"") and fails the assertion.
    line = child.stdout.readline()
    assert line.strip() == f"at {step}".encode(), line
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    # The next open: the store opens and closes, nobody touches the victim namespace
    # (a search of it would rebuild and so hide residue left in its index folder).
    with MnemonStore(db, fake_embeddings()) as store:
        count = store.journal.count(NS)
        assert store.search("KeepMe", namespace=("users", "bystander"), k=3)
    if count:  # killed before the commit: the namespace is whole, the erase can rerun
        assert count == N
        with MnemonStore(db, fake_embeddings()) as store:
            assert store.search(TAG, namespace=NS, k=3)
            store.erase_namespace(NS)
    assert _residue(tmp_path) == []


def test_erase_fails_loudly_and_keeps_rows_when_an_index_file_cannot_be_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    _seed(db)

    def refuse(path: object, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)  # a read-only index folder, as root
    with MnemonStore(db, fake_embeddings()) as store:
        with pytest.raises(EraseError, match="cannot remove index files"):
            store.erase_namespace(NS)
        assert store.journal.count(NS) == N  # rows kept: nothing half-erased
    code = cli_main(["erase", "--db", str(db), *_ns_args(), "--yes"])
    assert code == 2
    monkeypatch.undo()
    assert cli_main(["erase", "--db", str(db), *_ns_args(), "--yes"]) == 0
    assert _residue(tmp_path) == []


def test_a_symlinked_index_folder_loses_its_targets_files(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _seed(db)
    folder = index_folder(db, NS)
    elsewhere = tmp_path / "elsewhere" / "idx"
    elsewhere.parent.mkdir()
    shutil.move(str(folder), str(elsewhere))
    folder.symlink_to(elsewhere, target_is_directory=True)
    assert _residue(elsewhere)
    with MnemonStore(db, fake_embeddings()) as store:
        assert store.search(TAG, namespace=NS, k=1)  # the link works before the erase
        store.erase_namespace(NS)
    assert not folder.exists() and not folder.is_symlink()
    assert _residue(tmp_path) == []


def test_journal_opened_through_a_symlink_and_erased_through_its_real_path(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real.db"
    link = tmp_path / "link.db"
    _seed(real)
    link.symlink_to(real)
    with MnemonStore(link, fake_embeddings()) as store:
        assert store.search(TAG, namespace=NS, k=1)
    # An older version kept indexes next to the link's name: put a copy there.
    legacy = link.with_name("link.db.indexes")
    shutil.copytree(indexes_root(real), legacy)
    assert _residue(legacy)
    assert cli_main(["erase", "--db", str(real), *_ns_args(), "--yes"]) == 0
    with MnemonStore(link, fake_embeddings()) as store:
        store.erase_namespace(NS)  # through the link: removes the legacy copy too
    assert _residue(tmp_path) == []


def test_cli_erase_of_a_missing_namespace_says_so_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    _seed(db)
    code = cli_main(["erase", "--db", str(db), *_ns_args(("users", "nobody")), "--yes"])
    assert code == 1
    assert "does not exist" in capsys.readouterr().err
    with Journal(db) as journal:
        assert journal.count(NS) == N


def test_cli_erase_answered_no_prints_nothing_erased(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    _seed(db)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "n")
    assert cli_main(["erase", "--db", str(db), *_ns_args()]) == 1
    assert "nothing erased" in capsys.readouterr().out
    with Journal(db) as journal:
        assert journal.count(NS) == N
