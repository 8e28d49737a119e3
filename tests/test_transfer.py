"""Moving a memory: export to JSONL, import into either backend, and the commands around it.

The round trip SQLite → JSONL → PostgreSQL → JSONL must give the same bytes (records with
their ids, sessions, dates and sources; long messages cut in pieces; consolidated items with
their links and the consolidation watermark); a second import writes nothing; a malformed
file is refused with its line number before anything is written.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model
from _reliability_common import fake_embeddings

from mnemon_langgraph import MnemonStore
from mnemon_langgraph.cli import main
from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    create_consolidation_graph,
    item_store_for,
)
from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.transfer import export_jsonl, export_lines, import_jsonl
from mnemon_langgraph.types import Message

ADA = ("users", "ada@example.com")


def _messages() -> list[Message]:
    """Two sessions, a dated message with microseconds, an undated one, and two messages
    longer than a record: one cut between sentences, one (a 900-letter token) cut hard."""
    day = datetime(2024, 3, 2, 18, 20, 0, 123456)
    long_words = " ".join(f"Sentence number {i} is here." for i in range(60))
    return [
        Message("I adopted a grey cat called Pixel.", "Ada", id="a1", timestamp=day, session=1),
        Message("Lovely! How old is she?", "assistant", role="assistant", id="a2", session=1),
        Message("Two years. I live in Lyon: near the river.", "Ada", id="a3", session=1),
        Message(long_words, "Ada", id="a4", timestamp=datetime(2024, 4, 1, 9), session=2),
        Message("x" * 900, "Ada: the 2nd", id="a5", session=2),
        Message("Noted.", "assistant", role="assistant", id="a6", session=2),
    ]


def _fill(store: MnemonStore) -> None:
    store.ingest(ADA, _messages()[:3], origin="chat")
    store.ingest(ADA, _messages()[3:], origin="notes.jsonl")
    _consolidate(store)
    # Written after the consolidation run: the watermark stops before these.
    store.add_messages(ADA, [("user", "I moved to Rotterdam."), ("assistant", "Congrats!")])
    store.ingest(("users", "bo"), [Message("Bo's own memory.", "Bo", id="b1")], origin="x")


def _consolidate(store: MnemonStore) -> None:
    graph = create_consolidation_graph(
        model=deriving_model(), store=store, settings=ConsolidationSettings(batch_chars=400)
    )
    assert graph.invoke({"namespace": ADA})["report"].items_added > 0


@pytest.fixture
def source(tmp_path: Path) -> Iterator[MnemonStore]:
    with MnemonStore(tmp_path / "source.db", fake_embeddings()) as store:
        _fill(store)
        yield store


def _export(store: MnemonStore, ns: tuple[str, ...] = ADA) -> str:
    buf = io.StringIO()
    export_jsonl(store, ns, buf)
    return buf.getvalue()


def _table_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_export_holds_messages_pieces_items_and_the_watermark(source: MnemonStore) -> None:
    lines = _table_of(_export(source))
    header, body = lines[0], lines[1:]
    assert header["format"] == "mnemon-memory" and header["version"] == 1
    assert header["namespace"] == list(ADA)
    messages = [x for x in body if x["type"] == "message"]
    items = [x for x in body if x["type"] == "item"]
    assert len(messages) == header["lines"] and len(items) == header["items"] > 0
    assert {m["id"] for m in messages} == {"a1", "a2", "a3", "a4", "a5", "a6"} | {
        m for r in source.records(ADA) for m in r.message_ids
    }
    assert [m["part"] for m in messages if m["id"] == "a5"] == [0, 1]  # cut hard
    assert len([m for m in messages if m["id"] == "a4"]) >= 3
    first = messages[0]
    assert first["date"] == "2024-03-02T18:20:00.123456" and first["source"] == "chat"
    assert next(m for m in messages if m["id"] == "a5")["speaker"] == "Ada: the 2nd"
    # Every item links to records of the file; the watermark names a record before the
    # turn written after the consolidation run.
    record_ids = [m["record"] for m in messages]
    assert all(set(it["record_ids"]) <= set(record_ids) for it in items)
    assert header["consolidated_through"] in record_ids
    assert header["consolidated_through"] != record_ids[-1]
    assert all(x["namespace"] == list(ADA) for x in body)  # Bo's memory stays out


def test_sqlite_to_postgres_and_back_is_byte_identical(
    source: MnemonStore, postgres_url: str
) -> None:
    first = _export(source)
    with MnemonStore(postgres_url, fake_embeddings()) as pg:
        result = import_jsonl(pg, io.StringIO(first))
        assert result.records_written == source.count(ADA) and result.items_written > 0
        assert result.positions_renumbered == 0
        assert _export(pg) == first
        # the watermark moved to the same record: consolidation has only the new turn left
        items = item_store_for(pg)
        try:
            last_folded = json.loads(first.splitlines()[0])["consolidated_through"]
            assert items.watermark(ADA) == pg.get_records(ADA, [last_folded])[0].seq
        finally:
            items.close()
        # idempotent: a second import writes nothing and changes nothing
        again = import_jsonl(pg, io.StringIO(first))
        assert (again.records_written, again.items_written) == (0, 0)
        assert again.messages_skipped == json.loads(first.splitlines()[0])["messages"]
        assert _export(pg) == first
        assert pg.namespaces() == [ADA]
        # the imported memory answers searches
        hits = pg.search("grey cat Pixel", namespace=ADA, k=3)
        assert any("Pixel" in h.record.text for h in hits)


def test_import_into_sqlite_is_identical_and_idempotent(
    source: MnemonStore, tmp_path: Path
) -> None:
    first = _export(source)
    with MnemonStore(tmp_path / "target.db", fake_embeddings()) as target:
        assert import_jsonl(target, io.StringIO(first)).records_written == source.count(ADA)
        assert _export(target) == first
        assert import_jsonl(target, first.splitlines()).records_written == 0
        assert _export(target) == first
        assert [r.id for r in target.records(ADA)] == [r.id for r in source.records(ADA)]


def test_a_deleted_record_leaves_a_gap_that_the_import_closes_in_order(
    tmp_path: Path,
) -> None:
    with MnemonStore(tmp_path / "gap.db", fake_embeddings()) as store:
        for i in range(4):
            store.ingest(ADA, [Message(f"turn {i}", "Ada", id=f"t{i}", session=1)], origin="c")
        second = [r.id for r in store.records(ADA)][1]
        store.delete_records(ADA, [second])
        text = _export(store)
    with MnemonStore(tmp_path / "closed.db", fake_embeddings()) as target:
        result = import_jsonl(target, io.StringIO(text))
        assert result.positions_renumbered == 2
        stored = list(target.records(ADA))
        assert [r.position for r in stored] == [0, 1, 2]
        assert [r.message_ids for r in stored] == [("t0",), ("t2",), ("t3",)]


# --- refused files: the line number, and nothing written -------------------------------


def _damaged(text: str, damage: str) -> tuple[list[str], int]:
    """``text`` with one kind of damage, and the line number the error must name."""
    lines = text.splitlines()
    rows = [json.loads(x) for x in lines]
    where = 4
    row = rows[where - 1]
    if damage == "not json":
        lines[where - 1] = lines[where - 1][:-5]
    elif damage == "missing field":
        del row["session"]
    elif damage == "unknown field":
        row["extra"] = 1
    elif damage == "bad role":
        row["role"] = "wizard"
    elif damage == "bad session":
        row["session"] = "2"
    elif damage == "bad date":
        row["date"] = "yesterday"
    elif damage == "other namespace":
        row["namespace"] = ["users", "bo"]
    elif damage == "unknown type":
        row["type"] = "note"
    elif damage == "forged record id":  # everywhere: its lines, item links, the header
        where = next(i for i, r in enumerate(rows, 1) if r.get("record") == row["record"])
        return [x.replace(row["record"], "r-" + "0" * 32) for x in lines], where
    elif damage == "text with a newline":
        row["text"] = row["text"] + "\nsecond line"
    elif damage == "message twice":
        row["id"] = rows[1]["id"]
    elif damage == "not an object":
        lines[where - 1] = "[1, 2]"
    if damage not in ("not json", "not an object"):
        lines[where - 1] = json.dumps(row)
    return lines, where


DAMAGES = [
    "not json",
    "not an object",
    "missing field",
    "unknown field",
    "bad role",
    "bad session",
    "bad date",
    "other namespace",
    "unknown type",
    "forged record id",
    "text with a newline",
    "message twice",
]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_malformed_line_is_refused_with_its_number_and_nothing_is_written(
    source: MnemonStore, tmp_path: Path, damage: str
) -> None:
    lines, where = _damaged(_export(source), damage)
    with MnemonStore(tmp_path / "t.db", fake_embeddings()) as target:
        with pytest.raises(InputError) as caught:
            import_jsonl(target, lines, name="ada.jsonl")
        message = str(caught.value)
        assert f"ada.jsonl:{where}:" in message
        if damage == "forged record id":  # found when the record is rebuilt
            assert "cannot be stored as the file says" in message
        assert target.namespaces() == [] and target.count(ADA) == 0


def test_a_truncated_file_a_foreign_header_and_an_empty_file_are_refused(
    source: MnemonStore, tmp_path: Path
) -> None:
    lines = _export(source).splitlines()
    with MnemonStore(tmp_path / "t.db", fake_embeddings()) as target:
        with pytest.raises(InputError, match="truncated or edited"):
            import_jsonl(target, lines[:-3])
        with pytest.raises(InputError, match=":1: not a mnemon export"):
            import_jsonl(target, lines[1:])
        newer = json.loads(lines[0]) | {"version": 2}
        with pytest.raises(InputError, match=":1: export format version 2"):
            import_jsonl(target, [json.dumps(newer), *lines[1:]])
        with pytest.raises(InputError, match="empty file"):
            import_jsonl(target, [])
        assert target.namespaces() == []


def test_a_store_that_would_cut_records_differently_is_refused(
    source: MnemonStore, tmp_path: Path
) -> None:
    text = _export(source)
    with MnemonStore(tmp_path / "small.db", fake_embeddings(), record_chars=300) as target:
        with pytest.raises(ConfigurationError, match="record_chars=600"):
            import_jsonl(target, io.StringIO(text))
        assert target.namespaces() == []


# --- the commands -----------------------------------------------------------------------


@pytest.fixture
def cli_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "cli.db"
    with MnemonStore(db) as store:
        store.ingest(ADA, _messages(), origin="chat")
        store.ingest(("bo",), [Message("Bo likes tea.", "Bo", id="b1")], origin="chat")
    return str(db)


NS_ARGS = ["--namespace", ADA[0], "--namespace", ADA[1]]


def test_cli_export_import_round_trip_through_a_file_and_stdout(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ada.jsonl"
    assert main(["export", "--db", cli_db, *NS_ARGS, "--out", str(out)]) == 0
    assert "exported namespace" in capsys.readouterr().err
    assert main(["export", "--db", cli_db, *NS_ARGS]) == 0
    assert capsys.readouterr().out == out.read_text(encoding="utf-8")
    target = str(tmp_path / "new.db")
    assert main(["import", str(out), "--db", target, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["records_written"] > 0 and result["namespace"] == list(ADA)
    assert main(["import", str(out), "--db", target]) == 0
    assert "0 records written" in capsys.readouterr().out
    assert main(["export", "--db", target, *NS_ARGS]) == 0
    assert capsys.readouterr().out == out.read_text(encoding="utf-8")


def test_cli_export_out_dash_is_stdout_not_a_file_named_dash(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["export", "--db", cli_db, *NS_ARGS]) == 0
    expected = capsys.readouterr().out
    assert expected.count("\n") > 2
    assert main(["export", "--db", cli_db, *NS_ARGS, "--out", "-"]) == 0
    out, err = capsys.readouterr()
    assert out == expected and err == ""
    assert not (tmp_path / "-").exists()


def test_cli_import_refuses_a_bad_line_with_exit_2_and_writes_nothing(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ada.jsonl"
    assert main(["export", "--db", cli_db, *NS_ARGS, "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"role":"', '"role":"x')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "new.db"
    capsys.readouterr()
    assert main(["import", str(bad), "--db", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: role must be one of" in err and len(err.strip().splitlines()) == 1
    assert not target.exists()  # checked before the journal was even created
    bad.write_bytes(b'{"format": 1}\n\xff\xfe\n')
    assert main(["import", str(bad), "--db", str(target)]) == 2
    assert ":2: not UTF-8" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "missing.jsonl"), "--db", str(target)]) == 2


def test_cli_export_of_an_unknown_namespace_is_an_error(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--db", cli_db, "--namespace", "nobody"]) == 2
    assert "holds no records" in capsys.readouterr().err


def test_cli_list_counts_records_messages_sessions_and_dates(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with MnemonStore(cli_db) as store:
        want = store.count(ADA)
    assert main(["list", "--db", cli_db, "--json"]) == 0
    rows = {tuple(r["namespace"]): r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {ADA, ("bo",)}
    ada = rows[ADA]
    assert ada["records"] == want and ada["messages"] == 6 and ada["sessions"] == 2
    assert ada["first_date"] == "2024-03-02T18:20:00.123456"
    assert ada["last_date"] == "2024-04-01T09:00:00"
    assert rows[("bo",)]["first_date"] is None
    assert main(["list", "--db", cli_db]) == 0
    text = capsys.readouterr().out
    assert '["users", "ada@example.com"]:' in text and "2024-03-02 .. 2024-04-01" in text


def test_cli_list_on_postgres(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with MnemonStore(postgres_url, fake_embeddings()) as store:
        store.ingest(ADA, _messages()[:3], origin="chat")
    assert main(["list", "--db", postgres_url, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["namespace"], r["messages"]) for r in rows] == [(list(ADA), 3)]


def test_cli_explain_tells_a_records_story_and_refuses_unknown_ids(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with MnemonStore(cli_db) as store:
        pixel = next(r for r in store.records(ADA) if "Pixel" in r.text)
    assert main(["explain", pixel.id[:10], "What is my cat called?", "--db", cli_db, *NS_ARGS]) in (
        0,
        1,
    )
    text = capsys.readouterr().out
    assert text.startswith(f"record {pixel.id}:") and "pooled in round" in text
    assert main(["explain", pixel.id, "cat?", "--db", cli_db, *NS_ARGS, "--json"]) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    assert data["record"] == pixel.id and data["pool"]["id"] == pixel.id
    assert isinstance(data["in_view"], bool) and data["judgments"]
    # an id the namespace does not hold (another namespace's, or none) is an error
    with MnemonStore(cli_db) as store:
        bo_record = next(iter(store.records(("bo",)))).id
    for unknown in ("r-nonexist", bo_record):
        assert main(["explain", unknown, "cat?", "--db", cli_db, *NS_ARGS]) == 2
        assert "unknown record id" in capsys.readouterr().err


def test_export_lines_are_what_export_jsonl_writes(source: MnemonStore) -> None:
    assert "\n".join(export_lines(source, ADA)) + "\n" == _export(source)


def test_cli_export_loads_no_model_and_matches_the_python_export(
    source: MnemonStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The journal was written by a fake embedder and the default (MiniLM) is asked for:
    # a reading command must open it anyway, and never embed.
    monkeypatch.delenv("MNEMON_EMBEDDINGS", raising=False)
    assert main(["export", "--db", str(source.path), *NS_ARGS]) == 0
    out = capsys.readouterr().out
    assert out == _export(source) and json.loads(out.splitlines()[0])["items"] > 0
    assert main(["list", "--db", str(source.path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


# --- the BaseStore's key-value items move with the memory ------------------------------------

KV_NS = ("users", "ada")


def _kv_source(tmp_path: Path) -> MnemonStore:
    from mnemon_langgraph import MnemonBaseStore

    store = MnemonStore(tmp_path / "kv.db", fake_embeddings())
    store.ingest(KV_NS, _messages()[:3], origin="chat")
    with MnemonBaseStore(store) as base:
        base.put(KV_NS, "profile", {"text": "Ada prefers green tea.", "age": 31})
        base.put(KV_NS, "secret-note", {"text": "not searchable"}, index=False)
        base.put(("users", "bo"), "profile", {"text": "Bo's own item."})
    return store


def test_key_value_items_move_sqlite_to_postgres_byte_identical(
    tmp_path: Path, postgres_url: str
) -> None:
    from mnemon_langgraph import MnemonBaseStore

    with _kv_source(tmp_path) as source:
        first = _export(source, KV_NS)
        with MnemonBaseStore(source) as base:
            before = {k: base.get(KV_NS, k) for k in ("profile", "secret-note")}
    rows = _table_of(first)
    assert rows[0]["kv_items"] == 2
    kv = [r for r in rows[1:] if r["type"] == "kv"]
    assert [r["key"] for r in kv] == ["profile", "secret-note"]
    assert kv[1]["index"] is False and kv[0]["value"]["age"] == 31
    with MnemonStore(postgres_url, fake_embeddings()) as pg:
        result = import_jsonl(pg, io.StringIO(first))
        assert result.kv_items_written == 2
        assert _export(pg, KV_NS) == first
        again = import_jsonl(pg, io.StringIO(first))  # idempotent: same items, same times
        assert again.records_written == 0
        assert _export(pg, KV_NS) == first
        with MnemonBaseStore(pg) as base:
            for key, item in before.items():
                moved = base.get(KV_NS, key)
                assert item is not None and moved is not None
                assert (moved.value, moved.created_at, moved.updated_at) == (
                    item.value,
                    item.created_at,
                    item.updated_at,
                )
            assert base.get(("users", "bo"), "profile") is None  # another user's: not moved
            assert [h.key for h in base.search(KV_NS, query="green tea", limit=1)] == ["profile"]


def test_a_key_value_item_with_a_ttl_moves_with_its_expiry(tmp_path: Path) -> None:
    from mnemon_langgraph import MnemonBaseStore

    with _kv_source(tmp_path) as source:
        with MnemonBaseStore(source) as base:
            base.put(KV_NS, "mood", {"text": "Ada is tired today"}, ttl=60 * 24)
        first = _export(source, KV_NS)
    [mood] = [r for r in _table_of(first)[1:] if r.get("key") == "mood"]
    assert mood["ttl"] == 1440.0 and mood["expires_at"]
    with MnemonStore(tmp_path / "copy.db", fake_embeddings()) as copy:
        assert import_jsonl(copy, io.StringIO(first)).kv_items_written == 3
        assert _export(copy, KV_NS) == first  # the expiry came along, unchanged


@pytest.mark.parametrize("damage", ["value not an object", "bad time", "missing index"])
def test_a_malformed_kv_line_is_refused_with_its_number_and_nothing_is_written(
    tmp_path: Path, damage: str
) -> None:
    from mnemon_langgraph import MnemonBaseStore

    with _kv_source(tmp_path) as source:
        lines = _export(source, KV_NS).splitlines()
    where = len(lines)  # the last line: the second kv item
    row = json.loads(lines[-1])
    if damage == "value not an object":
        row["value"] = ["a", "list"]
    elif damage == "bad time":
        row["created_at"] = "last tuesday"
    else:
        del row["index"]
    lines[-1] = json.dumps(row)
    with MnemonStore(tmp_path / "t.db", fake_embeddings()) as target:
        with pytest.raises(InputError, match=f"kv.jsonl:{where}:"):
            import_jsonl(target, lines, name="kv.jsonl")
        assert target.namespaces() == [] and target.count(KV_NS) == 0
        with MnemonBaseStore(target) as base:
            assert base.get(KV_NS, "profile") is None


# --- hostile files: everything is checked before the first write ----------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "target.db")
    return str(request.getfixturevalue("postgres_url"))


def _nested_value(depth: int) -> dict[str, Any]:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def _hostile(lines: list[str], damage: str) -> tuple[list[str], int, str]:
    """``lines`` (a KV_NS export: messages, then two kv lines) with one hostile edit, the
    line number the error must name and a phrase it must hold."""
    rows = [json.loads(x) for x in lines]
    last = len(lines)
    if damage == "kv value nested 600 levels":
        rows[-1]["value"] = _nested_value(600)
        want = "nested more than 100 levels"
    elif damage == "kv value nested past the parser":
        lines = [*lines[:-1], lines[-1].replace('"value":', '"value":' + "[" * 100_000, 1)]
        return lines, last, "nested too deeply"
    elif damage == "kv time overflows in UTC":
        rows[-1]["created_at"] = "0001-01-01T00:00:00+05:00"
        want = "out of range"
    elif damage == "kv key of 3,000 characters":
        rows[-1]["key"] = "".join(chr(97 + (i * 7919) % 26) for i in range(3000))
        want = "item key too long"
    elif damage == "kv under the reserved root":
        rows[-1]["namespace"] = ["langgraph", "ada"]
        rows[0]["namespace"] = ["langgraph", "ada"]
        for row in rows[1:]:
            row["namespace"] = ["langgraph", "ada"]
        want = "reserved"
    else:  # a namespace within the part limit, too long to store
        six = [chr(97 + i) * 512 for i in range(6)]
        rows[0]["namespace"] = six
        return [json.dumps(rows[0]), *lines[1:]], 1, "namespace too long to store"
    where = last if damage != "kv under the reserved root" else last - 1
    return [json.dumps(r) for r in rows], where, want


HOSTILE = [
    "kv value nested 600 levels",
    "kv value nested past the parser",
    "kv time overflows in UTC",
    "kv key of 3,000 characters",
    "kv under the reserved root",
    "namespace of six 512-character parts",
]


@pytest.mark.parametrize("damage", HOSTILE)
def test_a_hostile_file_is_refused_with_its_line_and_writes_nothing(
    tmp_path: Path, target_url: str, damage: str
) -> None:
    from mnemon_langgraph import MnemonBaseStore

    with _kv_source(tmp_path) as source:
        lines = _export(source, KV_NS).splitlines()
    bad, where, want = _hostile(lines, damage)
    with MnemonStore(target_url, fake_embeddings()) as target:
        with pytest.raises(InputError) as caught:
            import_jsonl(target, bad, name="kv.jsonl")
        assert f"kv.jsonl:{where}:" in str(caught.value) and want in str(caught.value)
        assert target.namespaces() == []  # no record, no namespace
        items = item_store_for(target)
        try:
            assert items.watermark(KV_NS) == 0 and items.all_items(KV_NS) == []
        finally:
            items.close()
        with MnemonBaseStore(target) as base:
            assert base.search(("users",)) == []


def test_an_item_id_of_another_namespace_is_refused_not_dropped(
    source: MnemonStore, target_url: str
) -> None:
    from mnemon_langgraph.items import IndexItem

    lines = _export(source).splitlines()
    rows = [json.loads(x) for x in lines]
    first_item = next(i for i, r in enumerate(rows) if r.get("type") == "item")
    with MnemonStore(target_url, fake_embeddings()) as target:
        bo = ("users", "bo")
        target.ingest(bo, [Message("Bo keeps bees.", "Bo", id="b1")], origin="x")
        record = next(iter(target.records(bo)))
        bos = IndexItem(id=rows[first_item]["id"], namespace=bo, kind="instruction",
                        text="Bo keeps bees.", record_ids=(record.id,))  # fmt: skip
        items = item_store_for(target)
        try:
            items.commit_batch(bo, expected_watermark=0, new_watermark=0, new_items=[bos],
                               new_vectors=items.embed_items([bos]))  # fmt: skip
            with pytest.raises(InputError) as caught:
                import_jsonl(target, lines, name="ada.jsonl")
            assert f"ada.jsonl:{first_item + 1}: item {bos.id}" in str(caught.value)
            assert "another namespace" in str(caught.value)
            assert target.namespaces() == [bo] and items.all_items(ADA) == []
            assert [it.text for it in items.all_items(bo)] == ["Bo keeps bees."]
        finally:
            items.close()


def test_cli_a_record_chars_mismatch_leaves_no_journal_behind(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ada.jsonl"
    assert main(["export", "--db", cli_db, *NS_ARGS, "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0]) | {"record_chars": 300}  # the records were cut at 600
    out.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    target = tmp_path / "new.db"
    capsys.readouterr()
    assert main(["import", str(out), "--db", str(target)]) == 2
    assert "cannot be stored as the file says" in capsys.readouterr().err
    assert list(tmp_path.glob("new.db*")) == []  # no journal, no index folder


def test_cli_a_deep_kv_value_exits_2_naming_the_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    with _kv_source(tmp_path) as source:
        lines = _export(source, KV_NS).splitlines()
    bad, where, _ = _hostile(lines, "kv value nested 600 levels")
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(bad) + "\n", encoding="utf-8")
    target = tmp_path / "new.db"
    capsys.readouterr()
    assert main(["import", str(path), "--db", str(target)]) == 2
    assert f"{path}:{where}: item value is nested" in capsys.readouterr().err
    assert list(tmp_path.glob("new.db*")) == []


def test_dates_at_the_ends_of_the_range_move_on_both_backends(
    tmp_path: Path, target_url: str
) -> None:
    # The other side of "dates that overflow": years 1 and 9999 are stored, not refused.
    edges = [
        Message("first day", "Ada", id="m1", timestamp=datetime(1, 1, 1), session=1),
        Message(
            "last day",
            "Ada",
            id="m2",
            session=2,
            timestamp=datetime(9999, 12, 31, 23, 59, 59, 999999),
        ),
    ]
    with MnemonStore(tmp_path / "edges.db", fake_embeddings()) as source:
        source.ingest(ADA, edges, origin="x")
        text = _export(source)
    with MnemonStore(target_url, fake_embeddings()) as target:
        assert import_jsonl(target, io.StringIO(text)).records_written == 2
        assert _export(target) == text
