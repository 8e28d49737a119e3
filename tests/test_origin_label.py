"""The ingest label is ``Record.origin`` ("source" now means a store the read path searches):
stored journals and databases of the old schema open with their labels read as ``origin``,
and ``Record.source`` still reads it for one release, with a ``DeprecationWarning``."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._journal import SCHEMA_VERSION
from mnemon_langgraph.types import Message, Record

NS = ("users", "ada")
MESSAGES = [Message("I moved to Lyon", "Ada", id="m1"), Message("Nice!", "Bob", id="m2")]


def test_record_source_is_a_warning_alias_of_origin() -> None:
    rec = Record("r-1", NS, 1, None, 0, ("Ada",), ("m1",), "Ada: hi", origin="chat")
    assert rec.origin == "chat"
    with pytest.warns(DeprecationWarning, match="Record.origin"):
        assert rec.source == "chat"
    with pytest.raises((AttributeError, TypeError)):  # frozen, and the alias has no setter
        rec.source = "other"  # type: ignore[misc]
    assert rec.origin == "chat"


def _labels(store: MnemonStore) -> list[tuple[str, str]]:
    return [(r.id, r.origin) for r in store.records(NS)]


def test_an_old_journal_file_opens_and_reads_its_labels_as_origin(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with MnemonStore(path, embeddings=fake_embeddings()) as store:
        store.ingest(NS, MESSAGES, origin="chat-2025")
        written = _labels(store)
    assert [label for _, label in written] == ["chat-2025"]
    # back to schema version 1, where the column was called ``source``
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("ALTER TABLE records RENAME COLUMN origin TO source")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()
    with MnemonStore(path, embeddings=fake_embeddings()) as store:
        assert _labels(store) == written
        store.ingest(NS, [Message("Still in Lyon", "Ada", id="m3")], origin="later")
        assert [label for _, label in _labels(store)] == ["chat-2025", "later"]
    conn = sqlite3.connect(path)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    conn.close()
    assert "origin" in columns and "source" not in columns
    assert version == (str(SCHEMA_VERSION),)


def test_an_old_postgres_database_opens_and_reads_its_labels_as_origin(postgres_url: str) -> None:
    import psycopg

    from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION as PG_VERSION

    with MnemonStore(postgres_url, embeddings=fake_embeddings()) as store:
        store.ingest(NS, MESSAGES, origin="chat-2025")
        written = _labels(store)
    assert [label for _, label in written] == ["chat-2025"]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE mnemon_records RENAME COLUMN origin TO source")
        conn.execute("UPDATE mnemon_meta SET value = '5' WHERE key = 'schema_version'")
    with MnemonStore(postgres_url, embeddings=fake_embeddings()) as store:
        assert _labels(store) == written
    with psycopg.connect(postgres_url) as conn:
        columns = {
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'mnemon_records' AND table_schema = current_schema()"
            )
        }
        version = conn.execute(
            "SELECT value FROM mnemon_meta WHERE key = 'schema_version'"
        ).fetchone()
    assert "origin" in columns and "source" not in columns
    assert version == (str(PG_VERSION),)


def test_the_old_source_keyword_still_works_and_warns(tmp_path: Path) -> None:
    """Every surface that took ``source=`` takes ``origin=``; the old name writes the same
    label for one release, with a ``DeprecationWarning`` that names the new one."""
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.integrations import (
        MnemonChatMessageHistory,
        MnemonMemory,
        MnemonMiddleware,
        create_memory_tools,
    )
    from mnemon_langgraph.integrations.mcp import MemoryServer
    from mnemon_langgraph.loaders import load_jsonl, messages_from_langchain, parse_transcript
    from mnemon_langgraph.records._chunking import chunk_messages

    with MnemonStore(tmp_path / "m.db", embeddings=fake_embeddings()) as store:
        with pytest.warns(DeprecationWarning, match=r"ingest\(source=...\) is deprecated"):
            store.ingest(NS, MESSAGES, source="old-name")
        with pytest.warns(DeprecationWarning, match="add_messages"):
            store.add_messages(("users", "bo"), [("user", "hi there")], source="api-old")
        assert [r.origin for r in store.records(NS)] == ["old-name"]
        assert [r.origin for r in store.records(("users", "bo"))] == ["api-old"]
        with pytest.raises(TypeError, match="origin= only"):
            store.ingest(NS, MESSAGES, origin="a", source="b")
        with pytest.raises(TypeError, match="'origin'"):
            store.ingest(NS, MESSAGES)
        built = [
            lambda **kw: MnemonMiddleware(store, namespace=NS, **kw).origin,
            lambda **kw: MnemonChatMessageHistory(store, NS, **kw).origin,
            lambda **kw: MemoryServer(store, NS, **kw).origin,
            lambda **kw: MnemonMemory(store=store, namespace=NS, **kw).origin,
        ]
        for make in built:
            assert make(origin="new") == "new"
            with pytest.warns(DeprecationWarning, match="origin"):
                assert make(source="old") == "old"
        with pytest.warns(DeprecationWarning, match="create_memory_tools"):
            create_memory_tools(store, namespace=NS, source="old")
    with pytest.warns(DeprecationWarning, match="messages_from_langchain"):
        old = messages_from_langchain([HumanMessage("hi")], source="x")
    assert old == messages_from_langchain([HumanMessage("hi")], origin="x")
    with pytest.warns(DeprecationWarning, match="parse_transcript"):
        assert parse_transcript("Ada: hi", source="t") == parse_transcript("Ada: hi", origin="t")
    path = tmp_path / "chat.jsonl"
    path.write_text('{"speaker": "Ada", "text": "hi"}\n', encoding="utf-8")
    with pytest.warns(DeprecationWarning, match="load_jsonl"):
        assert load_jsonl(path, source="j") == load_jsonl(path, origin="j")
    with pytest.warns(DeprecationWarning, match="chunk_messages"):
        old_records = chunk_messages(MESSAGES, namespace=NS, source="c")
    assert old_records == chunk_messages(MESSAGES, namespace=NS, origin="c")
    assert {r.origin for r in old_records} == {"c"}
