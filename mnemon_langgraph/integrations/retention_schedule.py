"""A retention policy on a schedule, for a server deployment (``MNEMON_RETENTION``).

``MNEMON_RETENTION="30d"`` (optionally ``"30d keep_last=200 every=6h prefix=users"``) makes
the server's store factory (:func:`~mnemon_langgraph.integrations.basestore.base_store_from_env`,
``langgraph.json``'s ``store.path``) run ``store.apply_retention`` over every namespace that
holds records (under ``prefix``, if given) once at start and then every ``every`` (default
24 hours), in one background thread that stops with the store. Held namespaces are skipped
(``store.hold``); each run writes one audit row per namespace it changed, with the actor
``retention-schedule``. A failing run is logged and the next one runs as planned.

Why a thread of our own: LangGraph's server starts no job for a custom store (it skips its
own TTL sweeper too), and the store's work is blocking on the embedded backend; one daemon
thread waiting on an :class:`threading.Event` is the smallest thing that runs on time and
stops at once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.read.namespaces import run_actor
from mnemon_langgraph.store._internal.retention import RetentionReceipt, check_keep_last, parse_age
from mnemon_langgraph.types import Namespace, normalize_namespace

__all__ = ["ENV", "RetentionSchedule", "retention_schedule_from_env", "schedule_from_spec"]

logger = logging.getLogger(__name__)

ENV = "MNEMON_RETENTION"
"""The variable the server's store factory reads (unset or empty: no schedule)."""

THREAD_NAME = "mnemon-retention"


@dataclass
class RetentionSchedule:
    """Apply one policy to every namespace of ``store`` now and then every ``every``.

    Args:
        store: A :class:`~mnemon_langgraph.store.MnemonStore`.
        older_than: The policy's age.
        keep_last: Keep the newest N dated records of each namespace.
        every: Time between runs.
        prefix: Only namespaces that start with it (``()``: all).
        clock: The clock a run dates its cut-off by (default: now, UTC).
    """

    store: Any
    older_than: timedelta
    keep_last: int | None = None
    every: timedelta = timedelta(hours=24)
    prefix: Namespace = ()
    clock: Callable[[], datetime | None] = lambda: None
    ran: threading.Event = field(default_factory=threading.Event)
    """Set after each run (tests and health checks wait on it)."""
    runs: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def run_once(self, now: datetime | None = None) -> list[RetentionReceipt]:
        """One run over every namespace under ``prefix``; the receipts, in namespace order."""
        when = now if now is not None else self.clock()
        actor = run_actor("retention-schedule")
        receipts = []
        for ns in self.store.namespaces():
            if tuple(ns[: len(self.prefix)]) != self.prefix:
                continue
            receipts.append(
                self.store.apply_retention(
                    ns, older_than=self.older_than, keep_last=self.keep_last, actor=actor, now=when
                )
            )
        self.runs += 1
        self.ran.set()
        return receipts

    def _loop(self) -> None:
        while True:
            try:
                receipts = self.run_once()
                removed = sum(r.records for r in receipts)
                logger.info("retention: %d namespaces, %d records removed", len(receipts), removed)
            except Exception:  # a failing run must not end the schedule
                logger.exception("retention run failed; the next one runs as planned")
            if self._stop.wait(self.every.total_seconds()):
                return

    def start(self) -> None:
        """Start the background thread (the first run begins at once)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the thread (a run in progress finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


def schedule_from_spec(store: Any, spec: str) -> RetentionSchedule:
    """``"30d keep_last=200 every=6h prefix=users"`` as a (not started) schedule.

    Raises:
        ConfigurationError: An unknown or malformed part.
    """
    parts = spec.split()
    try:
        if not parts:
            raise InputError("no age given")
        options: dict[str, Any] = {"older_than": parse_age(parts[0])}
        for part in parts[1:]:
            name, _, value = part.partition("=")
            if name == "keep_last" and value.isdigit():
                options["keep_last"] = check_keep_last(int(value))
            elif name == "every":
                options["every"] = parse_age(value)
            elif name == "prefix" and value:
                options["prefix"] = normalize_namespace(value.split("/"))
            else:
                raise InputError(f"unknown part {part!r}")
    except InputError as exc:
        raise ConfigurationError(
            f"{ENV}={spec!r}: {exc} (expected an age like 30d, then optionally "
            "keep_last=N, every=AGE, prefix=PART/PART)"
        ) from exc
    if options.get("every", timedelta(hours=1)) < timedelta(minutes=1):
        raise ConfigurationError(f"{ENV}={spec!r}: every must be at least 1m")
    return RetentionSchedule(store, **options)


@contextmanager
def retention_schedule_from_env(
    store: Any, environ: Mapping[str, str] | None = None
) -> Iterator[RetentionSchedule | None]:
    """The schedule ``MNEMON_RETENTION`` asks for (``environ``: default the process's),
    running while the block runs (``None``: the variable is unset or empty)."""
    spec = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not spec:
        yield None
        return
    schedule = schedule_from_spec(store, spec)
    schedule.start()
    try:
        yield schedule
    finally:
        schedule.stop()
