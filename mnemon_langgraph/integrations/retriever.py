"""``MnemonRetriever``: the hybrid search as a LangChain ``BaseRetriever``.

Example:
    >>> retriever = MnemonRetriever(store=store, namespace=("users", "ada"), k=6)  # doctest: +SKIP
    >>> docs = retriever.invoke("where does Ada live now?")                        # doctest: +SKIP
    >>> docs = retriever.invoke("…", k=3)  # per-call k                            # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.integrations._validation import package_error
from mnemon_langgraph.types import (
    Namespace,
    SearchFilters,
    SearchHit,
    SearchSource,
    check_count,
    normalize_namespace,
)

__all__ = ["MnemonRetriever", "hit_to_document"]


def hit_to_document(hit: SearchHit) -> Document:
    """A search hit as a LangChain ``Document``.

    ``page_content`` is the rendered record (header line + text); ``metadata`` holds ``id``,
    ``message_ids``, ``session``, ``date`` (ISO 8601 or ``None``), ``speakers``, ``source``,
    ``rank``, ``bm25_rank``, ``dense_rank`` and ``score``.
    """
    record = hit.record
    return Document(
        id=record.id,
        page_content=record.render(),
        metadata={
            "id": record.id,
            "message_ids": list(record.message_ids),
            "session": record.session,
            "date": record.date.isoformat() if record.date else None,
            "speakers": list(record.speakers),
            "source": record.origin,
            "rank": hit.rank,
            "bm25_rank": hit.bm25_rank,
            "dense_rank": hit.dense_rank,
            "score": hit.score,
        },
    )


class MnemonRetriever(BaseRetriever):
    """Hybrid (BM25 + dense, reciprocal rank fusion) retrieval of records from one namespace.

    Attributes:
        store: Any :class:`~mnemon_langgraph.types.SearchSource`, usually a
            :class:`~mnemon_langgraph.store.MnemonStore`.
        namespace: The namespace searched (a string is a one-part namespace).
        k: Documents returned by default; ``invoke(query, k=3)`` overrides it per call.
        offset: Fused rank of the first document (paging); overridable per call.
        filters: Date/session bounds; overridable per call with ``filters=``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Any SearchSource (a runtime-checkable protocol); checked by the validator below with a
    # message that names the protocol, rather than pydantic's generic is-instance error.
    store: Any = Field(description="A SearchSource (MnemonStore)")
    namespace: Namespace
    k: int = 4
    offset: int = 0
    filters: SearchFilters | None = None

    def __init__(self, **data: Any) -> None:
        """Raises :class:`~mnemon_langgraph.errors.NamespaceError` for a bad namespace and
        :class:`~mnemon_langgraph.errors.ConfigurationError` for another bad argument."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise package_error(exc, "MnemonRetriever") from None

    @field_validator("k", "offset", mode="before")
    @classmethod
    def _count(cls, value: Any, info: ValidationInfo) -> int:
        try:
            return check_count(value, what=str(info.field_name))
        except InputError as exc:
            raise ConfigurationError(f"MnemonRetriever: {exc}") from None

    @field_validator("namespace", mode="before")
    @classmethod
    def _namespace(cls, value: Any) -> Namespace:
        return normalize_namespace(value)

    @field_validator("store")
    @classmethod
    def _store(cls, value: Any) -> Any:
        if not isinstance(value, SearchSource):
            raise ValueError("store must implement SearchSource (search and asearch)")
        return value

    def _args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The search's arguments; a per-call ``k`` / ``offset`` must be a whole number ≥ 0
        (``"abc"``, ``None`` or ``2.5`` is an :class:`InputError`, never converted)."""
        return {
            "namespace": self.namespace,
            "k": check_count(kwargs.get("k", self.k), what="k"),
            "offset": check_count(kwargs.get("offset", self.offset), what="offset"),
            "filters": kwargs.get("filters", self.filters),
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        hits = self.store.search(query, **self._args(kwargs))
        return [hit_to_document(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        hits = await self.store.asearch(query, **self._args(kwargs))
        return [hit_to_document(h) for h in hits]
