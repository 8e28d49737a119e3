"""Index files that lie, disks that refuse, writes that must not stall.

Issue 13 §4, 5, 8, 9. Indexes are derived from the journal: a checkpoint that parses but
holds wrong contents (any field of the wrong type, flipped bytes, negative postings, a
directory where a file belongs) is rebuilt with the same ranking, never a traceback; a
folder that cannot be written (read-only, full) is served from memory with one warning
and never fails a committed write; positions stay unique under concurrent writers; and
neither the HNSW conversion nor a deletion re-saves the whole index on the write path.
"""

from __future__ import annotations

import errno
import json
import logging
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings, tagged_messages

from mnemon_langgraph.cli import main as cli_main
from mnemon_langgraph.cli._doctor import diagnose
from mnemon_langgraph.errors import JournalReadOnlyError
from mnemon_langgraph.search._bm25 import BM25Index
from mnemon_langgraph.search._vectors import VectorIndex
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._index import index_folder, indexes_root
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.types import Message

NS = ("users", "disk@example.com")
QUERY = "apple garden story"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A journal with saved indexes, and the ranking a healthy index gives for QUERY."""
    db = tmp_path_factory.mktemp("seed") / "m.db"
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(NS, tagged_messages("Plum", 30), origin="api", pack=False)
        ranking = [h.record.id for h in store.search(QUERY, namespace=NS, k=10)]
    return db, ranking


def _copy(seeded: tuple[Path, list[str]], tmp: Path) -> Path:
    db, _ = seeded
    shutil.copy(db, tmp / "m.db")
    shutil.copytree(indexes_root(db), tmp / "m.db.indexes")
    return tmp / "m.db"


def _ranking_and_rebuilds(db: Path) -> tuple[list[str], int]:
    with MnemonStore(db, fake_embeddings()) as store:
        ranking = [h.record.id for h in store.search(QUERY, namespace=NS, k=10)]
        return ranking, store.index(NS).rebuilds


def test_a_healthy_copy_loads_without_a_rebuild(seeded: Any, tmp_path: Path) -> None:
    ranking, rebuilds = _ranking_and_rebuilds(_copy(seeded, tmp_path))
    assert (ranking, rebuilds) == (seeded[1], 0)


def test_indexes_left_by_a_deleted_journal_are_not_served_for_a_new_one(tmp_path: Path) -> None:
    """``rm m.db`` keeps ``m.db.indexes``: a new journal at that path has the same generation
    and seq numbers, so only the records themselves can tell its checkpoint is not its own."""
    db = tmp_path / "m.db"
    for fruit in ("Plum", "Quince"):
        if fruit == "Quince":
            db.unlink()  # the journal goes, its index folder stays
        with MnemonStore(db, fake_embeddings()) as store:
            store.add_messages(NS, [("user", f"{fruit} {QUERY} {i}") for i in range(3)])
            texts = [h.record.text for h in store.search(QUERY, namespace=NS, k=3)]
            problem = store.index(NS).load_problem
    assert texts and all("Quince" in t for t in texts), texts
    assert problem and "a checkpoint of another journal" in problem


WRONG = [None, "abc", [], {}, 1.5, -1, True, [1, "x"], "hnsw"]
VECTOR_FIELDS = ["dim", "max_seq", "ntotal", "tombstones", "kind", "file", "sha256", "format"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from([*VECTOR_FIELDS, "generation", "namespace", "version"]),
    value=st.sampled_from([*WRONG, "<missing>"]),
)
def test_every_vector_metadata_field_with_a_wrong_type_is_rebuilt(
    seeded: Any, tmp_path_factory: pytest.TempPathFactory, field: str, value: object
) -> None:
    db = _copy(seeded, tmp_path_factory.mktemp("vec"))
    sidecar = index_folder(db, NS) / "vectors.json"
    meta = json.loads(sidecar.read_text())
    assert field in meta, f"the sidecar no longer has {field!r}: update the field list"
    if value == meta.get(field):
        return  # not a wrong value for this field
    if value == "<missing>":
        meta.pop(field)
    else:
        meta[field] = value
    sidecar.write_text(json.dumps(meta))
    ranking, rebuilds = _ranking_and_rebuilds(db)
    assert ranking == seeded[1]
    assert rebuilds == 1


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(["format", "k1", "b", "tokenizer", "sha256", "max_seq", "generation"]),
    value=st.sampled_from([*WRONG, "<missing>"]),
)
def test_every_bm25_metadata_field_with_a_wrong_type_is_rebuilt(
    seeded: Any, tmp_path_factory: pytest.TempPathFactory, field: str, value: object
) -> None:
    db = _copy(seeded, tmp_path_factory.mktemp("bm"))
    path = index_folder(db, NS) / "bm25.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["meta"].tobytes())
    assert field in meta, f"the checkpoint no longer has {field!r}: update the field list"
    if value == meta.get(field):
        return
    if value == "<missing>":
        meta.pop(field)
    else:
        meta[field] = value
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)
    ranking, rebuilds = _ranking_and_rebuilds(db)
    assert ranking == seeded[1]
    assert rebuilds == 1


def _rewrite_npz(path: Path, **changes: Any) -> None:
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(path, **arrays)


def _damage(kind: str, folder: Path) -> None:
    bm25 = folder / "bm25.npz"
    if kind == "bm25 meta a list":
        _rewrite_npz(bm25, meta=np.frombuffer(b"[1, 2]", dtype=np.uint8))
    elif kind == "negative postings":
        with np.load(bm25) as z:
            doc = z["post_doc"].copy()
        doc[: len(doc) // 2] = -1
        _rewrite_npz(bm25, post_doc=doc)  # parses, checksum no longer matches
    elif kind == "empty vocab_size":
        _rewrite_npz(bm25, vocab_size=np.zeros(0, dtype=np.int64))
    elif kind == "bm25.npz a directory":
        bm25.unlink()
        (bm25 / "inner").mkdir(parents=True)
    elif kind == "flipped faiss bytes":
        meta = json.loads((folder / "vectors.json").read_text())
        data = bytearray((folder / meta["file"]).read_bytes())
        for i in range(len(data) - 200, len(data) - 100):
            data[i] ^= 0xFF
        (folder / meta["file"]).write_bytes(bytes(data))
    elif kind == "flat labelled hnsw":
        meta = json.loads((folder / "vectors.json").read_text())
        meta["kind"] = "hnsw"
        (folder / "vectors.json").write_text(json.dumps(meta))
    elif kind == "index folder a file":
        shutil.rmtree(folder)
        folder.write_text("not a folder")


DAMAGE = [
    "bm25 meta a list",
    "negative postings",
    "empty vocab_size",
    "bm25.npz a directory",
    "flipped faiss bytes",
    "flat labelled hnsw",
    "index folder a file",
]


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_contents_are_reported_by_doctor_and_rebuilt(
    seeded: Any, tmp_path: Path, kind: str
) -> None:
    db = _copy(seeded, tmp_path)
    _damage(kind, index_folder(db, NS))
    [report] = diagnose(db, repair=False)
    assert not report.healthy, kind
    ranking, rebuilds = _ranking_and_rebuilds(db)
    assert (ranking, rebuilds) == (seeded[1], 1)
    [after] = diagnose(db, repair=False)  # the rebuild was saved: healthy now
    assert after.healthy, after.problems


def test_doctor_repairs_without_an_embedder(
    seeded: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(seeded, tmp_path)
    _damage("flipped faiss bytes", index_folder(db, NS))
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 1
    assert "checksum" in capsys.readouterr().out
    [report] = diagnose(db)
    assert report.repaired and "rebuilt" in report.repaired[0]
    assert _ranking_and_rebuilds(db) == (seeded[1], 0)
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 0
    assert ": 30 records; ok" in capsys.readouterr().out


# --- unwritable and full disks ---------------------------------------------------------------


def test_full_disk_at_save_serves_from_memory_and_never_fails_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"

    def full(self: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(BM25Index, "save", full)
    caplog.set_level(logging.WARNING)
    with MnemonStore(db, fake_embeddings()) as store:
        for i in range(3):
            result = store.ingest(NS, tagged_messages("Fig", 5, prefix=f"b{i}-"), origin="api")
            assert result.records_written
        store.index(NS).rebuild()  # a save that fails inside a rebuild, too
        assert store.search("Fig", namespace=NS, k=3)
        store.flush()
        assert store.journal.count(NS) >= 3
    warnings = [r for r in caplog.records if "No space left" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    monkeypatch.undo()  # space freed: the next open rebuilds and saves
    assert diagnose(db, repair=True)[0].repaired
    assert diagnose(db, repair=False)[0].healthy


def test_indexes_root_that_is_a_file_serves_from_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    (tmp_path / "m.db.indexes").write_text("someone else's file")
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(NS, tagged_messages("Kiwi", 4), origin="api")
        store.index(NS).save()
        assert store.search("Kiwi", namespace=NS, k=2)
    assert (tmp_path / "m.db.indexes").read_text() == "someone else's file"
    assert "serving them from memory" in caplog.text


def test_a_journal_that_cannot_be_written_still_serves_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(NS, tagged_messages("Lime", 4), origin="api")
    import mnemon_langgraph.store.embedded._store as store_module

    real = store_module.Journal

    def refusing(path: Any, **kwargs: Any) -> Journal:
        if not kwargs.get("read_only"):
            raise JournalReadOnlyError(f"journal {path} (or its folder) is read-only")
        return real(path, **kwargs)

    monkeypatch.setattr(store_module, "Journal", refusing)  # root ignores chmod
    with MnemonStore(db, fake_embeddings()) as store:
        assert store.journal.read_only
        assert store.search("Lime", namespace=NS, k=2)
        with pytest.raises(JournalReadOnlyError):
            store.ingest(NS, [Message("new", "Ada")], origin="api")


# --- concurrency and latency cliffs --------------------------------------------------------


def test_positions_stay_unique_when_another_writer_took_them_first(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with MnemonStore(db, fake_embeddings()) as a, MnemonStore(db, fake_embeddings()) as b:
        stale = a.journal.next_position  # a computed its positions before b wrote
        a.journal.next_position = lambda ns, s: 0  # type: ignore[method-assign]
        b.ingest(NS, tagged_messages("Oak", 6, prefix="b"), origin="b", pack=False)
        a.ingest(NS, tagged_messages("Elm", 6, prefix="a"), origin="a", pack=False)
        a.journal.next_position = stale  # type: ignore[method-assign]
        keys = [(r.session, r.position) for r in a.journal.records(NS)]
    assert len(keys) == len(set(keys)) == 12
    for session in {s for s, _ in keys}:
        got = sorted(p for s, p in keys if s == session)
        assert got == list(range(len(got)))


def test_summary_counts_messages_another_process_stored_first(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    messages = tagged_messages("Ash", 8)
    with MnemonStore(db, fake_embeddings()) as a, MnemonStore(db, fake_embeddings()) as b:
        a.journal.known_message_ids = lambda ns, ids: set()  # type: ignore[method-assign]
        b.ingest(NS, messages, origin="f")
        result = a.ingest(NS, messages, origin="f")
    assert (result.records_written, result.messages_skipped) == (0, 8)


def test_ann_conversion_runs_off_the_write_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    build = VectorIndex.hnsw_from.__func__  # type: ignore[attr-defined]

    def spy(cls: Any, *args: Any, **kwargs: Any) -> VectorIndex:
        threads.append(threading.current_thread().name)
        return build(cls, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "hnsw_from", classmethod(spy))
    settings_ = {"hnsw_threshold": 40}
    with MnemonStore(tmp_path / "m.db", fake_embeddings(), vector_settings=settings_) as store:
        store.ingest(NS, tagged_messages("Yew", 30, prefix="a"), origin="a", pack=False)
        index = store.index(NS)
        assert index.vectors.kind == "flat"
        store.ingest(NS, tagged_messages("Yew", 20, prefix="b"), origin="b", pack=False)
        worker = index._convert_thread
        assert worker is not None
        worker.join(timeout=60)
        assert index.vectors.kind == "hnsw" and len(index.vectors) == 50
        assert len(store.search("Yew story", namespace=NS, k=50)) == 50
    assert threads == ["mnemon-hnsw-convert"]


def test_delete_records_does_not_resave_the_index_per_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(NS, tagged_messages("Rowan", 10), origin="api", pack=False)
        store.flush()
        saves: list[int] = []
        real = BM25Index.save
        monkeypatch.setattr(
            BM25Index, "save", lambda self, *a, **k: (saves.append(1), real(self, *a, **k))[1]
        )
        ids = [r.id for r in store.journal.records(NS)]
        for rid in ids[:5]:
            assert store.delete_records(NS, [rid]) == [rid]
        assert saves == []  # no full save per call
        folder = index_folder(db, NS)
        assert not (folder / "bm25.npz").exists()  # the old checkpoint held deleted words
        assert len(store.search("Rowan", namespace=NS, k=10)) == 5
    assert len(saves) == 1  # one compacted checkpoint on close
    ranking, rebuilds = _ranking_and_rebuilds(db)
    assert rebuilds == 0 and len(ranking) == 5


def test_a_record_the_index_cannot_take_leaves_the_rest_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    real = BM25Index.add

    def picky(self: BM25Index, seqs: Any, ids: Any, texts: Any, *rest: Any) -> None:
        if any("Poison" in t for t in texts):
            raise OverflowError("Python int too large to convert to C int")
        real(self, seqs, ids, texts, *rest)

    monkeypatch.setattr(BM25Index, "add", picky)
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(NS, tagged_messages("Pine", 4), origin="a", pack=False)
        result = store.ingest(NS, [Message("Poison pill", "Ada", id="p")], origin="b")
        assert result.records_written == 1  # committed; the index degrades, not the write
        assert len(store.search("Pine", namespace=NS, k=10)) == 4
        assert store.stats()["namespaces"][0]["records"] == 5
        assert store.index(NS).skipped == set(result.record_ids)
    assert "cannot be indexed" in caplog.text
    [report] = diagnose(db, repair=False)
    assert report.problems == ["1 records missing from the index"]
