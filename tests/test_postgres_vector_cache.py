"""Exact dense search in the client on PostgreSQL: a cached copy of a namespace's vectors.

From ``client_scan_from`` records the store ranks a namespace's vectors in its own process
(``store/postgres/_vector_cache.py``) instead of scanning them in the server. It must give the
server's exact ranking (ids and order; distances to float precision), with and without
filters, and stay in step with writes and deletions made by *another* store (another
process): each search checks the namespace's live count and largest ``seq`` first.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.types import Message, SearchFilters

WORDS = [f"w{i}" for i in range(40)]
NS = ("cache",)
QUERIES = ["w1 w2 w3", "w7 w30", "w11 w12 w13 w14", "w5"]
CACHED = PostgresSettings(client_scan_from=0)  # every namespace copied into the client
START = datetime(2024, 1, 1)


class WordSumEmbeddings(Embeddings):
    """A fixed random vector per word, summed over the text's words in sorted order: texts
    with the same words get the very same vector (exact ties, broken by ``seq`` on both
    paths), other texts distances that no rounding reorders (unlike bag-of-words counts,
    whose different texts can tie exactly in value but not in float rounding)."""

    model_name = "test-word-sum"

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim

    def _vec(self, text: str) -> list[float]:
        v = np.zeros(self.dim)
        for word in sorted(text.lower().replace(":", " ").split()):
            seed = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "little")
            v += np.random.default_rng(seed).standard_normal(self.dim)
        return v.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def _messages(start: int, count: int, seed: int = 0) -> list[Message]:
    rng = np.random.default_rng(seed + start)
    return [
        Message(
            " ".join(rng.choice(WORDS, size=4)),
            "A",
            id=f"m{i}",
            session=1 + i % 4,
            timestamp=START + timedelta(days=i) if i % 50 else None,  # some undated
        )
        for i in range(start, start + count)
    ]


def _dense(pg: PostgresStore, query: str) -> list[tuple[str, float]]:
    return pg.dense_ranking(query, namespace=NS, k=50)


def _copied(pg: PostgresStore) -> None:
    """A search (the server scans while the copy loads off its path), then the copy in."""
    _dense(pg, "w0")
    pg.engine.run(pg.dense.cache.settle())
    assert pg.dense.cache._copies


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [r for r, _ in got] == [r for r, _ in want]
    assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-5)


def test_client_scan_equals_the_server_scan_with_and_without_filters(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemon_langgraph.store.postgres import _vector_cache

    monkeypatch.setattr(_vector_cache, "_BATCH", 64)  # the copy read in ten batches
    filters = [
        None,
        SearchFilters(session_from=2, session_to=3),
        SearchFilters(date_from=START + timedelta(days=100), date_to=START + timedelta(days=300)),
        SearchFilters(date_to=START + timedelta(days=10_000)),  # all but the undated
        SearchFilters(session_from=1),  # every record: the unfiltered scan
    ]
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=CACHED) as pg:
        pg.ingest(NS, _messages(0, 600), origin="test", pack=False)
        server = pg.with_settings(client_cache_mb=0)
        _copied(pg)
        for q in QUERIES:
            got, want = _dense(pg, q), _dense(server, q)
            assert len(want) == 50
            _same(got, want)
            for f in filters:
                hits = pg.search(q, namespace=NS, k=20, filters=f)
                ref = server.search(q, namespace=NS, k=20, filters=f)
                assert len(ref) == 20 and all(f is None or f.accepts(h.record) for h in hits)
                assert [h.record.id for h in hits] == [h.record.id for h in ref]
                assert [h.dense_rank for h in hits] == [h.dense_rank for h in ref]
        assert list(pg.dense.cache._copies) and not list(server.dense.cache._copies)


def test_the_copy_follows_writes_and_deletions_of_another_store(postgres_url: str) -> None:
    """A second store (as another process would) adds and deletes records; the first one's
    copy must show both at its next search (a stale copy would miss the new top hit)."""
    emb = WordSumEmbeddings()
    with (
        PostgresStore(postgres_url, emb, settings=CACHED) as reader,
        PostgresStore(postgres_url, emb) as writer,
    ):
        writer.ingest(NS, _messages(0, 300), origin="test", pack=False)
        _copied(reader)
        before = _dense(reader, "w1 w2 w3")
        copy_nsid, copy = next(iter(reader.dense.cache._copies.items()))
        # a record made of exactly the query's words is the new nearest
        writer.ingest(NS, [Message("w1 w2 w3", "A", id="new", session=9)], origin="test")
        after = _dense(reader, "w1 w2 w3")
        new_id = next(r.id for r in writer.records(NS) if r.message_ids == ("new",))
        assert after[0][0] == new_id and after[0][1] < before[0][1] and before[0][0] != new_id
        assert reader.dense.cache._copies.get(copy_nsid) is copy  # extended, not reloaded
        # deletions: the nearest ten and the new one go
        gone = [rid for rid, _ in after[:10]]
        writer.delete_records(NS, gone, reason="test")
        later = _dense(reader, "w1 w2 w3")  # the server's scan: the copy updates off-path
        reader.engine.run(reader.dense.cache.settle())
        assert reader.dense.cache._copies.get(copy_nsid) is copy  # updated in place
        on_copy = _dense(reader, "w1 w2 w3")
        assert not set(gone) & {rid for rid, _ in on_copy} and not set(gone) & dict(later).keys()
        _same(on_copy, later)
        # an erased and rebuilt namespace is read anew
        writer.erase_namespace(NS)
        writer.ingest(NS, _messages(1000, 50, seed=5), origin="test", pack=False)
        _copied(reader)  # the new namespace's copy
        _same(_dense(reader, "w7 w30"), _dense(reader.with_settings(client_cache_mb=0), "w7 w30"))


def test_a_copied_namespace_is_ranked_in_the_client_alike_and_never_by_the_server(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its copy in (vectors and BM25 index), a search of the namespace runs no ranking
    query in the server and gives the server's hybrid ranking (ids, BM25 and dense ranks),
    with and without filters, also after another store's writes and deletions."""
    from mnemon_langgraph.store.postgres import _dense as dense_module
    from mnemon_langgraph.store.postgres._bm25 import BM25Query

    server_rankings: list[str] = []
    real_top, real_sql = BM25Query.top, dense_module.exact_dense_sql

    async def top(self: BM25Query, *args: object, **kwargs: object) -> object:
        server_rankings.append("bm25")
        return await real_top(self, *args, **kwargs)  # type: ignore[arg-type]

    def dense_sql(where: str, half: bool) -> str:
        server_rankings.append("dense")
        return real_sql(where, half)

    monkeypatch.setattr(BM25Query, "top", top)
    monkeypatch.setattr(dense_module, "exact_dense_sql", dense_sql)
    filters = [
        None,
        SearchFilters(session_from=2, session_to=3),
        SearchFilters(date_from=START + timedelta(days=100), date_to=START + timedelta(days=300)),
    ]

    def compare(pg: PostgresStore, server: PostgresStore) -> int:
        compared = 0
        for q in [*QUERIES, "w9 w9 w21 nothing-like-it"]:
            for f in filters:
                server_rankings.clear()
                hits = pg.search(q, namespace=NS, k=20, filters=f)
                assert server_rankings == []  # both rankings on the copy
                ref = server.search(q, namespace=NS, k=20, filters=f)
                assert sorted(set(server_rankings)) == ["bm25", "dense"]  # the reference
                assert len(ref) == 20
                assert [(h.record.id, h.bm25_rank, h.dense_rank) for h in hits] == [
                    (h.record.id, h.bm25_rank, h.dense_rank) for h in ref
                ]
                compared += 1
        return compared

    emb = WordSumEmbeddings()
    with (
        PostgresStore(postgres_url, emb, settings=CACHED) as pg,
        PostgresStore(postgres_url, emb) as writer,
    ):
        writer.ingest(NS, _messages(0, 600), origin="test", pack=False)
        server = pg.with_settings(client_cache_mb=0)
        _copied(pg)
        copy = next(iter(pg.dense.cache._copies.values()))
        assert copy.lexical is not None and len(copy.lexical) == 600
        assert compare(pg, server) == 15
        # another store adds a record made of a query's words and deletes others
        writer.ingest(NS, [Message("w7 w30 w7", "A", id="new", session=2)], origin="test")
        top_ids = [h.record.id for h in server.search("w1 w2 w3", namespace=NS, k=5)]
        writer.delete_records(NS, top_ids, reason="test")
        pg.search("w5", namespace=NS, k=1)  # deletions: the copy updates off the search path
        pg.engine.run(pg.dense.cache.settle())
        assert next(iter(pg.dense.cache._copies.values())) is copy and len(copy.lexical) == 596
        assert compare(pg, server) == 15
        first = pg.search("w7 w30", namespace=NS, k=3)[0]
        assert first.record.message_ids == ("new",) and first.bm25_rank == 0
        assert not {h.record.id for h in pg.search("w1 w2 w3", namespace=NS, k=50)} & set(top_ids)


def test_a_namespace_the_budget_holds_only_without_bm25_is_copied_with_its_vectors(
    postgres_url: str,
) -> None:
    """1 MiB holds 1,500 records' 32-dimension vectors (~360 bytes each) but not with their
    BM25 index (~1,060): the copy holds the vectors, BM25 runs in the server, and the
    ranking is the server's; 600 records get both."""
    with PostgresStore(
        postgres_url, WordSumEmbeddings(), settings=PostgresSettings(client_cache_mb=1)
    ) as pg:
        pg.ingest(NS, _messages(0, 1500), origin="test", pack=False)
        pg.ingest(("small",), _messages(0, 600), origin="test", pack=False)
        _copied(pg)
        copy = next(iter(pg.dense.cache._copies.values()))
        assert copy.count == 1500 and copy.lexical is None
        server = pg.with_settings(client_cache_mb=0)
        for q in QUERIES:
            hits = pg.search(q, namespace=NS, k=20)
            ref = server.search(q, namespace=NS, k=20)
            assert len(ref) == 20
            assert [(h.record.id, h.bm25_rank, h.dense_rank) for h in hits] == [
                (h.record.id, h.bm25_rank, h.dense_rank) for h in ref
            ]
        pg.search("w1", namespace=("small",), k=1)
        pg.engine.run(pg.dense.cache.settle())
        small = [c for c in pg.dense.cache._copies.values() if c.count == 600]
        assert len(small) == 1 and small[0].lexical is not None


def test_namespaces_below_client_scan_from_and_over_the_budget_scan_in_the_server(
    postgres_url: str,
) -> None:
    small = PostgresSettings(client_scan_from=1_000)
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=small) as pg:
        pg.ingest(NS, _messages(0, 200), origin="test", pack=False)
        assert _dense(pg, "w1") and not pg.dense.cache._copies  # 200 < client_scan_from
        tight = pg.with_settings(client_scan_from=0, client_cache_mb=0)
        assert _dense(tight, "w1") and not tight.dense.cache._copies
        roomy = pg.with_settings(client_scan_from=0)
        first = _dense(roomy, "w1")  # the server's scan, the copy loading meanwhile
        _copied(roomy)
        _same(_dense(roomy, "w1"), first)


def test_cache_settings_are_checked() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigurationError):
            PostgresSettings(client_scan_from=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError):
            PostgresSettings(client_cache_mb=bad)  # type: ignore[arg-type]


def test_a_selective_filter_runs_bm25_as_the_full_query(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the namespace's copy at hand, the share of records a filter keeps is known: a
    query whose postings times that share are few runs the full query (which reads only the
    filtered rows) instead of impact rounds over every record; the ranking is the same."""
    from mnemon_langgraph.store.postgres._bm25 import BM25Query

    rounds: list[int] = []
    real = BM25Query._impact

    async def counted(self: BM25Query, *args: object) -> object:
        rounds.append(1)
        return await real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(BM25Query, "_impact", counted)
    # BM25 in the server (the copy's own BM25 index would answer the search in the client)
    settings = PostgresSettings(client_scan_from=0, bm25_full_below=100, client_bm25=False)
    one_session = SearchFilters(session_from=1, session_to=1)  # a quarter of the records
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=settings) as pg:
        pg.ingest(NS, _messages(0, 600), origin="test", pack=False)
        pg.search("w1 w2 w3", namespace=NS, k=20)  # unfiltered: rounds; the copy is made
        pg.engine.run(pg.dense.cache.settle())
        assert rounds and pg.dense.cache._copies
        rounds.clear()
        hits = pg.search("w1 w2 w3", namespace=NS, k=20, filters=one_session)
        assert not rounds  # the full query
        no_copy = pg.with_settings(client_cache_mb=0)
        ref = no_copy.search("w1 w2 w3", namespace=NS, k=20, filters=one_session)
        assert rounds  # without the copy: impact rounds, as before
    assert len(hits) == 20 and all(h.record.session == 1 for h in hits)
    assert [(h.record.id, h.score, h.bm25_rank) for h in hits] == [
        (h.record.id, h.score, h.bm25_rank) for h in ref
    ]


def test_the_first_search_does_not_wait_for_the_copy_and_close_stops_its_load(
    postgres_url: str,
) -> None:
    pg = PostgresStore(postgres_url, WordSumEmbeddings(), settings=CACHED)
    try:
        pg.ingest(NS, _messages(0, 400), origin="test", pack=False)
        want = _dense(pg.with_settings(client_cache_mb=0), "w3 w4")
        _same(_dense(pg, "w3 w4"), want)  # answered by the server's scan meanwhile
    finally:
        pg.close()  # with the load under way or done: it stops, nothing is left
    assert pg.engine.closed and not pg.dense.cache._copies and not pg.dense.cache._loading


def test_warm_loads_the_copy_now_and_says_which_namespaces_the_server_ranks(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``warm`` makes the copy (vectors and BM25 index) before it returns, also when a
    search already started its load, so the next search runs no ranking query in the
    server; it is ``False`` for a namespace the budget cannot hold, an empty one, and with
    no budget."""
    import asyncio

    from mnemon_langgraph.store.postgres._bm25 import BM25Query

    server_rankings: list[str] = []
    real_top = BM25Query.top

    async def top(self: BM25Query, *args: object, **kwargs: object) -> object:
        server_rankings.append("bm25")
        return await real_top(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(BM25Query, "top", top)
    budget = PostgresSettings(client_cache_mb=1)  # 600 records and their BM25 fit, 4,000 not
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=budget) as writer:
        writer.ingest(NS, _messages(0, 600), origin="test", pack=False)
        writer.ingest(("big",), _messages(0, 4000), origin="test", pack=False)
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=budget) as pg:
        assert pg.warm(NS) is True
        (copy,) = pg.dense.cache._copies.values()
        assert copy.count == 600 and copy.lexical is not None and not pg.dense.cache._loading
        server_rankings.clear()
        assert len(pg.search("w1 w2", namespace=NS, k=5)) == 5 and server_rankings == []
        assert pg.warm(("big",)) is False and pg.warm(("nobody",)) is False
        assert pg.with_settings(client_cache_mb=0).warm(NS) is False
        assert list(pg.dense.cache._copies.values()) == [copy]
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=budget) as pg:
        pg.search("w1 w2", namespace=NS, k=5)  # starts the load off the search path
        assert asyncio.run(pg.awarm(NS)) is True  # waits for it
        assert [c.count for c in pg.dense.cache._copies.values()] == [600]


@pytest.mark.parametrize("past", ["exact_below", "client_ann_from"])
def test_past_exact_below_the_copy_is_the_approximate_index(postgres_url: str, past: str) -> None:
    """From ``exact_below`` records, or from ``client_ann_from`` below it, the copy is the
    embedded backend's approximate index (FAISS HNSW): it answers the searches (pgvector's
    HNSW only while it loads or when ``client_ann`` is off, past ``exact_below``), finds the
    exact scan's neighbours at their exact distances, follows another store's writes and
    deletions, and a selective filter is exact."""
    emb = WordSumEmbeddings()
    settings = PostgresSettings(client_scan_from=0, **{past: 300})
    with (
        PostgresStore(postgres_url, emb, settings=settings) as pg,
        PostgresStore(postgres_url, emb) as writer,
    ):
        writer.ingest(NS, _messages(0, 600), origin="test", pack=False)
        server = pg.with_settings(client_ann=False)
        exact = pg.with_settings(exact_below=10**9, client_cache_mb=0)  # the server's scan
        _copied(pg)
        nsid, copy = next(iter(pg.dense.cache._copies.items()))
        assert copy.approximate and copy.index.kind == "hnsw" and copy.count == 600
        ranked: list[int] = []
        real_rank = copy.rank
        copy.rank = lambda *a: ranked.append(1) or real_rank(*a)  # type: ignore[method-assign]
        for q in QUERIES:
            got, want = _dense(pg, q), _dense(exact, q)
            assert len(got) == 50 and len(set(dict(got)) & set(dict(want))) >= 45
            same = [rid for rid, _ in got if rid in dict(want)]
            assert np.allclose([dict(got)[r] for r in same], [dict(want)[r] for r in same])
        assert len(ranked) == len(QUERIES)
        if past == "exact_below":  # pgvector's HNSW, never a copy
            assert _dense(server, "w1") and not server.dense.cache._copies
        # a selective filter: the allowed records are scored exactly
        f = SearchFilters(session_from=2, session_to=3)
        hits = pg.search("w1 w2 w3", namespace=NS, k=20, filters=f)
        ref = exact.search("w1 w2 w3", namespace=NS, k=20, filters=f)
        assert len(hits) == 20 and [h.dense_rank for h in hits] == [h.dense_rank for h in ref]
        # another store writes a few records (added on the search path), then many (off it)
        writer.ingest(NS, [Message("w1 w2 w3", "A", id="new", session=9)], origin="test")
        new_id = next(r.id for r in writer.records(NS) if r.message_ids == ("new",))
        assert _dense(pg, "w1 w2 w3")[0][0] == new_id
        assert pg.dense.cache._copies.get(nsid) is copy and copy.count == 601
        writer.ingest(NS, _messages(2000, 100, seed=3), origin="test", pack=False)
        _dense(pg, "w5")  # pgvector's HNSW while the copy catches up
        pg.engine.run(pg.dense.cache.settle())
        assert pg.dense.cache._copies[nsid].count == 701
        writer.delete_records(NS, [new_id], reason="test")
        _dense(pg, "w5")
        pg.engine.run(pg.dense.cache.settle())
        after = _dense(pg, "w1 w2 w3")
        assert pg.dense.cache._copies[nsid].count == 700 and new_id not in dict(after)
        assert len(set(dict(after)) & set(dict(_dense(exact, "w1 w2 w3")))) >= 45


def test_the_client_ann_setting_is_checked() -> None:
    with pytest.raises(ConfigurationError):
        PostgresSettings(client_ann=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "warned"),
    [("cannot schedule new futures after interpreter shutdown", False), ("disk full", True)],
)
def test_a_load_stopped_by_the_interpreter_exiting_says_nothing_and_others_warn(
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: str,
    warned: bool,
) -> None:
    """A store never closed is closed by an exit hook that runs after Python shut its thread
    pools down: a copy loading then fails, which is no news; any other failure is logged.
    The search is answered by the server either way."""
    from mnemon_langgraph.store.postgres import _vector_cache

    def refuse(*args: object, **kwargs: object) -> None:  # the load's bulk step
        raise RuntimeError(error)

    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=CACHED) as pg:
        pg.ingest(NS, _messages(0, 300), origin="test", pack=False)
        monkeypatch.setattr(_vector_cache.NamespaceVectors, "extend", refuse)
        with caplog.at_level("WARNING", logger=_vector_cache.__name__):
            assert len(_dense(pg, "w1")) == 50  # the server's scan; the load fails meanwhile
            pg.engine.run(pg.dense.cache.settle())
        assert not pg.dense.cache._copies
    said = [r.getMessage() for r in caplog.records if r.name == _vector_cache.__name__]
    assert said == ([f"mnemon: copying namespace 1's vectors failed: {error}"] if warned else [])
