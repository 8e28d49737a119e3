"""Tests of MnemonStore: ingest, persistence, rebuilds, deletion, erase, isolation."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _paths import LOCOMO_DEV
from _search_fakes import HashEmbeddings

from mnemon_langgraph.errors import EmbeddingMismatchError, InputError
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._index import index_folder
from mnemon_langgraph.types import Message, SearchSource

NS = ("users", "ada@example.com")
OTHER = ("users", "bob")
LOCOMO = LOCOMO_DEV / "conv-26.json"

_TOPICS = [
    "I adopted a beagle called Pepper who steals socks",
    "My sister's wedding is in Bristol in June",
    "I started pottery classes and made a blue bowl",
    "We went camping at the lake and saw the sunset",
    "I am training for a marathon in the autumn",
    "The library book club read a mystery novel",
    "I moved to Rotterdam for a new nursing job",
    "Baking sourdough bread takes two days",
]


def _messages(n: int, *, session_size: int = 10, start: int = 0) -> list[Message]:
    base = datetime(2024, 1, 1, 9, 0)
    out = []
    for i in range(start, start + n):
        session = 1 + i // session_size
        out.append(
            Message(
                text=f"{_TOPICS[i % len(_TOPICS)]} (note {i})",
                speaker="Ada" if i % 2 == 0 else "assistant",
                role="user" if i % 2 == 0 else "assistant",
                id=f"m{i}",
                timestamp=base + timedelta(days=7 * (session - 1)),
                session=session,
            )
        )
    return out


@pytest.fixture
def emb() -> HashEmbeddings:
    return HashEmbeddings()


@pytest.fixture
def store(tmp_path: Path, emb: HashEmbeddings) -> MnemonStore:
    s = MnemonStore(tmp_path / "j.db", emb)
    yield s
    s.close()


def _ranking(store: MnemonStore, query: str, ns: tuple[str, ...] = NS, k: int = 30) -> list:
    return [
        (h.record.id, h.bm25_rank, h.dense_rank) for h in store.search(query, namespace=ns, k=k)
    ]


def test_store_is_a_search_source(store: MnemonStore) -> None:
    assert isinstance(store, SearchSource)
    assert store.journal.embedding_model() == ("test-hash-bow", 64)


def test_ingest_is_idempotent_and_searchable(store: MnemonStore, emb: HashEmbeddings) -> None:
    result = store.ingest(NS, _messages(40), origin="chat", pack=False)
    assert result.records_written == 40 and result.messages_written == 40
    assert result.messages_skipped == 0 and len(result.record_ids) == 40
    assert emb.documents == 40
    again = store.ingest(NS, _messages(40), origin="chat", pack=False)
    assert (again.records_written, again.messages_skipped) == (0, 40)
    assert emb.documents == 40  # nothing re-embedded
    hits = store.search("beagle socks Pepper", namespace=NS, k=5)
    assert len(hits) == 5
    assert "beagle" in hits[0].record.text
    assert hits[0].bm25_rank == 0 and hits[0].rank == 0
    assert [h.rank for h in hits] == [0, 1, 2, 3, 4]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_ingest_packs_and_continues_positions(store: MnemonStore) -> None:
    first = store.ingest(NS, _messages(6, session_size=100), origin="chat")
    assert first.records_written == 1  # short turns packed into one record
    second = store.ingest(NS, _messages(3, session_size=100, start=6), origin="chat")
    records = store.get_records(NS, [*first.record_ids, *second.record_ids])
    assert [r.position for r in records] == [0, 1]
    assert records[0].seq < records[1].seq


def test_messages_without_ids_are_idempotent(store: MnemonStore) -> None:
    msgs = [Message(text="I like green tea", speaker="Ada"), Message(text="Noted", speaker="bot")]
    assert store.ingest(NS, msgs, origin="chat").records_written == 1
    assert store.ingest(NS, msgs, origin="chat").messages_skipped == 2


def test_namespace_isolation(store: MnemonStore) -> None:
    store.ingest(NS, _messages(16), origin="chat", pack=False)
    store.ingest(OTHER, [Message("secret zanzibar plan for bob", "Bob", id="b1")], origin="c")
    hits = store.search("secret zanzibar plan", namespace=NS, k=50)
    assert hits and all(h.record.namespace == NS for h in hits)
    assert not any("zanzibar" in h.record.text for h in hits)
    other = store.search("secret zanzibar plan", namespace=OTHER, k=50)
    assert [h.record.text for h in other] == ["Bob: secret zanzibar plan for bob"]
    assert store.search("anything", namespace=("nobody",), k=5) == []
    assert index_folder(store.path, NS) != index_folder(store.path, OTHER)


def test_incremental_equals_full_rebuild(tmp_path: Path) -> None:
    emb = HashEmbeddings()
    inc = MnemonStore(tmp_path / "inc.db", emb)
    for start in range(0, 60, 7):
        inc.ingest(NS, _messages(min(7, 60 - start), start=start), origin="chat", pack=False)
    queries = ["beagle socks", "wedding Bristol sister", "marathon training autumn", "note 17"]
    before = {q: _ranking(inc, q) for q in queries}
    inc.index(NS).rebuild()
    after = {q: _ranking(inc, q) for q in queries}
    assert before == after
    assert all(len(v) == 30 for v in before.values())
    inc.close()


def test_reopen_loads_checkpoint_without_rebuild(tmp_path: Path) -> None:
    emb = HashEmbeddings()
    with MnemonStore(tmp_path / "j.db", emb) as s:
        s.ingest(NS, _messages(30), origin="chat", pack=False)
        expected = _ranking(s, "camping lake sunset")
    docs = emb.documents
    with MnemonStore(tmp_path / "j.db", emb) as s:
        assert _ranking(s, "camping lake sunset") == expected
        assert s.index(NS).rebuilds == 0
    assert emb.documents == docs


@pytest.mark.parametrize("damage", ["missing", "corrupt_bm25", "corrupt_vectors", "stale"])
def test_damaged_or_stale_indexes_rebuild_without_reembedding(tmp_path: Path, damage: str) -> None:
    emb = HashEmbeddings()
    with MnemonStore(tmp_path / "j.db", emb) as s:
        s.ingest(NS, _messages(30), origin="chat", pack=False)
        expected = _ranking(s, "pottery blue bowl")
        folder = s.index(NS).folder
    if damage == "stale":
        # another process deletes a record: the journal's generation moves past the files'
        with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as other:
            victim = expected[0][0]
            other.journal.delete_records(NS, [victim])  # journal only, files untouched
    elif damage == "missing":
        shutil.rmtree(folder)
    elif damage == "corrupt_bm25":
        (folder / "bm25.npz").write_bytes(b"\x00garbage")
    else:
        meta = json.loads((folder / "vectors.json").read_text())
        (folder / meta["file"]).write_bytes(b"garbage")
    docs = emb.documents
    with MnemonStore(tmp_path / "j.db", emb) as s:
        got = _ranking(s, "pottery blue bowl")
        assert s.index(NS).rebuilds == 1
        if damage == "stale":
            assert len(got) == 29 and victim not in {g[0] for g in got}
            s.index(NS).rebuild()
            assert _ranking(s, "pottery blue bowl") == got
        else:
            assert got == expected
    assert emb.documents == docs  # rebuilt from stored vectors, nothing re-embedded


def test_other_process_appends_are_caught_up(tmp_path: Path) -> None:
    a = MnemonStore(tmp_path / "j.db", HashEmbeddings())
    a.ingest(NS, _messages(10), origin="chat", pack=False)
    assert len(a.search("marathon", namespace=NS, k=50)) == 10
    rebuilds = a.index(NS).rebuilds
    b = MnemonStore(tmp_path / "j.db", HashEmbeddings())
    b.ingest(NS, [Message("a unique kiwifruit smoothie", "Ada", id="new1")], origin="chat")
    hits = a.search("kiwifruit smoothie", namespace=NS, k=3)
    assert hits[0].record.message_ids == ("new1",)
    assert a.index(NS).rebuilds == rebuilds  # caught up incrementally
    a.close()
    b.close()


def test_delete_records_removes_from_both_indexes(store: MnemonStore) -> None:
    store.ingest(NS, _messages(24), origin="chat", pack=False)
    hits = store.search("beagle Pepper socks", namespace=NS, k=3)
    victim = hits[0].record
    assert store.delete_records(NS, [victim.id, "r-unknown"]) == [victim.id]
    after = store.search("beagle Pepper socks", namespace=NS, k=50)
    assert victim.id not in {h.record.id for h in after}
    assert len(after) == 23
    index = store.index(NS)
    assert victim.seq not in index.bm25.seqs().tolist()
    assert victim.seq not in index.vectors.search(np.ones(64, np.float32) / 8, 50)[0].tolist()
    # same result as a full rebuild
    before = _ranking(store, "beagle Pepper socks")
    index.rebuild()
    assert _ranking(store, "beagle Pepper socks") == before
    assert store.journal.audit_log(NS)[-1].record_ids == (victim.id,)


def test_delete_messages_reingests_survivors(store: MnemonStore) -> None:
    store.ingest(NS, _messages(6, session_size=100), origin="chat")  # one packed record
    deleted, result = store.delete_messages(NS, ["m2"])
    assert len(deleted) == 1
    assert result.records_written == 1 and result.messages_written == 5
    texts = [h.record.text for h in store.search("note", namespace=NS, k=10)]
    assert len(texts) == 1
    assert "(note 2)" not in texts[0] and "(note 3)" in texts[0]
    assert store.journal.known_message_ids(NS, ["m2", "m3"]) == {"m3"}


def test_erase_namespace_removes_index_folder(store: MnemonStore) -> None:
    store.ingest(NS, _messages(12), origin="chat", pack=False)
    store.ingest(OTHER, _messages(4), origin="chat", pack=False)
    store.flush()
    folder = store.index(NS).folder
    assert (folder / "bm25.npz").exists()
    assert store.erase_namespace(NS) == 12
    assert not folder.exists()
    assert store.search("beagle", namespace=NS, k=5) == []
    assert not folder.exists()  # searching the erased namespace writes nothing
    assert len(store.search("beagle", namespace=OTHER, k=5)) >= 1
    # the namespace can be used again afterwards
    assert store.ingest(NS, _messages(2), origin="chat", pack=False).records_written == 2
    assert len(store.search("beagle", namespace=NS, k=5)) == 2


def test_stats(store: MnemonStore) -> None:
    store.ingest(NS, _messages(12), origin="chat", pack=False)
    stats = store.stats()
    assert stats["embedding_model"] == "test-hash-bow" and stats["dimension"] == 64
    (row,) = stats["namespaces"]
    assert row["namespace"] == list(NS) and row["records"] == 12
    assert row["indexed"] == 12 and row["vectors"] == 12 and row["vector_index"] == "flat"
    assert store.stats(OTHER)["namespaces"][0]["records"] == 0


def test_embedding_mismatch_is_refused(tmp_path: Path) -> None:
    MnemonStore(tmp_path / "j.db", HashEmbeddings(64)).close()
    with pytest.raises(EmbeddingMismatchError):
        MnemonStore(tmp_path / "j.db", HashEmbeddings(32))


def test_concurrent_searches_and_ingest(store: MnemonStore) -> None:
    store.ingest(NS, _messages(40), origin="chat", pack=False)
    expected = _ranking(store, "wedding Bristol")
    errors: list[BaseException] = []
    results: list[list] = []

    def searcher() -> None:
        try:
            for _ in range(10):
                results.append(_ranking(store, "wedding Bristol")[:5])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            store.ingest(OTHER, _messages(20), origin="chat", pack=False)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 40 and all(r == expected[:5] for r in results)


def test_ingest_file_locomo_and_bad_format(store: MnemonStore, tmp_path: Path) -> None:
    if not LOCOMO.exists():
        pytest.skip("LoCoMo dev data not available")
    result = store.ingest_file(LOCOMO, namespace=NS)
    assert result.records_written > 50 and result.messages_written > 300
    hits = store.search("adoption agencies", namespace=NS, k=5)
    assert any("adopt" in h.record.text.lower() for h in hits)
    assert all(h.record.origin == "locomo:conv-26" for h in hits)
    with pytest.raises(InputError):
        store.ingest_file(LOCOMO, namespace=NS, format="yaml")


async def test_async_ingest_and_search(store: MnemonStore) -> None:
    result = await store.aingest(NS, _messages(8), origin="chat", pack=False)
    assert result.records_written == 8
    hits = await store.asearch("sourdough bread", namespace=NS, k=2)
    assert len(hits) == 2 and "sourdough" in hits[0].record.text


@pytest.mark.parametrize("ann", ["ivf", "hnsw"])
def test_ann_store_roundtrip_with_deletions(tmp_path: Path, ann: str) -> None:
    settings: dict[str, Any] = {"hnsw_threshold": 20, "ann": ann}
    emb = HashEmbeddings()
    with MnemonStore(tmp_path / "j.db", emb, vector_settings=settings) as s:
        s.ingest(NS, _messages(40), origin="chat", pack=False)
        assert s.index(NS).vectors.kind == ann
        victim = s.search("sourdough bread", namespace=NS, k=1)[0].record
        s.delete_records(NS, [victim.id])
        expected = _ranking(s, "sourdough bread")
    assert victim.id not in {e[0] for e in expected} and len(expected) == 30
    with MnemonStore(tmp_path / "j.db", emb, vector_settings=settings) as s:
        assert _ranking(s, "sourdough bread") == expected
        assert s.index(NS).rebuilds == 0 and s.index(NS).vectors.kind == ann


def test_warm_waits_for_the_conversion_to_the_approximate_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``hnsw_threshold`` the store converts in a background thread, searching
    exactly meanwhile; ``warm`` returns once the namespace's index is the one it settles
    on. The conversion is held back here until a timer lets it go."""
    import threading

    from mnemon_langgraph.search._vectors import VectorIndex

    release = threading.Event()
    real = VectorIndex.hnsw_from.__func__  # type: ignore[attr-defined]

    def held_back(cls: type[VectorIndex], *args: Any, **kwargs: Any) -> VectorIndex:
        assert release.wait(30)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "hnsw_from", classmethod(held_back))
    settings = {"hnsw_threshold": 20}
    with MnemonStore(tmp_path / "j.db", HashEmbeddings(), vector_settings=settings) as s:
        messages = _messages(40)
        s.ingest(NS, messages[:10], origin="chat", pack=False)  # the index starts flat
        s.ingest(NS, messages[10:], origin="chat", pack=False)  # past the threshold
        assert s.index(NS).vectors.kind == "flat"  # converting in the background
        timer = threading.Timer(0.3, release.set)
        timer.start()
        assert s.warm(NS) is True
        assert s.index(NS).vectors.kind == "hnsw" and not s.index(NS).vectors.needs_conversion
        assert s.warm(("users", "nobody")) is False and asyncio.run(s.awarm(NS)) is True
        timer.join()


def test_checkpoints_are_spaced_by_a_tenth_of_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: a checkpoint rewrites the whole index, so a fixed interval made 1M ingest
    quadratic. Past ten intervals the interval is a tenth of the index; nothing is lost."""
    import mnemon_langgraph.store.embedded._index as hybrid

    monkeypatch.setattr(hybrid, "SAVE_EVERY", 10)
    saves: list[int] = []
    real_save = hybrid.NamespaceIndex.save

    def counting_save(self: hybrid.NamespaceIndex) -> None:
        saves.append(len(self.vectors))
        real_save(self)

    monkeypatch.setattr(hybrid.NamespaceIndex, "save", counting_save)
    emb = HashEmbeddings()
    messages = _messages(300)
    with MnemonStore(tmp_path / "j.db", emb) as s:
        for i in range(0, 300, 10):
            s.ingest(NS, messages[i : i + 10], origin="chat", pack=False)
        during = list(saves)
    # every batch up to 100 records, then every 2nd (≥ 11..19) and 3rd (≥ 20..29) batch
    assert during[:10] == list(range(10, 101, 10))
    assert len(during) < 30 and all(b - a >= a // 10 for a, b in itertools.pairwise(during))
    with MnemonStore(tmp_path / "j.db", emb) as s:  # closing saved the rest
        index = s.index(NS)
        index.sync()
        assert len(index.vectors) == 300 and index.max_seq == 300 and index.rebuilds == 0


def test_the_factory_picks_the_backend_by_its_target_and_refuses_unknown_settings(
    tmp_path: Path,
) -> None:
    from mnemon_langgraph.store import EmbeddedStore, PostgresStore
    from mnemon_langgraph.store.base import backend_class

    with MnemonStore(tmp_path / "a.db", HashEmbeddings()) as by_path:
        assert type(by_path) is EmbeddedStore and isinstance(by_path, MnemonStore)
    with MnemonStore.open(str(tmp_path / "b.db"), HashEmbeddings()) as by_name:
        assert type(by_name) is EmbeddedStore
    assert backend_class("postgresql://u@localhost/db") is PostgresStore
    assert backend_class("postgres://u@localhost/db") is PostgresStore
    with pytest.raises(TypeError, match="journal path or a postgresql:// URL"):
        MnemonStore(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        MnemonStore(tmp_path / "c.db", HashEmbeddings(), pool_size=3)  # a PostgreSQL setting
