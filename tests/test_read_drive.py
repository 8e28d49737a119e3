"""The sync driver of node bodies: a ``Gather`` runs side by side on the process's one pool.

Real threads; no fakes but the calls themselves.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import threading
from collections.abc import Generator
from typing import Any

import pytest

from mnemon_langgraph.read._drive import Call, Gather, drive
from mnemon_langgraph.read._workers import gather_pool, in_gather_worker

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


async def _never(*_: Any) -> Any:  # the async face, unused by the sync driver
    raise AssertionError("the sync driver awaited a call")


def _call(func: Any, *args: Any) -> Call:
    return Call(func, _never, args)


def _gather_body(calls: list[Call]) -> Generator[Any, Any, list[Any]]:
    results = yield Gather(tuple(calls))
    return list(results)


def test_a_gather_runs_side_by_side_in_order_with_errors_captured() -> None:
    barrier = threading.Barrier(3, timeout=10)  # passes only if all three run at once

    def meet(x: int) -> tuple[int, str]:
        barrier.wait()
        return x, threading.current_thread().name

    def boom() -> None:
        raise KeyError("lost")

    out = drive(_gather_body([_call(meet, 1), _call(meet, 2), _call(meet, 3), _call(boom)]))
    assert [r[0] for r in out[:3]] == [1, 2, 3]  # the calls' order, not completion order
    assert all(r[1].startswith("mnemon-gather") for r in out[:3])
    assert isinstance(out[3], KeyError)


def test_the_pool_is_reused_across_gathers() -> None:
    names: set[str] = set()

    def name() -> str:
        return threading.current_thread().name

    for _ in range(20):
        names.update(drive(_gather_body([_call(name), _call(name)])))
    assert names and all(n.startswith("mnemon-gather") for n in names)
    assert len(names) <= gather_pool()._max_workers  # no thread per gather


def test_the_callers_context_reaches_the_workers() -> None:
    def read() -> str:
        return _VAR.get()

    token = _VAR.set("run-7")
    try:
        assert drive(_gather_body([_call(read), _call(read)])) == ["run-7", "run-7"]
    finally:
        _VAR.reset(token)


def test_a_gather_inside_a_gather_worker_runs_inline_and_cannot_starve_the_pool() -> None:
    """Every worker busy with a call that gathers again: queued, that would wait forever."""
    width = gather_pool()._max_workers * 2

    def inner(i: int) -> tuple[int, bool]:
        return i, in_gather_worker()

    def outer(i: int) -> list[Any]:
        return drive(_gather_body([_call(inner, i), _call(inner, -i)]))

    done: list[Any] = []
    t = threading.Thread(
        target=lambda: done.append(drive(_gather_body([_call(outer, i) for i in range(width)])))
    )
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "nested gathers deadlocked the pool"
    assert done[0] == [[(i, True), (-i, True)] for i in range(width)]


def _child(queue: Any) -> None:
    queue.put(drive(_gather_body([_call(lambda: 1), _call(lambda: 2)])))


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform"
)
def test_a_forked_child_gets_its_own_pool() -> None:
    # Every one of the parent's workers started and idle: a child that kept the pool would
    # hand its calls to those (absent) threads and wait forever.
    width = gather_pool()._max_workers
    barrier = threading.Barrier(width, timeout=10)
    drive(_gather_body([_call(barrier.wait) for _ in range(width)]))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child hung on the parent's pool"
    assert child.exitcode == 0 and queue.get(timeout=5) == [1, 2]


def test_started_calls_run_in_their_own_pool_from_the_driving_thread() -> None:
    """``Call.start``: begun from the driving thread (no side-by-side worker waits for them),
    mixed with plain calls, results in the calls' order, errors of either half captured."""
    from concurrent.futures import ThreadPoolExecutor

    own = ThreadPoolExecutor(max_workers=4, thread_name_prefix="own")
    barrier = threading.Barrier(2, timeout=10)  # the two started calls run at once
    starters: list[str] = []

    def start(x: int) -> Any:
        starters.append(threading.current_thread().name)
        if x < 0:
            raise ValueError("bad start")

        def run() -> tuple[int, str]:
            if x == 0:
                raise KeyError("lost")
            barrier.wait()
            return x, threading.current_thread().name

        future = own.submit(run)
        return future.result

    def plain(x: int) -> tuple[int, str]:
        return x, threading.current_thread().name

    def timed(x: int) -> Call:
        return Call(_never, _never, (x,), start=start)

    try:
        calls = [timed(1), _call(plain, 2), timed(3), timed(0), timed(-1), _call(plain, 4)]
        out = drive(_gather_body(calls))
    finally:
        own.shutdown()
    assert [r[0] for r in (out[0], out[1], out[2], out[5])] == [1, 2, 3, 4]
    assert out[0][1].startswith("own") and out[2][1].startswith("own")
    assert out[1][1].startswith("mnemon-gather") and out[5][1].startswith("mnemon-gather")
    assert isinstance(out[3], KeyError) and isinstance(out[4], ValueError)
    assert set(starters) == {threading.current_thread().name}
