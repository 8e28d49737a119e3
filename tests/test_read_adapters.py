"""RetrieverSource and BaseStoreSource against the real things: LangChain's InMemoryVectorStore
and FAISS with the bundled embedder, LangGraph's InMemoryStore written by LangMem's tool,
MnemonBaseStore, and the read graph's View over each."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore
from langmem import create_manage_memory_tool

from mnemon_langgraph.errors import ConfigurationError, InputError, NamespaceError
from mnemon_langgraph.integrations.basestore import MnemonBaseStore
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.sources import BaseStoreSource, RetrieverSource
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS
from mnemon_langgraph.search.embeddings import default_embeddings
from mnemon_langgraph.store.base import MnemonStore
from mnemon_langgraph.types import SearchFilters, SearchSource

pytestmark = pytest.mark.integration  # the bundled MiniLM embedder

CONFUSABLE = ["ada", "ada ", "ADA", "Ada", "ad", "ada\u200b", "ada/x"]
"""User ids that must never see each other's records."""

HANDBOOK = (
    "Vacation policy. Every employee has 25 days of paid vacation per year. "
    "Unused days carry over until the end of March. "
) * 12


@pytest.fixture(scope="module")
def embeddings():
    return default_embeddings()


def _docs() -> list[Document]:
    return [
        Document(HANDBOOK, metadata={"title": "Handbook", "date": "2024-03-01T09:30:00"}),
        Document("The office is closed on Fridays in August.", metadata={"title": "Handbook"}),
        Document(
            "The parking garage opens at 7am.",
            metadata={"title": "Facilities", "date": datetime(2024, 5, 2, tzinfo=UTC)},
        ),
        Document("Lunch is served in the atrium.", metadata={"id": "lunch-1"}),
    ]


@pytest.fixture(scope="module")
def memory_docs(embeddings) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embeddings)
    store.add_documents(_docs())
    return store


@pytest.fixture(scope="module")
def faiss_docs(embeddings) -> FAISS:
    return FAISS.from_documents(_docs(), embeddings)


@pytest.mark.parametrize("kind", ["memory", "faiss"])
def test_documents_become_dated_records_with_stable_ids(kind, memory_docs, faiss_docs) -> None:
    vs = memory_docs if kind == "memory" else faiss_docs
    source = RetrieverSource(vs.as_retriever())
    assert isinstance(source, SearchSource) and source.namespace_template is None
    assert source.pages is False and source.filters_dates is False
    hits = source.search("how many vacation days", k=20)
    records = [h.record for h in hits]
    handbook = [r for r in records if r.speakers == ("Handbook",)]
    long_doc = [r for r in handbook if "Vacation" in r.text]
    # the long document is cut like a long message: several records, one session, in order
    assert len(long_doc) > 1 and all(len(r.text) <= DEFAULT_MAX_CHARS for r in long_doc)
    assert [r.position for r in long_doc] == [
        long_doc[0].position + n for n in range(len(long_doc))
    ]
    rejoined = " ".join(r.text.removeprefix("Handbook: ") for r in long_doc)
    assert rejoined == " ".join(HANDBOOK.split())
    assert {r.date for r in long_doc} == {datetime(2024, 3, 1, 9, 30)}
    # both Handbook documents share a session; other titles and untitled ones do not
    sessions = {r.session for r in handbook}
    assert len(sessions) == 1
    assert sessions.isdisjoint(r.session for r in records if r.speakers != ("Handbook",))
    friday = next(r for r in records if "Fridays" in r.text)
    assert friday.date is None and friday.header == f"Session {friday.session}"
    garage = next(r for r in records if "garage" in r.text)
    assert garage.date == datetime(2024, 5, 2)  # aware dates are kept in UTC, naive
    # ids are stable across calls and across queries that find the same document
    again = {h.record.id for h in source.search("parking and lunch", k=20)}
    assert {r.id for r in records} == again and len(again) == len(records)
    assert [h.rank for h in hits] == list(range(len(hits)))


async def test_async_search_equals_sync(memory_docs) -> None:
    source = RetrieverSource(memory_docs.as_retriever())
    sync = source.search("parking garage", k=3)
    assert [h.record for h in await source.asearch("parking garage", k=3)] == [
        h.record for h in sync
    ]
    assert "garage" in sync[0].record.text


def test_offset_and_filters_apply_to_the_records_returned(memory_docs) -> None:
    source = RetrieverSource(memory_docs.as_retriever())
    every = source.search("office vacation parking lunch", k=50)
    page = source.search("office vacation parking lunch", k=2, offset=2)
    assert [h.record.id for h in page] == [h.record.id for h in every[2:4]]
    may = SearchFilters(date_from=datetime(2024, 5, 1), date_to=datetime(2024, 5, 31))
    dated = source.search("office vacation parking lunch", k=50, filters=may)
    assert [h.record.text for h in dated] == ["Facilities: The parking garage opens at 7am."]


def test_the_id_key_then_the_document_id_then_a_content_hash() -> None:
    class Fixed(BaseRetriever):
        docs: list[Document]

        def _get_relevant_documents(self, query, *, run_manager):
            return self.docs

    docs = [
        Document("a", metadata={"id": "given"}),
        Document("b", id="store-id"),
        Document("c"),
        Document("c"),  # the same document twice counts once
    ]
    source = RetrieverSource(Fixed(docs=docs))
    records = [h.record for h in source.search("x")]
    assert [r.message_ids[0] for r in records[:2]] == ["given", "store-id"]
    assert records[2].message_ids[0].startswith("c-") and len(records) == 3
    other = RetrieverSource(Fixed(docs=list(reversed(docs))))
    assert {r.id for r in records} == {h.record.id for h in other.search("y")}


def test_a_document_changed_under_its_id_is_converted_again() -> None:
    """The records of a document are kept between searches, keyed by all they are made of:
    the same document gives the very same records, an edit or a new date gives new ones."""

    class Fixed(BaseRetriever):
        docs: list[Document]

        def _get_relevant_documents(self, query, *, run_manager):
            return self.docs

    retriever = Fixed(docs=[Document("Ada paid invoice 41.", metadata={"id": "d1"})])
    source = RetrieverSource(retriever).for_run({"user_id": "ada"})
    first = [h.record for h in source.search("invoice")]
    again = [h.record for h in source.search("invoice")]
    assert first == again and first[0] is again[0]  # converted once
    retriever.docs = [Document("Ada paid invoice 42.", metadata={"id": "d1", "date": "2024-05-01"})]
    edited = [h.record for h in source.search("invoice")]
    assert "42" in edited[0].text and "41" not in edited[0].text
    assert edited[0].date is not None and first[0].date is None
    retriever.docs = [Document("Ada paid invoice 43.", metadata={"id": "d1", "title": ["x"]})]
    assert "43" in source.search("invoice")[0].record.text  # unhashable metadata: converted


def _per_user_docs() -> list[Document]:
    return [
        Document(f"The secret code of this user is {n}.", metadata={"user_id": uid})
        for n, uid in enumerate(CONFUSABLE)
    ]


def test_faiss_filter_template_keeps_each_users_documents(embeddings) -> None:
    vs = FAISS.from_documents(_per_user_docs(), embeddings)
    shared = RetrieverSource(
        vs.as_retriever(), search_kwargs={"filter": {"user_id": "{user_id}"}, "fetch_k": 50}
    )
    with pytest.raises(ConfigurationError, match="for_run"):
        shared.search("secret code")  # never an unfiltered search of a per-user collection
    for n, uid in enumerate(CONFUSABLE):
        hits = shared.for_run({"user_id": uid}).search("what is the secret code", k=10)
        assert [h.record.text for h in hits] == [
            f"document: The secret code of this user is {n}."
        ], uid
    with pytest.raises(ConfigurationError, match="user_id"):
        shared.for_run({"team_id": "t1"})


def test_in_memory_store_filter_as_a_function_of_the_run(embeddings) -> None:
    vs = InMemoryVectorStore(embeddings)
    vs.add_documents(_per_user_docs())
    shared = RetrieverSource(
        vs.as_retriever(),
        search_kwargs=lambda f: {"filter": lambda d: d.metadata["user_id"] == f["user_id"]},
    )
    with pytest.raises(ConfigurationError):
        shared.search("secret")
    for n, uid in enumerate(CONFUSABLE):
        texts = [h.record.text for h in shared.for_run({"user_id": uid}).search("code", k=10)]
        assert texts == [f"document: The secret code of this user is {n}."], uid


def test_bad_arguments_are_typed_errors(memory_docs) -> None:
    with pytest.raises(ConfigurationError, match="as_retriever"):
        RetrieverSource(memory_docs)
    with pytest.raises(ConfigurationError):
        RetrieverSource("not a retriever")
    with pytest.raises(ConfigurationError, match="plain field name"):
        RetrieverSource(memory_docs.as_retriever(), search_kwargs={"filter": {"u": "{a.b}"}})
    with pytest.raises(InputError):
        RetrieverSource(memory_docs.as_retriever()).search("x", k=0)
    with pytest.raises(InputError):
        RetrieverSource(memory_docs.as_retriever()).for_run({"user_id": ""})
    with pytest.raises(ConfigurationError):
        BaseStoreSource(memory_docs)
    with pytest.raises(ConfigurationError):
        BaseStoreSource(InMemoryStore(), namespace="memories")


def test_an_unparsable_date_leaves_the_document_undated(caplog) -> None:
    class One(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document("Budget meeting moved.", metadata={"date": "next Tuesday"})]

    hits = RetrieverSource(One()).search("budget")
    assert hits[0].record.date is None and "not a date" in caplog.text


# --- the read graph over a retriever -------------------------------------------------------


def _judge(word: str) -> ScriptedDecisionModel:
    def answer(qid, question, state):
        local, _, suffix = qid.partition(".")
        if not local.startswith("r"):
            return 0.1
        text = next(r for r in state["records"] if r["id"] == local)["text"]
        return 0.1 if suffix == "stale" else (0.9 if word in text.lower() else 0.05)

    return ScriptedDecisionModel(answers=answer)


def _ask(text: str) -> dict:
    return {"messages": [HumanMessage(text)]}


@pytest.mark.parametrize("question", ["When is the office closed?", "What happened in May 2024?"])
def test_the_view_reads_dated_and_undated_documents(memory_docs, question) -> None:
    graph = create_read_graph(source=RetrieverSource(memory_docs.as_retriever()), judge=_judge(""))
    view = graph.invoke(_ask(question), context=ReadContext(namespace="shared"))["view"]
    garage = next(r for r in view.records if "garage" in r.text)
    assert garage.date is not None and garage.date.startswith("2024-05-02")
    friday = next(r for r in view.records if "Fridays" in r.text)
    assert friday.date is None  # undated, and still in the View
    assert "Fridays in August" in view.text and "7am" in view.text
    assert len(view.text) <= ReadSettings().view_chars + 2_000  # the blocks, plus the preamble


# --- BaseStoreSource -------------------------------------------------------------------------


def _remember(store, uid: str, content: str, action: str = "create", mid: str | None = None):
    tool = create_manage_memory_tool(namespace=("memories", "{user_id}"), store=store)
    args = {"content": content, "action": action} | ({"id": mid} if mid else {})
    out = tool.invoke(args, config={"configurable": {"user_id": uid}})
    return re.search(r"[0-9a-f-]{36}", str(out)).group(0)


def test_langmem_memories_reach_the_view(embeddings) -> None:
    store = InMemoryStore(index={"embed": embeddings, "dims": 384})
    for uid in CONFUSABLE:
        _remember(store, uid, f"{uid!r} prefers tea over coffee and lives in Lisbon.")
    _remember(store, "ada", "Ada's dog is called Pixel.")
    source = BaseStoreSource(store)
    assert source.namespace_template == ("memories", "{user_id}")
    graph = create_read_graph(source=source, judge=_judge("pixel"))
    view = graph.invoke(_ask("What is my dog called?"), context=ReadContext(user_id="ada"))["view"]
    assert [r.text for r in view.records if "Pixel" in r.text] == [
        "memory: Ada's dog is called Pixel."
    ]
    assert all(r.date is not None for r in view.records)  # updated_at
    assert all("'ada'" in r.text or "Pixel" in r.text for r in view.records)
    for uid in CONFUSABLE:
        texts = [h.record.text for h in source.search("tea", namespace=("memories", uid), k=20)]
        mine = {f"memory: {uid!r} prefers tea over coffee and lives in Lisbon."}
        if uid == "ada":
            mine.add("memory: Ada's dog is called Pixel.")
        assert sorted(texts) == sorted(mine), uid


def test_an_updated_memory_gets_a_new_record_and_a_deleted_one_is_gone(embeddings) -> None:
    store = InMemoryStore(index={"embed": embeddings, "dims": 384})
    mid = _remember(store, "ada", "Ada works at the bakery.")
    source, ns = BaseStoreSource(store), ("memories", "ada")
    first = source.search("where does Ada work", namespace=ns)
    assert first == source.search("where does Ada work", namespace=ns)  # stable ids
    _remember(store, "ada", "Ada works at the library now.", action="update", mid=mid)
    second = source.search("where does Ada work", namespace=ns)
    assert [h.record.text for h in second] == ["memory: Ada works at the library now."]
    assert second[0].record.id != first[0].record.id
    _remember(store, "ada", "", action="delete", mid=mid)
    assert source.search("where does Ada work", namespace=ns) == []


async def test_a_store_without_an_index_is_ranked_by_shared_words() -> None:
    store = InMemoryStore()
    store.put(("notes", "ada"), "1", {"text": "Ada's passport expires in June."})
    store.put(("notes", "ada"), "2", {"title": "Shopping", "body": {"items": ["milk"]}})
    store.put(("notes", "ada "), "3", {"text": "Ada-with-a-space passport renewal."})
    source = BaseStoreSource(store, ("notes", "{user_id}"))
    hits = await source.asearch("passport", namespace=("notes", "ada"))
    assert [h.record.text for h in hits] == ["memory: Ada's passport expires in June."]
    milk = source.search("milk shopping", namespace=("notes", "ada"))
    assert [h.record.text for h in milk] == [
        'memory: {"body": {"items": ["milk"]}, "title": "Shopping"}'
    ]
    fields = BaseStoreSource(store, ("notes", "{user_id}"), text_fields=["title"])
    assert [h.record.text for h in fields.search("shopping", namespace=("notes", "ada"))] == [
        "memory: Shopping"
    ]
    with pytest.raises(NamespaceError):
        source.search("passport", namespace=())


def test_an_item_outside_the_namespace_is_dropped() -> None:
    class Leaky(InMemoryStore):
        def search(self, prefix, /, **kw):  # a broken store: ignores the prefix
            return super().search(("notes",), **kw)

    store = Leaky()
    store.put(("notes", "ada"), "1", {"text": "mine: the blue key"})
    store.put(("notes", "bob"), "2", {"text": "bob's: the blue key"})
    hits = BaseStoreSource(store, ("notes", "{user_id}")).search(
        "blue key", namespace=("notes", "ada")
    )
    assert [h.record.text for h in hits] == ["memory: mine: the blue key"]


def test_mnemon_basestore_items_read_through_the_adapter(journal_target: str, embeddings) -> None:
    with (
        MnemonStore(journal_target, embeddings=embeddings) as journal,
        MnemonBaseStore(journal) as store,
    ):
        for uid in CONFUSABLE:
            store.put(("memories", uid), "k", {"content": f"{uid!r} plays the cello"})
        source = BaseStoreSource(store)
        for uid in CONFUSABLE:
            texts = [h.record.text for h in source.search("cello", namespace=("memories", uid))]
            assert texts == [f"memory: {uid!r} plays the cello"], uid
