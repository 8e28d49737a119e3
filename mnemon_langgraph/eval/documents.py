"""One history split across two stores: the evals' ``--documents-share`` and ``--distractors``.

:class:`DocumentSplit` stands in for the eval's store. When a history is ingested, a seeded
share of its sessions goes into a LangChain vector store (one ``Document`` per turn, dated,
embedded by the run's embedder: ``InMemoryVectorStore`` by default, or LangChain community's
``FAISS`` with ``vector_store="faiss"``, what a user with thousands of documents builds) read
through
:class:`~mnemon_langgraph.read.sources.RetrieverSource`, and the rest into the journal; the
read graph is built with both (``sources={"memory": store, "docs": split.source}``), so one
View reads the two. With ``distractors``, the document source instead holds *other*
histories (other people's lives) beside the whole journal.

Each history keeps its own vector store: the eval asks many histories through one graph,
and :attr:`DocumentSplit.source` routes a search to the history of the namespace the run
reads (as a per-user filter would in a deployment). It has no ``namespace_template``, so
the read graph hands it the run's namespace; it passes on the retriever source's
``pages = False`` and ``filters_dates = False``, so the read path treats it as the plain
retriever it is.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.read.sources.retriever import RetrieverSource
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.types import Message, Namespace, Record, SearchFilters, SearchHit

__all__ = [
    "DISTRACTOR_PREFIX",
    "DOCS_SOURCE",
    "RETRIEVERS",
    "VECTOR_STORES",
    "DocumentSplit",
    "chars_by_source",
    "documents_of",
    "split_sessions",
]

RETRIEVERS = ("vector", "ensemble")
"""The document source's retrievers (``--documents-retriever``)."""

VECTOR_STORES = ("memory", "faiss")
"""The document source's vector stores (``--documents-store``): LangChain's
``InMemoryVectorStore`` (the issue's configuration; a brute-force search over Python lists)
or LangChain community's ``FAISS`` (a flat index searched in C)."""

ENSEMBLE_K = 40
"""Documents each of the ensemble's two retrievers returns per search."""

DOCS_SOURCE = "docs"
"""The document source's name in the read graph."""

DISTRACTOR_PREFIX = "other/"
"""Prefix of a distractor turn's id (another history's ``D1:3`` never counts as evidence)."""


def split_sessions(
    messages: Sequence[Message], share: float, *, seed: int, key: str
) -> tuple[list[Message], list[Message]]:
    """``(journal, documents)``: ``round(share * sessions)`` sessions, chosen by a generator
    seeded with ``seed`` and the history's ``key``, go to the documents."""
    if not 0.0 <= share <= 1.0:
        raise ConfigurationError(f"the documents' share must be within 0..1, got {share!r}")
    sessions = sorted({m.session for m in messages if m.session is not None})
    chosen = set(random.Random(f"{seed}:{key}").sample(sessions, round(share * len(sessions))))
    journal = [m for m in messages if m.session not in chosen]
    return journal, [m for m in messages if m.session in chosen]


def documents_of(messages: Sequence[Message], *, prefix: str = "") -> list[Document]:
    """One dated ``Document`` per turn; a session's turns share a title and take the
    positions their records would have in a journal (so neighbours stay neighbours)."""
    by_session: dict[int | None, list[Message]] = {}
    for m in messages:
        if m.text.strip():
            by_session.setdefault(m.session, []).append(m)
    docs: list[Document] = []
    for session, turns in by_session.items():
        pieces = chunk_messages(turns, namespace=("split",), origin="split", pack=False)
        first: dict[str, int] = {}
        for r in pieces:  # pack=False: each record is one piece of one turn, in turn order
            first.setdefault(r.message_ids[0], r.position)
        for turn, mid in zip(turns, first, strict=True):
            docs.append(
                Document(
                    turn.text,
                    metadata={
                        "id": prefix + mid,
                        "date": turn.timestamp.isoformat() if turn.timestamp else None,
                        "title": f"{prefix}session {session}",
                        "speaker": turn.speaker,
                        "role": turn.role,
                        "position": first[mid],
                    },
                )
            )
    return docs


@dataclass
class _History:
    vectors: VectorStore
    source: RetrieverSource
    docs: list[Document] = field(default_factory=list)

    @property
    def documents(self) -> int:
        return len(self.docs)


def vector_store_of(docs: list[Document], embeddings: Embeddings, kind: str) -> VectorStore:
    """The documents in a vector store of ``kind`` (:data:`VECTOR_STORES`), each built the
    way a LangChain user builds it (``FAISS.from_documents``: a flat L2 index; an empty
    history gets an empty ``InMemoryVectorStore``, as FAISS cannot be built from nothing)."""
    if kind not in VECTOR_STORES:
        raise ConfigurationError(
            f"the documents' vector store must be one of {VECTOR_STORES}, got {kind!r}"
        )
    if kind == "faiss" and docs:
        from langchain_community.vectorstores import FAISS

        return FAISS.from_documents(docs, embeddings)
    vectors = InMemoryVectorStore(embeddings)
    if docs:
        vectors.add_documents(docs)
    return vectors


@dataclass
class DocumentSplit:
    """The eval's store with a share of each history (or other histories) in documents.

    Args:
        store: The journal (``MnemonStore``) the rest goes to.
        embeddings: The documents' embedder (the run's, so its cache serves both).
        share: Share of each history's sessions put into documents (0..1).
        seed: Seed of the choice of sessions.
        distractors: Other histories by key; with them, a history's documents are every
            other history's turns (ids prefixed :data:`DISTRACTOR_PREFIX`) and ``share``
            must be 0.
        retriever: ``"vector"`` (the issue's configuration): the vector store's own
            retriever, dense only. ``"ensemble"``: what a LangChain user who wants keywords
            builds, an ``EnsembleRetriever`` of a ``BM25Retriever`` and the vector store
            (each :data:`ENSEMBLE_K` documents, equal weights; the ``peers`` extra), read as
            a source that already ranks by words.
        vector_store: ``"memory"`` (the issue's configuration): LangChain's
            ``InMemoryVectorStore``; ``"faiss"``: LangChain community's ``FAISS``.
    """

    store: Any
    embeddings: Embeddings
    share: float = 0.0
    seed: int = 0
    distractors: Mapping[str, Sequence[Message]] = field(default_factory=dict)
    retriever: str = "vector"
    vector_store: str = "memory"
    _histories: dict[Namespace, _History] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.distractors and self.share:
            raise ConfigurationError("--distractors and --documents-share are separate runs")
        split_sessions([], self.share, seed=0, key="")  # checks the share
        if self.retriever not in RETRIEVERS:
            raise ConfigurationError(
                f"the documents' retriever must be one of {RETRIEVERS}, got {self.retriever!r}"
            )
        if self.vector_store not in VECTOR_STORES:
            raise ConfigurationError(
                f"the documents' vector store must be one of {VECTOR_STORES}, "
                f"got {self.vector_store!r}"
            )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "store":
            raise AttributeError(name)
        return getattr(self.store, name)

    @property
    def source(self) -> _RoutedSource:
        """The read source of the documents (route by the run's namespace)."""
        return _RoutedSource(self)

    def ingest(self, namespace: Sequence[str], messages: Iterable[Message], **kwargs: Any) -> Any:
        """Split ``messages`` and ingest the journal's part into the store."""
        ns = tuple(namespace)
        journal = self.index_documents(ns, messages)
        return self.store.ingest(ns, journal, **kwargs)

    def index_documents(
        self, namespace: Sequence[str], messages: Iterable[Message]
    ) -> list[Message]:
        """Build the history's document source (its share of ``messages``, or with
        distractors the other histories) and return the messages that go to the journal
        (which this does not write)."""
        ns = tuple(namespace)
        messages = list(messages)
        if self.distractors:
            journal = messages
            docs = [
                d
                for other, turns in self.distractors.items()
                if other != ns[-1]
                for d in documents_of(turns, prefix=f"{DISTRACTOR_PREFIX}{other}/")
            ]
        else:
            journal, moved = split_sessions(messages, self.share, seed=self.seed, key="/".join(ns))
            docs = documents_of(moved)
        vectors = vector_store_of(docs, self.embeddings, self.vector_store)
        self._histories[ns] = _History(vectors, self._source(vectors, docs), docs)
        return journal

    def _source(self, vectors: VectorStore, docs: list[Document]) -> RetrieverSource:
        if self.retriever == "vector" or not docs:
            return RetrieverSource(vectors.as_retriever(), position_key="position")
        # what a LangChain user who wants keywords builds (langchain-classic, -community)
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever

        words = BM25Retriever.from_documents(docs, k=ENSEMBLE_K)
        dense = vectors.as_retriever(search_kwargs={"k": ENSEMBLE_K})
        both = EnsembleRetriever(retrievers=[words, dense], weights=[0.5, 0.5])
        # the ensemble takes no k per call: it returns its fused lists (k_key=None)
        return RetrieverSource(
            both, position_key="position", k_key=None, dense=False, keywords=True
        )

    def erase_namespace(self, namespace: Sequence[str], **kwargs: Any) -> int:
        """Erase the history from the journal and drop its documents."""
        self._histories.pop(tuple(namespace), None)
        return int(self.store.erase_namespace(namespace, **kwargs))

    def records(self, namespace: Sequence[str], **kwargs: Any) -> list[Record]:
        """The journal's records and the documents' records, ids as a read graph of two
        sources pools them (qualified by the source's name)."""
        from mnemon_langgraph.read.sources.binding import DEFAULT_SOURCE, qualify_record

        ns = tuple(namespace)
        own = [qualify_record(DEFAULT_SOURCE, r) for r in self.store.records(ns, **kwargs)]
        history = self._histories.get(ns)
        if history is None or kwargs:
            return own
        records = history.source.records(history.docs)
        return own + [qualify_record(DOCS_SOURCE, r) for r in records]

    def documents(self, namespace: Sequence[str]) -> int:
        """How many documents the history's document source holds."""
        history = self._histories.get(tuple(namespace))
        return history.documents if history else 0


class _RoutedSource:
    """The document source of the history a run reads (see the module docstring)."""

    pages = False
    filters_dates = False

    def __init__(self, split: DocumentSplit) -> None:
        self._split = split
        self.ranks_keywords = split.retriever != "vector"

    def _of(self, namespace: Namespace) -> RetrieverSource | None:
        history = self._split._histories.get(tuple(namespace))
        return history.source if history else None

    def search(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """The history's retriever source's hits (none before its history is ingested)."""
        source = self._of(namespace)
        if source is None:
            return []
        return source.search(query, k=k, offset=offset, filters=filters)

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async :meth:`search`."""
        source = self._of(namespace)
        if source is None:
            return []
        return await source.asearch(query, k=k, offset=offset, filters=filters)


def chars_by_source(view: Any) -> dict[str, int]:
    """Characters of the View's records by read source (``memory`` for unqualified ids)."""
    from mnemon_langgraph.read.sources.binding import DEFAULT_SOURCE, split_id

    out: dict[str, int] = {}
    for rec in getattr(view, "records", ()):
        name, rid = split_id(rec.id)
        name = getattr(rec, "source", "") or (name if rid else DEFAULT_SOURCE)
        out[name] = out.get(name, 0) + len(rec.text)
    return out
