"""TTL for :class:`~mnemon_langgraph.integrations.basestore.MnemonBaseStore`: LangGraph's
``TTLConfig`` checked, a put's ``ttl`` checked, and the background sweeper.

LangGraph's semantics (``langgraph.store.base``): ``put(..., ttl=minutes)`` makes an item
expire that many minutes after its last write (``default_ttl`` when ``put`` gives none);
``get`` and ``search`` move the expiry of the items they return to *now* plus their TTL
when ``refresh_ttl`` (default ``refresh_on_read``, itself default ``True``). Expired items
are always left out of ``get``, ``search`` and ``list_namespaces`` (LangGraph's
``omit_expired=True``); the sweeper deletes them every ``sweep_interval_minutes``.

The sweeper is LangGraph's own shape (``AsyncPostgresStore.start_ttl_sweeper`` /
``stop_ttl_sweeper``: a task on the caller's event loop, stopped through an event), written
here because LangGraph's is a method of its stores, not a reusable part. It sweeps once when
it starts (a server that restarts removes what expired while it was down), then every
interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import TTLConfig

from mnemon_langgraph.errors import ConfigurationError, InputError

__all__ = [
    "DEFAULT_SWEEP_MINUTES",
    "MAX_TTL_MINUTES",
    "TTLSweeper",
    "check_clock_time",
    "check_ttl",
    "check_ttl_config",
    "server_ttl_config",
]

logger = logging.getLogger(__name__)

MAX_TTL_MINUTES = 100 * 366 * 24 * 60
"""The longest TTL a put may give (a century): an expiry must stay a storable date."""

DEFAULT_SWEEP_MINUTES = 5.0
"""The sweep interval when neither the call nor the config names one (LangGraph's)."""

_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}


def check_ttl(ttl: object, *, what: str = "ttl") -> float | None:
    """``ttl`` (minutes) as a float, ``None`` for no expiry; :class:`InputError` otherwise."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InputError(f"{what} must be a number of minutes or None, got {ttl!r}")
    minutes = float(ttl)
    if not math.isfinite(minutes) or not 0 < minutes <= MAX_TTL_MINUTES:
        raise InputError(f"{what} must be > 0 and at most {MAX_TTL_MINUTES} minutes, got {ttl!r}")
    return minutes


def check_ttl_config(config: object) -> TTLConfig | None:
    """A checked copy of LangGraph's ``TTLConfig`` (``None``: no TTL settings).

    Raises:
        ConfigurationError: Not a mapping, an unknown key, a bad value, or
            ``omit_expired: False`` (this store always leaves expired items out).
    """
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise ConfigurationError(f"ttl must be a TTLConfig mapping, got {type(config).__name__}")
    unknown = sorted(set(config) - _KEYS)
    if unknown:
        raise ConfigurationError(f"unknown TTLConfig keys {unknown}; known: {sorted(_KEYS)}")
    out: dict[str, Any] = {}
    try:
        if "default_ttl" in config:
            out["default_ttl"] = check_ttl(config["default_ttl"], what="default_ttl")
        if "sweep_interval_minutes" in config:
            every = config["sweep_interval_minutes"]
            out["sweep_interval_minutes"] = check_ttl(every, what="sweep_interval_minutes")
    except InputError as exc:
        raise ConfigurationError(str(exc)) from None
    for flag in ("refresh_on_read", "omit_expired"):
        if flag in config and not isinstance(config[flag], bool):
            raise ConfigurationError(f"{flag} must be true or false, got {config[flag]!r}")
        if flag in config:
            out[flag] = config[flag]
    if out.get("omit_expired") is False:
        raise ConfigurationError(
            "omit_expired: false is not supported: MnemonBaseStore always leaves expired "
            "items out of get, search and list_namespaces"
        )
    return TTLConfig(**out)  # type: ignore[typeddict-item]


def check_clock_time(now: object) -> datetime:
    """What the store's clock returned, if it is a timezone-aware ``datetime``."""
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise ConfigurationError(f"the clock must return a timezone-aware datetime, got {now!r}")
    return now


def server_ttl_config(environ: Mapping[str, str]) -> TTLConfig | None:
    """The ``ttl`` of the LangGraph server's store configuration (``LANGGRAPH_STORE``: the
    ``store`` of ``langgraph.json`` as JSON, set by ``langgraph dev`` / ``langgraph up``).

    The server hands a custom store no TTL and starts no sweeper for it, so the store reads
    its TTL here."""
    raw = environ.get("LANGGRAPH_STORE", "").strip()
    if not raw:
        return None
    try:
        config = json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"LANGGRAPH_STORE is not JSON: {exc}") from None
    if not isinstance(config, Mapping):
        raise ConfigurationError("LANGGRAPH_STORE must be a JSON object (langgraph.json's store)")
    return check_ttl_config(config.get("ttl"))


async def _stop_or_timeout(seconds: float, stop: asyncio.Event) -> bool:
    """Wait ``seconds`` or until ``stop`` is set: whether it was set."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True


class TTLSweeper:
    """The background sweep: ``sweep`` once, then every ``interval`` minutes, on the event
    loop that started it, until stopped. A failing sweep is logged and retried next time.

    ``wait(seconds, stop)`` is the pause between sweeps (default: ``seconds`` or until
    ``stop`` is set; whether it was); a test gives its own, so it never sleeps."""

    def __init__(
        self,
        sweep: Callable[[], Awaitable[int]],
        wait: Callable[[float, asyncio.Event], Awaitable[bool]] = _stop_or_timeout,
    ) -> None:
        self._sweep = sweep
        self._wait = wait
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, minutes: float) -> asyncio.Task[None]:
        """Start on the running loop (the running task if one is already going)."""
        if self._task is not None and not self._task.done():
            return self._task
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        logger.info("starting the store's TTL sweeper, every %s minutes", minutes)
        self._task = self._loop.create_task(self._run(minutes * 60.0, self._stop))
        self._task.set_name("mnemon_ttl_sweeper")
        return self._task

    async def _run(self, seconds: float, stop: asyncio.Event) -> None:
        while True:
            try:
                swept = await self._sweep()
                if swept:
                    logger.info("TTL sweep deleted %d expired items", swept)
            except Exception:
                logger.exception("TTL sweep failed (retried at the next interval)")
            if await self._wait(seconds, stop):
                return

    async def stop(self, timeout: float | None = None) -> bool:
        """Stop the sweeper and wait for it (at most ``timeout`` seconds): ``True`` once it
        has stopped (or was not running), ``False`` on a timeout."""
        task, stop = self._task, self._stop
        if task is None or stop is None or task.done():
            return True
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
        except TimeoutError:
            logger.warning("the TTL sweeper did not stop within %s s", timeout)
            return False
        self._task = None
        return True

    def signal_stop(self) -> None:
        """Ask the sweeper to stop, from any thread (it ends after a sweep in progress)."""
        if self.running and self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # that loop has closed: the task is over
                self._loop.call_soon_threadsafe(self._stop.set)

    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the sweeper runs on (``None``: never started)."""
        return self._loop
