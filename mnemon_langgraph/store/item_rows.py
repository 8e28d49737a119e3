"""What both backends' item stores share about a stored item, beside the write algorithm
(:mod:`~mnemon_langgraph.store.item_commit`): the text an item is embedded under, the key of
its timeline or value history as stored, and the status and failure rows they report.

The item stores themselves live in their backends' folders
(:mod:`mnemon_langgraph.store.embedded.items`, :mod:`mnemon_langgraph.store.postgres.items`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.types import Namespace

__all__ = ["FailureRow", "IndexStatus", "group_key_text", "item_embedding_text"]


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """Where consolidation of one namespace stands, with running totals."""

    namespace: Namespace
    watermark: int = 0
    batches: int = 0
    items_added: int = 0
    items_updated: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class FailureRow:
    """One recorded batch failure."""

    namespace: Namespace
    batch_start_seq: int
    batch_end_seq: int
    error: str
    attempts: int
    at: str
    skipped: bool
    resolved: bool


def item_embedding_text(item: IndexItem) -> str:
    """The text an item is embedded under: its group label and its own text."""
    if item.kind == "event":
        return f"{item.topic or ''}: {item.text}".strip(": ")
    if item.kind == "value":
        return f"{item.subject or ''} {item.attribute or ''}: {item.value or ''}. {item.text}"
    return item.text


def group_key_text(item: IndexItem) -> str:
    """``item.group_key`` as stored in the ``group_key`` column (timeline / value history)."""
    return "\x1f".join(item.group_key)
