"""Helpers of the read-path tests of a user's chat with an assistant: a conversation as
in-memory records (one record per turn, in order, with its role and message id: the
journal's positions and seqs), a search source that is not a journal, turns written one at
a time among another user's, and the View a real read graph composes for one message."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.search._text import terms
from mnemon_langgraph.types import Message, Namespace, Record, Role, SearchHit


def chat_records(namespace: Namespace, turns: Sequence[tuple[str, Role, str, str]]) -> list[Record]:
    """Records of ``turns`` = ``(record id, role, text, message id)``, at positions 0, 1, …
    of session 1 and written in that order (seq 1, 2, …); the text is ``role: text``."""
    return [
        make_record(
            rid,
            f"{role}: {text}",
            namespace=namespace,
            position=i,
            message_ids=[mid],
            roles=(role,),
            seq=i + 1,
        )
        for i, (rid, role, text, mid) in enumerate(turns)
    ]


class WordVectors(InMemorySearchSource):
    """The word-overlap source with a query embedder and stored vectors (a
    ``VectorSource``, as a store is): a bag of the package's terms hashed into 64 slots."""

    def query_vector(self, query: str) -> np.ndarray:
        vec = np.zeros(64)
        for word in terms(query):
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        return (vec / (np.linalg.norm(vec) or 1.0)).reshape(1, -1)

    def stored_vectors(self, namespace: Any, ids: Any) -> dict[str, np.ndarray]:
        return {r.id: self.query_vector(r.text)[0] for r in self._records if r.id in set(ids)}


class PlainSource:
    """A search source that is not a journal (no ``records``)."""

    def __init__(self, inner: InMemorySearchSource) -> None:
        self.inner = inner

    def search(self, query: str, *, namespace: Namespace, **kw: Any) -> list[SearchHit]:
        return self.inner.search(query, namespace=namespace, **kw)

    async def asearch(self, query: str, *, namespace: Namespace, **kw: Any) -> list[SearchHit]:
        return self.inner.search(query, namespace=namespace, **kw)


def view_of(
    source: Any,
    judge: Callable[[str, Any, Any], float],
    settings: ReadSettings,
    asked: str,
    namespace: Namespace,
    run_async: bool = False,
) -> Any:
    """The View a read graph over ``source`` composes for the message ``asked``, with a
    scripted System 1 (``judge``) and the rule planner, under ``invoke`` or ``ainvoke``."""
    graph = create_read_graph(
        source=source,
        judge=ScriptedDecisionModel(answers=judge),
        planner=None,
        settings=settings,
    )
    state = {"messages": [HumanMessage(asked)]}
    ctx = ReadContext(namespace=namespace)
    run = graph.ainvoke(state, context=ctx) if run_async else None
    out = asyncio.run(run) if run is not None else graph.invoke(state, context=ctx)
    return out["view"]


def ingest_turn_by_turn(
    store: Any, namespace: Namespace, turns: Sequence[Message], others: bool
) -> None:
    """``turns`` written one at a time; with ``others``, 20 records of another user written
    before each (one journal serves many users, and its ``seq`` runs across all of them)."""
    for i, turn in enumerate(turns):
        if others:
            note = "Another user's note {}: the beans want water and the hedge wants a trim. "
            chatter = [
                Message(note.format(j) * 6, "user", "user", f"o{i}.{j}", turn.timestamp, 1)
                for j in range(20)
            ]
            store.ingest(("users", "other"), chatter, origin="chat")
        store.ingest(namespace, [turn], origin="chat")
