"""``mnemon import`` is one transaction (issue 43 §3): the records, the index items with the
watermark and the key-value items of a file commit together, on both backends, so a failure
or a SIGKILL anywhere in between leaves the store exactly as it was before the import (or,
killed after the commit, exactly as a complete import leaves it)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model
from _import_child import STEPS
from _reliability_common import fake_embeddings, start_child

from mnemon_langgraph import MnemonBaseStore, MnemonStore, transfer
from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    create_consolidation_graph,
    item_store_for,
)
from mnemon_langgraph.errors import ModelCallError
from mnemon_langgraph.transfer import export_lines, import_jsonl
from mnemon_langgraph.types import Message

CHILD = Path(__file__).parent / "_import_child.py"
ADA = ("users", "ada")
BO = ("users", "bo")


def _file(tmp_path: Path) -> list[str]:
    """An export of ADA with records of two origins, index items, a watermark and
    key-value items: every part an import writes."""
    with MnemonStore(tmp_path / "source.db", fake_embeddings()) as store:
        notes = [Message(f"Ada note {i}: the cat is Pixel.", "Ada", id=f"a{i}") for i in range(6)]
        store.ingest(ADA, notes, origin="chat")
        store.ingest(ADA, [Message("Ada moved to Lyon.", "Ada", id="n1", session=2)], origin="n")
        graph = create_consolidation_graph(
            model=deriving_model(), store=store, settings=ConsolidationSettings(batch_chars=300)
        )
        assert graph.invoke({"namespace": ADA})["report"].items_added > 0
        with MnemonBaseStore(store) as base:
            base.put(ADA, "profile", {"text": "Ada prefers green tea."})
            base.put(ADA, "pet", {"text": "Pixel the cat."})
        lines = export_lines(store, ADA)
    header = transfer.read_export(lines)
    assert header.items and header.kv_items and header.consolidated_through is not None
    return lines


@pytest.fixture(params=["sqlite", "postgres"])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "target.db")
    return str(request.getfixturevalue("postgres_url"))


def _prefill(target: str) -> None:
    """What the target holds before the import: another user's memory and items."""
    with MnemonStore(target, fake_embeddings()) as store:
        store.ingest(BO, [Message("Bo keeps bees.", "Bo", id="b1")], origin="chat")
        with MnemonBaseStore(store) as base:
            base.put(BO, "hive", {"text": "Three hives."})


def _state(store: MnemonStore) -> dict[str, Any]:
    """Everything an import can touch, as comparable data."""
    items = item_store_for(store)
    try:
        index = {ns: (items.watermark(ns), [i.id for i in items.all_items(ns)]) for ns in (ADA, BO)}
    finally:
        items.close()
    with MnemonBaseStore(store) as base:
        kv = sorted((tuple(i.namespace), i.key, repr(i.value)) for i in base.search(("users",)))
    return {
        "namespaces": store.namespaces(),
        "records": {ns: [(r.id, r.seq, r.text) for r in store.records(ns)] for ns in (ADA, BO)},
        "index": index,
        "kv": kv,
        "ada": export_lines(store, ADA) if ADA in store.namespaces() else None,
    }


@pytest.fixture
def before(target_url: str) -> Iterator[dict[str, Any]]:
    _prefill(target_url)
    with MnemonStore(target_url, fake_embeddings()) as store:
        state = _state(store)
    assert state["records"][BO] and state["kv"] and not state["records"][ADA]
    yield state


def test_a_failure_after_the_records_before_the_kv_items_leaves_the_store_as_before(
    tmp_path: Path, target_url: str, before: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _file(tmp_path)
    reached: list[str] = []

    def fail(store: MnemonStore, rows: Any) -> int:
        reached.append("kv")  # every record and index item is written by now
        assert store.count(ADA) > 0
        raise OSError("the disk went away")

    monkeypatch.setattr(transfer, "_import_kv", fail)
    with MnemonStore(target_url, fake_embeddings()) as store:
        with pytest.raises(OSError, match="disk went away"):
            import_jsonl(store, lines, name="ada.jsonl")
        assert reached == ["kv"]
        assert _state(store) == before
    with MnemonStore(target_url, fake_embeddings()) as store:  # and so after a reopen
        assert _state(store) == before
        monkeypatch.undo()
        result = import_jsonl(store, lines, name="ada.jsonl")  # the same import completes
        assert result.kv_items_written == 2 and result.items_written > 0
        assert export_lines(store, ADA) == lines


def test_an_embedder_failing_halfway_writes_nothing(
    tmp_path: Path, target_url: str, before: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's second ingest batch fails to embed: the first batch goes too."""
    lines = _file(tmp_path)
    embedder = fake_embeddings()
    embed = type(embedder).embed_documents
    calls: list[int] = []

    def failing_later(self: Any, texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        if len(calls) > 2:  # the index items, then the first batch of records
            raise RuntimeError("model server gone")
        return embed(self, texts)

    with MnemonStore(target_url, embedder) as store:
        monkeypatch.setattr(type(embedder), "embed_documents", failing_later)
        with pytest.raises(ModelCallError, match="model server gone"):
            import_jsonl(store, lines, name="ada.jsonl")
        monkeypatch.undo()
        assert len(calls) == 3
    with MnemonStore(target_url, fake_embeddings()) as store:
        assert _state(store) == before


@pytest.mark.parametrize("step", STEPS)
def test_an_import_killed_at_each_step_leaves_before_or_after(
    tmp_path: Path, target_url: str, before: dict[str, Any], step: str
) -> None:
    lines = _file(tmp_path)
    path = tmp_path / "ada.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    child = start_child(CHILD, target_url, str(path), step)
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == f"at {step}".encode(), (line, child.stderr and child.stderr.read())
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    with MnemonStore(target_url, fake_embeddings()) as store:
        after = _state(store)
    if step == "committed":  # the commit happened: the whole file is there
        assert after["ada"] == lines
        assert after["records"][BO] == before["records"][BO]
        assert len(after["kv"]) == len(before["kv"]) + 2
    else:
        assert after == before


def test_store_transaction_commits_whole_or_not_at_all(target_url: str) -> None:
    """``store.transaction()``: ingest, an item commit and key-value items inside one block
    are seen inside it, rolled back together by an exception, committed together at its
    end; a nested block joins the outer one."""
    from mnemon_langgraph.store.kv_items import KVWrite

    def write_all(store: MnemonStore, tag: str) -> None:
        with store.transaction():  # nested: a savepoint of the outer block
            store.ingest(ADA, [Message(f"{tag} note", "Ada", id=f"{tag}1")], origin="chat")
        assert [r.text for r in store.records(ADA)][-1].endswith(f"{tag} note")
        store.kv().write_here([KVWrite(ADA, tag, '{"text": "x"}')], actor="test")

    with MnemonStore(target_url, fake_embeddings()) as store:
        with pytest.raises(RuntimeError, match="stop"), store.transaction():
            write_all(store, "gone")
            # another thread is not in this transaction: it sees nothing uncommitted
            with ThreadPoolExecutor(1) as pool:
                assert pool.submit(store.count, ADA).result() == 0
            assert store.count(ADA) == 1
            raise RuntimeError("stop")
        assert store.namespaces() == [] and store.count(ADA) == 0
        with MnemonBaseStore(store) as base:
            assert base.get(ADA, "gone") is None
        with store.transaction():
            write_all(store, "kept")
    with MnemonStore(target_url, fake_embeddings()) as store:
        assert [m for r in store.records(ADA) for m in r.message_ids] == ["kept1"]
        with MnemonBaseStore(store) as base:
            assert base.get(ADA, "kept") is not None
        hits = store.search("kept note", namespace=ADA, k=1)  # the index caught up
        assert [h.record.message_ids for h in hits] == [("kept1",)]
