"""Settings of the consolidation job, with the paper's values as defaults (§5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mnemon_langgraph.errors import ConfigurationError

__all__ = ["ConsolidationSettings"]


@dataclass(frozen=True, slots=True)
class ConsolidationSettings:
    """Budgets and policies of the consolidation job.

    Attributes:
        batch_chars: Target size of one batch, in characters of trimmed record text
            (paper: about 10,000). A batch always holds at least one record.
        assistant_chars: How much of each assistant line a batch keeps (paper: the first 240
            characters). User lines are always kept whole.
        max_topics: Most topic timelines a fold is shown (paper: 120).
        max_values: Most value histories a fold is shown (paper: 240).
        max_instructions: Most standing instructions a fold is shown (paper: 60).
        events_per_topic: How many of a topic's latest events a fold is shown with it.
        max_batches: Stop after this many batches in one run (``None``: until caught up).
        retries: Extra attempts of a fold whose call fails or whose output does not parse.
        on_failure: What to do with a batch that still fails after the retries. ``"stop"``
            (default): record it in ``consolidation_failures`` and end the run there, leaving
            the watermark before it, so the next run tries it again. ``"skip"``: record it and
            move the watermark past it (its records stay searchable; they are just not
            folded). Either way the failure is reported, never silently dropped.
        fold_timeout_s: Wall-clock limit of one fold call; a call over it counts as a failed
            attempt. ``None`` leaves timeouts to the chat model's own settings.
        recursion_limit: LangGraph step limit of one run (three steps a batch).
    """

    batch_chars: int = 10_000
    assistant_chars: int = 240
    max_topics: int = 120
    max_values: int = 240
    max_instructions: int = 60
    events_per_topic: int = 3
    max_batches: int | None = None
    retries: int = 1
    on_failure: Literal["stop", "skip"] = "stop"
    fold_timeout_s: float | None = None
    recursion_limit: int = 100_000

    def __post_init__(self) -> None:
        for name in (
            "batch_chars",
            "assistant_chars",
            "max_topics",
            "max_values",
            "max_instructions",
            "events_per_topic",
        ):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_batches is not None and self.max_batches < 0:
            raise ConfigurationError(f"max_batches must be >= 0, got {self.max_batches}")
        if self.retries < 0:
            raise ConfigurationError(f"retries must be >= 0, got {self.retries}")
        if self.on_failure not in ("stop", "skip"):
            raise ConfigurationError(
                f"on_failure must be 'stop' or 'skip', got {self.on_failure!r}"
            )
        if self.fold_timeout_s is not None and self.fold_timeout_s <= 0:
            raise ConfigurationError(f"fold_timeout_s must be > 0, got {self.fold_timeout_s}")
        if self.recursion_limit < 4:
            raise ConfigurationError("recursion_limit must be at least 4")
