"""A scripted decision model for tests and notebooks.

:class:`ScriptedDecisionModel` answers every Noul from a callable or a dict, records every
request it receives (so tests can inspect the state and the questions a backend was sent),
and can be told to fail, to hang until released, or to wait at a barrier so a test can
prove that calls run concurrently without timing anything.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.decisions import (
    BaseDecisionModel,
    ClassifierResponse,
    NoulAnswer,
    Question,
    State,
)
from pydantic import ConfigDict, PrivateAttr

__all__ = ["AnswerFn", "ScriptedDecisionModel"]

AnswerFn = Callable[[str, Question, State], float | None]
"""``(question_id, question, state) -> p`` (``None`` leaves the answer out)."""

_BARRIER_TIMEOUT_S = 10.0
_HANG_S = 30.0


class ScriptedDecisionModel(BaseDecisionModel):
    """Answers from a script; records requests; can fail, hang or meet at a barrier.

    Attributes:
        model: Name reported in responses.
        answers: A callable ``(question_id, question, state) -> p | None`` or a mapping
            ``question_id -> p``. Unlisted ids get ``default``.
        default: P(yes) for questions the script does not cover; ``None`` leaves them
            unanswered (a response with missing answers).
        error: Exception raised by a call (a copy of it each time).
        fail_calls: With ``error``: only the first ``fail_calls`` calls raise; ``None``
            means every call raises.
        hang: Every call blocks (sync: until :meth:`release` or 30 s; async: until
            cancelled) — a decision model that times out.
        barrier: A ``threading.Barrier`` (sync calls) or ``asyncio.Barrier`` (async calls)
            every call waits at before answering: with ``n`` parties, the calls only
            complete if ``n`` of them are in flight at once (a broken barrier raises).
        usage: Token usage reported per call.
        raw: Build responses without validation so out-of-range answers reach the caller.
        record_requests: Keep a copy of every request (turn off for long benchmarks).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "scripted"
    answers: Any = None
    default: float | None = 0.5
    error: Any = None
    fail_calls: int | None = None
    hang: bool = False
    barrier: Any = None
    usage: dict[str, int] | None = None
    raw: bool = False
    record_requests: bool = True

    _requests: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _released: threading.Event = PrivateAttr(default_factory=threading.Event)
    _calls: int = PrivateAttr(default=0)
    _active: int = PrivateAttr(default=0)
    _max_active: int = PrivateAttr(default=0)

    @property
    def _provider(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request so far: ``{"state": ..., "questions": {id: Noul}}``, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """Calls received so far (recorded or not)."""
        return self._calls

    @property
    def max_concurrent(self) -> int:
        """Most calls that were in flight at the same moment."""
        return self._max_active

    def release(self) -> None:
        """Let every hanging synchronous call return (its answer is still produced)."""
        self._released.set()

    def _enter(self, state: State, questions: dict[str, Question]) -> int:
        with self._lock:
            self._calls += 1
            if self.record_requests:
                self._requests.append({"state": copy.deepcopy(state), "questions": dict(questions)})
            self._active += 1
            self._max_active = max(self._max_active, self._active)
            return self._calls

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1

    def _maybe_fail(self, number: int) -> None:
        if self.error is None:
            return
        if self.fail_calls is None or number <= self.fail_calls:
            raise copy.copy(self.error)

    def _answer(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        answers: dict[str, Any] = {}
        for qid, question in questions.items():
            p: float | None
            if callable(self.answers):
                p = self.answers(qid, question, state)
            elif isinstance(self.answers, Mapping):
                p = self.answers.get(qid, self.default)
            else:
                p = self.default
            if p is None:
                continue
            answers[qid] = (
                NoulAnswer.model_construct(type="noul", noul=p)
                if self.raw
                else NoulAnswer(type="noul", noul=p)
            )
        if self.raw:
            return ClassifierResponse.model_construct(
                model=self.model, answers=answers, usage=self.usage, request_id=None
            )
        return ClassifierResponse.model_validate(
            {"model": self.model, "answers": answers, "usage": self.usage}
        )

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        number = self._enter(state, questions)
        try:
            if self.barrier is not None:
                self.barrier.wait(timeout=_BARRIER_TIMEOUT_S)
            if self.hang:
                self._released.wait(timeout=_HANG_S)
            self._maybe_fail(number)
            return self._answer(state, questions)
        finally:
            self._leave()

    async def _aclassify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        number = self._enter(state, questions)
        try:
            if self.barrier is not None:
                await asyncio.wait_for(self.barrier.wait(), timeout=_BARRIER_TIMEOUT_S)
            if self.hang:
                await asyncio.sleep(_HANG_S)
            self._maybe_fail(number)
            return self._answer(state, questions)
        finally:
            self._leave()
