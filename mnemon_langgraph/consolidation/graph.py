"""The consolidation job as a LangGraph graph (paper §4.1 and §5, "Consolidation").

::

    START ─► load ─┬─► fold ─► write ─┬─► load …
                   │                  └─► finish ─► END   (a batch failed, on_failure="stop")
                   └─► finish ─► END   (caught up, or max_batches)

``load`` reads the next batch from the namespace's watermark (re-read from the database
every time, never trusted from the graph's state); ``fold`` asks the chat model, with one
retry by default; ``write`` stores the batch's items *and* moves the watermark in one
transaction, or records the failure. A crash, a timeout or output that does not parse
therefore loses nothing, and a rerun starts at the first batch not written.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import operator
import warnings
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, NamedTuple, TypedDict

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from mnemon_langgraph.backends import chat_model_from_spec
from mnemon_langgraph.consolidation.batching import Batch, cut_batch
from mnemon_langgraph.consolidation.fold import (
    FoldContext,
    FoldOutput,
    FoldResult,
    apply_fold,
    build_fold_messages,
    select_context,
)
from mnemon_langgraph.consolidation.settings import ConsolidationSettings
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.items import ItemStore
from mnemon_langgraph.read._workers import shared_pool
from mnemon_langgraph.read.namespaces import (
    auth_identity,
    check_claimed_namespace,
    resolve_namespace,
    template_fields,
)
from mnemon_langgraph.read.state import read_context_schema
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Namespace, Record, normalize_namespace

__all__ = [
    "BatchReport",
    "ConsolidationGraphState",
    "ConsolidationReport",
    "create_consolidation_graph",
    "item_store_for",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What one batch did and cost.

    Attributes:
        start_seq: ``seq`` of its first record.
        end_seq: ``seq`` of its last record.
        records: Number of records in it.
        chars: Characters of (trimmed) text in it.
        items_added: Items written.
        items_updated: Existing items whose text it changed.
        dropped: Items or updates dropped for citing no record of the batch.
        model_calls: Calls to the chat model (retries included).
        input_tokens: Input tokens reported by the model (0 when it reports none).
        output_tokens: Output tokens reported by the model.
        error: Why it failed, or ``None``.
        skipped: It failed and the watermark was moved past it (``on_failure="skip"``).
    """

    start_seq: int
    end_seq: int
    records: int
    chars: int
    items_added: int = 0
    items_updated: int = 0
    dropped: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    skipped: bool = False

    @property
    def failed(self) -> bool:
        """Whether the batch failed after its retries."""
        return self.error is not None


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """Summary of one run of the consolidation graph.

    Attributes:
        namespace: The namespace consolidated.
        batches: Per-batch reports, in order.
        stop_reason: ``"caught_up"``, ``"max_batches"`` or ``"failed"`` (a batch still
            failed after its retries and ``on_failure="stop"``).
        watermark: The watermark after the run.
    """

    namespace: Namespace
    batches: tuple[BatchReport, ...] = field(default_factory=tuple)
    stop_reason: str = "caught_up"
    watermark: int = 0

    def __post_init__(self) -> None:
        # a checkpoint's msgpack gives sequences back as lists: keep the declared tuples
        for name in ("namespace", "batches"):
            if not isinstance(getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def items_added(self) -> int:
        """Items written in this run."""
        return sum(b.items_added for b in self.batches)

    @property
    def items_updated(self) -> int:
        """Item updates written in this run."""
        return sum(b.items_updated for b in self.batches)

    @property
    def failures(self) -> list[BatchReport]:
        """Batches that failed after their retries."""
        return [b for b in self.batches if b.failed]

    @property
    def model_calls(self) -> int:
        """Chat model calls in this run (retries included)."""
        return sum(b.model_calls for b in self.batches)

    @property
    def input_tokens(self) -> int:
        """Input tokens in this run."""
        return sum(b.input_tokens for b in self.batches)

    @property
    def output_tokens(self) -> int:
        """Output tokens in this run."""
        return sum(b.output_tokens for b in self.batches)

    def summary(self) -> str:
        """A few lines for humans (printed by ``mnemon consolidate``)."""
        lines = [
            f"namespace {list(self.namespace)}: {len(self.batches)} batches, "
            f"{self.items_added} items added, {self.items_updated} updated, "
            f"{len(self.failures)} failed ({self.stop_reason}; watermark {self.watermark})",
            f"model calls {self.model_calls}, input tokens {self.input_tokens}, "
            f"output tokens {self.output_tokens}",
        ]
        for b in self.failures:
            what = "skipped" if b.skipped else "stopped here; rerun to retry"
            lines.append(f"FAILED batch seq {b.start_seq}..{b.end_seq} ({what}): {b.error}")
        return "\n".join(lines)


class ConsolidationGraphState(TypedDict, total=False):
    """State of the consolidation graph. Input: ``{"namespace": ...}``."""

    namespace: Namespace | str | list[str]
    batch: Batch | None
    watermark: int
    fold: FoldResult | None
    error: str | None
    usage: dict[str, int]
    batches: Annotated[list[BatchReport], operator.add]
    stop_reason: str
    report: ConsolidationReport


def _usage(raw: Any) -> tuple[int, int]:
    meta = getattr(raw, "usage_metadata", None) if isinstance(raw, AIMessage) else None
    if not meta:
        return 0, 0
    return int(meta.get("input_tokens", 0) or 0), int(meta.get("output_tokens", 0) or 0)


def _records_after(
    items: ItemStore, namespace: Namespace, after: int
) -> Generator[Record, None, None]:
    # A generator of our own, so ``load`` can close the store's reader when it stops early.
    yield from items.records_after(namespace, after)


class _Unparsable(Exception):
    """A fold answer with no structured output: a failed attempt, like a model error."""


@dataclass
class _FoldAttempts:
    """One batch's fold attempts: makes each, and counts calls and tokens across retries.

    ``with_retry`` only sees an attempt's result or exception; the usage (every call costs,
    failed ones too) and the last error's text for the failure row are kept here.
    """

    structured: Runnable[Any, Any]
    timeout: float | None
    batch: Batch
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None

    def usage(self) -> dict[str, int]:
        """The usage entry of the graph state."""
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    def attempt(self, messages: list[Any], config: RunnableConfig) -> FoldOutput:
        """One call to the structured model.

        Raises:
            _Unparsable: The answer has no parsed ``FoldOutput``.
            Exception: Whatever the model raised, or ``TimeoutError``.
        """
        self.calls += 1
        try:
            out = self._invoke(messages, config)
        except Exception as exc:  # a model error of any kind is a failed attempt
            self._failed(f"{type(exc).__name__}: {exc}")
            raise
        return self._accept(out)

    async def aattempt(self, messages: list[Any], config: RunnableConfig) -> FoldOutput:
        """:meth:`attempt` for ``ainvoke``: the model's own async call, timed by asyncio."""
        self.calls += 1
        try:
            out = await asyncio.wait_for(self.structured.ainvoke(messages, config), self.timeout)
        except Exception as exc:  # a model error of any kind is a failed attempt
            if isinstance(exc, TimeoutError):
                exc = TimeoutError(f"fold call took longer than {self.timeout:g}s")
            self._failed(f"{type(exc).__name__}: {exc}")
            raise exc from None
        return self._accept(out)

    def _accept(self, out: Any) -> FoldOutput:
        """Count the answer's tokens; its parsed fold, or :class:`_Unparsable`."""
        raw = out.get("raw") if isinstance(out, dict) else None
        parsed = out.get("parsed") if isinstance(out, dict) else out
        i, o = _usage(raw)
        self.input_tokens, self.output_tokens = self.input_tokens + i, self.output_tokens + o
        if isinstance(parsed, FoldOutput):
            return parsed
        perr = out.get("parsing_error") if isinstance(out, dict) else None
        self._failed(
            f"output did not parse: {type(perr).__name__}: {perr}"
            if perr is not None
            else "output did not parse: the model returned no structured answer"
        )
        raise _Unparsable(self.error)

    def _invoke(self, messages: list[Any], config: RunnableConfig) -> Any:
        if self.timeout is None:
            return self.structured.invoke(messages, config)
        # The shared context-copying pool: no pool per call, and the worker's call stays
        # a child run of this attempt for tracing.
        future = shared_pool().submit(self.structured.invoke, messages, config)
        try:
            return future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise TimeoutError(f"fold call took longer than {self.timeout:g}s") from exc

    def _failed(self, error: str) -> None:
        self.error = error
        log.warning(
            "fold of seq %s..%s failed (attempt %d): %s",
            self.batch.start_seq,
            self.batch.end_seq,
            self.calls,
            error,
        )


class _FoldInput(NamedTuple):
    """What one fold needs, built once for the sync and the async node."""

    namespace: Namespace
    batch: Batch
    context: FoldContext
    messages: list[BaseMessage]
    rmap: dict[str, str]
    attempts: _FoldAttempts


class _Nodes:
    """The graph's nodes, bound to one item store, model and settings."""

    def __init__(
        self,
        items: ItemStore,
        structured: Runnable[Any, Any],
        settings: ConsolidationSettings,
        namespace: str | Sequence[str] | None = None,
    ) -> None:
        self.items = items
        self.structured = structured
        self.settings = settings
        self.namespace = namespace

    def _namespace(self, state: ConsolidationGraphState, config: RunnableConfig) -> Namespace:
        """The run's namespace: the input's, else the one rule (context ``user_id`` …).

        On a server with authentication the authenticated identity decides, and an input
        ``namespace`` naming another user's memory is refused like a context naming one.
        """
        claimed = state.get("namespace")
        auth = auth_identity(config)
        if auth is not None:
            ns = resolve_namespace(None, config, self.namespace)
            check_claimed_namespace(auth, ns, "the run's input", claimed)
            return ns
        if claimed:
            return normalize_namespace(claimed)
        return resolve_namespace(None, config, self.namespace)

    def load(self, state: ConsolidationGraphState, config: RunnableConfig) -> dict[str, Any]:
        ns = self._namespace(state, config)
        done = len(state.get("batches") or [])
        watermark = self.items.watermark(ns)
        update: dict[str, Any] = {"namespace": ns, "watermark": watermark, "fold": None}
        if self.settings.max_batches is not None and done >= self.settings.max_batches:
            return {**update, "batch": None, "stop_reason": "max_batches"}
        iterator = _records_after(self.items, ns, watermark)
        try:
            batch = cut_batch(
                iterator,
                batch_chars=self.settings.batch_chars,
                assistant_chars=self.settings.assistant_chars,
            )
        finally:
            iterator.close()
        if batch is None:
            return {**update, "batch": None, "stop_reason": "caught_up"}
        return {**update, "batch": batch, "error": None}

    def _retrying(self, attempts: _FoldAttempts) -> Runnable[Any, FoldOutput]:
        # LangChain's retry, not a loop of our own: any failure (a model error, a timeout,
        # an answer that does not parse) is one failed attempt, and each attempt is a
        # child run of the fold node, so callbacks in ``config`` see every model call.
        attempt = RunnableLambda(attempts.attempt, afunc=attempts.aattempt, name="fold_attempt")
        return attempt.with_retry(
            stop_after_attempt=1 + self.settings.retries, wait_exponential_jitter=False
        ).with_config(run_name="fold_with_retry")

    def _fold_input(self, state: ConsolidationGraphState) -> _FoldInput:
        ns = normalize_namespace(state["namespace"])
        batch = state["batch"]
        assert batch is not None
        context = select_context(self.items.context_items(ns), batch, self.settings)
        messages, rmap = build_fold_messages(batch, context)
        attempts = _FoldAttempts(self.structured, self.settings.fold_timeout_s, batch)
        return _FoldInput(ns, batch, context, messages, rmap, attempts)

    @staticmethod
    def _fold_update(job: _FoldInput, parsed: FoldOutput | None) -> dict[str, Any]:
        usage = job.attempts.usage()
        if parsed is None:  # the failure is already logged and recorded by _FoldAttempts
            return {"fold": None, "error": job.attempts.error or "fold failed", "usage": usage}
        result = apply_fold(
            parsed, namespace=job.namespace, batch=job.batch, rmap=job.rmap, context=job.context
        )
        return {"fold": result, "error": None, "usage": usage}

    def fold(self, state: ConsolidationGraphState, config: RunnableConfig) -> dict[str, Any]:
        job = self._fold_input(state)
        try:
            parsed: FoldOutput | None = self._retrying(job.attempts).invoke(job.messages, config)
        except Exception:  # every attempt failed
            parsed = None
        return self._fold_update(job, parsed)

    async def afold(self, state: ConsolidationGraphState, config: RunnableConfig) -> dict[str, Any]:
        """:meth:`fold` under ``ainvoke``: async model calls, no worker thread."""
        job = self._fold_input(state)
        try:
            parsed: FoldOutput | None = await self._retrying(job.attempts).ainvoke(
                job.messages, config
            )
        except Exception:  # every attempt failed
            parsed = None
        return self._fold_update(job, parsed)

    def write(self, state: ConsolidationGraphState) -> dict[str, Any]:
        ns = normalize_namespace(state["namespace"])
        batch = state["batch"]
        assert batch is not None
        usage = state.get("usage") or {}
        calls = int(usage.get("calls", 0))
        tin = int(usage.get("input_tokens", 0))
        tout = int(usage.get("output_tokens", 0))
        base: dict[str, Any] = {
            "start_seq": batch.start_seq,
            "end_seq": batch.end_seq,
            "records": len(batch.records),
            "chars": batch.chars,
            "model_calls": calls,
            "input_tokens": tin,
            "output_tokens": tout,
        }
        result = state.get("fold")
        if result is None:
            error = state.get("error") or "fold failed"
            skip = self.settings.on_failure == "skip"
            self.items.record_failure(
                ns,
                batch_start_seq=batch.start_seq,
                batch_end_seq=batch.end_seq,
                error=error,
                attempts=calls,
                skip=skip,
                expected_watermark=state["watermark"],
                model_calls=calls,
                input_tokens=tin,
                output_tokens=tout,
            )
            report = BatchReport(**base, error=error, skipped=skip)
            out: dict[str, Any] = {"batches": [report]}
            if not skip:
                out["stop_reason"] = "failed"
            return out
        new_vectors = self.items.embed_items(result.new_items)
        updated_items = {
            it.id: it for it in self.items.get_items(ns, [u.item_id for u in result.updates])
        }
        updates = [u for u in result.updates if u.item_id in updated_items]
        update_vectors = self.items.embed_items(
            [replace(updated_items[u.item_id], text=u.text) for u in updates]
        )
        added, updated = self.items.commit_batch(
            ns,
            expected_watermark=state["watermark"],
            new_watermark=batch.end_seq,
            new_items=result.new_items,
            new_vectors=new_vectors,
            updates=updates,
            update_vectors=update_vectors,
            model_calls=calls,
            input_tokens=tin,
            output_tokens=tout,
        )
        dropped = result.dropped + (len(result.new_items) - added) + (len(updates) - updated)
        dropped += len(result.updates) - len(updates)
        report = BatchReport(**base, items_added=added, items_updated=updated, dropped=dropped)
        return {"batches": [report]}

    def finish(self, state: ConsolidationGraphState) -> dict[str, Any]:
        ns = normalize_namespace(state["namespace"])
        report = ConsolidationReport(
            namespace=ns,
            batches=tuple(state.get("batches") or []),
            stop_reason=state.get("stop_reason") or "caught_up",
            watermark=self.items.watermark(ns),
        )
        return {"report": report, "batch": None, "fold": None}


def _after_load(state: ConsolidationGraphState) -> Literal["fold", "finish"]:
    return "fold" if state.get("batch") is not None else "finish"


def _after_write(state: ConsolidationGraphState) -> Literal["load", "finish"]:
    return "finish" if state.get("stop_reason") == "failed" else "load"


_REMOVED = {
    "journal_path": "MnemonStore(journal_path)",
    "journal": "EmbeddedItemStore(journal)",
}


def item_store_for(
    store: MnemonStore | ItemStore, embeddings: Embeddings | None = None
) -> ItemStore:
    """The item store of ``store``: its backend's (``store.item_store()``), or ``store``
    itself when it already is an :class:`~mnemon_langgraph.items.ItemStore`.

    Args:
        store: A :class:`~mnemon_langgraph.store.MnemonStore` of either backend, or an
            item store (``EmbeddedItemStore``, ``PostgresItemStore`` or your own).
        embeddings: Embeds the items (default the store's embedder); only with a
            ``MnemonStore`` (an item store already has its embedder).

    Raises:
        ConfigurationError: ``store`` is neither, or ``embeddings`` came with an item store.
    """
    if isinstance(store, MnemonStore):
        return store.item_store(embeddings)
    if isinstance(store, ItemStore):
        if embeddings is not None:
            raise ConfigurationError(
                "embeddings= goes with a MnemonStore; an item store keeps its own embedder"
            )
        return store
    raise ConfigurationError(
        f"store= must be a MnemonStore or an ItemStore (e.g. EmbeddedItemStore), got "
        f"{type(store).__name__}"
    )


def _resolve(
    store: MnemonStore | ItemStore | None,
    items: ItemStore | None,
    embeddings: Embeddings | None,
    removed: dict[str, Any],
) -> ItemStore:
    if removed:
        name = sorted(removed)[0]
        if name not in _REMOVED:
            raise TypeError(f"create_consolidation_graph() got an unexpected keyword {name!r}")
        raise ConfigurationError(
            f"create_consolidation_graph no longer takes {name}=: pass "
            f"store={_REMOVED[name]} (create_consolidation_graph(store=..., model=...))"
        )
    if items is not None:
        if store is not None:
            raise ConfigurationError("give store= or the deprecated items=, not both")
        warnings.warn(
            "create_consolidation_graph(items=...) is deprecated: pass the item store as store=",
            DeprecationWarning,
            stacklevel=3,
        )
        store = items
    if store is None:
        raise ConfigurationError(
            "create_consolidation_graph needs store= (a MnemonStore or an ItemStore)"
        )
    return item_store_for(store, embeddings)


def create_consolidation_graph(
    *,
    store: MnemonStore | ItemStore | None = None,
    model: BaseChatModel | str,
    embeddings: Embeddings | None = None,
    settings: ConsolidationSettings | None = None,
    items: ItemStore | None = None,
    namespace: str | Sequence[str] | None = None,
    checkpointer: Checkpointer = None,
    **removed: Any,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the consolidation job as a compiled LangGraph graph.

    Invoke it with ``{"namespace": ("users", "ada")}``, or with ``{}`` and the user in the
    run's context or config as the read graph takes it (``context={"user_id": "ada"}``:
    the namespace ``("users", "ada")``); the final state's ``"report"`` is a
    :class:`ConsolidationReport`. On a LangGraph server with authentication the authenticated
    identity decides the namespace, and an input or context naming another user is refused
    (:mod:`~mnemon_langgraph.read.namespaces`). Shaped like ``create_read_graph(source=...)``:
    the store is the one thing it reads and writes.

    Args:
        store: A :class:`~mnemon_langgraph.store.MnemonStore` of either backend (its item
            store, ``store.item_store(embeddings)``, keeps the index beside the records), or
            an :class:`~mnemon_langgraph.items.ItemStore` to use as is.
        model: Any LangChain chat model with structured output (tool calling), or a
            ``"provider:model"`` string for LangChain's ``init_chat_model``
            (``"openai:gpt-4.1-mini"``), as the read graph's planner takes it.
        embeddings: Embeds the items as they are written, with a ``MnemonStore`` (default:
            the store's embedder).
        settings: Budgets and the failure policy (paper defaults).
        items: Deprecated alias of ``store=`` for an item store.
        namespace: A namespace template (``("orgs", "{org_id}", "users", "{user_id}")``) or
            the namespace of runs that name none (never used on an authenticated run).
        checkpointer: Optional LangGraph checkpointer: each run's state (its batches and
            report) kept per thread. Progress itself does not depend on it: the item
            store's watermark lets a stopped job go on from the last written batch.
        **removed: ``journal_path=`` and ``journal=`` are gone; they raise
            :class:`ConfigurationError` naming the call to make instead.

    Returns:
        The compiled graph, with ``recursion_limit`` set from the settings.

    Raises:
        ConfigurationError: No store (or a wrong kind of store) given, the model has no
            structured output, or a model string is not ``provider:model``.
        MissingDependencyError: A model string names a provider whose package is missing.
    """
    settings = settings or ConsolidationSettings()
    item_store = _resolve(store, items, embeddings, removed)
    if isinstance(model, str):
        model = chat_model_from_spec(model)
    try:
        structured = model.with_structured_output(FoldOutput, include_raw=True)
    except NotImplementedError as exc:
        raise ConfigurationError(
            f"{type(model).__name__} has no structured output (tool calling), which "
            "consolidation needs"
        ) from exc
    nodes = _Nodes(item_store, structured, settings, namespace)
    context = read_context_schema(template_fields(namespace))
    graph = StateGraph(ConsolidationGraphState, context_schema=context)
    graph.add_node("load", nodes.load)
    # One node, two faces: LangGraph runs ``fold`` under invoke and ``afold`` under ainvoke.
    graph.add_node("fold", RunnableLambda(nodes.fold, afunc=nodes.afold, name="fold"))
    graph.add_node("write", nodes.write)
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "load")
    graph.add_conditional_edges("load", _after_load, ["fold", "finish"])
    graph.add_edge("fold", "write")
    graph.add_conditional_edges("write", _after_write, ["load", "finish"])
    graph.add_edge("finish", END)
    compiled = graph.compile(checkpointer=checkpointer, name="mnemon_consolidation")
    return compiled.with_config(recursion_limit=settings.recursion_limit)
