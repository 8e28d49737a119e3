"""Tests of the read path's one pool module: pages, the first pool, later pages."""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime

import pytest

from mnemon_langgraph.read._pooling import (
    _fuse_with_order,
    build_first_pool,
    dict_to_record,
    fused_keys,
    keyword_order,
    merge_page,
    merge_pages,
    record_to_dict,
    take_page,
)
from mnemon_langgraph.search._fusion import rrf_fuse
from mnemon_langgraph.types import Record, SearchHit


def _rec(rid: str, text: str = "x") -> Record:
    return Record(
        id=rid,
        namespace=("t",),
        session=1,
        date=datetime(2024, 1, 1),
        position=0,
        speakers=("a",),
        message_ids=(rid,),
        text=text,
    )


def _hits(ids: list[str], *, text: str = "x") -> list[SearchHit]:
    return [SearchHit(_rec(i, text), rank=r, score=1.0 / (60 + r)) for r, i in enumerate(ids)]


def _pages(*pages: list[SearchHit]) -> list[tuple[int, int, list[SearchHit]]]:
    return [(i, 0, page) for i, page in enumerate(pages)]


def test_take_page_record_limit() -> None:
    page = take_page(_hits([f"r{i}" for i in range(30)]))
    assert [h.record.id for h in page] == [f"r{i}" for i in range(20)]


def test_take_page_char_limit_and_at_least_one() -> None:
    hits = _hits(["a", "b", "c"], text="y" * 5000)
    size = len(hits[0].record.render())
    page = take_page(hits, max_chars=2 * size)
    assert [h.record.id for h in page] == ["a", "b"]
    page = take_page(hits, max_chars=10)
    assert [h.record.id for h in page] == ["a"]
    assert take_page([]) == []


def test_first_pool_quota_then_summed_rr() -> None:
    s0 = _hits([f"a{i}" for i in range(10)])
    s1 = _hits([f"b{i}" for i in range(10)])
    # "a5" also appears at rank 0 of a third search, so its summed RR is highest of the rest.
    s2 = _hits(["a5", "c1", "c2"])
    pool = build_first_pool(_pages(s0, s1, s2), cap=7)
    ids = [p["id"] for p in pool]
    assert len(ids) == 7
    # Quota 7 // 3 = 2: a0, a1 from s0; b0, b1 from s1; a5, c1 from s2; then 1 by summed RR.
    assert {"a0", "a1", "b0", "b1", "a5", "c1"} <= set(ids)
    extra = (set(ids) - {"a0", "a1", "b0", "b1", "a5", "c1"}).pop()
    # a2, b2 and c2 tie (one search each, rank 2): first appearance picks a2.
    assert extra == "a2"
    # a5 (found by two searches) leads the fused order; found lists both.
    assert ids[0] == "a5"
    assert pool[0]["found"] == [[0, 5], [2, 0]]
    assert all(p["round"] == 1 for p in pool)


def test_first_pool_reports_the_searches_own_indices() -> None:
    pool = build_first_pool([(3, 0, _hits(["x"])), (7, 0, _hits(["y", "x"]))], cap=4)
    assert {p["id"]: p["found"] for p in pool} == {"x": [[3, 0], [7, 1]], "y": [[7, 0]]}


def test_first_pool_skips_duplicates_in_quota() -> None:
    s0 = _hits(["x", "y", "z"])
    s1 = _hits(["x", "y", "w", "v"])
    pool = build_first_pool(_pages(s0, s1), cap=4)
    # s0 takes x, y; s1's quota of 2 skips x and y (already pooled) and takes w, v.
    assert {p["id"] for p in pool} == {"x", "y", "w", "v"}
    assert next(p for p in pool if p["id"] == "x")["found"] == [[0, 0], [1, 0]]


def test_first_pool_cap_and_empty() -> None:
    pages = _pages(*[_hits([f"s{s}-{i}" for i in range(40)]) for s in range(5)])
    pool = build_first_pool(pages, cap=48)
    assert len(pool) == 48
    assert len({p["id"] for p in pool}) == 48
    assert build_first_pool([], cap=48) == []
    assert build_first_pool(_pages([], []), cap=48) == []
    # deterministic
    assert [p["id"] for p in build_first_pool(pages, cap=48)] == [p["id"] for p in pool]


def test_merge_page_appends_new_and_records_provenance() -> None:
    pool = build_first_pool(_pages(_hits(["a", "b"])), cap=4)
    merged, new = merge_page(pool, 0, 2, _hits(["b", "c"]), round_no=2)
    assert new == 1
    assert [p["id"] for p in merged] == ["a", "b", "c"]
    assert merged[1]["found"] == [[0, 1], [0, 2]]
    assert merged[2]["found"] == [[0, 3]] and merged[2]["round"] == 2
    assert pool[1]["found"] == [[0, 1]]  # the input pool is not changed


def test_record_round_trips_through_state_data() -> None:
    rec = _rec("r1", "ada: hello")
    assert dict_to_record(record_to_dict(rec), ("t",)) == rec


def test_pool_keeps_each_records_best_bm25_and_dense_rank() -> None:
    a = [SearchHit(_rec("x"), 0, 1 / 60, bm25_rank=4, dense_rank=None)]
    b = [
        SearchHit(_rec("y"), 0, 1 / 60, bm25_rank=None, dense_rank=0),
        SearchHit(_rec("x"), 1, 1 / 61, bm25_rank=1, dense_rank=7),
    ]
    pool = build_first_pool(_pages(a, b), cap=10)
    by_id = {p["id"]: p for p in pool}
    assert (by_id["x"]["bm25_rank"], by_id["x"]["dense_rank"]) == (1, 7)
    assert (by_id["y"]["bm25_rank"], by_id["y"]["dense_rank"]) == (None, 0)
    later = [
        SearchHit(_rec("y"), 3, 1 / 63, bm25_rank=2, dense_rank=5),
        SearchHit(_rec("z"), 4, 1 / 64, bm25_rank=None, dense_rank=3),
    ]
    merged, new = merge_page(pool, 2, 20, later, 2)
    by_id = {p["id"]: p for p in merged}
    assert new == 1
    assert (by_id["y"]["bm25_rank"], by_id["y"]["dense_rank"]) == (2, 0)
    assert (by_id["z"]["bm25_rank"], by_id["z"]["dense_rank"]) == (None, 3)


def test_take_page_skips_pooled_records_without_counting_them() -> None:
    """``pooled`` hits stay in the prefix (provenance, rank positions) but a page still
    holds ``max_records`` records the turn has not seen; without ``pooled`` it is the plain
    prefix (the negative control: the same call counts every hit)."""
    hits = _hits([f"r{i}" for i in range(10)])
    page = take_page(hits, max_records=3, pooled={"r0", "r2"})
    assert [h.record.id for h in page] == ["r0", "r1", "r2", "r3", "r4"]
    assert [h.record.id for h in take_page(hits, max_records=3)] == ["r0", "r1", "r2"]
    # trailing pooled hits are passed over too; a fully pooled list is returned whole
    assert len(take_page(hits, max_records=3, pooled={f"r{i}" for i in range(10)})) == 10


def test_keyword_order_fuses_exactly_as_rrf_fuse() -> None:
    """The written-out fusion of a dense-only source's order with its keyword order gives
    ``rrf_fuse``'s scores (the same floats) and ties, on random rankings and constants."""
    rng = random.Random(7)
    for _ in range(400):
        n = rng.randint(0, 120)
        keyword = rng.sample(range(n), rng.randint(0, n))
        k = rng.choice([1, 2, 60])
        want = [(f.key, f.score, f.ranks[1]) for f in rrf_fuse([range(n), keyword], k)]
        assert _fuse_with_order(n, keyword, k) == want


def test_keyword_order_puts_the_shared_word_first_and_keeps_the_rest_in_order() -> None:
    texts = ["the weather", "a long walk", "paris in spring", "more weather"]
    order = keyword_order(texts, "paris trip", 60)
    assert [i for i, _, _ in order] == [2, 0, 1, 3]
    assert [kr for _, _, kr in order] == [0, None, None, None]


def test_rebuilt_records_follow_every_field_of_the_entry() -> None:
    """Rebuilt records are kept by what they are made of: an entry that differs in any
    field (its text, date, session, namespace) gives its own record, never a kept one."""
    entry = record_to_dict(_rec("r1", "ada: hello"))
    first = dict_to_record(entry, ("t",))
    assert dict_to_record(dict(entry), ("t",)) == first
    edited = dict_to_record({**entry, "text": "ada: bye"}, ("t",))
    assert edited.text == "ada: bye" and first.text == "ada: hello"
    assert dict_to_record({**entry, "date": "2025-02-03T04:05:00"}, ("t",)).date == datetime(
        2025, 2, 3, 4, 5
    )
    assert dict_to_record({**entry, "session": 4}, ("t",)).session == 4
    assert dict_to_record(entry, ("u",)).namespace == ("u",)
    assert dict_to_record(entry, ["t"]).namespace == ("t",)  # type: ignore[arg-type]


def test_record_headers_follow_session_and_date() -> None:
    """Headers are kept per session and date; each record shows its own."""
    a = _rec("a")
    assert a.header == "Session 1 — 2024-01-01"
    b = Record("b", ("t",), 2, datetime(2024, 1, 1, 9, 30), 0, ("a",), ("b",), "x")
    assert b.header == "Session 2 — 2024-01-01 09:30"
    assert Record("c", ("t",), 3, None, 0, ("a",), ("c",), "x").header == "Session 3"


def test_a_rounds_pages_merged_at_once_as_one_after_another() -> None:
    pool = build_first_pool(_pages(_hits(["a", "b"])), cap=5)
    pages = [(1, 0, _hits(["b", "c"])), (2, 3, _hits(["c", "d", "a"])), (1, 2, _hits(["e"]))]
    step, added = list(pool), 0
    for search, offset, hits in pages:
        step, new = merge_page(step, search, offset, hits, 2)
        added += new
    assert merge_pages(pool, pages, 2) == (step, added)
    assert added == 3 and [p["id"] for p in step] == ["a", "b", "c", "d", "e"]
    assert pool[0]["found"] == [[0, 0]]  # the input pool is not changed


def test_fused_keys_is_rrf_fuses_order() -> None:
    """The union's fusion gives ``rrf_fuse``'s order on random rankings, repeats within a
    ranking included (counted at their first position)."""
    rng = random.Random(11)
    for _ in range(400):
        items = list(range(rng.randint(1, 50)))
        rankings = [
            [rng.choice(items) for _ in range(rng.randint(0, 40))] for _ in range(rng.randint(0, 4))
        ]
        k = rng.choice([1, 5, 60])
        assert fused_keys(rankings, k) == [f.key for f in rrf_fuse(rankings, k)]


def test_record_data_is_new_on_every_call_and_follows_the_record() -> None:
    """The parts kept per record never leak between calls: each call's dict and lists are
    its own, and an edited record (same id) gives its own data."""
    rec = _rec("r9", "ada: hi")
    first = record_to_dict(rec)
    first["speakers"].append("mallory")
    first["text"] = "changed"
    again = record_to_dict(rec)
    assert again["speakers"] == ["a"] and again["text"] == "ada: hi"
    assert again["speakers"] is not record_to_dict(rec)["speakers"]
    later = Record("r9", ("t",), 2, datetime(2024, 2, 1, 8, 5), 0, ("b",), ("r9",), "ada: bye")
    got = record_to_dict(later)
    assert (got["session"], got["date"], got["header"], got["text"]) == (
        2,
        "2024-02-01T08:05:00",
        "Session 2 — 2024-02-01 08:05",
        "ada: bye",
    )
    assert list(record_to_dict(rec)) == list(first)  # the same keys, in the same order


def _plain_record_dict(record: Record) -> dict[str, object]:
    return {
        "id": record.id,
        "session": record.session,
        "date": record.date.isoformat() if record.date else None,
        "position": record.position,
        "speakers": list(record.speakers),
        "roles": list(record.roles),
        "message_ids": list(record.message_ids),
        "text": record.text,
        "source": record.origin,
        "seq": record.seq,
        "header": record.header,
    }


def test_record_data_is_the_plain_formula_for_random_records_kept_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept by the record object, then by its value: every call gives the plain formula's
    data, for the same object again, an equal object, and a record with an unhashable
    field, while the kept objects are dropped and kept again."""
    from mnemon_langgraph.read import _pooling

    monkeypatch.setattr(_pooling, "_KEPT_OBJECTS", 5)  # dropped and refilled often
    rng = random.Random(45)
    records: list[Record] = []
    for n in range(300):
        if records and rng.random() < 0.4:
            rec = rng.choice(records)  # the same object again
        else:
            rid = f"r{rng.randint(0, 20)}"
            rec = Record(
                rid,
                ("t",),
                rng.randint(1, 4),
                rng.choice([None, datetime(2024, 1, rng.randint(1, 28), rng.randint(0, 23))]),
                rng.randint(0, 9),
                tuple(rng.sample(["a", "b", "c"], rng.randint(0, 3))),
                (rid,),
                rng.choice(["ada: hi", "bo: bye", "ada: hi\nbo: bye"]),
                origin=rng.choice(["", "docs", "chat"]),
                seq=rng.randint(0, 5),
                roles=tuple(rng.choice(["user", "assistant"]) for _ in range(rng.randint(0, 2))),
            )
            if rng.random() < 0.05:
                rec = dataclasses.replace(rec, speakers=["a"])  # type: ignore[arg-type]
            records.append(rec)
        got = record_to_dict(rec)
        assert got == _plain_record_dict(rec), n
        got["speakers"].append("x")  # the caller's own lists
        assert record_to_dict(rec) == _plain_record_dict(rec)
    assert len(_pooling._DATA_BY_OBJECT) <= 5


def test_keyword_order_is_the_plain_bm25_fused_with_the_order_on_random_texts() -> None:
    """The BM25 scores summed term by term over every candidate (the package's formula,
    the candidates as the collection), fused with the retriever's order by ``rrf_fuse``:
    the same order, scores and keyword ranks on random texts and queries."""
    from collections import Counter

    from mnemon_langgraph.search._formula import BM25_B, BM25_K1, idf
    from mnemon_langgraph.search._text import terms

    words = ["paris", "walk", "spring", "weather", "garden", "rain", "the", "beagle", "tea"]
    rng = random.Random(12)
    for _ in range(150):
        texts = [" ".join(rng.choices(words, k=rng.randint(0, 8))) for _ in range(60)]
        query = " ".join(rng.choices([*words, "zebra"], k=rng.randint(1, 4)))
        docs = [(Counter(terms(t)), len(terms(t))) for t in texts]
        n, q = len(docs), set(terms(query))
        avgdl = (sum(length for _, length in docs) / n or 1.0) if n else 1.0
        weight = {t: idf(n, sum(1 for c, _ in docs if t in c)) for t in q}
        scores = {}
        for i, (counts, length) in enumerate(docs):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)
            score = 0.0
            for t in q:  # the query's words in their set order, as the page sums them
                if t in counts:
                    score += weight[t] * counts[t] / (counts[t] + norm)
            scores[i] = score
        keyword = sorted((i for i in scores if scores[i] > 0), key=lambda i: (-scores[i], i))
        want = [(f.key, f.score, f.ranks[1]) for f in rrf_fuse([range(n), keyword], 60)]
        assert keyword_order(texts, query, 60) == want
