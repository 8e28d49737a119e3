"""Any LangChain retriever as a read source: documents become dated records.

:class:`RetrieverSource` wraps a ``BaseRetriever`` — so any vector store, through
``vector_store.as_retriever()`` — as a :class:`~mnemon_langgraph.types.SearchSource` the read
graph can search beside the user's journal (``create_read_graph(sources={...})``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from copy import copy
from typing import Any, cast

from langchain_core.callbacks import CallbackManager
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import ensure_config
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.read.sources._adapt import (
    as_date,
    check_fields,
    fill_template,
    hits_of,
    records_of_text,
    speaker_of,
    template_names,
)
from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS, check_record_chars, stable_hash
from mnemon_langgraph.store._internal.query_vectors import query_embedding, query_embeddings_of
from mnemon_langgraph.types import (
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    check_count,
)

__all__ = ["RetrieverSource"]

SearchKwargs = Mapping[str, Any] | Callable[[Mapping[str, str]], Mapping[str, Any]]

_NO_KEY = object()
"""A metadata key no document holds (a key the source was not given reads as ``None``)."""


def _nothing(key: object) -> None:
    """The value of any key of empty metadata."""
    return None


CONVERTED_DOCUMENTS = 4096
"""Documents whose records a :class:`RetrieverSource` keeps (least recently returned out)."""


class RetrieverSource:
    """A LangChain ``BaseRetriever`` read as dated records (a :class:`SearchSource`).

    **Shared by all users**: a retriever names no namespace (``namespace_template`` is
    ``None``), so every user's read searches the same documents, and the ``namespace`` a
    search is given is ignored. To keep a shared collection per user, give ``search_kwargs``
    a template the run fills (:meth:`for_run`), e.g. ``{"filter": {"user_id": "{user_id}"}}``
    for a vector store whose search takes a metadata filter (FAISS, Chroma, PGVector …), or a
    function of the run's fields, e.g. ``lambda f: {"filter": lambda d: d.metadata["user_id"]
    == f["user_id"]}`` for ``InMemoryVectorStore``. A source with a template refuses to search
    until it is bound, so an unfiltered search cannot happen by mistake.

    Each document becomes records the way the journal cuts a long message (``speaker: text``
    lines of at most ``record_chars``): the speaker is the document's ``speaker_key`` or
    ``title_key`` metadata (else ``"document"``).

    * **Dates**: ``metadata[date_key]``, a ``datetime``, a ``date``, an ISO 8601 string or
      epoch seconds. A document without one is undated: the View shows it without a date and
      date questions cannot place it.
    * **Ids**: stable across calls: from ``metadata[id_key]``, else the ``Document.id`` the
      vector store gave it, else a hash of its title and text.
    * **Sessions**: the documents of one title (``metadata[title_key]``) share a session, so
      their records group together in the View; a document without a title is a session of
      its own. ``position_key`` names the metadata holding a document's place in its group
      (consecutive integers, e.g. the turns of a conversation): then neighbouring documents
      are neighbours in the View too (a document cut into several records takes the
      positions after its own, so count positions in records when documents are long), and
      beside other sources the short ones the retriever returns together are read as one
      record, as the journal packs short turns (``ReadSettings.document_record_chars``).

    A retriever cannot page or filter by date: ``pages`` and ``filters_dates`` are ``False``.
    ``offset`` is served by asking for ``offset + k`` documents (through the retriever's
    ``k_key`` keyword, which a ``VectorStoreRetriever`` honours) and skipping the first
    ``offset`` records; ``filters`` are applied to the records the retriever returned, so a
    date-bounded search may return fewer than ``k`` (the read path then asks for more once).

    Args:
        retriever: Any LangChain ``BaseRetriever`` (``vector_store.as_retriever()``).
        date_key: Metadata key of a document's date.
        id_key: Metadata key of a document's stable id.
        title_key: Metadata key of a document's title (groups documents into sessions).
        speaker_key: Metadata key of who wrote or said the document (shown as the speaker).
        role_key: Metadata key of the speaker's role (``user``, ``assistant`` …; default user).
        position_key: Metadata key of the document's place within its title (an integer).
        search_kwargs: Keyword arguments for each retrieval (a template filled by
            :meth:`for_run`, or a function of the run's fields).
        k_key: The retriever keyword that sets how many documents to return (``None``: pass
            none; the retriever returns its own number).
        origin: The records' ingest label (also the namespace their ids hash).
        record_chars: Longest record, as a journal's ``record_chars``.
        dense: The retriever ranks by embeddings (a vector store): ranks are reported as
            dense ranks; ``False`` reports them as keyword (BM25) ranks.
        keywords: Whether the retriever's ranking already weighs the query's words (BM25,
            an ``EnsembleRetriever`` with a ``BM25Retriever``). ``None`` (default): ``not
            dense``. A source that does not (``ranks_keywords`` ``False``) is asked once per
            turn for more documents, which the read path re-ranks by the query's words
            (``ReadSettings.dense_candidates``).

    Raises:
        ConfigurationError: ``retriever`` is not a ``BaseRetriever`` (a vector store is
            named: pass ``.as_retriever()``), or an argument cannot work.
    """

    namespace_template: Namespace | None = None
    pages = False
    filters_dates = False

    def __init__(
        self,
        retriever: BaseRetriever,
        *,
        date_key: str = "date",
        id_key: str | None = "id",
        title_key: str | None = "title",
        speaker_key: str | None = "speaker",
        role_key: str | None = "role",
        position_key: str | None = None,
        search_kwargs: SearchKwargs | None = None,
        k_key: str | None = "k",
        origin: str = "documents",
        record_chars: int = DEFAULT_MAX_CHARS,
        dense: bool = True,
        keywords: bool | None = None,
    ) -> None:
        if isinstance(retriever, VectorStore):
            raise ConfigurationError(
                "RetrieverSource takes a retriever: pass vector_store.as_retriever()"
            )
        if not isinstance(retriever, BaseRetriever):
            raise ConfigurationError(
                f"RetrieverSource takes a LangChain BaseRetriever, got {type(retriever).__name__}"
            )
        if not isinstance(origin, str) or not origin.strip():
            raise ConfigurationError(f"origin must be a non-empty string, got {origin!r}")
        if search_kwargs is not None and not (
            callable(search_kwargs) or isinstance(search_kwargs, Mapping)
        ):
            raise ConfigurationError(
                "search_kwargs must be a mapping or a function of the run's fields, got "
                f"{type(search_kwargs).__name__}"
            )
        self.retriever = retriever
        self.date_key, self.id_key, self.title_key = date_key, id_key, title_key
        self.speaker_key, self.role_key, self.position_key = speaker_key, role_key, position_key
        self.k_key, self.origin, self.dense = k_key, origin, dense
        self.ranks_keywords = (not dense) if keywords is None else bool(keywords)
        self.record_chars = check_record_chars(record_chars)
        self.search_kwargs: SearchKwargs = search_kwargs or {}
        self._unbound = callable(search_kwargs) or bool(template_names(self.search_kwargs))
        # a document's records by what they are made of: cutting, hashing and dating a
        # document costs far more than the vector search that found it, and a turn's
        # searches return the same documents again (shared by for_run's copies, whose
        # search_kwargs do not change the records)
        self._converted: OrderedDict[Hashable, tuple[Record, ...]] = OrderedDict()
        self._converted_lock = threading.Lock()

    def __repr__(self) -> str:
        bound = "unbound" if self._unbound else "bound"
        return f"RetrieverSource({type(self.retriever).__name__}, origin={self.origin!r}, {bound})"

    def for_run(self, fields: Mapping[str, str]) -> RetrieverSource:
        """This source with ``search_kwargs`` filled from one run's fields (``user_id`` …).

        Returns ``self`` when there is nothing to fill.

        Raises:
            ConfigurationError: The template names a field the run does not give.
            InputError: ``fields`` is not a mapping of names to non-empty strings.
        """
        fields = check_fields(fields)
        if not self._unbound:
            return self
        made = self.search_kwargs(fields) if callable(self.search_kwargs) else None
        bound = copy(self)
        bound.search_kwargs = (
            dict(made) if made is not None else fill_template(self.search_kwargs, fields)
        )
        if not isinstance(bound.search_kwargs, Mapping):
            raise ConfigurationError("search_kwargs(fields) must return a mapping")
        bound._unbound = False
        return bound

    def search(
        self,
        query: str,
        *,
        namespace: Namespace | None = None,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Hits ``offset .. offset + k`` in the retriever's order (``namespace`` is ignored).

        Raises:
            ConfigurationError: ``search_kwargs`` is a template not yet filled by
                :meth:`for_run`.
            InputError: ``k`` or ``offset`` is not a usable count.
        """
        kwargs = self._kwargs(query, k, offset)
        docs = _by_vector(self.retriever, query, kwargs)
        if docs is None:
            docs = self.retriever.invoke(query, **kwargs)
        return self._hits(docs, k, offset, filters)

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace | None = None,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async :meth:`search` (the retriever's ``ainvoke``)."""
        kwargs = self._kwargs(query, k, offset)
        docs = await _aby_vector(self.retriever, query, kwargs)
        if docs is None:
            docs = await self.retriever.ainvoke(query, **kwargs)
        return self._hits(docs, k, offset, filters)

    def _kwargs(self, query: str, k: int, offset: int) -> dict[str, Any]:
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        check_count(k, what="k", minimum=1)
        check_count(offset, what="offset")
        if self._unbound:
            raise ConfigurationError(
                "this RetrieverSource's search_kwargs depend on the run (a template or a "
                "function): search through source.for_run(fields) (the read graph does this)"
            )
        kwargs = dict(self.search_kwargs)  # type: ignore[arg-type]
        if self.k_key is not None:
            kwargs[self.k_key] = offset + k
        return kwargs

    def _hits(
        self, docs: Sequence[Document], k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return hits_of(self.records(docs), k=k, offset=offset, filters=filters, dense=self.dense)

    def records(self, docs: Sequence[Document]) -> list[Record]:
        """The records of ``docs``, in their order (a document seen twice counts once)."""
        # each document's metadata read once, and the kept conversions looked up under one
        # lock for the whole list (every returned document, every search of every turn)
        # a key absent from every metadata stands for a key not given (None)
        id_key, title_key, position_key, speaker_key, role_key, date_key = (
            _NO_KEY if k is None else k
            for k in (
                self.id_key,
                self.title_key,
                self.position_key,
                self.speaker_key,
                self.role_key,
                self.date_key,
            )
        )
        todo: list[tuple[Document, str, Hashable | None]] = []
        seen: set[str] = set()
        for doc in docs:
            if not isinstance(doc, Document):
                raise InputError(f"the retriever returned a {type(doc).__name__}, not a Document")
            meta = doc.metadata
            get = meta.get if meta else _nothing
            values = (
                get(id_key),
                get(title_key),
                get(position_key),
                get(speaker_key),
                get(role_key),
                get(date_key),
            )
            doc_id = self._doc_id(doc, values[0], values[1])
            if doc_id in seen:
                continue
            seen.add(doc_id)
            key: Hashable | None = (doc_id, doc.page_content, *values[1:])
            try:
                hash(key)
            except TypeError:  # a metadata value that cannot be a key (a list): not kept
                key = None
            todo.append((doc, doc_id, key))
        made: dict[int, tuple[Record, ...]] = {}
        converted = self._converted
        with self._converted_lock:
            for n, (_, _, key) in enumerate(todo):
                got = converted.get(key) if key is not None else None
                if got is not None:
                    converted.move_to_end(key)
                    made[n] = got
        fresh = {
            n: self._convert(doc, doc_id)
            for n, (doc, doc_id, _) in enumerate(todo)
            if n not in made
        }
        if fresh:
            with self._converted_lock:
                for n, records in fresh.items():
                    key = todo[n][2]
                    if key is not None:
                        converted[key] = records
                        if len(converted) > CONVERTED_DOCUMENTS:
                            converted.popitem(last=False)
            made.update(fresh)
        return [r for n in range(len(todo)) for r in made[n]]

    def _meta(self, doc: Document, key: str | None) -> Any:
        return doc.metadata.get(key) if key is not None and doc.metadata else None

    def _doc_id(self, doc: Document, given: Any, title: Any) -> str:
        """A document's stable id from its ``id_key`` and ``title_key`` metadata values."""
        if given is None or given == "":
            given = doc.id
        if given is None or given == "":
            return "c-" + stable_hash(title, doc.page_content)
        return str(given)

    def _convert(self, doc: Document, doc_id: str) -> tuple[Record, ...]:
        title = self._meta(doc, self.title_key)
        place = self._meta(doc, self.position_key)
        return tuple(
            records_of_text(
                doc.page_content if isinstance(doc.page_content, str) else "",
                text_id=doc_id,
                speaker=speaker_of(
                    self._meta(doc, self.speaker_key), speaker_of(title, "document")
                ),
                role=self._meta(doc, self.role_key),
                when=as_date(self._meta(doc, self.date_key), what=f"document {doc_id!r}"),
                group=f"t:{title}" if isinstance(title, str) and title.strip() else f"d:{doc_id}",
                position=place
                if isinstance(place, int) and not isinstance(place, bool) and place >= 0
                else None,
                origin=self.origin,
                max_chars=self.record_chars,
            )
        )


# --- a vector store's search by a query vector already made -----------------------------
#
# A journal and a LangChain vector store built with the same embedder object embed each of
# a turn's query texts: once each, on every search of the store (LangChain's retriever
# embeds inside its call). Where the retriever is a plain similarity ``VectorStoreRetriever``
# over a vector store whose ``similarity_search`` is exactly "embed the query, then
# ``similarity_search_by_vector``" (LangChain's ``InMemoryVectorStore``, community's
# ``FAISS``), the source asks ``similarity_search_by_vector`` with the query's vector kept by
# embedder (``query_embedding``: what ``embed_query`` returned, so the same documents in the
# same order). Any other retriever, vector store or search type, and any run whose callbacks
# would see the retriever's run (tracing), goes through ``retriever.invoke`` as before.

_BY_VECTOR_METHODS = {
    ("langchain_core.vectorstores.in_memory", "InMemoryVectorStore"): (
        ("similarity_search", "similarity_search_with_score", "similarity_search_by_vector"),
        "embedding",
    ),
    ("langchain_community.vectorstores.faiss", "FAISS"): (
        (
            "similarity_search",
            "similarity_search_with_score",
            "similarity_search_by_vector",
            "_embed_query",
        ),
        "embedding_function",
    ),
}
_INVOKE_KEYS = frozenset({"run_id", "verbose", "callbacks", "config"})


def _vector_plan(retriever: BaseRetriever, kwargs: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """``(vector store, embedder)`` when ``retriever.invoke(query, **kwargs)`` is exactly the
    store's ``similarity_search_by_vector`` of the embedder's query vector, else ``None``."""
    if not isinstance(retriever, VectorStoreRetriever) or _INVOKE_KEYS & kwargs.keys():
        return None
    kind = type(retriever)
    if (
        kind.invoke is not BaseRetriever.invoke
        or kind._get_relevant_documents is not VectorStoreRetriever._get_relevant_documents
        or retriever.search_type != "similarity"
    ):
        return None
    store = retriever.vectorstore
    for cls in type(store).__mro__:
        known = _BY_VECTOR_METHODS.get((cls.__module__, cls.__name__))
        if known is None:
            continue
        methods, attribute = known
        if any(getattr(type(store), m, None) is not cls.__dict__.get(m) for m in methods):
            return None  # a subclass changed how it searches
        embedder = getattr(store, attribute, None)
        return (store, embedder) if isinstance(embedder, Embeddings) else None
    return None


def _traced(retriever: BaseRetriever) -> bool:
    """Whether a callback of this run (a tracer, a handler passed to the graph, debug
    output) would see the retriever's run: then the retriever is invoked, as always."""
    config = ensure_config(None)
    manager = CallbackManager.configure(
        config.get("callbacks"), None, inheritable_tags=config.get("tags")
    )
    return any(not h.ignore_retriever for h in manager.handlers)


def _by_vector(
    retriever: BaseRetriever, query: str, kwargs: Mapping[str, Any]
) -> list[Document] | None:
    """The retriever's documents for ``query`` searched by the kept query vector (``None``:
    not such a retriever, or a traced run: invoke it)."""
    plan = _vector_plan(retriever, kwargs)
    if plan is None or _traced(retriever):
        return None
    store, embedder = plan
    vector = query_embedding(embedder, query)
    search = cast(VectorStoreRetriever, retriever).search_kwargs | dict(kwargs)
    return list(store.similarity_search_by_vector(list(vector), **search))


async def _aby_vector(
    retriever: BaseRetriever, query: str, kwargs: Mapping[str, Any]
) -> list[Document] | None:
    """Async :func:`_by_vector`: only a vector already kept is used (else the retriever's
    own ``ainvoke`` embeds, as the embedder's async face does)."""
    plan = _vector_plan(retriever, kwargs)
    if plan is None or _traced(retriever):
        return None
    store, embedder = plan
    kept = query_embeddings_of(embedder)
    vector = None if kept is None else kept.peek(query)
    if vector is None:
        return None
    search = cast(VectorStoreRetriever, retriever).search_kwargs | dict(kwargs)
    return list(await store.asimilarity_search_by_vector(list(vector), **search))
