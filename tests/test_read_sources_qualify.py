"""Qualified records and hits of a read graph of several sources (``read.sources.binding``):
kept by the record's value, every field of the hit carried over."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from mnemon_langgraph.read.sources.binding import _qualified_hit, qualify_record
from mnemon_langgraph.types import Record, SearchHit


def _rec(rid: str, text: str = "ada: hello", session: int = 1) -> Record:
    return Record(rid, ("u",), session, datetime(2024, 1, 2), 0, ("ada",), (rid,), text)


def test_a_qualified_record_is_the_record_under_its_qualified_id() -> None:
    rec = _rec("r1")
    got = qualify_record("docs", rec)
    assert got == dataclasses.replace(rec, id="docs:r1")
    assert qualify_record("docs", _rec("r1")) == got  # an equal record: the same answer
    assert qualify_record("memory", rec).id == "memory:r1"


def test_records_that_differ_in_any_field_are_qualified_each_as_itself() -> None:
    """Kept by value: an edited text or another session is never answered with a kept
    record of the same id."""
    assert qualify_record("docs", _rec("r1")).text == "ada: hello"
    edited = qualify_record("docs", _rec("r1", text="ada: changed"))
    assert (edited.id, edited.text) == ("docs:r1", "ada: changed")
    assert qualify_record("docs", _rec("r1", session=5)).session == 5


def test_a_record_with_an_unhashable_field_is_still_qualified() -> None:
    rec = dataclasses.replace(_rec("r2"), speakers=["ada"])  # type: ignore[arg-type]
    got = qualify_record("docs", rec)
    assert got.id == "docs:r2" and got.speakers == ["ada"]


def test_a_qualified_hit_keeps_every_field_of_the_hit() -> None:
    """Built field by field: this fails if ``SearchHit`` gains a field it does not carry."""
    hit = SearchHit(_rec("r3"), 4, 0.25, bm25_rank=2, dense_rank=7)
    assert _qualified_hit("docs", hit) == dataclasses.replace(
        hit, record=qualify_record("docs", hit.record)
    )
    assert [f.name for f in dataclasses.fields(SearchHit)] == [
        "record",
        "rank",
        "score",
        "bm25_rank",
        "dense_rank",
    ]


def test_a_record_object_kept_gives_its_qualified_record_and_no_other_object_does() -> None:
    rec = _rec("r1")
    first = qualify_record("docs", rec)
    assert qualify_record("docs", rec) is first  # the same object: the kept answer
    assert qualify_record("memory", rec).id == "memory:r1"  # kept per source name
    for i in range(3):  # other objects: each its own answer
        other = _rec(f"x{i}", text=f"bo: {i}")
        assert qualify_record("docs", other) == dataclasses.replace(other, id=f"docs:x{i}")
    assert qualify_record("docs", rec) == dataclasses.replace(rec, id="docs:r1")


def test_qualified_hits_are_each_hit_qualified_on_random_hits() -> None:
    """The written-out loop of a search's hits against :func:`_qualified_hit` of each: the
    same objects again, equal ones, other sources' names, every field of the hit."""
    import random

    from mnemon_langgraph.read.sources.binding import _qualified_hits

    rng = random.Random(46)
    records = [_rec(f"r{i % 7}", text=f"ada: {i % 3}", session=1 + i % 2) for i in range(20)]
    for _ in range(100):
        hits = [
            SearchHit(
                rng.choice(records),
                rng.randint(0, 50),
                rng.random(),
                bm25_rank=rng.choice([None, rng.randint(0, 9)]),
                dense_rank=rng.choice([None, rng.randint(0, 9)]),
            )
            for _ in range(rng.randint(0, 12))
        ]
        name = rng.choice(["docs", "memory", "team"])
        plain = [
            dataclasses.replace(h, record=dataclasses.replace(h.record, id=f"{name}:{h.record.id}"))
            for h in hits
        ]
        assert _qualified_hits(name, hits) == plain == [_qualified_hit(name, h) for h in hits]
