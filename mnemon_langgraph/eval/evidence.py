"""Gold evidence ids of LoCoMo questions, repaired where the release got them wrong.

LoCoMo's ``qa[*].evidence`` lists dialogue ids such as ``"D1:3"`` (session 1, turn 3). A
few entries of the public release are malformed; the ones seen so far, and what
:func:`repair_evidence` does with each:

- ``"D8:6; D9:17"``: several ids in one string → split (``split``);
- ``"D:11:26"``: stray separator → ``D11:26`` (``separator``);
- ``"D30:05"``: zero-padded turn number → ``D30:5`` (``zero_padded``);
- ``"D1:3"`` listed twice → kept once (``duplicate``);
- ``"D10:19"`` where session 10 has no turn 19 → dropped (``unknown_turn``);
- ``"D"``: not an id at all → dropped (``unparseable``).

A repair is made only when it is unambiguous: the repaired id must name a turn of the
conversation; otherwise the entry is dropped and counted. Everything here is pure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "ISSUE_KINDS",
    "EvidenceIssue",
    "EvidenceRepair",
    "count_issues",
    "evidence_hits",
    "repair_evidence",
]

ISSUE_KINDS: tuple[str, ...] = (
    "split",
    "separator",
    "zero_padded",
    "duplicate",
    "unknown_turn",
    "unparseable",
)
"""Every kind of problem :func:`repair_evidence` reports, in a stable order."""

# "D" session ":" turn, tolerating spaces, a stray separator after "D" and lowercase.
_ID = re.compile(r"^\s*[Dd]\s*[:._-]?\s*(\d+)\s*[:._-]\s*(\d+)\s*$")
_CANONICAL = re.compile(r"^D(\d+):(\d+)$")
_SPLIT = re.compile(r"[;,\s]+(?=[Dd])")


@dataclass(frozen=True, slots=True)
class EvidenceIssue:
    """One problem found in a raw evidence entry.

    Attributes:
        kind: One of :data:`ISSUE_KINDS`.
        raw: The raw entry (or the piece of it) that had the problem.
        repaired: The id it was repaired to, ``None`` when it was dropped.
    """

    kind: str
    raw: str
    repaired: str | None = None


@dataclass(frozen=True, slots=True)
class EvidenceRepair:
    """Result of :func:`repair_evidence`.

    Attributes:
        ids: The repaired gold ids, each naming a known turn, in first-seen order, unique.
        issues: Every problem found, in order.
    """

    ids: tuple[str, ...]
    issues: tuple[EvidenceIssue, ...] = field(default=())

    @property
    def dropped(self) -> tuple[str, ...]:
        """Raw pieces that could not be resolved to a turn."""
        return tuple(i.raw for i in self.issues if i.repaired is None and i.kind != "duplicate")


def _canonical(piece: str) -> tuple[str | None, list[str]]:
    """Parse one piece into ``D<s>:<t>`` (no zero padding); returns (id, kinds of repairs)."""
    stripped = piece.strip()
    kinds: list[str] = []
    match = _CANONICAL.match(stripped)
    if match is None:
        match = _ID.match(stripped)
        if match is None:
            return None, []
        kinds.append("separator")
    session, turn = match.groups()
    if any(len(part) > 1 and part.startswith("0") for part in (session, turn)):
        kinds.append("zero_padded")
    return f"D{int(session)}:{int(turn)}", kinds


def repair_evidence(raw: Iterable[object], known_ids: Collection[str]) -> EvidenceRepair:
    """Repair a question's raw evidence list against the conversation's turn ids.

    Args:
        raw: The question's ``evidence`` field (strings; anything else is unparseable).
        known_ids: Every ``dia_id`` of the conversation (``"D1:1"`` …).

    Returns:
        The repaired ids and the issues found. An id already valid is kept untouched even
        when it is not in canonical form (the release's own spelling wins when it exists).
    """
    ids: list[str] = []
    seen: set[str] = set()
    issues: list[EvidenceIssue] = []
    for entry in raw:
        if not isinstance(entry, str):
            issues.append(EvidenceIssue("unparseable", repr(entry)))
            continue
        if entry in known_ids:
            pieces = [entry]
        else:
            pieces = [p for p in _SPLIT.split(entry.strip()) if p.strip()]
            pieces = [p.strip().rstrip(";,") for p in pieces]
            if len(pieces) > 1:
                issues.append(EvidenceIssue("split", entry))
            if not pieces:
                issues.append(EvidenceIssue("unparseable", entry))
                continue
        for piece in pieces:
            if piece in known_ids:
                resolved = piece
            else:
                parsed, kinds = _canonical(piece)
                if parsed is None:
                    issues.append(EvidenceIssue("unparseable", piece))
                    continue
                if parsed not in known_ids:
                    issues.append(EvidenceIssue("unknown_turn", piece))
                    continue
                resolved = parsed
                issues.extend(EvidenceIssue(kind, piece, resolved) for kind in kinds)
            if resolved in seen:
                issues.append(EvidenceIssue("duplicate", piece, resolved))
                continue
            seen.add(resolved)
            ids.append(resolved)
    return EvidenceRepair(ids=tuple(ids), issues=tuple(issues))


def count_issues(repairs: Iterable[EvidenceRepair]) -> dict[str, int]:
    """Count issues by kind over many questions; every kind of :data:`ISSUE_KINDS` appears."""
    counts: Counter[str] = Counter()
    for repair in repairs:
        counts.update(issue.kind for issue in repair.issues)
    return {kind: counts.get(kind, 0) for kind in ISSUE_KINDS}


def evidence_hits(gold: Sequence[str], shown: Collection[str]) -> Mapping[str, float | bool]:
    """``all_hit``, ``any_hit`` and ``recall`` of ``gold`` ids among ``shown`` message ids.

    Args:
        gold: The repaired gold ids (must be non-empty; callers skip questions without).
        shown: Message ids that reached the context.
    """
    if not gold:
        raise ValueError("evidence_hits needs at least one gold id")
    found = sum(1 for g in gold if g in shown)
    return {"all_hit": found == len(gold), "any_hit": found > 0, "recall": found / len(gold)}
