"""Consolidation takes the store: ``create_consolidation_graph(store=MnemonStore(...))`` on
both backends, through the :class:`~mnemon_langgraph.items.ItemStore` protocol each
backend's item store implements (``store.item_store()``), and clear errors for anything else.
"""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import textwrap
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model, fake_embeddings, make_messages

import mnemon_langgraph
from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    EmbeddedItemStore,
    PostgresItemStore,
    create_consolidation_graph,
    item_store_for,
)
from mnemon_langgraph.errors import ConfigurationError, JournalError
from mnemon_langgraph.items import IndexItem, ItemSource, ItemStore
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._journal import Journal

NS = ("users", "ada")
PACKAGE = Path(mnemon_langgraph.__file__).parent


def _fold(store: Any) -> Any:
    graph = create_consolidation_graph(
        store=store, model=deriving_model(), settings=ConsolidationSettings(batch_chars=1500)
    )
    return graph.invoke({"namespace": NS})["report"]


def _snapshot(items: ItemStore) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """What was written, comparable across backends (write order, ids, texts, links)."""
    return [(it.id, it.kind, it.text, it.record_ids) for it in items.all_items(NS)]


def test_both_item_stores_are_item_stores(tmp_path: Path, postgres_url: str) -> None:
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as lite:
        items = lite.item_store()
        assert type(items) is EmbeddedItemStore
        assert isinstance(items, ItemStore) and isinstance(items, ItemSource)
        items.close()
    with MnemonStore(postgres_url, fake_embeddings()) as pg:
        items = pg.item_store()
        assert type(items) is PostgresItemStore
        assert isinstance(items, ItemStore) and isinstance(items, ItemSource)
        assert not hasattr(items, "journal")  # the store is the store, not a "journal"


def test_a_read_only_item_source_is_not_an_item_store() -> None:
    """Negative control of the protocol check: the read side alone is not enough."""

    class ReadOnly:
        def linked_items(self, namespace: Any, record_ids: Any) -> list[Any]:
            return []

        def nearest_items(self, query: str, *, namespace: Any, k: int = 12) -> list[Any]:
            return []

        def instructions(self, namespace: Any) -> list[Any]:
            return []

        def topics(self, namespace: Any) -> list[str]:
            return []

        def group(self, namespace: Any, item: Any) -> list[Any]:
            return []

    assert isinstance(ReadOnly(), ItemSource)
    assert not isinstance(ReadOnly(), ItemStore)
    with pytest.raises(ConfigurationError, match="MnemonStore or an ItemStore"):
        create_consolidation_graph(store=ReadOnly(), model=deriving_model())  # type: ignore[arg-type]


def test_the_same_run_on_both_backends_writes_the_same_index(
    tmp_path: Path, postgres_url: str
) -> None:
    messages = make_messages(40)
    snapshots, reports = [], []
    for target in (str(tmp_path / "m.db"), postgres_url):
        with MnemonStore(target, fake_embeddings()) as store:
            store.ingest(NS, messages, origin="test")
            report = _fold(store)
            items = store.item_store()
            assert report.stop_reason == "caught_up" and report.items_added > 0
            assert items.watermark(NS) == store.max_seq(NS) == report.watermark
            folded = {r for it in items.all_items(NS) for r in it.record_ids}
            assert folded == {r.id for r in store.records(NS)}
            assert _fold(store).batches == ()  # a rerun has nothing left to fold
            snapshots.append(_snapshot(items))
            reports.append([(b.start_seq, b.end_seq, b.items_added) for b in report.batches])
            items.close()
    assert snapshots[0] and snapshots[0] == snapshots[1]
    assert reports[0] == reports[1]


def test_a_wrong_store_is_a_configuration_error(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    try:
        for wrong in (journal, str(tmp_path / "j.db"), 42):
            with pytest.raises(ConfigurationError, match="MnemonStore or an ItemStore"):
                create_consolidation_graph(store=wrong, model=deriving_model())  # type: ignore[arg-type]
    finally:
        journal.close()
    with pytest.raises(ConfigurationError, match="needs store="):
        create_consolidation_graph(model=deriving_model())


def test_removed_and_deprecated_arguments(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"store=MnemonStore\(journal_path\)"):
        create_consolidation_graph(model=deriving_model(), journal_path=tmp_path / "j.db")
    with pytest.raises(ConfigurationError, match=r"store=EmbeddedItemStore\(journal\)"):
        create_consolidation_graph(model=deriving_model(), journal=object())
    with pytest.raises(TypeError, match="unexpected keyword 'jornal'"):
        create_consolidation_graph(model=deriving_model(), jornal=object())
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        store.ingest(NS, make_messages(10), origin="test")
        items = store.item_store()
        with pytest.raises(ConfigurationError, match="embeddings= goes with a MnemonStore"):
            create_consolidation_graph(
                store=items, model=deriving_model(), embeddings=fake_embeddings()
            )
        with pytest.raises(ConfigurationError, match="not both"):
            create_consolidation_graph(store=store, items=items, model=deriving_model())
        with pytest.warns(DeprecationWarning, match=r"items=.*deprecated"):
            graph = create_consolidation_graph(items=items, model=deriving_model())
        assert graph.invoke({"namespace": NS})["report"].items_added > 0
        items.close()


def test_an_item_store_is_used_as_is(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        store.ingest(NS, make_messages(10), origin="test")
        items = EmbeddedItemStore(store.journal, fake_embeddings())
        assert item_store_for(items) is items
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # store= with an item store is not deprecated
            report = _fold(items)
        assert report.items_added > 0 and items.watermark(NS) == store.max_seq(NS)
        items.close()


def test_a_backend_without_an_item_store_says_so() -> None:
    """The base class names no item store: a backend that gives none fails clearly, like
    any hook it does not implement."""

    class Bare(MnemonStore):
        pass

    with pytest.raises(NotImplementedError, match="Bare does not implement this"):
        object.__new__(Bare).item_store()


@pytest.mark.integration
def test_item_store_works_without_importing_consolidation_first(tmp_path: Path) -> None:
    """Each backend gives its own item store, from its folder: no consolidation import."""
    script = textwrap.dedent(
        f"""
        import sys
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from mnemon_langgraph.store import MnemonStore
        assert "mnemon_langgraph.consolidation" not in sys.modules
        with MnemonStore({str(tmp_path / "m.db")!r}, DeterministicFakeEmbedding(size=32)) as s:
            items = s.item_store()
            print(type(items).__name__, items.watermark(("a",)))
            items.close()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["EmbeddedItemStore", "0"]


def _backend_isinstance(source: str) -> list[int]:
    """Lines of ``isinstance(x, EmbeddedStore | PostgresStore …)`` calls in ``source``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if names & {"EmbeddedStore", "PostgresStore"}:
                lines.append(node.lineno)
    return lines


def test_consolidation_never_asks_which_backend_it_has() -> None:
    assert _backend_isinstance("if isinstance(s, (PostgresStore, int)):\n    pass\n") == [1]
    paths = [
        *(PACKAGE / "consolidation").glob("*.py"),
        # the item stores and what they share, moved from consolidation/ to their backends
        *(PACKAGE / "store").rglob("*item*.py"),
        *(PACKAGE / "cli").glob("*consolidate.py"),
        PACKAGE / "transfer.py",
        PACKAGE / "integrations" / "studio.py",
    ]
    found = {
        str(p.relative_to(PACKAGE)): lines
        for p in paths
        if (lines := _backend_isinstance(p.read_text(encoding="utf-8")))
    }
    assert len(paths) > 8 and found == {}


class _SyncSteps:
    """A transaction that answers the commit's steps and writes down each one."""

    def __init__(self, watermark: int = 0) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.watermark = watermark

    def locked_watermark(self) -> int:
        self.calls.append(("locked_watermark", ()))
        return self.watermark

    def existing_records(self, ids: list[str]) -> set[str]:
        self.calls.append(("existing_records", (tuple(ids),)))
        return {i for i in ids if i != "r-gone"}

    def insert_item(self, item: Any, links: list[str], vector: Any) -> bool:
        self.calls.append(("insert_item", (item.text, tuple(links))))
        return True

    def update_item(self, update: Any, links: list[str], vector: Any) -> bool:
        self.calls.append(("update_item", (tuple(links),)))
        return True

    def advance(self, watermark: int | None, **counts: Any) -> None:
        self.calls.append(("advance", (watermark, counts["added"], counts["updated"])))

    def resolve_failures(self, after: int, upto: int) -> None:
        self.calls.append(("resolve_failures", (after, upto)))


class _AsyncSteps:
    """The same steps as coroutines (the PostgreSQL transaction's shape)."""

    def __init__(self, watermark: int = 0) -> None:
        self.inner = _SyncSteps(watermark)

    def __getattr__(self, name: str) -> Any:
        step = getattr(self.inner, name)

        async def run(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0)  # a real suspension, as a database round trip
            return step(*args, **kwargs)

        return run


def _commit_body(expected: int = 0) -> Any:
    from mnemon_langgraph.items import IndexItem
    from mnemon_langgraph.store._internal.item_commit import BatchUsage, commit_folded_batch

    items = [
        IndexItem(id=f"i-{n}", namespace=("ada",), kind="event", text=f"t{n}", record_ids=ids)
        for n, ids in enumerate([("r-1", "r-gone"), ("r-gone",)])
    ]
    return commit_folded_batch(
        ("ada",),
        expected_watermark=expected,
        new_watermark=9,
        new_items=items,
        new_vectors=None,
        updates=[],
        update_vectors=None,
        usage=BatchUsage(),
    )


def test_one_commit_body_runs_alike_with_a_sync_and_an_async_transaction() -> None:
    """The item commit is one generator body: ``drive`` (SQLite) and ``adrive``
    (PostgreSQL) ask the same steps in the same order and return the same counts."""
    from mnemon_langgraph.errors import JournalError
    from mnemon_langgraph.store._internal.item_commit import adrive, drive

    sync_tx, async_tx = _SyncSteps(), _AsyncSteps()
    assert drive(_commit_body(), sync_tx) == (1, 0)
    assert asyncio.run(adrive(_commit_body(), async_tx)) == (1, 0)
    assert sync_tx.calls == async_tx.inner.calls
    assert sync_tx.calls[2] == ("insert_item", ("t0", ("r-1",)))  # the dead link dropped
    moved = _SyncSteps(watermark=4)
    with pytest.raises(JournalError, match="moved"):
        drive(_commit_body(expected=0), moved)
    assert moved.calls == [("locked_watermark", ())]  # nothing written after the check


@pytest.fixture(params=["embedded", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "embedded":
        return str(tmp_path / "m.db")
    return str(request.getfixturevalue("postgres_url"))


def test_one_write_rule_on_both_backends(target: str) -> None:
    """An item id already stored is not written (nor counted) again; links to deleted
    records are dropped; a moved watermark writes nothing."""
    with MnemonStore(target, fake_embeddings()) as store:
        store.ingest(NS, make_messages(6), origin="test")
        first, second, *_ = [r.id for r in store.records(NS)]
        items = store.item_store()
        item = IndexItem("it_a", NS, "event", "Ada moved", (first,), topic="moves")
        gone = IndexItem("it_b", NS, "event", "lost", ("no-such-record",), topic="moves")
        vectors = items.embed_items([item, gone])
        assert items.commit_batch(
            NS, expected_watermark=0, new_watermark=2, new_items=[item, gone], new_vectors=vectors
        ) == (1, 0)
        again = replace(item, record_ids=(second,))
        assert items.commit_batch(
            NS,
            expected_watermark=2,
            new_watermark=4,
            new_items=[again],
            new_vectors=items.embed_items([again]),
        ) == (0, 0)
        assert [it.record_ids for it in items.all_items(NS)] == [(first,)]
        with pytest.raises(JournalError, match="moved from 0 to 4"):
            items.commit_batch(
                NS, expected_watermark=0, new_watermark=6, new_items=[], new_vectors=None
            )
        assert items.watermark(NS) == 4 and items.state(NS).batches == 2
        items.close()


def test_cli_consolidates_a_postgres_store(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    import mnemon_langgraph.cli._consolidate as consolidate
    from mnemon_langgraph.cli import main

    emb = DeterministicFakeEmbedding(size=384)  # what --embeddings fake gives
    with MnemonStore(postgres_url, emb) as store:
        store.ingest(NS, make_messages(40), origin="test")
        last = store.max_seq(NS)
    monkeypatch.setattr(consolidate, "_init_model", lambda spec: deriving_model())
    argv = ["consolidate", "--db", postgres_url, "--namespace", NS[0], "--namespace", NS[1]]
    argv += ["--model", "fake:fold"]
    argv += ["--embeddings", "fake", "--batch-chars", "1500", "--no-progress"]
    assert main(argv) == 0
    assert f"watermark {last})" in capsys.readouterr().out
    with MnemonStore(postgres_url, emb) as store:
        items = store.item_store()
        assert items.watermark(NS) == last
        added = items.count(NS)
        assert added > 0
    assert main([*argv, "--rebuild"]) == 0
    assert f"dropped {added} items" in capsys.readouterr().out
