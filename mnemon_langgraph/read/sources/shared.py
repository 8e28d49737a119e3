"""A shared namespace of a store, read beside the user's own memory (read-only).

``SharedNamespace(store, ("teams", "{team_id}"))`` is a read source over a team's or an
organisation's memory kept in the same :class:`~mnemon_langgraph.store.MnemonStore` (or any
store with namespaces): the read graph fills the template for each run and searches that
namespace; nothing of the package writes there through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.read.namespaces import template_fields
from mnemon_langgraph.types import Namespace, SearchFilters, SearchHit

__all__ = ["SharedNamespace"]

_READS = frozenset(
    {
        "query_vector",
        "stored_vectors",
        "session_records",
        "asession_records",
        "term_statistics",
        "embeddings",
    }
)
"""The store's read capabilities a shared namespace passes on; nothing else of the store
(its writes above all) is reachable through it."""


class SharedNamespace:
    """A read-only read source over one shared namespace of a store.

    Args:
        store: The store (``MnemonStore`` on either backend, or any search source with
            namespaces).
        namespace_template: The shared namespace, a template filled from each run, e.g.
            ``("teams", "{team_id}")`` (``{team_id}`` from the run's context or
            ``configurable``; under LangGraph auth from the authenticated user only, a
            client's value refused), or a fixed namespace such as ``("org", "handbook")``.

    Shared: every user whose run fills the template alike reads the same records; a user's
    own memory is never read through it unless the template names it. Read-only: it has no
    write method, and the write path (``add_memory``, the middleware, the ``remember`` and
    ``forget`` tools) writes only to the store's user namespace. It offers the store's
    stored vectors, session reads and word counts where the store does.

    Raises:
        ConfigurationError: The template is empty or has a malformed placeholder.
    """

    def __init__(self, store: Any, namespace_template: str | Sequence[str]) -> None:
        parts = (
            (namespace_template,)
            if isinstance(namespace_template, str)
            else tuple(namespace_template)
        )
        if not parts or not all(isinstance(p, str) and p for p in parts):
            raise ConfigurationError(
                f"SharedNamespace needs a namespace template of non-empty strings, got "
                f"{namespace_template!r}"
            )
        template_fields(parts)  # a malformed placeholder fails here, not at the first run
        if not callable(getattr(store, "search", None)):
            raise ConfigurationError(
                f"SharedNamespace needs a store with search(), got {type(store).__name__}"
            )
        self._store = store
        self.namespace_template: tuple[str, ...] = parts

    def __getattr__(self, name: str) -> Any:
        # Only the read capabilities (isinstance against VectorSource, JournalSource and
        # TermStatsSource then holds exactly when the store offers them).
        if name in _READS:
            return getattr(self._store, name)
        raise AttributeError(
            f"SharedNamespace has no attribute {name!r}: it reads a shared namespace and "
            "never writes to it"
        )

    def __repr__(self) -> str:
        return f"SharedNamespace({type(self._store).__name__}, {self.namespace_template!r})"

    def search(
        self,
        query: str,
        *,
        namespace: Namespace,
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """The store's search in ``namespace`` (the filled template)."""
        return list(
            self._store.search(query, namespace=namespace, k=k, offset=offset, filters=filters)
        )

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
        return list(
            await self._store.asearch(
                query, namespace=namespace, k=k, offset=offset, filters=filters
            )
        )
