"""The labelled update pairs shipped with the package, and their fixed writing/frozen split.

Each pair is an earlier statement, a later one and a label: whether the later one makes
the earlier one *no longer current*. The pairs (``judges/data/update_pairs_general.jsonl``,
provenance in ``judges/data/README.md``) are grouped by family (a kind of change or of hard
negative). The split is decided by :func:`split_of` alone: within each family, pairs are
ordered by the SHA-256 of their text and alternate between ``"writing"`` (rules and models
may look at these) and ``"frozen"`` (evaluation only). The file records each pair's split so
that a test can prove the rule still gives it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mnemon_langgraph.errors import InputError

__all__ = ["GENERAL_PAIRS", "UpdatePair", "confusion", "load_pairs", "split_of"]

GENERAL_PAIRS = Path(__file__).resolve().parent / "data" / "update_pairs_general.jsonl"
SPLITS = ("writing", "frozen")


@dataclass(frozen=True)
class UpdatePair:
    """One labelled pair: does ``later`` make ``earlier`` no longer current?"""

    kind: str
    earlier: str
    later: str
    same_speaker: bool
    stale: bool
    split: str = ""

    @property
    def digest(self) -> str:
        """SHA-256 of the two statements: the pair's place in its family's order."""
        return hashlib.sha256(f"{self.earlier}\n{self.later}".encode()).hexdigest()


def split_of(pairs: Iterable[UpdatePair]) -> dict[str, str]:
    """Digest → ``"writing"`` or ``"frozen"``: within each family, alternate in digest order."""
    by_kind: dict[str, list[str]] = {}
    for pair in pairs:
        by_kind.setdefault(pair.kind, []).append(pair.digest)
    out: dict[str, str] = {}
    for digests in by_kind.values():
        for i, digest in enumerate(sorted(digests)):
            out[digest] = SPLITS[i % 2]
    return out


def load_pairs(path: Path = GENERAL_PAIRS, split: str | None = None) -> list[UpdatePair]:
    """The pairs of a JSONL file (all, or one split); a malformed line is an InputError."""
    if split is not None and split not in SPLITS:
        raise InputError(f"split must be one of {SPLITS}, not {split!r}")
    pairs: list[UpdatePair] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pair = UpdatePair(
                kind=str(row["kind"]),
                earlier=str(row["earlier"]),
                later=str(row["later"]),
                same_speaker=bool(row.get("same_speaker", True)),
                stale=bool(row["stale"]),
                split=str(row.get("split", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path.name} line {n}: not an update pair ({exc})") from exc
        pairs.append(pair)
    return [p for p in pairs if split is None or p.split == split]


def confusion(flags: Sequence[bool], pairs: Sequence[UpdatePair]) -> dict[str, float]:
    """tp/fp/fn/tn, precision and recall of ``flags`` (predicted stale) against the labels."""
    tp = sum(f and p.stale for f, p in zip(flags, pairs, strict=True))
    fp = sum(f and not p.stale for f, p in zip(flags, pairs, strict=True))
    fn = sum(not f and p.stale for f, p in zip(flags, pairs, strict=True))
    tn = len(pairs) - tp - fp - fn
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
    }
