"""Scripted chat models and fixtures for the consolidation tests (no network, no LLM).

``ScriptedFoldModel`` is a real :class:`BaseChatModel` that supports ``bind_tools`` (so
``with_structured_output`` works as with a tool-calling provider) and answers each call from
a script function: an :class:`AIMessage` with a ``FoldOutput`` tool call, usage metadata,
or an exception. ``derive_fold`` builds the answer from the batch's own record text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.types import Message

NS_CRASH = ("crash", "test")
"""Namespace the crash test and its child process use."""

Script = Callable[[list[BaseMessage], int], "AIMessage | BaseException"]


class ScriptedFoldModel(BaseChatModel):
    """A chat model whose every answer comes from ``script(messages, call_index)``."""

    script: Any
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fold"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages of every call so far."""
        return self._calls

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedFoldModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        index = len(self._calls)
        self._calls.append(list(messages))
        answer = self.script(messages, index)
        if isinstance(answer, BaseException):
            raise answer
        return ChatResult(generations=[ChatGeneration(message=answer)])


def tool_answer(args: dict[str, Any], *, tokens: tuple[int, int] = (100, 20)) -> AIMessage:
    """An AIMessage calling the ``FoldOutput`` tool with ``args``, with usage metadata."""
    return AIMessage(
        content="",
        tool_calls=[{"name": "FoldOutput", "args": args, "id": "call_1", "type": "tool_call"}],
        usage_metadata={
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": tokens[0] + tokens[1],
        },
    )


def garbage_answer() -> AIMessage:
    """A tool call whose arguments do not fit ``FoldOutput``."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": "FoldOutput", "args": {"events": "not a list"}, "id": "c", "type": "tool_call"}
        ],
        usage_metadata={"input_tokens": 50, "output_tokens": 5, "total_tokens": 55},
    )


def batch_records(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The records JSON a fold prompt carries (``id``, ``session``, ``date``, ``text``)."""
    human = str(messages[-1].content)
    body = human.split("<records>\n", 1)[1].split("\n</records>", 1)[0]
    return list(json.loads(body))


def shown_index(messages: list[BaseMessage]) -> dict[str, Any]:
    """The existing index JSON a fold prompt carries."""
    human = str(messages[-1].content)
    body = human.split("<index>\n", 1)[1].split("\n</index>", 1)[0]
    return dict(json.loads(body))


_VALUE = re.compile(
    r"\b(?:I|I'm|I am)\s+(?:now\s+)?(work(?:ing)? (?:at|as|on)|live in|moved to|started|lost)"
    r"\s+([^.!?,;]{3,60})",
    re.IGNORECASE,
)


def derive_fold(messages: list[BaseMessage]) -> dict[str, Any]:
    """Fold arguments derived from the batch text alone.

    One event per record (topic = the first speaker, text = the start of the first line),
    a value for each "I work at / live in / moved to / started / lost …" phrase, and an
    instruction for lines that say "always" or "never".
    """
    events: list[dict[str, Any]] = []
    values: list[dict[str, Any]] = []
    instructions: list[dict[str, Any]] = []
    for rec in batch_records(messages):
        lines = [ln for ln in rec["text"].split("\n") if ": " in ln]
        if not lines:
            continue
        speaker, said = lines[0].split(": ", 1)
        date = (rec["date"] or "")[:10] or None
        events.append(
            {
                "topic": f"{speaker}'s life",
                "date": date,
                "text": f"{speaker} said: {said[:80]}",
                "record_ids": [rec["id"]],
            }
        )
        for line in lines:
            who, text = line.split(": ", 1)
            for verb, obj in _VALUE.findall(text):
                values.append(
                    {
                        "subject": who,
                        "attribute": verb.lower(),
                        "value": obj.strip(),
                        "date": date,
                        "record_ids": [rec["id"]],
                    }
                )
            if re.search(r"\b(always|never)\b", text, re.IGNORECASE):
                instructions.append({"text": f"{who}: {text[:100]}", "record_ids": [rec["id"]]})
    return {"events": events, "values": values, "instructions": instructions}


def deriving_model(
    *, fail_calls: Sequence[int] = (), garbage_calls: Sequence[int] = ()
) -> ScriptedFoldModel:
    """A model that folds from the batch text; raises or returns garbage on given calls."""

    def script(messages: list[BaseMessage], index: int) -> AIMessage | BaseException:
        if index in fail_calls:
            return RuntimeError(f"provider exploded on call {index}")
        if index in garbage_calls:
            return garbage_answer()
        return tool_answer(derive_fold(messages))

    return ScriptedFoldModel(script=script)


def fake_embeddings() -> DeterministicFakeEmbedding:
    """A small deterministic embedder (the real one is not the point of these tests)."""
    return DeterministicFakeEmbedding(size=32)


def make_messages(
    n: int, *, sessions: int = 3, speaker_a: str = "Ada", speaker_b: str = "Bo"
) -> list[Message]:
    """``n`` short messages spread over ``sessions`` sessions (2024-01-0N)."""
    from datetime import datetime

    out: list[Message] = []
    for i in range(n):
        session = 1 + i * sessions // n
        who = speaker_a if i % 2 == 0 else speaker_b
        out.append(
            Message(
                text=f"message {i} about topic{i % 7}: I live in City{i // 10} and like item{i}.",
                speaker=who,
                role="user",
                id=f"m{i}",
                timestamp=datetime(2024, 1, session, 10, 0),
                session=session,
            )
        )
    return out


def make_journal(path: Path, namespace: tuple[str, ...], messages: Sequence[Message]) -> Journal:
    """A journal at ``path`` holding ``messages`` chunked into records (no vectors)."""
    journal = Journal(path)
    journal.append(namespace, chunk_messages(messages, namespace=namespace, origin="test"))
    return journal
