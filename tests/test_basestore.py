"""``MnemonBaseStore``: the memory as a LangGraph ``BaseStore``, on both backends.

Items (put/get/delete, filters, ``index=``, namespace prefixes, listings, erase and audit)
and the records of the journal in one search; the LangGraph and LangChain surfaces that take a
``store=`` (``compile``, ``create_agent``, LangMem's tools) run against it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp, SearchItem
from langgraph.store.memory import InMemoryStore

from mnemon_langgraph import MnemonBaseStore, MnemonStore
from mnemon_langgraph.errors import InputError, ModelCallError
from mnemon_langgraph.integrations.basestore_rank import reachable
from mnemon_langgraph.types import Message

ADA = ("memories", "ada")
DIM = 32


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools (it replies from its script either way)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:  # type: ignore[override]
        return self


class FailingEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedder down")

    def embed_query(self, text: str) -> list[float]:
        return [1.0] * DIM


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the store lives: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


def _open(target: str, embeddings: Embeddings | None = None) -> MnemonStore:
    return MnemonStore(target, embeddings or DeterministicFakeEmbedding(size=DIM))


@pytest.fixture
def store(target: str) -> Iterator[MnemonStore]:
    s = _open(target)
    yield s
    s.close()


@pytest.fixture
def bs(store: MnemonStore) -> Iterator[MnemonBaseStore]:
    with MnemonBaseStore(store) as b:
        yield b


def _seed_records(store: MnemonStore, ns: tuple[str, ...] = ADA) -> None:
    store.ingest(
        ns,
        [
            Message("I adopted a grey cat called Pixel", "Ada", id="m1", session=1,
                    timestamp=datetime(2024, 5, 1, 9, 30)),
            Message("My sister lives in Porto", "Ada", id="m2", session=2,
                    timestamp=datetime(2024, 6, 2)),
        ],
        origin="chat",
        pack=False,
    )  # fmt: skip


# --- the key-value face ------------------------------------------------------------------------


def test_is_a_real_basestore_with_ttl(bs: MnemonBaseStore) -> None:
    assert isinstance(bs, BaseStore)
    assert bs.supports_ttl is True  # TTL: tests/test_basestore_ttl.py
    with pytest.raises(InputError, match="ttl"):
        bs.put(ADA, "k", {"content": "x"}, ttl=-5)
    with pytest.raises(InputError, match="ttl"):
        bs.batch([PutOp(ADA, "ok", {"content": "x"}), PutOp(ADA, "k", {"content": "x"}, ttl=0)])
    assert bs.get(ADA, "k") is None and bs.get(ADA, "ok") is None  # nothing half-written
    from mnemon_langgraph.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="MnemonStore"):
        MnemonBaseStore(InMemoryStore())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="index"):
        MnemonBaseStore(bs.store, index="content")


def test_put_get_update_delete(bs: MnemonBaseStore) -> None:
    assert bs.get(ADA, "p") is None
    bs.put(ADA, "p", {"content": "likes tea", "n": 1})
    first = bs.get(ADA, "p")
    assert first is not None and first.value == {"content": "likes tea", "n": 1}
    assert first.namespace == ADA and first.key == "p"
    assert first.created_at.tzinfo is not None
    bs.put(ADA, "p", {"content": "likes coffee", "n": 2})
    second = bs.get(ADA, "p")
    assert second is not None and second.value["content"] == "likes coffee"
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    bs.put(ADA, "q", {"content": "newer"})
    assert [i.key for i in bs.search(ADA)] == ["q", "p"]  # no query: newest first
    assert [i.score for i in bs.search(ADA)] == [None, None]
    bs.delete(ADA, "p")
    bs.delete(ADA, "q")
    assert bs.get(ADA, "p") is None
    assert bs.search(ADA) == []


def test_items_are_durable_in_the_same_database(target: str) -> None:
    with _open(target) as store, MnemonBaseStore(store) as bs:
        bs.put(ADA, "profile", {"content": "vegetarian", "city": "Lyon"})
    with _open(target) as store, MnemonBaseStore(store) as bs:
        again = bs.get(ADA, "profile")
        assert again is not None and again.value == {"content": "vegetarian", "city": "Lyon"}
        assert bs.search(ADA, query="vegetarian")[0].key == "profile"
    if not target.startswith("postgresql"):
        import sqlite3

        with sqlite3.connect(target) as conn:  # the journal's own file, not a side file
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert {"records", "mnemon_kv_items"} <= tables


def test_bad_input_is_refused_and_loses_nothing(bs: MnemonBaseStore) -> None:
    bs.put(ADA, "keep", {"content": "kept"})
    with pytest.raises(InputError):  # the second put is bad: the first is not written either
        bs.batch([PutOp(ADA, "new", {"content": "x"}), PutOp(ADA, "bad", {"x": {1, 2}})])
    assert bs.get(ADA, "new") is None
    with pytest.raises(InputError):
        bs.put(ADA, "nan", {"x": float("nan")})
    with pytest.raises(InputError, match="Unicode"):
        bs.put(ADA, "surrogate", {"content": "bad \ud800 text"})
    with pytest.raises(InvalidNamespaceError):
        bs.batch([PutOp("memories", "k", {"x": 1})])  # type: ignore[arg-type]
    bs.put(["memories", "ada"], "listed", {"content": "a list names a namespace too"})  # type: ignore[arg-type]
    assert bs.get(ADA, "listed") is not None
    bs.delete(ADA, "listed")
    with pytest.raises(InputError, match="record"):
        bs.put(ADA, "fake", {"kind": "record", "content": "forged"})
    with pytest.raises(InvalidNamespaceError):
        bs.put(("users", "ada@example.com"), "k", {"x": 1})
    with pytest.raises(InvalidNamespaceError):
        bs.batch([PutOp(("langgraph", "x"), "k", {"x": 1})])
    with pytest.raises(InputError, match=r"\$like"):
        bs.search(ADA, filter={"content": {"$like": "k%"}})
    assert [i.key for i in bs.search(ADA)] == ["keep"]


def test_closing_is_idempotent_and_final(store: MnemonStore) -> None:
    from mnemon_langgraph.errors import RuntimeMnemonError

    bs = MnemonBaseStore(store)
    bs.put(ADA, "k", {"content": "x"})
    bs.close()
    bs.close()
    with pytest.raises(RuntimeMnemonError, match="closed"):
        bs.get(ADA, "k")
    with pytest.raises(RuntimeMnemonError, match="closed"):
        asyncio.run(bs.aget(ADA, "k"))
    with MnemonBaseStore(store) as again:  # the store itself stayed open
        assert again.get(ADA, "k") is not None


def test_a_failing_embedder_writes_nothing(target: str) -> None:
    with _open(target, FailingEmbeddings()) as store, MnemonBaseStore(store) as bs:
        with pytest.raises(ModelCallError):
            bs.put(ADA, "k", {"content": "x"})
        bs.put(ADA, "plain", {"content": "x"}, index=False)  # nothing to embed
        assert bs.get(ADA, "k") is None and bs.get(ADA, "plain") is not None


# --- namespaces --------------------------------------------------------------------------------


def test_prefixes_match_whole_segments(bs: MnemonBaseStore, store: MnemonStore) -> None:
    bs.put(("foo",), "a", {"content": "alpha apples"})
    bs.put(("foo", "bar"), "b", {"content": "beta apples"})
    bs.put(("foobar",), "c", {"content": "gamma apples"})
    _seed_records(store, ("foobar", "x"))
    found = bs.search(("foo",), query="apples cat")
    assert {(i.namespace, i.key) for i in found} == {(("foo",), "a"), (("foo", "bar"), "b")}
    assert {i.key for i in bs.search(("foo",))} == {"a", "b"}
    assert bs.list_namespaces(prefix=("foo",)) == [("foo",), ("foo", "bar")]
    assert [i.key for i in bs.search(("foobar",))] == ["c"]


def test_list_namespaces(bs: MnemonBaseStore, store: MnemonStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]:
        bs.put(ns, "k", {"v": 1})
    _seed_records(store, ("r", "ada"))
    _seed_records(store, ("users", "ada@example.com"))  # a label LangGraph cannot name
    every = bs.list_namespaces()
    assert every == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("r", "ada"), ("z", "b", "c")]
    assert bs.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x")]
    assert bs.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("z", "b", "c")]
    assert bs.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"),
                                                     ("z", "b", "c")]  # fmt: skip
    assert bs.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "x")]
    assert bs.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x")]
    assert bs.list_namespaces(prefix=("nothing",)) == []
    found = bs.search((), query="cat Pixel Porto")  # the whole store: every reachable namespace
    assert {i.namespace for i in found} >= {("r", "ada")}
    assert all(reachable(i.namespace) for i in found)


# --- search ------------------------------------------------------------------------------------


def test_filters(bs: MnemonBaseStore) -> None:
    bs.put(ADA, "a", {"n": 9, "tag": "x", "when": "2024-01-05", "meta": {"lang": "fr"}})
    bs.put(ADA, "b", {"n": 10, "tag": "y", "when": "2024-03-01", "meta": {"lang": "en"}})
    bs.put(ADA, "c", {"n": "10", "tag": "x"})  # a string, never compared with numbers
    bs.put(ADA, "d", {"n": 2.5, "flag": True})

    def keys(f: dict[str, Any]) -> set[str]:
        return {i.key for i in bs.search(ADA, filter=f)}

    assert keys({"n": {"$gt": 9}}) == {"b"}  # 10 > 9 as numbers ("10" < "9" as text)
    assert keys({"n": {"$gte": 9}}) == {"a", "b"}
    assert keys({"n": {"$lt": 9}}) == {"d"}
    assert keys({"n": {"$lte": 9.0}}) == {"a", "d"}
    assert keys({"n": {"$gt": 2, "$lt": 10}}) == {"a", "d"}
    assert keys({"n": 10}) == {"b"}
    assert keys({"n": {"$eq": "10"}}) == {"c"}
    assert keys({"tag": {"$ne": "x"}}) == {"b", "d"}  # a missing field is "not equal"
    assert keys({"tag": "x", "n": {"$lt": 100}}) == {"a"}
    assert keys({"when": {"$gte": "2024-02-01"}}) == {"b"}
    assert keys({"meta": {"lang": "fr"}}) == {"a"}
    assert keys({"flag": True}) == {"d"} and keys({"flag": 1}) == set()
    assert keys({"tag": "none"}) == set()
    # the same filters hold with a query
    assert {i.key for i in bs.search(ADA, query="x", filter={"n": {"$gt": 9}})} == {"b"}


def test_index_decides_what_is_searchable(bs: MnemonBaseStore) -> None:
    bs.put(ADA, "hidden", {"content": "zebra crossing"}, index=False)
    bs.put(ADA, "title", {"title": "zebra facts", "body": "stripes"}, index=["title"])
    bs.put(ADA, "body", {"title": "horses", "body": "zebra stripes"}, index=["title"])
    found = bs.search(ADA, query="zebra")
    assert found[0].key == "title"
    assert "hidden" not in {i.key for i in found}  # index=False: never found by a query
    scores = {i.key: i.score for i in found}
    assert scores["title"] is not None and scores["body"] is not None
    assert scores["title"] > scores["body"]  # "zebra" in an unindexed field does not count
    assert "hidden" in {i.key for i in bs.search(ADA)}  # ... but still listed


def test_search_ranks_items_and_records(bs: MnemonBaseStore, store: MnemonStore) -> None:
    _seed_records(store)
    bs.put(ADA, "m-1", {"content": "Ada's cat Pixel is afraid of the vacuum"})
    bs.put(ADA, "m-2", {"content": "Ada works as a nurse"})
    found = bs.search(ADA, query="Pixel the cat", limit=10)
    scores = [i.score for i in found]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    records = [i for i in found if i.value.get("kind") == "record"]
    items = [i for i in found if "kind" not in i.value]
    assert records and items and len(records) + len(items) == len(found)
    cat = next(r for r in records if "Pixel" in r.value["content"])
    assert cat.value["message_ids"] == ["m1"] and cat.value["session"] == 1
    assert cat.value["date"].startswith("2024-05-01T09:30")
    assert cat.created_at.year == 2024 and cat.namespace == ADA
    assert {found[0].key, found[1].key} >= {"m-1"}  # both mention Pixel and cat
    only_records = bs.search(ADA, query="Pixel", filter={"kind": "record"})
    assert only_records and all(i.value["kind"] == "record" for i in only_records)
    only_items = bs.search(ADA, query="Pixel", filter={"kind": {"$ne": "record"}})
    assert {i.key for i in only_items} == {"m-1", "m-2"}
    by_session = bs.search(ADA, query="sister Porto", filter={"session": 2})
    assert [i.value["message_ids"] for i in by_session] == [["m2"]]
    page = bs.search(ADA, query="Pixel the cat", limit=2, offset=1)
    assert [i.key for i in page] == [i.key for i in found[1:3]]
    # a record is written and deleted through the store, never through put/delete
    assert bs.get(ADA, cat.key) is None
    bs.delete(ADA, cat.key)
    assert store.count(ADA) == 2 and bs.audit_log(ADA) == []


def test_concurrent_writers_from_threads(bs: MnemonBaseStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def work(i: int) -> None:
        bs.put(ADA, f"k{i}", {"content": f"fact number {i}", "i": i})
        assert bs.get(ADA, f"k{i}") is not None

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(24)))
    assert len(bs.search(ADA, limit=100)) == 24
    late = bs.search(ADA, filter={"i": {"$gte": 20}})
    assert {i.key for i in late} == {f"k{i}" for i in range(20, 24)}


def test_async_face_matches_the_sync_face(bs: MnemonBaseStore, store: MnemonStore) -> None:
    _seed_records(store)

    async def run() -> tuple[Any, ...]:
        await bs.aput(ADA, "a", {"content": "Pixel sleeps on the sofa", "n": 3})
        got = await bs.aget(ADA, "a")
        found = await bs.asearch(ADA, query="Pixel sofa")
        listed = await bs.alist_namespaces(prefix=("memories",))
        filtered = await bs.asearch(ADA, filter={"n": {"$gte": 3}})
        await bs.adelete(ADA, "gone")  # absent key: nothing deleted, nothing audited
        return got, found, listed, filtered

    got, found, listed, filtered = asyncio.run(run())
    assert got == bs.get(ADA, "a")
    assert [(i.key, i.score) for i in found] == [
        (i.key, i.score) for i in bs.search(ADA, query="Pixel sofa")
    ]
    assert listed == [ADA] and [i.key for i in filtered] == ["a"]
    assert bs.audit_log(ADA) == []


# --- deletion and erase ------------------------------------------------------------------------


def test_delete_is_audited_and_erase_takes_items_and_records(
    bs: MnemonBaseStore, store: MnemonStore, target: str
) -> None:
    _seed_records(store)
    bs.put(ADA, "secret", {"content": "the vault code is 77zebra31"})
    bs.put(ADA, "other", {"content": "likes tea"})
    bs.put(("memories", "bob"), "b", {"content": "bob's item"})
    sqlite = not target.startswith("postgresql")
    assert not sqlite or b"77zebra31" in _file_bytes(target)  # the control: it was written
    bs.delete(ADA, "secret")
    assert not sqlite or b"77zebra31" not in _file_bytes(target)  # and is scrubbed
    assert "secret" not in {i.key for i in bs.search(ADA, query="vault code 77zebra31")}
    [entry] = bs.audit_log(ADA)
    assert (entry.action, entry.keys, entry.count, entry.actor) == (
        "delete_items",
        ("secret",),
        1,
        "basestore",
    )
    assert "77zebra31" not in json.dumps([e.keys for e in bs.audit_log()])
    erased = bs.erase_namespace(ADA, actor="gdpr")
    assert erased == {"items": 1, "records": 2}
    assert bs.search(ADA) == [] and bs.search(ADA, query="cat Pixel tea") == []
    assert store.count(ADA) == 0 and bs.get(ADA, "other") is None
    # both trails are append-only: the erase adds its row after the earlier ones
    assert [(e.action, e.count, e.actor) for e in bs.audit_log(ADA)] == [
        ("delete_items", 1, "basestore"),
        ("erase_namespace", 1, "gdpr"),
    ]
    assert [e.action for e in store.audit_log(ADA)] == ["erase_namespace"]
    assert bs.get(("memories", "bob"), "b") is not None  # another namespace is untouched
    assert not sqlite or b"likes tea" not in _file_bytes(target)


def _file_bytes(target: str) -> bytes:
    """The SQLite file and its WAL, as they are on disk."""
    return b"".join(p.read_bytes() for p in Path(target).parent.glob("memory.db*") if p.is_file())


def test_the_stores_own_erase_takes_the_items_too(target: str) -> None:
    # store.erase_namespace (and so `mnemon erase`) erases every table keyed by the
    # namespace, the BaseStore's items included, on both backends; other users' stay.
    with _open(target) as store, MnemonBaseStore(store) as bs:
        _seed_records(store)
        bs.put(ADA, "k", {"content": "x"})
        bs.put(("users", "bo"), "k", {"content": "y"})
        assert bs.get(ADA, "k") is not None
        store.erase_namespace(ADA)
        assert bs.get(ADA, "k") is None
        assert bs.get(("users", "bo"), "k") is not None
        assert list(store.records(ADA)) == []


# --- the surfaces that take a store ------------------------------------------------------------


def test_compiled_graph_node_uses_get_store(bs: MnemonBaseStore, store: MnemonStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import MessagesState, StateGraph

    _seed_records(store)

    def node(state: MessagesState) -> dict[str, Any]:
        s = get_store()
        s.put(ADA, "seen", {"content": "Pixel is a grey cat"})
        hits = s.search(ADA, query="grey cat")
        return {"messages": [("ai", " | ".join(h.value["content"] for h in hits[:3]))]}

    graph = (
        StateGraph(MessagesState).add_node("n", node).add_edge("__start__", "n").compile(store=bs)
    )
    out = graph.invoke({"messages": [("user", "hi")]})
    assert "Pixel" in out["messages"][-1].text
    assert bs.get(ADA, "seen") is not None


def test_async_graph_node_awaits_the_store(bs: MnemonBaseStore, store: MnemonStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import MessagesState, StateGraph

    _seed_records(store)

    async def node(state: MessagesState) -> dict[str, Any]:
        s = get_store()
        await s.aput(ADA, "async", {"content": "written from an async node"})
        hits = await s.asearch(ADA, query="grey cat Pixel")
        return {"messages": [("ai", hits[0].value["content"])]}

    graph = StateGraph(MessagesState).add_node("n", node).add_edge("__start__", "n")
    out = asyncio.run(graph.compile(store=bs).ainvoke({"messages": [("user", "hi")]}))
    assert "Pixel" in out["messages"][-1].text
    assert bs.get(ADA, "async") is not None


def test_create_agent_tool_reads_runtime_store(bs: MnemonBaseStore, store: MnemonStore) -> None:
    _seed_records(store)
    bs.put(ADA, "diet", {"content": "Ada is vegetarian"})

    @tool
    def recall(query: str, runtime: ToolRuntime) -> str:
        """Look something up in long-term memory."""
        assert runtime.store is not None
        hits = runtime.store.search(ADA, query=query, limit=3)
        return "\n".join(f"{h.key}: {h.value['content']}" for h in hits)

    call = AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "vegetarian"},
                                      "id": "c1"}])  # fmt: skip
    model = ToolCallingFake(messages=iter([call, AIMessage("done")]))
    agent = create_agent(model, tools=[recall], store=bs)
    out = agent.invoke({"messages": [("user", "what do I eat?")]})
    [result] = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result.splitlines()[0] == "diet: Ada is vegetarian"


def test_langmem_tools_against_it(bs: MnemonBaseStore) -> None:
    import langmem  # the langmem extra (in dev): a missing package fails, never skips

    ns = ("memories", "{langgraph_user_id}")
    tools = [langmem.create_manage_memory_tool(ns), langmem.create_search_memory_tool(ns)]
    script = [
        AIMessage("", tool_calls=[{"name": "manage_memory", "id": "1",
                                   "args": {"content": "Ada's cat is called Pixel"}}]),
        AIMessage("", tool_calls=[{"name": "search_memory", "id": "2",
                                   "args": {"query": "cat name"}}]),
        AIMessage("noted"),
    ]  # fmt: skip
    agent = create_agent(ToolCallingFake(messages=iter(script)), tools=tools, store=bs)
    out = agent.invoke(
        {"messages": [("user", "remember my cat")]},
        config={"configurable": {"langgraph_user_id": "ada"}},
    )
    created, searched = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert created.startswith("created memory ")
    key = created.removeprefix("created memory ").strip()
    item = bs.get(ADA, key)
    assert item is not None and item.value == {"content": "Ada's cat is called Pixel"}
    assert json.loads(searched)[0]["key"] == key
    assert bs.search(("memories", "bob"), query="cat") == []  # another user sees nothing


def test_langmem_async_tools(bs: MnemonBaseStore) -> None:
    import langmem

    manage = langmem.create_manage_memory_tool(("memories", "ada"), store=bs)
    search = langmem.create_search_memory_tool(("memories", "ada"), store=bs)

    async def run() -> tuple[str, str, str]:
        made = await manage.ainvoke({"content": "prefers window seats"})
        key = made.removeprefix("created memory ").strip()
        found = await search.ainvoke({"query": "window seat"})
        gone = await manage.ainvoke({"action": "delete", "id": key})
        return key, found, gone

    key, found, gone = asyncio.run(run())
    assert json.loads(found)[0]["key"] == key and gone == f"Deleted memory {key}"
    assert bs.get(ADA, key) is None
    assert [e.keys for e in bs.audit_log(ADA)] == [(key,)]


def test_same_answers_as_langgraphs_in_memory_store_on_filters(bs: MnemonBaseStore) -> None:
    """Where LangGraph's own store is defined, ours agrees (listing, filters, prefixes)."""
    ref = InMemoryStore()
    rows = [(("p", "q"), "1", {"n": 1, "t": "a"}), (("p",), "2", {"n": 5, "t": "b"}),
            (("pq",), "3", {"n": 7, "t": "a"})]  # fmt: skip
    for ns, key, value in rows:
        ref.put(ns, key, value)
        bs.put(ns, key, value)
    for f in ({"t": "a"}, {"n": {"$gte": 5}}, {"n": {"$ne": 1}}, {"t": "a", "n": {"$lt": 7}}):
        assert {i.key for i in bs.search(("p",), filter=f)} == {
            i.key for i in ref.search(("p",), filter=f)
        }, f
    assert bs.list_namespaces() == ref.list_namespaces()
    assert bs.list_namespaces(prefix=("p",)) == ref.list_namespaces(prefix=("p",))


def test_pool_ranking_fuses_bm25_with_the_best_vector_of_each_candidate() -> None:
    import numpy as np

    from mnemon_langgraph.integrations.basestore_rank import Candidate, rank_pool

    def cand(key: str, text: str, vectors: list[list[float]] | None) -> Candidate:
        item = SearchItem(("n",), key, {}, datetime(2024, 1, 1), datetime(2024, 1, 1))
        return Candidate(text, None if vectors is None else np.asarray(vectors, np.float32), item)

    pool = [
        cand("b", "nothing here", [[0.6, 0.8]]),
        cand("a", "unrelated words", [[0.0, 1.0], [1.0, 0.0]]),  # its second text matches best
        cand("c", "the zebra text", None),  # no vector: ranked by BM25 alone
    ]
    ranked = rank_pool(pool, "zebra", np.asarray([1.0, 0.0], np.float32), depth=10)
    by_key = {c.result.key: s for c, s in ranked}
    assert by_key == pytest.approx({"c": 1 / 60, "a": 1 / 60, "b": 1 / 61})
    assert [c.result.key for c, _ in ranked][:2] == ["c", "a"]  # tie: BM25's list first
    top1 = rank_pool(pool, "zebra", np.asarray([1.0, 0.0], np.float32), depth=1)
    assert {c.result.key for c, _ in top1} == {"c", "a"}  # each ranking cut to its top 1
    assert rank_pool(pool, "zebra", None, depth=10)[0][0].result.key == "c"


def test_items_move_between_backends_losslessly(tmp_path: Path, postgres_url: str) -> None:
    with _open(str(tmp_path / "a.db")) as src_store, MnemonBaseStore(src_store) as src:
        src.put(ADA, "b", {"content": "likes tea", "n": 1.5, "tags": ["x", "ü"]})
        src.put(ADA, "a", {"title": "zebra facts", "body": "stripes"}, index=["title"])
        src.put(ADA, "c", {"content": "hidden"}, index=False)
        src.put(("memories", "ada", "sub"), "d", {"content": "not exported with ada"})
        exported = src.export_items(ADA)
    assert [r["key"] for r in exported] == ["a", "b", "c"]
    assert [r["index"] for r in exported] == [["title"], ["$"], False]
    text = json.dumps(exported, ensure_ascii=False, sort_keys=True)
    with _open(postgres_url) as dst_store, MnemonBaseStore(dst_store) as dst:
        assert dst.import_items(json.loads(text)) == 3
        assert dst.import_items(json.loads(text)) == 3  # idempotent
        again = json.dumps(dst.export_items(ADA), ensure_ascii=False, sort_keys=True)
        assert again == text
        found = dst.search(ADA, query="zebra")
        assert found[0].key == "a" and "c" not in {i.key for i in found}  # index kept
        bad = [*json.loads(text), {"namespace": ["memories", "ada"], "key": "z", "value": 3,
                                   "created_at": "2024-01-01T00:00:00+00:00",
                                   "updated_at": "2024-01-01T00:00:00+00:00"}]  # fmt: skip
        dst.delete(ADA, "b")
        with pytest.raises(InputError, match="item 3"):
            dst.import_items(bad)
        assert dst.get(ADA, "b") is None  # nothing of the refused import was written
        with pytest.raises(InputError, match="item 0: created_at"):
            dst.import_items([{**exported[0], "created_at": "yesterday"}])
