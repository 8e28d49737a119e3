"""One body per node, two thin drivers: how the read graph's nodes run sync and async.

A node's body is a generator: it does all the work and *yields* each backend call it
needs (a :class:`Call`, or a :class:`Gather` of independent calls) instead of making it.
:func:`drive` runs the body under ``invoke`` (sync calls; a ``Gather`` side by side in the
process's context-copying :func:`~mnemon_langgraph.read._workers.gather_pool`), :func:`adrive`
under ``ainvoke`` (awaited; a ``Gather`` with ``asyncio.gather``). The body gets each result
back (or the exception, raised at the ``yield``), so the logic exists once and the two faces
cannot drift apart. A ``RunnableLambda(sync, async)`` turns the two drivers into one graph
node.

Why not ``asyncio.run`` for the sync face, or threads for the async one: the sync face must
work inside a running event loop's worker threads and keep LangChain's run context
(callbacks, tracing), and the async face must not block the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from mnemon_langgraph.read._workers import gather_pool, in_gather_worker

__all__ = ["Body", "Call", "Gather", "Step", "adrive", "drive", "in_thread"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Call:
    """One backend call, with its sync and async faces and the arguments for both.

    ``start`` (optional): the sync face split in two, for a call that runs in a pool of its
    own and is waited for with a timeout (a timed search of a read source): it starts the
    call and returns the wait. A sync ``Gather`` starts such calls from the driving thread,
    so that no side-by-side worker is taken only to wait for another pool's worker.
    """

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    start: Callable[..., Callable[[], Any]] | None = None

    def run(self) -> Any:
        """Make the call synchronously."""
        return self.sync(*self.args, **self.kwargs)

    async def arun(self) -> Any:
        """Make the call on the event loop."""
        return await self.async_(*self.args, **self.kwargs)


@dataclass(frozen=True, slots=True)
class Gather:
    """Independent calls run side by side; each result is its value or the exception raised."""

    calls: tuple[Call, ...]


Step: TypeAlias = Call | Gather
Body: TypeAlias = Generator[Step, Any, R]


def in_thread(func: Callable[..., R]) -> Callable[..., Awaitable[R]]:
    """The async face of a blocking call (e.g. SQLite): run it in a worker thread."""

    async def run(*args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(func, *args, **kwargs)

    return run


def _captured(call: Call) -> Any:
    try:
        return call.run()
    except Exception as exc:
        return exc


def _started(call: Call) -> Callable[[], Any]:
    """``call`` started by its ``start`` face; the wait returns its value or exception."""
    assert call.start is not None
    try:
        wait = call.start(*call.args, **call.kwargs)
    except Exception as exc:
        failed = exc
        return lambda: failed

    def result() -> Any:
        try:
            return wait()
        except Exception as exc:
            return exc

    return result


def _run(step: Step) -> Any:
    if isinstance(step, Call):
        return step.run()
    waits = {i: _started(c) for i, c in enumerate(step.calls) if c.start is not None}
    rest = [c for i, c in enumerate(step.calls) if i not in waits]
    if len(rest) <= 1 or in_gather_worker():
        done = [_captured(c) for c in rest]
    else:
        # The process's one pool (workers.py says why): ``map`` waits for every call, and
        # the results come back in the calls' order.
        done = list(gather_pool().map(_captured, rest))
    it = iter(done)
    return [waits[i]() if i in waits else next(it) for i in range(len(step.calls))]


async def _acaptured(call: Call) -> Any:
    try:
        return await call.arun()
    except Exception as exc:
        return exc


async def _arun(step: Step) -> Any:
    if isinstance(step, Call):
        return await step.arun()
    return list(await asyncio.gather(*(_acaptured(c) for c in step.calls)))


def drive(body: Body[R]) -> R:
    """Run a node body with sync calls; its return value is the node's update."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            step = body.throw(error) if error is not None else body.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            result = _run(step)
        except Exception as exc:
            error = exc


async def adrive(body: Body[R]) -> R:
    """Run a node body with awaited calls; its return value is the node's update."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            step = body.throw(error) if error is not None else body.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            result = await _arun(step)
        except Exception as exc:
            error = exc
