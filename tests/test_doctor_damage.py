"""`mnemon doctor` on a damaged journal: it reports per namespace, never repairs into data loss.

Each damage kind is made on a copy of one seeded journal (a real SQLite file with saved
index folders), then checked with ``--check`` and repaired; what the doctor could not
rebuild is still there afterwards.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _reliability_common import fake_embeddings, tagged_messages

from mnemon_langgraph.cli import main as cli_main
from mnemon_langgraph.cli._doctor import diagnose, journal_check
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._index import index_folder, indexes_root
from mnemon_langgraph.types import Message

ADA = ("users", "ada@example.com")
BO = ("users", "bo@example.com")
QUERY = "apple garden story"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("seed") / "m.db"
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(ADA, tagged_messages("Plum", 12), origin="api", pack=False)
        store.ingest(BO, tagged_messages("Fig", 8, prefix="b"), origin="api", pack=False)
        store.search(QUERY, namespace=ADA, k=5)
        store.search(QUERY, namespace=BO, k=5)
    return db


def _copy(seeded: Path, tmp: Path) -> Path:
    shutil.copy(seeded, tmp / "m.db")
    shutil.copytree(indexes_root(seeded), tmp / "m.db.indexes")
    return tmp / "m.db"


def _sql(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            for statement in statements:
                conn.execute(statement)
    finally:
        conn.close()


def _folders(db: Path) -> set[str]:
    return {p.name for p in indexes_root(db).iterdir()}


def _search_ids(db: Path, ns: tuple[str, ...]) -> list[str]:
    with MnemonStore(db, fake_embeddings()) as store:
        return [h.record.id for h in store.search(QUERY, namespace=ns, k=5)]


def test_zero_byte_journal_is_reported_and_nothing_is_removed(
    seeded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(seeded, tmp_path)
    folders = _folders(db)
    db.write_bytes(b"")
    assert cli_main(["doctor", "--db", str(db)]) == 1
    out = capsys.readouterr().out
    assert "empty (0 bytes)" in out and "nothing repaired" in out
    assert db.stat().st_size == 0, "the doctor wrote a schema into the empty journal"
    assert _folders(db) == folders and len(folders) == 2
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 1


def test_a_file_that_is_not_sqlite_is_refused_without_repairs(seeded: Path, tmp_path: Path) -> None:
    db = _copy(seeded, tmp_path)
    folders = _folders(db)
    db.write_bytes(b"not a database at all\n" * 100)
    [report] = diagnose(db)
    assert report.namespace == ["<journal>"]
    assert "not an SQLite database" in report.problems[0] and report.unrepairable
    assert _folders(db) == folders


def test_a_corrupted_page_fails_the_integrity_check_and_repairs_nothing(
    seeded: Path, tmp_path: Path
) -> None:
    db = _copy(seeded, tmp_path)
    folders = _folders(db)
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 3 * page
    for i in range(2 * page + 16, 3 * page - 16):  # one b-tree page overwritten with noise
        data[i] = (i * 131) % 251
    db.write_bytes(bytes(data))
    [report] = diagnose(db)
    assert report.problems and not report.healthy
    assert any("integrity" in p or "cannot be read" in p for p in report.problems), report
    assert report.unrepairable and not report.repaired
    assert _folders(db) == folders


def test_a_vector_of_the_wrong_length_is_caught_by_check_and_not_rebuilt(
    seeded: Path, tmp_path: Path
) -> None:
    db = _copy(seeded, tmp_path)
    conn = sqlite3.connect(db)
    [(rid,)] = conn.execute("SELECT id FROM records ORDER BY seq LIMIT 1").fetchall()
    conn.close()
    _sql(db, f"UPDATE vectors SET vector = zeroblob(12) WHERE record_id = '{rid}'")
    check = journal_check(db)
    assert check.bad_vectors == {ADA: 1}, check
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 1
    reports = {tuple(r.namespace): r for r in diagnose(db)}
    assert reports[ADA].unrepairable and not reports[ADA].repaired
    assert reports[BO].healthy, "the other namespace is checked on its own"
    assert _search_ids(db, BO), "the healthy namespace still answers"


def test_a_changed_embedding_dimension_is_named_as_such(seeded: Path, tmp_path: Path) -> None:
    db = _copy(seeded, tmp_path)
    _sql(db, "UPDATE meta SET value = '7' WHERE key = 'embedding_dim'")
    reports = {tuple(r.namespace): r for r in diagnose(db)}
    for ns, n in ((ADA, 12), (BO, 8)):
        text = " ".join(reports[ns].problems)
        assert f"{n} stored vectors of the wrong length" in text, reports[ns]
        assert reports[ns].unrepairable
    assert "not the model's 7" in " ".join(journal_check(db).problems)


def test_an_undecodable_namespace_key_stops_neither_mode(
    seeded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(seeded, tmp_path)
    folders = _folders(db)
    _sql(
        db,
        "UPDATE records SET namespace = '[\"users\", oops' WHERE namespace = "
        '\'["users","bo@example.com"]\'',
    )
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 1
    out = capsys.readouterr().out
    assert "does not decode" in out and "users / ada@example.com: 12 records; ok" in out
    assert cli_main(["doctor", "--db", str(db)]) == 1  # something is left it cannot repair
    assert _folders(db) == folders, "Bo's index folder may be the undecodable namespace's"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 20
    conn.close()


def test_a_message_row_naming_no_record_is_found_and_removed(seeded: Path, tmp_path: Path) -> None:
    db = _copy(seeded, tmp_path)
    _sql(
        db,
        "INSERT INTO messages (namespace, message_id, record_id) "
        "VALUES ('[\"users\",\"ada@example.com\"]', 'ghost', 'no-such-record')",
    )
    check = journal_check(db)
    assert check.orphan_rows == {"messages": 1}
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 1
    [journal_report, *rest] = diagnose(db)
    assert journal_report.namespace == ["<journal>"] and journal_report.repaired
    assert all(r.healthy for r in rest) and len(rest) == 2
    assert journal_check(db).orphan_rows == {}
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 0


def test_a_healthy_journal_reports_ok_and_exits_zero(
    seeded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(seeded, tmp_path)
    check = journal_check(db)
    assert (check.problems, check.usable, check.namespaces) == ([], True, [ADA, BO])
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 0
    assert cli_main(["doctor", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "users / ada@example.com: 12 records; ok" in out
    assert "users / bo@example.com: 8 records; ok" in out


def test_an_erased_namespace_folder_is_still_removed(seeded: Path, tmp_path: Path) -> None:
    db = _copy(seeded, tmp_path)
    _sql(db, 'DELETE FROM records WHERE namespace = \'["users","bo@example.com"]\'')
    bo_folder = index_folder(db, BO).name
    assert bo_folder in _folders(db)
    reports: list[Any] = diagnose(db)
    assert any(r.repaired == ["removed"] for r in reports), reports
    assert bo_folder not in _folders(db)


def test_a_vector_row_overwritten_with_17_bytes_is_explained_by_search_and_re_embedded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A journal as a user's is: written through the default embedder (here the fake one
    # MNEMON_EMBEDDINGS=fake selects, so the doctor can build the same model again).
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "m.db"
    with MnemonStore(db) as store:
        store.ingest(ADA, tagged_messages("Plum", 6), origin="api", pack=False)
        store.ingest(ADA, [Message("I adopted a grey cat called Pixel.", "Ada", id="pix")],
                     source="api")  # fmt: skip
        pixel = next(r.id for r in store.records(ADA) if "Pixel" in r.text)
        before = store.stored_vectors(ADA, [pixel])[pixel]
    _sql(db, f"UPDATE vectors SET vector = randomblob(17) WHERE record_id = '{pixel}'")
    shutil.rmtree(indexes_root(db))
    ns_args = ["--namespace", ADA[0], "--namespace", ADA[1]]
    search = ["search", "grey cat Pixel", "--db", str(db), *ns_args]
    capsys.readouterr()
    assert cli_main(search) == 2
    err = capsys.readouterr().err
    assert f"record {pixel}" in err and "mnemon doctor" in err, err
    assert "buffer size" not in err and len(err.strip().splitlines()) == 1
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 1
    assert "1 stored vectors of the wrong length" in capsys.readouterr().out
    assert cli_main(["doctor", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "re-embedded 1 records" in out and "rebuilt from the journal" in out, out
    assert journal_check(db).bad_vectors == {}
    assert cli_main(["doctor", "--db", str(db), "--check"]) == 0
    capsys.readouterr()
    with MnemonStore(db) as store:
        after = store.stored_vectors(ADA, [pixel])[pixel]
        hits = store.search("grey cat Pixel", namespace=ADA, k=3)
    assert [round(float(x), 5) for x in after] == [round(float(x), 5) for x in before]
    assert hits and hits[0].record.id == pixel
    assert cli_main(search) == 0
    assert "Pixel" in capsys.readouterr().out
