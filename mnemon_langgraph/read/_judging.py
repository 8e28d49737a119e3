"""System 1 orchestration: turn judge requests into waves of decision-model calls.

A **wave** is a set of judgments that take no other judgment's result as input (paper
§3–4.2); its calls go out together, at most ``max_records_per_call`` (40) records each,
and run concurrently — with :func:`ajudge_wave` on the event loop (``asyncio.gather``),
with :func:`judge_wave` in a thread pool. Both faces share the same pure helpers
(:func:`plan_wave` builds the calls, :func:`read_answers` checks a response), so they
cannot drift apart.

Failure never leaves a wave: a call that raises, times out, or returns missing or invalid
answers loses *only its own* judgments (the graph falls back to the fused search order for
those targets) and is reported in :attr:`WaveResult.errors` with the backend's name.

Retries: ``retries`` defaults to **0**; a retry is LangChain's ``Runnable.with_retry`` around
one call (the model call plus the check of its answers), not a loop of our own. A failed call
already degrades gracefully, and a retry would put up to another full call (or timeout) on the
turn's critical path, where a wave costs far less than a timed-out call (docs/results/log.md,
"Figures behind the code's defaults"). Pass ``retries=1`` for flaky backends; more than one
retry is refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, Noul
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from mnemon_langgraph.errors import ConfigurationError, InputError, ModelCallError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.judges.propositions import (
    DATA_NOTE,
    Proposition,
    build_question,
    question_id,
)
from mnemon_langgraph.read._rules import Judgment
from mnemon_langgraph.read._workers import shared_pool
from mnemon_langgraph.types import Message, Record

__all__ = [
    "MAX_MESSAGES",
    "MAX_RECORDS_PER_CALL",
    "JudgeRequest",
    "Judgment",
    "PlannedCall",
    "WaveResult",
    "ajudge_wave",
    "backend_name",
    "build_state",
    "judge_wave",
    "message_json",
    "plan_wave",
    "read_answers",
]

MAX_RECORDS_PER_CALL = 40
"""Records (or items) per decision-model call (paper §5: Jev judges up to 40 a call)."""
MAX_MESSAGES = 6
"""Messages of the dialogue sent with every call (paper §4.2: the last six)."""
MAX_RETRIES = 1

MessageLike: TypeAlias = Message | BaseMessage | Mapping[str, Any] | str
Target: TypeAlias = Record | IndexItem

_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_RECORD_PROPS = (
    Proposition.SCREEN,
    Proposition.NEEDED,
    Proposition.STALE,
    Proposition.SATISFIES,
)


@dataclass(frozen=True)
class JudgeRequest:
    """Judgments to make about some records or index items in one shared state.

    Every proposition is asked about every target; :data:`~Proposition.SATISFIES`
    expands to one question per need. Record propositions take :class:`Record` targets,
    :data:`~Proposition.ITEM_NEEDED` takes :class:`IndexItem` targets.

    Attributes:
        propositions: The propositions to ask.
        targets: The records (or items) to ask about, in the caller's order (the pool's
            fused order); batching keeps that order.
        messages: The dialogue; only the last ``max_messages`` are sent.
        needs: The planner's needs: strings or objects with ``text`` (and ``kind``).
        round: Round of the loop, copied onto each :class:`Judgment`.
        evidence: Record id → its retrieval evidence
            (:class:`~mnemon_langgraph.read.state.RecordEvidence`: stored-vector
            similarities, ranks), sent beside the record; records without any get none.
        memory: How common the query texts' words are in the whole namespace
            (``{"records": N, "df": {term: n}}``, from
            :meth:`~mnemon_langgraph.read._evidence.EvidenceBuilder.memory_terms`), sent as the
            state's ``memory`` field; ``None``: not sent.
        sources: Record id → the read source it came from (a read graph of several
            sources), sent as the record's ``source`` field; records without one get none.
    """

    propositions: tuple[Proposition, ...]
    targets: tuple[Target, ...]
    messages: tuple[MessageLike, ...] = ()
    needs: tuple[Any, ...] = ()
    round: int = 1
    evidence: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    memory: Mapping[str, Any] | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    def __init__(
        self,
        propositions: Sequence[Proposition | str] | Proposition | str,
        targets: Sequence[Target],
        messages: Sequence[MessageLike] = (),
        needs: Sequence[Any] = (),
        round: int = 1,
        evidence: Mapping[str, Mapping[str, Any]] | None = None,
        memory: Mapping[str, Any] | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        props = [propositions] if isinstance(propositions, str) else list(propositions)
        object.__setattr__(self, "propositions", tuple(Proposition(p) for p in props))
        object.__setattr__(self, "targets", tuple(targets))
        object.__setattr__(self, "messages", tuple(messages))
        object.__setattr__(self, "needs", tuple(needs))
        object.__setattr__(self, "round", round)
        object.__setattr__(self, "evidence", dict(evidence or {}))
        object.__setattr__(self, "memory", dict(memory) if memory else None)
        object.__setattr__(self, "sources", dict(sources or {}))


@dataclass(frozen=True)
class PlannedCall:
    """One decision-model call of a wave, ready to send.

    Attributes:
        index: Position of the call in the wave.
        state: The JSON-able state (records and messages as delimited data).
        questions: Question id → Noul.
        keys: Question id → ``(target_id, proposition, need_index)``.
        round: Round copied onto the judgments.
    """

    index: int
    state: dict[str, Any]
    questions: dict[str, Noul]
    keys: dict[str, tuple[str, Proposition, int | None]]
    round: int = 1

    @property
    def target_ids(self) -> list[str]:
        """Ids of the records or items asked about, without repeats."""
        return list(dict.fromkeys(key[0] for key in self.keys.values()))


@dataclass
class WaveResult:
    """What one wave produced.

    Attributes:
        judgments: Every judgment of the calls that succeeded, call by call.
        calls: Calls planned (and sent) for the wave.
        attempts: Calls sent, retries included.
        errors: One line per failed call: backend, call, error.
        failed_target_ids: Targets whose call failed (no judgments for them).
        usage: ``input_tokens``, ``output_tokens``, ``total_tokens`` summed over calls.
    """

    judgments: list[Judgment] = field(default_factory=list)
    calls: int = 0
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    failed_target_ids: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(
        default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    )


# --- pure helpers -------------------------------------------------------------------


def backend_name(model: BaseDecisionModel) -> str:
    """``provider/model`` of a decision model, for error lines."""
    try:
        provider = model._provider
    except Exception:
        provider = type(model).__name__
    return f"{provider}/{getattr(model, 'model', '?')}"


def message_json(message: MessageLike) -> dict[str, str]:
    """A message as the state's ``{"role", "text"[, "speaker"]}`` data."""
    if isinstance(message, Message):
        return {"role": message.role, "speaker": message.speaker, "text": message.text}
    if isinstance(message, BaseMessage):
        out = {"role": _ROLE_OF_TYPE.get(message.type, message.type), "text": message.text}
        if message.name:
            out["speaker"] = message.name
        return out
    if isinstance(message, str):
        return {"role": "user", "text": message}
    text = message.get("text", message.get("content", ""))
    out = {"role": str(message.get("role", "user")), "text": str(text)}
    if message.get("speaker"):
        out["speaker"] = str(message["speaker"])
    return out


def _need_json(index: int, need: Any) -> dict[str, Any]:
    if isinstance(need, str):
        return {"index": index, "kind": "NEED", "text": need}
    return {
        "index": index,
        "kind": str(getattr(need, "kind", "NEED")),
        "text": str(getattr(need, "text", need)),
    }


def _chrono_key(target: Target) -> tuple[Any, ...]:
    if isinstance(target, Record):
        return (target.session, target.date or datetime.min, target.position, target.seq)
    return (0, target.date or datetime.min, 0, target.seq)


def build_state(
    records: Sequence[tuple[str, Record]],
    items: Sequence[tuple[str, IndexItem]],
    messages: Sequence[MessageLike],
    needs: Sequence[Any],
    evidence: Mapping[str, Mapping[str, Any]] | None = None,
    memory: Mapping[str, Any] | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The shared state of one call: data fields only, with the data note first.

    Args:
        records: ``(local_id, record)`` pairs, already in the order to show.
        items: ``(local_id, item)`` pairs.
        messages: The messages to include (already cut to the last few).
        needs: The planner's needs.
        evidence: Record id → retrieval evidence; a record that has some gets it as its
            ``evidence`` field (numbers only: similarities and ranks, never instructions).
        memory: The query words' counts in the whole namespace, sent as ``memory`` (numbers
            keyed by the shared tokenizer's terms).
        sources: Record id → its read source's name (several sources), sent as the
            record's ``source`` field.

    Returns:
        A JSON-able dict: ``instructions_note``, ``messages``, ``needs``, ``records``
        and, when there are some, ``items`` and ``memory``.
    """
    state: dict[str, Any] = {
        "instructions_note": DATA_NOTE,
        "messages": [message_json(m) for m in messages],
        "needs": [_need_json(i, n) for i, n in enumerate(needs)],
        "records": [
            {"id": lid, "header": record.header, "text": record.text} for lid, record in records
        ],
    }
    for entry, (_, record) in zip(state["records"], records, strict=True):
        if sources and record.id in sources:
            entry["source"] = sources[record.id]
        if evidence and record.id in evidence:
            entry["evidence"] = dict(evidence[record.id])
    if memory:
        state["memory"] = dict(memory)
    if items:
        state["items"] = [
            {
                "id": lid,
                "kind": item.kind,
                "date": item.date.strftime("%Y-%m-%d") if item.date else None,
                "text": item.render(),
            }
            for lid, item in items
        ]
    return state


def plan_wave(
    requests: Sequence[JudgeRequest],
    *,
    max_records_per_call: int = MAX_RECORDS_PER_CALL,
    max_messages: int = MAX_MESSAGES,
) -> list[PlannedCall]:
    """Split requests into calls of at most ``max_records_per_call`` targets each.

    Chunks follow the request's target order; inside a call the records are shown in
    chronological order (session, date, position) so "later" reads naturally, with
    local ids ``r0``… / ``i0``… in that order.

    Raises:
        ConfigurationError: If ``max_records_per_call`` is not positive.
        InputError: If a proposition does not fit its targets' type.
    """
    if max_records_per_call < 1:
        raise ConfigurationError(f"max_records_per_call must be >= 1, got {max_records_per_call}")
    calls: list[PlannedCall] = []
    for request in requests:
        record_props = [p for p in request.propositions if p in _RECORD_PROPS]
        item_props = [p for p in request.propositions if p is Proposition.ITEM_NEEDED]
        for target in request.targets:
            wanted = item_props if isinstance(target, IndexItem) else record_props
            if not wanted:
                raise InputError(
                    f"no proposition in {[p.value for p in request.propositions]} applies to "
                    f"{type(target).__name__} {target.id!r}"
                )
        messages = list(request.messages)[-max_messages:] if max_messages > 0 else []
        targets = list(dict.fromkeys(request.targets))  # drop exact duplicates, keep order
        for start in range(0, len(targets), max_records_per_call):
            chunk = sorted(targets[start : start + max_records_per_call], key=_chrono_key)
            records = [t for t in chunk if isinstance(t, Record)]
            items = [t for t in chunk if isinstance(t, IndexItem)]
            rec_pairs = [(f"r{i}", r) for i, r in enumerate(records)]
            item_pairs = [(f"i{i}", it) for i, it in enumerate(items)]
            questions: dict[str, Noul] = {}
            keys: dict[str, tuple[str, Proposition, int | None]] = {}
            pairs: list[tuple[str, Target]] = [*rec_pairs, *item_pairs]
            for lid, member in pairs:
                props = item_props if isinstance(member, IndexItem) else record_props
                for prop in props:
                    if prop is Proposition.SATISFIES:
                        for n_index, need in enumerate(request.needs):
                            qid = question_id(lid, prop, n_index)
                            questions[qid] = build_question(
                                prop, lid, need_index=n_index, need_text=_need_json(0, need)["text"]
                            )
                            keys[qid] = (member.id, prop, n_index)
                    else:
                        qid = question_id(lid, prop)
                        questions[qid] = build_question(prop, lid)
                        keys[qid] = (member.id, prop, None)
            if not questions:
                continue  # e.g. only `satisfies` asked and no needs: nothing to judge
            state = build_state(
                rec_pairs,
                item_pairs,
                messages,
                request.needs,
                evidence=request.evidence,
                memory=request.memory,
                sources=request.sources,
            )
            calls.append(PlannedCall(len(calls), state, questions, keys, request.round))
    return calls


def read_answers(call: PlannedCall, response: ClassifierResponse) -> list[Judgment]:
    """The judgments of one call, or :class:`ModelCallError` if any answer is unusable.

    A response that misses a question, answers with another type, or gives a
    probability that is not a finite number in [0, 1] fails the whole call: a backend
    that garbles one answer is not trusted for the others.
    """
    answers = getattr(response, "answers", None)
    if not isinstance(answers, Mapping):
        raise ModelCallError(f"response has no answers mapping: {type(response).__name__}")
    missing = [qid for qid in call.questions if qid not in answers]
    if missing:
        raise ModelCallError(
            f"{len(missing)} of {len(call.questions)} answers missing (e.g. {missing[0]!r})"
        )
    judgments: list[Judgment] = []
    for qid, (target_id, prop, need_index) in call.keys.items():
        answer = answers[qid]
        p = getattr(answer, "noul", None)
        if getattr(answer, "type", None) != "noul" or not isinstance(p, int | float):
            raise ModelCallError(f"answer {qid!r} is not a Noul answer: {answer!r}")
        p = float(p)
        if not math.isfinite(p) or not 0.0 <= p <= 1.0:
            raise ModelCallError(f"answer {qid!r} has p={p!r}, outside [0, 1]")
        judgments.append(Judgment(target_id, prop.value, p, need_index, call.round))
    return judgments


@dataclass
class _Outcome:
    judgments: list[Judgment] | None = None
    usage: Mapping[str, Any] | None = None
    error: str | None = None


def _failure(error: BaseException, timeout_s: float | None) -> _Outcome:
    if isinstance(error, TimeoutError | asyncio.TimeoutError | concurrent.futures.TimeoutError):
        return _Outcome(error=f"timed out after {timeout_s} s")
    return _Outcome(error=f"{type(error).__name__}: {error}")


def _collect(
    model: BaseDecisionModel,
    calls: Sequence[PlannedCall],
    outcomes: Sequence[_Outcome],
    attempts: int,
) -> WaveResult:
    result = WaveResult(calls=len(calls), attempts=attempts)
    name = backend_name(model)
    for call, outcome in zip(calls, outcomes, strict=True):
        if outcome.judgments is not None:
            result.judgments.extend(outcome.judgments)
            usage = outcome.usage or {}
            for key in ("input_tokens", "output_tokens"):
                result.usage[key] += int(usage.get(key) or 0)
        else:
            targets = call.target_ids
            result.errors.append(
                f"{name}: call {call.index} ({len(targets)} targets, "
                f"{len(call.questions)} questions) failed: {outcome.error}"
            )
            result.failed_target_ids.extend(t for t in targets if t not in result.failed_target_ids)
    result.usage["total_tokens"] = result.usage["input_tokens"] + result.usage["output_tokens"]
    return result


def _check_retries(retries: int) -> None:
    if not 0 <= retries <= MAX_RETRIES:
        raise ConfigurationError(f"retries must be 0 or 1, got {retries}")


class _Attempt:
    """One planned call as a runnable: ask the model, check every answer.

    An unusable response raises :class:`ModelCallError`, so LangChain's ``with_retry`` treats
    it like a failed call; ``count`` is how many times the model was asked (the wave's
    ``attempts``). The async face bounds each attempt by ``timeout_s``.
    """

    def __init__(self, model: BaseDecisionModel, call: PlannedCall, timeout_s: float | None):
        self.model, self.call, self.timeout_s = model, call, timeout_s
        self.count = 0
        self.usage: Mapping[str, Any] | None = None

    def _checked(self, response: ClassifierResponse) -> list[Judgment]:
        judgments = read_answers(self.call, response)
        self.usage = response.usage
        return judgments

    def invoke(self, request: dict[str, Any], config: RunnableConfig) -> list[Judgment]:
        self.count += 1
        return self._checked(self.model.invoke(request, config))  # type: ignore[arg-type]

    async def ainvoke(self, request: dict[str, Any], config: RunnableConfig) -> list[Judgment]:
        self.count += 1
        response = await asyncio.wait_for(
            self.model.ainvoke(request, config),  # type: ignore[arg-type]
            self.timeout_s,
        )
        return self._checked(response)

    def runnable(self, retries: int) -> Runnable[dict[str, Any], list[Judgment]]:
        step: Runnable[dict[str, Any], list[Judgment]] = RunnableLambda(
            self.invoke, self.ainvoke, name="judge_call"
        )
        if retries:
            step = step.with_retry(stop_after_attempt=retries + 1, wait_exponential_jitter=False)
        return step

    def outcome(self, result: list[Judgment] | BaseException) -> _Outcome:
        if isinstance(result, BaseException):
            return _failure(result, self.timeout_s)
        return _Outcome(judgments=result, usage=self.usage)


def _request(call: PlannedCall) -> dict[str, Any]:
    return {"state": call.state, "questions": call.questions}


# --- async face ------------------------------------------------------------------------


async def _aoutcome(attempt: _Attempt, retries: int, config: RunnableConfig | None) -> _Outcome:
    try:
        result = await attempt.runnable(retries).ainvoke(_request(attempt.call), config)
    except Exception as error:
        return attempt.outcome(error)
    return attempt.outcome(result)


async def ajudge_wave(
    model: BaseDecisionModel,
    requests: Sequence[JudgeRequest],
    *,
    timeout_s: float | None = None,
    retries: int = 0,
    max_records_per_call: int = MAX_RECORDS_PER_CALL,
    max_messages: int = MAX_MESSAGES,
    config: RunnableConfig | None = None,
) -> WaveResult:
    """Send every call of a wave concurrently (``asyncio.gather``) and collect judgments.

    Args:
        model: Any decision model (Jev, chat judge, local judge, scripted).
        requests: The wave's requests.
        timeout_s: Seconds each attempt may take; ``None`` waits as long as the backend does.
        retries: 0 (default) or 1: a failed call is sent once more (``Runnable.with_retry``).
        max_records_per_call: Targets per call (paper: 40).
        max_messages: Last messages sent with each call (paper: 6).
        config: Runnable config passed to the model (callbacks, tracing).

    Returns:
        The wave's judgments, call count, errors and token usage. Never raises for a
        failed call.
    """
    _check_retries(retries)
    calls = plan_wave(
        requests, max_records_per_call=max_records_per_call, max_messages=max_messages
    )
    attempts = [_Attempt(model, c, timeout_s) for c in calls]
    outcomes = await asyncio.gather(*(_aoutcome(a, retries, config) for a in attempts))
    return _collect(model, calls, outcomes, sum(a.count for a in attempts))


# --- sync face -------------------------------------------------------------------------


def judge_wave(
    model: BaseDecisionModel,
    requests: Sequence[JudgeRequest],
    *,
    timeout_s: float | None = None,
    retries: int = 0,
    max_records_per_call: int = MAX_RECORDS_PER_CALL,
    max_messages: int = MAX_MESSAGES,
    config: RunnableConfig | None = None,
) -> WaveResult:
    """Synchronous :func:`ajudge_wave`: the calls run concurrently in a thread pool.

    Same arguments and result. ``timeout_s`` bounds the whole call, its retry included
    (``timeout_s * (retries + 1)``); a call still running then is reported as timed out and
    its thread is left to finish in the background.
    """
    _check_retries(retries)
    calls = plan_wave(
        requests, max_records_per_call=max_records_per_call, max_messages=max_messages
    )
    attempts = [_Attempt(model, c, timeout_s) for c in calls]
    if not calls:
        return _collect(model, calls, [], 0)
    # The process's pool for timed model calls (workers.py says why not one per wave): a
    # hung backend call keeps its worker, never the wave past its timeout.
    pool = shared_pool()
    futures = [pool.submit(a.runnable(retries).invoke, _request(a.call), config) for a in attempts]
    limit = None if timeout_s is None else timeout_s * (retries + 1)
    concurrent.futures.wait(futures, timeout=limit)
    outcomes: list[_Outcome] = []
    for attempt, future in zip(attempts, futures, strict=True):
        if not future.done():
            future.cancel()
            outcomes.append(_failure(TimeoutError(), timeout_s))
        else:
            error = future.exception()
            outcomes.append(attempt.outcome(error if error is not None else future.result()))
    return _collect(model, calls, outcomes, sum(a.count for a in attempts))
