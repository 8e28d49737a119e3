"""What both backends' item stores share about a stored item, beside the write algorithm
(:mod:`~mnemon_langgraph.store._internal.item_commit`): the text an item is embedded under, the key
of its timeline or value history as stored, how items are embedded, and the status and failure
rows they report.

The item stores themselves live in their backends' folders
(:mod:`mnemon_langgraph.store.embedded._items`, :mod:`mnemon_langgraph.store.postgres._items`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ModelCallError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.types import Namespace

__all__ = [
    "FailureRow",
    "IndexStatus",
    "embed_index_items",
    "group_key_text",
    "item_embedding_text",
]


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


def embed_index_items(
    embeddings: Embeddings, items: Sequence[IndexItem], dimension: int
) -> np.ndarray:
    """Unit-length float32 embeddings of ``items`` (one row each, ``dimension`` wide).

    Raises:
        ModelCallError: The embedder failed, or returned vectors of the wrong shape or with
            non-finite values.
    """
    if not items:
        return np.zeros((0, dimension), dtype=np.float32)
    try:
        vectors = embeddings.embed_documents([item_embedding_text(it) for it in items])
        matrix = np.asarray(vectors, dtype=np.float32)
    except Exception as exc:  # any embedder failure is a model failure to the caller
        raise ModelCallError(f"embedding {len(items)} index items failed: {exc}") from exc
    if matrix.shape != (len(items), dimension) or not np.isfinite(matrix).all():
        raise ModelCallError(
            f"the embedder returned unusable vectors for index items (shape {matrix.shape}, "
            f"expected ({len(items)}, {dimension}) finite values)"
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)
