"""The in-memory caches of memory content a process keeps, and the one call that empties them.

Several parts of the read path keep what they derived from memory text for the next wave or
turn: the store's recent query vectors (which the judge's evidence uses too), the local
judge's parses and vectors of record texts, the update detector's sentences, the
integrations' Views of recent turns. Each registers here how it is emptied, and every
deletion (``delete_records``, ``delete_messages``, ``erase_namespace``, on either backend,
decorated with :func:`forgets_cached_content`) calls :func:`forget_cached_content` when it
ends, so that a deleted record's text is not served, or held, by the process that deleted
it. Coarse on purpose: deletions are
rare, and every cache refills within a turn or two, so telling what came from which record
is not worth the bookkeeping.

Other processes (another app host, the ``mnemon erase`` command beside a running server)
do not hear of a deletion: their caches drop the text as it ages out, and at the latest
when the process ends. The README's "What is stored where" says so.

Registrations are weak for bound methods, so a cache owned by an object (a store, a judge)
goes away with it.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["forget_cached_content", "forgets_cached_content", "register_content_cache"]

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

_LOCK = threading.Lock()
_CLEARERS: list[Callable[[], Callable[[], object] | None]] = []


def register_content_cache(clear: Callable[[], object]) -> None:
    """Have :func:`forget_cached_content` call ``clear`` (held weakly if a bound method)."""
    if inspect.ismethod(clear):
        ref: Callable[[], Callable[[], object] | None] = weakref.WeakMethod(clear)
    else:

        def ref(clear: Callable[[], object] = clear) -> Callable[[], object]:
            return clear

    with _LOCK:
        _CLEARERS[:] = [r for r in _CLEARERS if r() is not None]
        _CLEARERS.append(ref)


def forget_cached_content() -> int:
    """Empty every registered cache; returns how many were emptied (the broken ones not).

    A cache that fails to empty is logged and the others are still emptied: the deletion
    itself has already been committed.
    """
    with _LOCK:
        refs = list(_CLEARERS)
    emptied = 0
    for ref in refs:
        clear = ref()
        if clear is None:
            continue
        try:
            clear()
            emptied += 1
        except Exception:  # one broken cache must not keep the others' text
            logger.exception("could not empty a cache after a deletion")
        finally:
            del clear  # a logged traceback keeps this frame: it must not keep the owner
    return emptied


def forgets_cached_content(deletion: F) -> F:
    """Decorate a store's deletion method: :func:`forget_cached_content` when it ends.

    Also when it raises: a deletion that failed may still have removed some of the rows,
    and emptying a cache only costs the next turn a few model calls.
    """

    @functools.wraps(deletion)
    def deleting(*args: Any, **kwargs: Any) -> Any:
        try:
            return deletion(*args, **kwargs)
        finally:
            forget_cached_content()

    return cast(F, deleting)
