"""The backend hooks of :class:`~mnemon_langgraph.store.base.MnemonStore`, abstract here.

Every public operation checks its arguments once (:mod:`.boundary`) and then calls one of
these with them already checked: namespaces normalised, ids a de-duplicated tuple. A hook
never checks again. Each backend (``store/embedded/_store.py``, ``store/postgres/_store.py``)
implements them; the default async hooks run the sync ones in a worker thread (here, and
in :mod:`.async_face`). A class of its own, so the public class reads as its operations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import numpy as np

    from mnemon_langgraph.records.schema import AuditEntry
    from mnemon_langgraph.types import Message, Namespace, Record, SearchFilters, SearchHit

__all__ = ["BackendHooks", "abstract_hook"]


def abstract_hook(store: object) -> NoReturn:
    """What a hook its backend does not implement does."""
    raise NotImplementedError(f"{type(store).__name__} does not implement this")


_abstract = abstract_hook


class BackendHooks:
    """The hooks a backend implements (arguments checked by the boundary)."""

    def _write_messages(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        """Write the messages not stored yet (every one has an id); the records written."""
        return _abstract(self)

    async def _awrite_messages(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        return await asyncio.to_thread(self._write_messages, ns, messages, source, pack, progress)

    def _search(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return _abstract(self)

    async def _asearch(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return await asyncio.to_thread(self._search, query, ns, k, offset, filters)

    def _get_records(self, ns: Namespace, ids: tuple[str, ...]) -> list[Record]:
        return _abstract(self)

    def _match_record_ids(self, ns: Namespace, prefix: str, limit: int) -> list[str]:
        return _abstract(self)

    def _stored_vectors(self, ns: Namespace, ids: tuple[str, ...]) -> dict[str, np.ndarray]:
        return _abstract(self)

    def _term_statistics(self, ns: Namespace, terms: tuple[str, ...]) -> tuple[int, dict[str, int]]:
        return _abstract(self)

    def _records(
        self, ns: Namespace, after_seq: int, limit: int | None, filters: SearchFilters | None = None
    ) -> Iterator[Record]:
        return _abstract(self)

    def _session_records(
        self, ns: Namespace, session: int, start: int, stop: int, filters: SearchFilters | None
    ) -> list[Record]:
        return _abstract(self)

    def _known_message_ids(self, ns: Namespace, ids: tuple[str, ...]) -> set[str]:
        return _abstract(self)

    def _max_seq(self, ns: Namespace) -> int:
        return _abstract(self)

    def _count(self, ns: Namespace) -> int:
        return _abstract(self)

    def _holds_namespace(self, ns: Namespace) -> bool:
        return _abstract(self)

    def _warm(self, ns: Namespace) -> bool:
        return _abstract(self)

    def _audit_log(self, ns: Namespace | None) -> list[AuditEntry]:
        return _abstract(self)

    def _stats(self, ns: Namespace | None) -> dict[str, Any]:
        return _abstract(self)

    def _delete_records(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str
    ) -> list[str]:
        return _abstract(self)

    def _delete_messages(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        """Delete the records holding ``ids``; ``(deleted ids, survivors' records written)``."""
        return _abstract(self)

    def _erase_namespace(self, ns: Namespace, actor: str) -> int:
        return _abstract(self)

    def _namespaces(self) -> list[Namespace]:
        return _abstract(self)
