"""Hostile input at the argument-checking boundary: the same typed error on both backends.

A value nested deeper than the documented depth, an item key or a namespace longer than
the documented byte limits: each is refused with an ``InputError`` (or ``NamespaceError``,
one) before anything is written, on SQLite and on PostgreSQL alike, where PostgreSQL used to
raise a raw ``ProgramLimitExceeded`` and SQLite stored the same input, and ``put`` raised
``RecursionError``. Input just inside each limit is stored on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from mnemon_langgraph import MnemonBaseStore, MnemonStore
from mnemon_langgraph.errors import InputError, NamespaceError
from mnemon_langgraph.integrations.basestore_rank import MAX_KEY_BYTES, MAX_VALUE_DEPTH
from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.store._internal.contract import MAX_NAMESPACE_BYTES
from mnemon_langgraph.types import Message

ADA = ("memories", "ada")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MnemonStore]:
    where = (
        str(tmp_path / "memory.db")
        if request.param == "sqlite"
        else str(request.getfixturevalue("postgres_url"))
    )
    with MnemonStore(where, DeterministicFakeEmbedding(size=16)) as s:
        yield s


@pytest.fixture
def bs(store: MnemonStore) -> Iterator[MnemonBaseStore]:
    with MnemonBaseStore(store) as b:
        yield b


def _nested(depth: int) -> dict[str, Any]:
    """A value whose mappings nest ``depth`` levels (``{"a": "x"}`` is 1)."""
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def _random_text(n: int, seed: int = 7) -> str:
    """``n`` letters PostgreSQL cannot compress into a B-tree entry (unlike ``"x" * n``)."""
    import random

    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))


def test_a_deeply_nested_value_is_an_input_error_and_nothing_is_written(
    bs: MnemonBaseStore,
) -> None:
    for depth in (MAX_VALUE_DEPTH + 1, 600, 5000):
        with pytest.raises(InputError, match=f"nested more than {MAX_VALUE_DEPTH} levels"):
            bs.put(ADA, "deep", _nested(depth))
        assert bs.get(ADA, "deep") is None
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(InputError, match="nested more than"):
        bs.put(ADA, "cycle", cycle)
    with pytest.raises(InputError, match="filter is nested more than"):
        bs.search(ADA, filter=_nested(MAX_VALUE_DEPTH + 1))
    # just inside the limit: stored, indexed and found
    bs.put(ADA, "deep", _nested(MAX_VALUE_DEPTH))
    stored = bs.get(ADA, "deep")
    assert stored is not None and stored.value == _nested(MAX_VALUE_DEPTH)
    assert [h.key for h in bs.search(ADA, query="x", limit=5)] == ["deep"]


def test_an_item_key_over_the_limit_is_refused_on_both_backends(bs: MnemonBaseStore) -> None:
    with pytest.raises(InputError, match="item key too long"):
        bs.put(ADA, _random_text(3000), {"text": "tea"})
    with pytest.raises(InputError, match="item key too long"):
        bs.put(ADA, "é" * (MAX_KEY_BYTES // 2 + 1), {"text": "tea"})  # bytes, not characters
    assert bs.search(ADA) == []
    longest = _random_text(MAX_KEY_BYTES)
    bs.put(ADA, longest, {"text": "tea"})
    item = bs.get(ADA, longest)
    assert item is not None and item.value == {"text": "tea"}


def test_a_namespace_over_the_limit_is_refused_on_both_backends(
    store: MnemonStore, bs: MnemonBaseStore
) -> None:
    six = tuple(_random_text(512, seed=i) for i in range(6))  # each part within 512
    assert len(namespace_key(six).encode()) > MAX_NAMESPACE_BYTES
    with pytest.raises(NamespaceError, match="namespace too long to store"):
        store.ingest(six, [Message("hello", "Ada", id="m1")], origin="chat")
    with pytest.raises(NamespaceError, match="namespace too long to store"):
        store.add_messages(six, [("user", "hello")])
    with pytest.raises(InputError, match="namespace too long to store"):
        bs.put(six, "k", {"text": "tea"})
    assert store.namespaces() == [] and bs.list_namespaces() == []
    # the longest namespace that fits holds records and items, on either backend
    two = (_random_text(512, seed=1), _random_text(512, seed=2))
    fits = (*two, _random_text(MAX_NAMESPACE_BYTES - len(namespace_key(two)) - 3, seed=3))
    assert len(namespace_key(fits).encode()) == MAX_NAMESPACE_BYTES
    store.ingest(fits, [Message("hello there", "Ada", id="m1")], origin="chat")
    bs.put(fits, _random_text(MAX_KEY_BYTES), {"text": "tea"})
    assert store.count(fits) == 1 and len(bs.search(fits)) == 1


# --- MnemonMemory and MnemonRetriever raise the package's errors, not pydantic's ------------


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[MnemonStore]:
    with MnemonStore(tmp_path / "m.db", DeterministicFakeEmbedding(size=16)) as s:
        s.ingest(ADA, [Message(f"note {i} about tea", "Ada", id=f"m{i}") for i in range(5)],
                 source="chat", pack=False)  # fmt: skip
        yield s


@pytest.mark.parametrize("namespace", ["", ("memories", ""), (), 7])
def test_memory_and_retriever_refuse_a_bad_namespace_with_a_namespace_error(
    journal: MnemonStore, namespace: Any
) -> None:
    from pydantic import ValidationError

    from mnemon_langgraph import MnemonMemory, MnemonRetriever

    for build in (MnemonMemory, MnemonRetriever):
        with pytest.raises(NamespaceError) as caught:
            build(store=journal, namespace=namespace)
        assert not isinstance(caught.value, ValidationError)
        assert "\n" not in str(caught.value) and "namespace" in str(caught.value)


def test_retriever_constructor_arguments_are_configuration_errors(journal: MnemonStore) -> None:
    from mnemon_langgraph import MnemonRetriever
    from mnemon_langgraph.errors import ConfigurationError

    for bad in ({"k": "abc"}, {"k": 2.5}, {"k": None}, {"offset": -1}, {"store": object()}):
        args: dict[str, Any] = {"store": journal, "namespace": ADA, **bad}
        with pytest.raises(ConfigurationError, match="MnemonRetriever: ") as caught:
            MnemonRetriever(**args)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("k", ["abc", None, 2.5, True, -1])
def test_retriever_per_call_k_is_checked_never_converted(journal: MnemonStore, k: Any) -> None:
    import asyncio

    from mnemon_langgraph import MnemonRetriever

    retriever = MnemonRetriever(store=journal, namespace=ADA, k=4)
    with pytest.raises(InputError, match=r"^k must be"):
        retriever.invoke("tea", k=k)
    with pytest.raises(InputError, match=r"^k must be"):
        asyncio.run(retriever.ainvoke("tea", k=k))
    with pytest.raises(InputError, match=r"^offset must be"):
        retriever.invoke("tea", offset=k)
    assert len(retriever.invoke("tea", k=2)) == 2  # a whole number still works


def test_erasing_a_namespace_too_long_to_store_is_the_same_error_on_both_backends(
    store: MnemonStore, bs: MnemonBaseStore
) -> None:
    import asyncio

    six = tuple(_random_text(512, seed=i) for i in range(6))
    for erase in (
        lambda: store.erase_namespace(six),
        lambda: asyncio.run(store.aerase_namespace(six)),
        lambda: bs.erase_namespace(six),
    ):
        with pytest.raises(NamespaceError, match="namespace too long to store"):
            erase()
    bs.delete(six, "k")  # nothing to delete: a no-op, as for any unknown key
    assert bs.get(six, "k") is None and store.audit_log(six) == []


def test_memory_an_older_version_stored_under_a_long_namespace_can_still_be_erased(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mnemon_langgraph.store._internal.contract as contract

    six = tuple(_random_text(512, seed=i) for i in range(6))
    with MnemonStore(tmp_path / "old.db", DeterministicFakeEmbedding(size=16)) as store:
        with monkeypatch.context() as m:  # as an SQLite journal of an older version held it
            m.setattr(contract, "MAX_NAMESPACE_BYTES", 10_000)
            store.ingest(six, [Message("old note", "Ada", id="m1")], origin="chat")
        assert store.count(six) == 1
        assert store.erase_namespace(six) == 1 and store.count(six) == 0
        assert [e.action for e in store.audit_log(six)] == ["erase_namespace"]
