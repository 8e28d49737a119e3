"""Candidate features of the local judge, tried by ``judge_replay.py`` (judge.md); not shipped.

:class:`CandidateJudge` is the package's :class:`LocalDecisionModel` whose feature rows carry,
after the 14 shipped columns (:data:`~mnemon_langgraph.judges._features.FEATURES`), the columns
of :data:`EXTRA`:

* ``searches`` — how many of the turn's searches found the record (``min(n, 8) / 8``);
* ``agree`` — BM25 rank feature × dense rank feature (both retrievers rank it high);
* ``length`` — ``n / (n + 10)`` of its content words (chit-chat records are short);
* ``sem_lex`` — ``sem × lex``;
* ``session_sem`` — the best ``sem`` of another judged record of its session (a session
  about the question);
* ``sem_rank`` / ``lex_rank`` — ``1 / (1 + rank / 10)`` of its ``sem`` / ``lex`` rank in the
  call;
* ``line_lex`` — :func:`~mnemon_langgraph.judges._features.coverage` of its best line (the
  question's words said in one turn rather than spread over the record);
* ``speaker_lex`` — the same over the lines said by a person the message names (what *they*
  said about it);
* ``line_is_question`` — its best line (by coverage of the latest message) is a question.

None of them won under leave-one-conversation-out (judge.md), so the package does not compute
them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from mnemon_langgraph.judges._features import Doc, coverage, terms
from mnemon_langgraph.judges.local import LocalDecisionModel

EXTRA = (
    "searches",
    "agree",
    "length",
    "sem_lex",
    "session_sem",
    "sem_rank",
    "lex_rank",
    "line_lex",
    "speaker_lex",
    "line_is_question",
)


class _Line:
    __slots__ = ("asks", "speaker", "tf")

    def __init__(self, line: str) -> None:
        self.tf = MappingProxyType(Counter(terms(line)))
        head, sep, _ = line.partition(":")
        self.speaker = head.strip().casefold() if sep and len(head) <= 40 else ""
        self.asks = line.rstrip().endswith("?")


@functools.lru_cache(maxsize=8192)
def line_terms(body: str) -> tuple[_Line, ...]:
    """Each line of ``body`` (term frequencies, speaker, whether it asks)."""
    return tuple(_Line(line) for line in body.split("\n") if line.strip())


def _rank_in_group(values: np.ndarray) -> np.ndarray:
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    return 1.0 / (1.0 + ranks / 10.0)


def _doc_extra(doc: Doc, docs: Sequence[Doc], sem_of: Mapping[str, float]) -> list[float]:
    found = doc.evidence.get("searches")
    searches = min(float(found), 8.0) / 8.0 if isinstance(found, int | float) else 0.0
    n = sum(doc.tf.values())
    session = max(
        (
            sem_of.get(o.id, 0.0)
            for o in docs
            if o is not doc and doc.session is not None and o.session == doc.session
        ),
        default=0.0,
    )
    return [searches, n / (n + 10.0), session]


class CandidateJudge(LocalDecisionModel):
    """The local judge whose rows carry the :data:`EXTRA` columns after the shipped ones."""

    def features(self, call: Any, keys: Sequence[tuple[Any, Doc]]) -> np.ndarray:
        rows = super().features(call, keys)
        if not len(keys):
            return rows
        docs = [doc for _, doc in keys]
        sem, lex = rows[:, 0], rows[:, 1]
        sem_of = {d.id: float(s) for d, s in zip(docs, sem, strict=True)}
        extra = np.array([_doc_extra(d, docs, sem_of) for d in docs])
        agree = rows[:, 12] * rows[:, 13]  # bm25_rank × dense_rank
        sources = self._sources(call, keys[0][0])
        n_lines = sum(max(1, len(line_terms(d.text))) for d in docs) / len(docs)
        line_len = call.avg_len / max(1.0, n_lines)
        queries = [(terms(q), w) for _, q, w in sources if q]
        line = [
            max(
                (
                    w
                    * max(
                        (coverage(t, ln, call.idf, line_len) for ln in line_terms(d.text)),  # type: ignore[arg-type]
                        default=0.0,
                    )
                    for t, w in queries
                ),
                default=0.0,
            )
            for d in docs
        ]
        latest = terms(call.query.latest)
        named = call.query.named
        speaker, asks = [], []
        for d in docs:
            lines = line_terms(d.text)
            cov = [coverage(latest, ln, call.idf, line_len) for ln in lines]  # type: ignore[arg-type]
            speaker.append(
                max(
                    (c for c, ln in zip(cov, lines, strict=True) if ln.speaker in named),
                    default=0.0,
                )
            )
            best = max(range(len(lines)), key=cov.__getitem__, default=None)
            asks.append(float(best is not None and cov[best] > 0 and lines[best].asks))
        cols = [
            extra[:, 0],
            agree,
            extra[:, 1],
            sem * lex,
            extra[:, 2],
            _rank_in_group(sem),
            _rank_in_group(lex),
            np.asarray(line, dtype=np.float64),
            np.asarray(speaker, dtype=np.float64),
            np.asarray(asks, dtype=np.float64),
        ]
        return np.hstack([rows, np.column_stack(cols)])
