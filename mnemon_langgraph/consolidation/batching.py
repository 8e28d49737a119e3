"""Cut the journal into consolidation batches (paper §5, "Consolidation").

A batch is read from a per-namespace watermark, in ``seq`` order, and holds about
``batch_chars`` characters: user lines whole and the first ``assistant_chars`` characters of
each assistant line (``Record.roles`` is parallel to the lines of ``Record.text``). Little
of a chat assistant's conversation's text survives, and all of a human-to-human one
(docs/results/log.md, "Consolidation batches").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from mnemon_langgraph.types import Record

__all__ = ["Batch", "BatchRecord", "cut_batch", "trim_record"]


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One record as a fold sees it.

    Attributes:
        record: The journal record.
        text: Its text with assistant lines trimmed.
    """

    record: Record
    text: str


@dataclass(frozen=True, slots=True)
class Batch:
    """A run of consecutive records (by ``seq``) folded together.

    Attributes:
        records: The records, in ``seq`` order.
        start_seq: ``seq`` of the first record.
        end_seq: ``seq`` of the last record: the watermark once the batch is folded.
        chars: Characters of trimmed text in the batch.
    """

    records: tuple[BatchRecord, ...]
    start_seq: int
    end_seq: int
    chars: int

    @property
    def record_ids(self) -> list[str]:
        """Ids of the batch's records, in order."""
        return [br.record.id for br in self.records]


def trim_record(record: Record, assistant_chars: int = 240) -> str:
    """The record's text with each assistant line cut to its first ``assistant_chars``.

    Lines of any other role (``user``, ``system``, ``tool``) are kept whole. When the roles
    are missing or do not match the lines, the text is kept whole: losing user words would
    be worse than a longer batch.

    Args:
        record: A journal record.
        assistant_chars: Characters kept of each assistant line.

    Returns:
        The trimmed text (lines joined by newlines).
    """
    lines = record.text.split("\n")
    if not record.roles or len(record.roles) != len(lines):
        return record.text
    out: list[str] = []
    for line, role in zip(lines, record.roles, strict=True):
        if role == "assistant" and len(line) > assistant_chars:
            out.append(line[:assistant_chars].rstrip() + " …")
        else:
            out.append(line)
    return "\n".join(out)


def cut_batch(
    records: Iterable[Record], *, batch_chars: int = 10_000, assistant_chars: int = 240
) -> Batch | None:
    """Take the next batch from ``records`` (ordered by ``seq``).

    Records are added while the batch stays within ``batch_chars``; the first record is
    always taken, so a single oversized record still makes progress.

    Args:
        records: Records after the watermark, in ``seq`` order (consumed lazily).
        batch_chars: Target characters a batch.
        assistant_chars: Characters kept of each assistant line.

    Returns:
        The batch, or ``None`` when there are no records.
    """
    taken: list[BatchRecord] = []
    chars = 0
    iterator: Iterator[Record] = iter(records)
    for record in iterator:
        text = trim_record(record, assistant_chars)
        if taken and chars + len(text) > batch_chars:
            break
        taken.append(BatchRecord(record=record, text=text))
        chars += len(text)
        if chars >= batch_chars:
            break
    if not taken:
        return None
    return Batch(
        records=tuple(taken),
        start_seq=taken[0].record.seq,
        end_seq=taken[-1].record.seq,
        chars=chars,
    )
