"""Queries of any size and message ids at their bound, the same on both backends.

A pasted page of text is a query of thousands of distinct words: PostgreSQL scores it with
the array form of the BM25 query (one select column per term would pass PostgreSQL's cap
on a select list) and ranks it as the embedded index does. A message id has one bound,
:data:`~mnemon_langgraph.types.MAX_MESSAGE_ID_CHARS`, on both backends.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

import mnemon_langgraph.store.postgres._impact as impact
from mnemon_langgraph.errors import InputError
from mnemon_langgraph.store import EmbeddedStore, MnemonStore, PostgresStore
from mnemon_langgraph.types import MAX_MESSAGE_ID_CHARS, Message

NS = ("users", "ada")
REL = 1e-4


def _vocabulary(n: int) -> list[str]:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n)}
    return sorted(words)


WORDS = _vocabulary(4000)


def _corpus() -> list[Message]:
    rng = random.Random(11)
    common = WORDS[:30]  # in many records: low idf
    return [
        Message(
            " ".join(rng.choice(common) for _ in range(6))
            + " "
            + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 25))),
            "Ada",
            id=f"m{i}",
            session=1 + i // 50,
        )
        for i in range(240)
    ]


def _long_query(n_words: int) -> str:
    rng = random.Random(3)
    return " ".join(rng.sample(WORDS, n_words))


@pytest.fixture(scope="module")
def corpus() -> list[Message]:
    return _corpus()


@pytest.fixture
def both(tmp_path: Path, postgres_url: str, corpus: list[Message]) -> Iterator[tuple[Any, Any]]:
    with (
        MnemonStore(tmp_path / "m.db", fake_embeddings()) as emb,
        MnemonStore(postgres_url, fake_embeddings()) as pg,
    ):
        assert isinstance(emb, EmbeddedStore) and isinstance(pg, PostgresStore)
        assert emb.ingest(NS, corpus, origin="chat").record_ids == (
            pg.ingest(NS, corpus, origin="chat").record_ids
        )
        yield emb, pg


def _embedded_ranking(emb: EmbeddedStore, query: str, k: int) -> list[tuple[str, float]]:
    index = emb.index(NS)
    index.sync()
    seqs, scores = index.bm25.search(query, k)
    return list(zip(index.bm25.ids_for(seqs.tolist()), scores.tolist(), strict=True))


def _assert_same_ranking(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert len(got) == len(expected) > 0
    for (gid, gs), (eid, es) in zip(got, expected, strict=True):
        assert gs == pytest.approx(es, rel=REL)
        tied = sum(abs(s - es) <= REL * abs(es) for _, s in expected) > 1
        if not tied:  # only records whose scores tie may swap places
            assert gid == eid


@pytest.mark.parametrize("n_words", [2000, 3500])
def test_a_query_of_thousands_of_words_ranks_as_on_sqlite(
    both: tuple[EmbeddedStore, PostgresStore], n_words: int
) -> None:
    emb, pg = both
    query = _long_query(n_words)
    assert len(set(impact.lexical_terms(query))) > 1664  # more than a select list may hold
    expected = _embedded_ranking(emb, query, 20)
    full = pg.with_settings(bm25_prune=False)
    pruned = pg.with_settings(bm25_full_below=0)  # the impact postings, score at a time
    for store in (full, pruned, pg):
        _assert_same_ranking(store.lexical_ranking(query, namespace=NS, k=20), expected)
    for store in (emb, pg):
        hits = store.search(query, namespace=NS, k=5)
        assert len(hits) == 5 and all(h.record.namespace == NS for h in hits)


def test_the_array_form_scores_as_the_column_form(
    both: tuple[EmbeddedStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, pg = both
    full = pg.with_settings(bm25_prune=False)
    # at most the bound (the column form), two common words among them: many matches
    query = f"{WORDS[0]} {WORDS[1]} " + _long_query(impact.COLUMN_TERMS_MAX - 2)
    assert len(set(impact.lexical_terms(query))) <= impact.COLUMN_TERMS_MAX
    columns = full.lexical_ranking(query, namespace=NS, k=30)
    monkeypatch.setattr(impact, "COLUMN_TERMS_MAX", 0)  # every query: the array form
    arrays = full.lexical_ranking(query, namespace=NS, k=30)
    assert [i for i, _ in arrays] == [i for i, _ in columns] and len(columns) == 30
    for (_, a), (_, c) in zip(arrays, columns, strict=True):
        assert a == pytest.approx(c, rel=1e-12)


@pytest.fixture(params=["embedded", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MnemonStore]:
    target = (
        str(tmp_path / "m.db")
        if request.param == "embedded"
        else str(request.getfixturevalue("postgres_url"))
    )
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


def test_message_ids_up_to_the_bound_are_stored_longer_ones_refused(store: MnemonStore) -> None:
    longest = "é" * MAX_MESSAGE_ID_CHARS  # two bytes each in UTF-8
    store.ingest(NS, [Message("first", "Ada", id="short")], origin="chat")
    done = store.ingest(NS, [Message("at the bound", "Ada", id=longest)], origin="chat")
    assert done.records_written == 1
    assert store.known_message_ids(NS, [longest]) == {longest}
    with pytest.raises(InputError, match=f"more than {MAX_MESSAGE_ID_CHARS}"):
        store.ingest(NS, [Message("too long", "Ada", id="x" * 3000)], origin="chat")
    with pytest.raises(InputError, match="message id"):
        Message("too long", "Ada", id="x" * (MAX_MESSAGE_ID_CHARS + 1))
    assert store.count(NS) == 2  # nothing stored before the refusal was lost
    # looking up or deleting an id over the bound names no message: no driver error
    assert store.known_message_ids(NS, ["x" * 3000]) == set()
    store.delete_messages(NS, ["x" * 3000])
    assert store.count(NS) == 2
