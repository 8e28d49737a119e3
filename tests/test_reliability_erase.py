"""Erase leaves nothing behind: not in any table, not in free pages, WAL or index files.

The victim namespace gets records carrying unique marker words, vectors, BM25 postings,
consolidated items (and their embeddings and links), a recorded consolidation failure whose
error quotes record text, and an audited deletion. After ``mnemon erase`` or
``MnemonStore.erase_namespace`` the test scans every cell of every table (text and bytes),
the raw SQLite file (free pages included), its ``-wal``/``-shm`` files and every file of the
index folder for the markers (raw, lower-cased as BM25 keeps them, UTF-16) and for the raw
bytes of a victim vector and item embedding. It first checks the scan *does* find them
before the erase, so the negative result means something.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import ScriptedFoldModel, derive_fold, tool_answer
from _reliability_common import (
    all_files,
    fake_embeddings,
    files_containing,
    sqlite_cells,
    tagged_messages,
    utf16,
    yes_judge,
)

from mnemon_langgraph.cli import main as cli_main
from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    EmbeddedItemStore,
    create_consolidation_graph,
)
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._index import index_folder, indexes_root
from mnemon_langgraph.store.embedded._journal import namespace_key

VICTIM = ("users", "victim@example.com")
OTHER = ("users", "victim@example.co")  # one letter shorter: a near miss
MARKERS = ["QzvMarkerAlpha7731", "Qzv-Marker-Beta-9924", "ZqvMärkerGamma"]
OTHER_MARKER = "KeepMeOmega5512"


def _needles(extra: list[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for m in MARKERS:
        out += [m.encode(), m.lower().encode(), utf16(m), utf16(m.lower())]
        out += [part.lower().encode() for part in m.split("-") if len(part) > 5]
    return out + extra


def _scan(db: Path, needles: list[bytes]) -> list[str]:
    found = []
    for table, col, raw in sqlite_cells(db):
        low = raw.lower()
        for n in needles:
            if n in raw or n.lower() in low:
                found.append(f"{table}.{col}: {n!r}")
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), *all_files(indexes_root(db))]
    return found + files_containing(files, needles)


def _failing_then_folding() -> ScriptedFoldModel:
    def script(messages: list[BaseMessage], index: int) -> Any:
        if index < 2:  # first run: both attempts fail, quoting record text in the error
            return RuntimeError(f"provider rejected: {MARKERS[0]} …")
        return tool_answer(derive_fold(messages))

    return ScriptedFoldModel(script=script)


def _populate(db: Path) -> tuple[list[bytes], int]:
    store = MnemonStore(db, fake_embeddings())
    try:
        extra = " ".join(MARKERS)
        store.ingest(VICTIM, tagged_messages("victim", 12, extra=extra), origin="chat")
        store.ingest(OTHER, tagged_messages("other", 6, extra=OTHER_MARKER), origin="chat")
        victim_ids = [r.id for r in store.journal.records(VICTIM)]
        store.delete_records(VICTIM, victim_ids[:1], reason="user asked")
        items = EmbeddedItemStore(store.journal, store.embeddings)
        model = _failing_then_folding()
        settings = ConsolidationSettings(batch_chars=600)
        graph = create_consolidation_graph(model=model, store=items, settings=settings)
        first = graph.invoke({"namespace": VICTIM})["report"]
        assert first.failures  # a failure row quoting record text exists
        graph.invoke({"namespace": VICTIM})
        graph.invoke({"namespace": OTHER})
        assert items.count(VICTIM) > 0 and items.count(OTHER) > 0
        view = create_read_graph(source=store, judge=yes_judge(), items=items).invoke(
            {"messages": [HumanMessage(f"what about {MARKERS[0]}?")]},
            context=ReadContext(namespace=VICTIM),
        )["view"]
        assert MARKERS[0] in view.text
        _, vecs = next(store.journal.iter_vectors(VICTIM))
        conn = sqlite3.connect(db)
        try:
            emb = conn.execute(
                "SELECT embedding FROM items WHERE namespace = ? AND embedding IS NOT NULL",
                (namespace_key(VICTIM),),
            ).fetchone()[0]
        finally:
            conn.close()
        other_count = store.journal.count(OTHER)
        store.flush()
    finally:
        store.close()
    return [vecs[0].tobytes(), bytes(emb)], other_count


def _assert_other_intact(db: Path, other_count: int) -> None:
    with MnemonStore(db, fake_embeddings()) as store:
        assert store.journal.count(OTHER) == other_count
        hits = store.search(OTHER_MARKER, namespace=OTHER, k=3)
        assert hits and OTHER_MARKER in hits[0].record.text
        assert EmbeddedItemStore(store.journal, store.embeddings).count(OTHER) > 0
        assert store.journal.count(VICTIM) == 0
        assert store.search(MARKERS[0], namespace=VICTIM) == []
        audit = store.journal.audit_log(VICTIM)
    # the trail is append-only: the erase added its row after the earlier ones (kept)
    assert [(a.action, a.record_ids, a.message_ids, a.reason) for a in audit[-1:]] == [
        ("erase_namespace", (), (), "")
    ]
    assert audit[-1].count > 0
    # the erase's one row says what it removed (no "delete_item" row per erased item)
    assert [a.action for a in audit] == ["delete_records", "erase_namespace"]


def _audit_rows(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT * FROM audit ORDER BY id").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["cli", "python"])
def test_erase_leaves_no_trace(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "journal.db"
    blobs, other_count = _populate(db)
    needles = _needles(blobs)
    before = _scan(db, needles)
    assert any("records.text" in f for f in before)
    assert any(str(index_folder(db, VICTIM)) in f for f in before)  # BM25 vocabulary
    assert any("items.embedding" in f for f in before) and any(
        "vectors.vector" in f for f in before
    )
    assert any("consolidation_failures.error" in f for f in before)
    earlier = _audit_rows(db)
    assert earlier  # the deletion and the consolidation's item deletions

    if how == "cli":
        args = ["erase", "--db", str(db), "--namespace", VICTIM[0], "--namespace", VICTIM[1]]
        assert cli_main(args) == 1  # no --yes and no terminal: refused, nothing erased
        assert _scan(db, needles)
        assert cli_main([*args, "--yes"]) == 0
        assert "erased 11 records" in capsys.readouterr().out
        assert _scan(db, needles) == []
    else:
        store = MnemonStore(db, fake_embeddings())
        assert store.erase_namespace(VICTIM, actor="gdpr-request") == 11
        assert _scan(db, needles) == []  # also while the store is still open
        store.close()
    assert not index_folder(db, VICTIM).exists()
    assert _scan(db, needles) == []
    after = _audit_rows(db)
    assert after[: len(earlier)] == earlier and len(after) == len(earlier) + 1
    _assert_other_intact(db, other_count)
    assert _scan(db, needles) == []  # reopening and searching did not resurrect anything


def test_cli_erase_of_missing_journal_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "nope.db"
    assert cli_main(["erase", "--db", str(db), "--namespace", "x", "--yes"]) == 2
    assert not db.exists()


def test_erase_by_another_process_is_not_undone_when_a_writer_closes(tmp_path: Path) -> None:
    """A long-running store with unsaved index additions must not write erased text back.

    (An agent server holds the store open; an operator runs ``mnemon erase`` meanwhile.)
    """
    db = tmp_path / "server.db"
    server = MnemonStore(db, fake_embeddings())
    server.ingest(OTHER, tagged_messages("other", 3, extra=OTHER_MARKER), origin="chat")
    server.ingest(VICTIM, tagged_messages("victim", 2, prefix="first"), origin="chat")
    server.ingest(VICTIM, tagged_messages("victim", 5, extra=" ".join(MARKERS)), origin="chat")
    assert server.index(VICTIM).unsaved > 0  # additions not yet checkpointed
    assert (
        cli_main(
            ["erase", "--db", str(db), "--namespace", VICTIM[0], "--namespace", VICTIM[1], "--yes"]
        )
        == 0
    )
    server.close()  # flushes unsaved index changes
    assert _scan(db, _needles([])) == []
    with MnemonStore(db, fake_embeddings()) as again:
        assert again.search(MARKERS[0], namespace=VICTIM) == []
        assert again.search(OTHER_MARKER, namespace=OTHER)
