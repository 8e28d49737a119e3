"""A memory class with the classic ``BaseMemory`` shape: :class:`MnemonMemory`.

``BaseMemory`` now lives in ``langchain-classic`` (``pip install 'mnemon-langgraph[classic]'``).
When that package is installed :class:`MnemonMemory` subclasses it, so chains that take a
``memory=`` keep working; without it the class keeps exactly the same shape (the same
pydantic fields and methods) on a small stand-in base, so code written against it runs either
way. ``load_memory_variables`` runs the read graph for the input and returns the View;
``save_context`` writes the exchange to the journal (no model call); ``clear`` erases the
namespace through the store's audited ``erase_namespace``.
"""

from __future__ import annotations

import asyncio
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.integrations._common import (
    arun_read_graph,
    build_read_graph,
    ingest_messages,
    render_view_message,
    run_read_graph,
    stamp_messages,
)
from mnemon_langgraph.integrations._validation import package_error
from mnemon_langgraph.read.namespaces import run_actor
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import NOT_GIVEN, Namespace, normalize_namespace, origin_label

__all__ = ["CLASSIC_AVAILABLE", "FallbackBaseMemory", "MnemonMemory"]


class FallbackBaseMemory(BaseModel, ABC):
    """Stand-in for ``langchain_classic.base_memory.BaseMemory`` when it is not installed.

    Same abstract methods and async forms (the async ones run the sync ones in a thread).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @property
    @abstractmethod
    def memory_variables(self) -> list[str]:
        """The string keys this memory adds to chain inputs."""

    @abstractmethod
    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Return key-value pairs given the text input to the chain."""

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async form of :meth:`load_memory_variables`."""
        return await asyncio.to_thread(self.load_memory_variables, inputs)

    @abstractmethod
    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Save the context of this chain run to memory."""

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async form of :meth:`save_context`."""
        await asyncio.to_thread(self.save_context, inputs, outputs)

    @abstractmethod
    def clear(self) -> None:
        """Clear memory contents."""

    async def aclear(self) -> None:
        """Async form of :meth:`clear`."""
        await asyncio.to_thread(self.clear)


def _base_memory() -> type[Any]:
    """``langchain_classic``'s ``BaseMemory`` when installed, else :class:`FallbackBaseMemory`."""
    try:
        from langchain_classic.base_memory import BaseMemory
    except ImportError:
        return FallbackBaseMemory
    return BaseMemory  # type: ignore[no-any-return]


_BaseMemory: Any = _base_memory()
CLASSIC_AVAILABLE: bool = _BaseMemory is not FallbackBaseMemory
"""Whether :class:`MnemonMemory` subclasses ``langchain_classic``'s ``BaseMemory``."""


def _pick(values: dict[str, Any], key: str | None, exclude: Sequence[str], what: str) -> str:
    if key is not None:
        if key not in values:
            raise InputError(f"MnemonMemory: {what} key {key!r} missing from {sorted(values)}")
        return str(values[key])
    keys = [k for k in values if k not in exclude]
    if len(keys) != 1:
        raise InputError(
            f"MnemonMemory: cannot tell which of {sorted(keys)} is the {what}; set `{what}_key`"
        )
    return str(values[keys[0]])


class MnemonMemory(_BaseMemory):  # type: ignore[misc]
    """Classic memory over the journal: the View in, the exchange out.

    Example::

        memory = MnemonMemory(store=store, namespace=("users", "ada"))
        memory.save_context({"input": "I moved to Lisbon"}, {"output": "Nice!"})
        memory.load_memory_variables({"input": "Where do I live?"})["history"]

    Attributes:
        store: A ``MnemonStore``.
        namespace: Namespace read and written (one memory object per user).
        memory_key: Key of the View in the returned variables.
        input_key: Input key holding the user message (inferred when there is one other key).
        output_key: Output key holding the reply (inferred when there is one key).
        return_messages: Return the View as ``[SystemMessage]`` instead of a string.
        read_graph: Compiled read graph (built over ``store`` when omitted).
        human_prefix: Speaker name written for the user's side (``user``, as every other
            surface writes it: one memory, one convention).
        ai_prefix: Speaker name written for the assistant's side (``assistant``).
        origin: The ingest label written on the records (``source=``, its deprecated old
            name, still sets it for one release, with a warning).
        fields: Run fields for a ``read_graph`` built with sources: each read fills the
            shared sources' namespace templates from them, e.g. ``{"team_id": "blue"}`` for
            ``SharedNamespace(store, ("teams", "{team_id}"))`` beside the user's memory.
            Reads only: ``save_context`` and ``clear`` touch ``namespace`` alone.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MnemonStore
    # Required: a shared default namespace would silently mix users' memories.
    namespace: str | tuple[str, ...]
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    # A compiled read graph (``CompiledStateGraph``); typed Any because pydantic cannot
    # validate a generic compiled graph, and any object with invoke/ainvoke serves.
    read_graph: Any = Field(default=None, exclude=True)
    human_prefix: str = "user"
    ai_prefix: str = "assistant"
    origin: str = "memory"
    fields: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _old_source_name(cls, data: Any) -> Any:
        """``MnemonMemory(source=...)``: the ingest label's deprecated old name."""
        if isinstance(data, dict) and "source" in data:
            data = dict(data)
            data["origin"] = origin_label(
                data.get("origin", NOT_GIVEN), data.pop("source"), where="MnemonMemory"
            )
        return data

    @property
    def source(self) -> str:
        """Deprecated: the ingest label's old name (:attr:`origin`), kept for one release."""
        import warnings

        warnings.warn(
            "MnemonMemory.source is deprecated: read MnemonMemory.origin",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.origin

    def __init__(self, **data: Any) -> None:
        """Raises :class:`~mnemon_langgraph.errors.NamespaceError` for a bad namespace and
        :class:`~mnemon_langgraph.errors.ConfigurationError` for another bad argument."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise package_error(exc, "MnemonMemory") from None

    def model_post_init(self, context: Any, /) -> None:
        """Validate the namespace and build the read graph when none was given."""
        super().model_post_init(context)
        normalize_namespace(self.namespace)
        for name, value in self.fields.items():
            if not name.strip() or not value or name == "namespace":
                raise ConfigurationError(
                    f"MnemonMemory fields: {name!r} must be a field name with a non-empty "
                    f"value, not the namespace, got {value!r}"
                )
        if self.read_graph is None:
            self.read_graph = build_read_graph(self.store)

    @property
    def _ns(self) -> Namespace:
        return normalize_namespace(self.namespace)

    @property
    def memory_variables(self) -> list[str]:
        """The one key this memory adds to chain inputs (``memory_key``)."""
        return [self.memory_key]

    def _query(self, inputs: dict[str, Any]) -> list[BaseMessage]:
        text = _pick(inputs, self.input_key, [self.memory_key], "input")
        return [HumanMessage(content=text)]

    def _variables(self, view: Any) -> dict[str, Any]:
        message = render_view_message(view)
        if self.return_messages:
            return {self.memory_key: [message]}
        return {self.memory_key: message.text}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the read graph for the input; return ``{memory_key: View}``."""
        view = run_read_graph(self.read_graph, self._query(inputs), self._ns, fields=self.fields)
        return self._variables(view)

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async form of :meth:`load_memory_variables`."""
        view = await arun_read_graph(
            self.read_graph, self._query(inputs), self._ns, fields=self.fields
        )
        return self._variables(view)

    def _exchange(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[Any]:
        from mnemon_langgraph.loaders import messages_from_langchain

        question = _pick(inputs, self.input_key, [self.memory_key], "input")
        answer = _pick(outputs, self.output_key, [], "output")
        turn = uuid.uuid4().hex
        pair: list[BaseMessage] = [
            HumanMessage(content=question, name=self.human_prefix, id=f"{turn}-h"),
            AIMessage(content=answer, name=self.ai_prefix, id=f"{turn}-a"),
        ]
        # An empty side (a reply of "" from a chain that only acted) is left out, so the
        # other side is still written; a turn with no text at all is refused.
        pair = [m for m in pair if str(m.content).strip()]
        if not pair:
            raise InputError("save_context: both the input and the output are empty")
        # The one date rule of every surface: dated when written (sessions continue).
        return stamp_messages(self.store, self._ns, messages_from_langchain(pair))

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Write the user input and the reply to the journal (no model call)."""
        ingest_messages(self.store, self._ns, self._exchange(inputs, outputs), origin=self.origin)

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Async form of :meth:`save_context` (the write runs in a worker thread)."""
        messages = self._exchange(inputs, outputs)
        await asyncio.to_thread(ingest_messages, self.store, self._ns, messages, origin=self.origin)

    def clear(self) -> None:
        """Erase the namespace through the store's audited ``erase_namespace``."""
        self.store.erase_namespace(self._ns, actor=run_actor("MnemonMemory.clear"))

    async def aclear(self) -> None:
        """Async form of :meth:`clear`."""
        await asyncio.to_thread(self.clear)
