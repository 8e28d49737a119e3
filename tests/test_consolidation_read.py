"""An index item written by consolidation reaches the View of a question whose own
searches never find the item's record (the point of consolidation, paper §4.1/§6.7)."""

from __future__ import annotations

import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import (
    ScriptedFoldModel,
    batch_records,
    fake_embeddings,
    tool_answer,
)

from mnemon_langgraph.consolidation import EmbeddedItemStore, create_consolidation_graph
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.types import Message

NS = ("users", "ada")
HIKE = "Ada: I finally went hiking in the redwoods this weekend!"
SUMMIT = "Bo: We climbed Mount Tamalpais on Saturday; the summit trail was steep, worth it."
FILLER = [
    "Ada: I baked sourdough bread this morning.",
    "Bo: The weather has been lovely lately.",
    "Ada: My cat knocked a plant off the shelf.",
    "Bo: I started reading a novel about sailors.",
]


def _fold(messages: list[BaseMessage], index: int) -> AIMessage:
    """A stand-in LLM: files outdoor outings under one timeline, from the batch text."""
    events = []
    for rec in batch_records(messages):
        if "hiking" in rec["text"]:
            events.append(
                {
                    "topic": "Ada's hikes",
                    "text": "Ada hiked in the redwoods.",
                    "record_ids": [rec["id"]],
                }
            )
        if "summit" in rec["text"]:
            events.append(
                {
                    "topic": "Ada's hikes",
                    "text": "Ada and Bo climbed the Mount Tamalpais summit trail.",
                    "record_ids": [rec["id"]],
                }
            )
    return tool_answer({"events": events})


def _judge_answer(qid: str, question: str, state: dict[str, Any]) -> float:
    local, _, _suffix = qid.partition(".")
    rows = state["records"] if local.startswith("r") else state.get("items", [])
    row = next(r for r in rows if r["id"] == local)
    if "stale" in qid:
        return 0.1
    return 0.9 if re.search(r"hik", row["text"], re.IGNORECASE) else 0.1


def test_index_item_reaches_the_view_when_search_misses_its_record(tmp_path: Path) -> None:
    texts = [HIKE, *FILLER, SUMMIT]
    messages = [
        Message(
            text=t.split(": ", 1)[1],
            speaker=t.split(": ", 1)[0],
            id=f"D{i}:1",
            timestamp=datetime(2023, 6, i + 1, 10, 0),
            session=i + 1,
        )
        for i, t in enumerate(texts)
    ]
    journal = Journal(tmp_path / "memory.db")
    try:
        journal.append(NS, chunk_messages(messages, namespace=NS, origin="t", pack=False))
        records = list(journal.records(NS))
        summit = next(r for r in records if "summit" in r.text)
        items = EmbeddedItemStore(journal, fake_embeddings())
        report = create_consolidation_graph(
            model=ScriptedFoldModel(script=_fold), store=items
        ).invoke({"namespace": NS})["report"]
        assert report.items_added == 2 and items.topics(NS) == ["Ada's hikes"]

        source = InMemorySearchSource(records)
        question = "How often did Ada go hiking?"
        # the question's own search never returns the summit record
        assert summit.id not in {h.record.id for h in source.search(question, namespace=NS)}

        judge = ScriptedDecisionModel(answers=_judge_answer)
        read = create_read_graph(source=source, judge=judge, items=items)
        view = read.invoke(
            {"messages": [HumanMessage(question)]}, context=ReadContext(namespace=NS)
        )["view"]
        searched = {q for q, _k, _o in source.calls}
        assert searched and all(
            summit.id not in {h.record.id for h in source.search(q, namespace=NS, k=50)}
            for q in searched
        )
        assert summit.id not in {r.id for r in view.records}
        shown = [i for i in view.items if "Mount Tamalpais" in i["text"]]
        assert shown and summit.id in shown[0]["record_ids"]
        assert "Mount Tamalpais summit trail" in view.text
    finally:
        journal.close()
