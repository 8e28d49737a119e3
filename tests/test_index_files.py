"""Index folders keep no leftovers: temp files of killed saves and unreferenced vector files.

A process killed while saving an index leaves ``.bm25-*.npz`` / ``.vectors.json-*`` temp
files or a ``vectors-*.faiss`` file no metadata points to. They hold record vocabulary
(and vectors), so loading or saving a namespace index removes them — at once while it
holds the folder's lock (every writer takes it), otherwise only once they are old.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from _search_fakes import HashEmbeddings

import mnemon_langgraph.store.embedded._index as search
from mnemon_langgraph.search._text import stem
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._index import clean_index_folder
from mnemon_langgraph.types import Message

NS = ("users", "ada")
SECRET = "zebracornquill"


def _messages(n: int) -> list[Message]:
    return [
        Message(
            text=f"note {i} about gardens and {SECRET if i == 3 else 'apples'}",
            speaker="Ada",
            role="user",
            id=f"m{i}",
            session=1,
        )
        for i in range(n)
    ]


def _store(tmp_path: Path) -> MnemonStore:
    store = MnemonStore(tmp_path / "j.db", HashEmbeddings())
    store.ingest(NS, _messages(8), origin="chat", pack=False)
    store.flush()
    return store


def _leftovers(folder: Path) -> dict[str, Path]:
    """Leftovers as a killed save makes them, copied from the live files."""
    meta = json.loads((folder / "vectors.json").read_text())
    made = {
        "bm25_temp": folder / ".bm25-k1ll3d.npz",
        "json_temp": folder / ".vectors.json-k1ll3d",
        "faiss": folder / "vectors-0123456789ab.faiss",
    }
    shutil.copyfile(folder / "bm25.npz", made["bm25_temp"])
    (made["json_temp"]).write_text(json.dumps(meta))
    shutil.copyfile(folder / meta["file"], made["faiss"])
    return made


def _search_ok(store: MnemonStore) -> None:
    hits = store.search("gardens apples", namespace=NS, k=10)
    assert len(hits) == 8


def test_loading_removes_leftovers_and_keeps_the_live_files(tmp_path: Path) -> None:
    store = _store(tmp_path)
    folder = store.index(NS).folder
    store.close()
    made = _leftovers(folder)
    foreign = folder / "notes.txt"  # not ours: never touched
    foreign.write_text("keep me")
    live = json.loads((folder / "vectors.json").read_text())["file"]
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as again:
        _search_ok(again)  # first sync loads the checkpoint
        assert again.index(NS).rebuilds == 0  # loaded, not rebuilt: live files intact
        assert not any(p.exists() for p in made.values())
        assert foreign.exists() and (folder / live).exists() and (folder / "bm25.npz").exists()


def test_saving_removes_leftovers(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        index = store.index(NS)
        made = _leftovers(index.folder)
        store.ingest(NS, [Message("one more line", "Bo", id="x1", session=2)], origin="chat")
        index.save()
        assert not any(p.exists() for p in made.values())
        names = sorted(p.name for p in index.folder.iterdir())
        faiss = [n for n in names if n.endswith(".faiss")]
        assert faiss == [json.loads((index.folder / "vectors.json").read_text())["file"]]
        assert not [n for n in names if n.startswith((".bm25-", ".vectors.json-"))]
        assert len(store.search("line", namespace=NS, k=20)) == 9


def test_delete_records_leaves_no_deleted_word_in_the_index_folder(tmp_path: Path) -> None:
    store = _store(tmp_path)
    folder = store.index(NS).folder
    victim = [r for r in store.journal.records(NS) if SECRET in r.text]
    assert len(victim) == 1
    made = _leftovers(folder)
    # the index holds the word's stem, a prefix of it: no file may hold even that
    blob = stem(SECRET).encode()
    assert blob in (folder / "bm25.npz").read_bytes()  # the scan below can find it
    assert blob in made["bm25_temp"].read_bytes()
    assert store.delete_records(NS, [victim[0].id]) == [victim[0].id]
    holding = [p.name for p in folder.rglob("*") if p.is_file() and blob in p.read_bytes()]
    assert holding == []
    assert all(SECRET not in h.record.text for h in store.search(SECRET, namespace=NS, k=3))
    assert len(store.search("gardens", namespace=NS, k=10)) == 7
    store.close()


def test_without_the_lock_only_old_leftovers_go(tmp_path: Path) -> None:
    store = _store(tmp_path)
    folder = store.index(NS).folder
    store.close()
    made = _leftovers(folder)
    old = time.time() - search.STALE_TEMP_SECONDS - 5
    os.utime(made["bm25_temp"], (old, old))
    removed = clean_index_folder(folder, locked=False)
    # a fresh temp file may belong to a save in progress in another process: kept
    assert removed == [made["bm25_temp"].name]
    assert made["json_temp"].exists() and made["faiss"].exists()
    assert sorted(clean_index_folder(folder, locked=True)) == sorted(
        [made["json_temp"].name, made["faiss"].name]
    )
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as again:
        _search_ok(again)
        assert again.index(NS).rebuilds == 0


def test_no_fcntl_falls_back_to_the_age_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "fcntl", None)
    store = _store(tmp_path)
    folder = store.index(NS).folder
    made = _leftovers(folder)
    old = time.time() - search.STALE_TEMP_SECONDS - 5
    os.utime(made["faiss"], (old, old))
    store.index(NS).save()
    assert not made["faiss"].exists()
    assert made["bm25_temp"].exists() and made["json_temp"].exists()
    assert not (folder / ".lock").exists()
    _search_ok(store)
    store.close()


def test_erased_namespace_folder_is_not_recreated(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        folder = store.index(NS).folder
        store.erase_namespace(NS)
        assert not folder.exists()
        assert store.search("gardens", namespace=NS, k=3) == []
        assert not folder.exists()
    assert clean_index_folder(folder, locked=True) == []
