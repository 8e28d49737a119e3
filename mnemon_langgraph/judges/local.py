"""The local judge: an offline System 1 from embedding, lexical and structural evidence.

:class:`LocalDecisionModel` answers the read path's propositions with no key and no
network, from the state every backend receives. Its quality is evaluated like any judge's
(ROC AUC of P(needed) for gold evidence, paper §6.5).

For every (record or item, proposition) it computes the offline features of
:mod:`mnemon_langgraph.judges._features` — embedding similarity to the latest message, the
dialogue and the needs; BM25-style coverage of the query's rare words (rare in the whole
memory when the read path sends its word counts, ``state["memory"]``); whether the record
was said on the day (month) the message names; time, number and speaker cues; how far it
trails the call's best record; how similar its neighbours are; how the turn's searches
ranked it (the retrieval evidence the read path sends with each pooled record) — and maps
them to one score ``s = w·x + b`` with :class:`~mnemon_langgraph.judges.learned.JudgeWeights`:
the weights ``mnemon train judge`` learned (logistic regression, chosen by leave-one-
conversation-out cross-validation; provenance in the weights file), or the hand-set formula
when no weights are installed. ``p = σ(k · t(s))`` with the turn's
:class:`~mnemon_langgraph.judges.learned.Calibration` (``k`` grows with the question's
words, ``t`` moves a screen "no" down and makes a "no" weaker when a need asks for every
instance): within a turn each p is a strictly increasing
function of that one score with the sign of ``s``, so the order of records is the order of
``s``, every decision is ``s >= 0`` and calibration invariance holds; across turns the p
are comparable (the judge's pooled AUC).

Similarities come from the read path's ``evidence.sim`` when a record carries it: cosines
of the journal's stored vectors with the queries, so pooled records are not embedded again;
only records without it (index items, states built by hand) are embedded here, with the
same cache as before.

*No longer current* is answered by :mod:`mnemon_langgraph.judges._staleness`: yes only when
something said later by the same person explicitly replaces what the record says.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.decisions import (
    BaseDecisionModel,
    ClassifierResponse,
    NoulAnswer,
    Question,
    State,
)
from pydantic import ConfigDict, PrivateAttr

from mnemon_langgraph.errors import InputError, ModelCallError
from mnemon_langgraph.judges._features import (
    Doc,
    Query,
    coverage,
    idf_of_docs,
    idf_of_memory,
    record_lines,
    semantic,
    terms,
    with_relative,
)
from mnemon_langgraph.judges._staleness import replacements, stale_p
from mnemon_langgraph.judges.learned import Calibration, JudgeWeights, default_weights
from mnemon_langgraph.judges.propositions import Proposition, QuestionKey, parse_question_id
from mnemon_langgraph.records._content_caches import register_content_cache

__all__ = ["LocalDecisionModel", "score_to_p"]

logger = logging.getLogger(__name__)

_CACHE = 4096
MEMORY_IDF = True
"""Default :attr:`LocalDecisionModel.memory_idf` (see docs/results/log.md, "What was fitted")."""


def score_to_p(score: float) -> float:
    """The monotone map of the hand-set formula: ``σ((score − 0.30) / 0.06)``."""
    z = (score - 0.30) / 0.06
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass
class _Call:
    """One call's parsed state: the targets, the queries and what they share."""

    query: Query
    messages: list[Mapping[str, Any]]
    records: list[Doc]
    by_id: dict[str, Doc]
    idf: dict[str, float]
    avg_len: float
    vectors: dict[str, np.ndarray]
    lines: dict[str, list[str]]
    semantic: bool = True


class LocalDecisionModel(BaseDecisionModel):
    """Offline judge from embeddings, lexical and structural evidence (see the module).

    Attributes:
        model: Name reported in responses.
        embeddings: Any LangChain ``Embeddings``; ``None`` loads the package default
            (``mnemon_langgraph.search.embeddings.default_embeddings()``) on first use.
        lexical_only: Skip embeddings entirely (pure lexical evidence).
        line_level: Mix each record's best line into its similarity (more embeddings).
        weights: The linear scorer; ``None`` uses the packaged learned weights (or the
            hand-set formula when none are installed).
        memory_idf: Weigh the query's words by their rarity in the whole memory when the
            state carries the counts (``state["memory"]``, sent by the read path), not in
            the pool being judged (see :func:`~._features.idf_of_memory`).
        calibration: How a turn's scores become probabilities (:class:`Calibration`; its
            constants were chosen for the hand formula); ``None`` gives ``p = σ(s)``.
            Either way the read path's actions and View are the same.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "mnemon-local-2"
    embeddings: Any = None
    lexical_only: bool = False
    line_level: bool = False
    weights: JudgeWeights | None = None
    memory_idf: bool = MEMORY_IDF
    calibration: Calibration | None = Calibration()

    _embedder: Any = PrivateAttr(default=None)
    _loaded: bool = PrivateAttr(default=False)
    _cache: OrderedDict[str, np.ndarray] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _scorer: JudgeWeights | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Register the text-keyed vector cache with the deletions (content_caches)."""
        super().model_post_init(context)
        register_content_cache(self._forget_vectors)

    def _forget_vectors(self) -> None:
        with self._lock:
            self._cache.clear()

    @property
    def _provider(self) -> str:
        return "mnemon-local"

    @property
    def scorer(self) -> JudgeWeights:
        """The weights in use (loaded once)."""
        if self._scorer is None:
            self._scorer = self.weights if self.weights is not None else default_weights()
        return self._scorer

    # -- embeddings ------------------------------------------------------------------------

    def _get_embedder(self) -> Any:
        if self.lexical_only:
            return None
        if self.embeddings is not None:
            return self.embeddings
        with self._lock:
            if not self._loaded:
                self._loaded = True
                try:
                    from mnemon_langgraph.search.embeddings import default_embeddings

                    self._embedder = default_embeddings()
                except Exception as error:  # offline judging must still work
                    logger.warning("local judge: no embeddings (%s); lexical evidence only", error)
                    self._embedder = None
            return self._embedder

    def _vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        embedder = self._get_embedder()
        if embedder is None:
            return {}
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        if todo:
            try:
                vectors = embedder.embed_documents(todo)
            except Exception as error:
                raise ModelCallError(f"local judge: embedding failed: {error}") from error
            with self._lock:
                for text, vec in zip(todo, vectors, strict=True):
                    arr = np.asarray(vec, dtype=np.float64)
                    norm = float(np.linalg.norm(arr))
                    found[text] = arr / norm if norm else arr
                    self._cache[text] = found[text]
                while len(self._cache) > _CACHE:
                    self._cache.popitem(last=False)
        return found

    # -- scoring ---------------------------------------------------------------------------

    def _parse(self, state: State) -> _Call:
        if not isinstance(state, Mapping):
            raise ModelCallError("local judge: state must be the read path's JSON object")
        data: Mapping[str, Any] = state
        messages = [m for m in data.get("messages") or [] if isinstance(m, Mapping)]
        raw_needs = list(data.get("needs") or [])
        needs = [str(n.get("text", "")) if isinstance(n, Mapping) else str(n) for n in raw_needs]
        every_instance = any(isinstance(n, Mapping) and n.get("kind") == "ALL" for n in raw_needs)
        records = [Doc(r, i) for i, r in enumerate(data.get("records") or []) if _is_map(r)]
        items = [Doc(r, i) for i, r in enumerate(data.get("items") or []) if _is_map(r)]
        by_id = {d.id: d for d in [*records, *items]}
        query = Query.parse(messages, needs, every_instance=every_instance)
        lines = {d.id: record_lines(d.text) for d in by_id.values()} if self.line_level else {}
        # Records the read path sent stored-vector similarities for are not embedded again.
        todo = [d for d in by_id.values() if lines or d.stored_sim("latest") is None]
        stored = not self.lexical_only and len(todo) < len(by_id)
        texts = [*query.texts(), *(d.text for d in todo)] if todo or lines else []
        vectors = self._vectors([*texts, *(x for ls in lines.values() for x in ls)])
        avg_len = sum(sum(d.tf.values()) for d in by_id.values()) / max(1, len(by_id))
        return _Call(
            query,
            messages,
            records,
            by_id,
            self._idf(data, [*records, *items]),
            avg_len,
            vectors,
            lines,
            semantic=bool(vectors) or stored,
        )

    def _idf(self, data: Mapping[str, Any], docs: Sequence[Doc]) -> dict[str, float]:
        """The call's IDF: the memory's counts when sent and wanted, else the pool's."""
        pool = idf_of_docs(docs)
        return idf_of_memory(data.get("memory"), pool) if self.memory_idf else pool

    def _sources(self, call: _Call, key: QuestionKey) -> list[tuple[str, str, float]]:
        """The (role, query, weight) triples a proposition is judged against."""
        q = call.query
        needs = [(f"need:{i}", n) for i, n in enumerate(q.needs)]
        if key.proposition is Proposition.SATISFIES:
            index = key.need_index
            need = q.needs[index] if index is not None and index < len(q.needs) else ""
            return [(f"need:{index}", need, 1.0), ("latest", q.latest, 0.6)]
        if key.proposition is Proposition.SCREEN:
            return [("latest", q.latest, 1.0), *((r, n, 0.7) for r, n in needs)]
        # NEEDED, ITEM_NEEDED: jointly with the dialogue and the needs
        return [
            ("latest", q.latest, 1.0),
            ("context", q.context, 0.6),
            *((r, n, 0.8) for r, n in needs),
        ]

    def _sim(self, call: _Call, doc: Doc, role: str, query: str) -> float:
        """Cosine of ``doc`` with a query: the read path's stored-vector one when sent."""
        lines = call.lines.get(doc.id, ())
        found = doc.stored_sim(role)
        if found is None or lines:
            return semantic(call.vectors, query, doc.text, lines)
        return found

    def _base_row(
        self, call: _Call, doc: Doc, sources: Sequence[tuple[str, str, float]]
    ) -> list[float]:
        """``[sem, lex, cues…]`` of ``doc`` against ``sources`` (best weighted query)."""
        lex = max(
            (w * coverage(terms(q), doc, call.idf, call.avg_len) for _, q, w in sources if q),
            default=0.0,
        )
        if not call.semantic:  # lexical only: let lexical evidence carry the whole score
            sem = lex
        else:
            sem = max(
                (w * self._sim(call, doc, r, q) for r, q, w in sources if q),
                default=0.0,
            )
        return [sem, lex, *call.query.cues(doc)]

    def features(self, call: _Call, keys: Sequence[tuple[QuestionKey, Doc]]) -> np.ndarray:
        """Feature rows of ``keys`` (one group: same proposition and need)."""
        if not keys:
            return np.zeros((0, 0))
        sources = self._sources(call, keys[0][0])
        base = np.array([self._base_row(call, doc, sources) for _, doc in keys])
        docs = [doc for _, doc in keys]
        return with_relative(
            base, docs, {d.id: float(s) for d, s in zip(docs, base[:, 0], strict=True)}
        )

    def observe(self, group: Proposition, docs: Sequence[Doc], rows: np.ndarray) -> None:
        """Hook called with every scored group's feature rows (training records them)."""

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        call = self._parse(state)
        answers: dict[str, Any] = {}
        groups: dict[tuple[Proposition, int | None], list[tuple[str, QuestionKey, Doc]]] = {}
        for qid in questions:
            try:
                key = parse_question_id(qid)
            except InputError:
                continue  # unknown question: left unanswered (the caller sees it missing)
            doc = call.by_id.get(key.local_id)
            if doc is None:
                continue
            if key.proposition is Proposition.STALE:
                p = stale_p(doc, call.records, call.messages)
                answers[qid] = NoulAnswer(type="noul", noul=p)
            else:
                groups.setdefault((key.proposition, key.need_index), []).append((qid, key, doc))
        replaced = replacements(call.records) if groups else {}
        n_terms = len(set(terms(call.query.latest)))
        for (prop, _), members in groups.items():
            rows = self.features(call, [(key, doc) for _, key, doc in members])
            self.observe(prop, [doc for _, _, doc in members], rows)
            scores = _inherit(self.scorer.scores(rows), [d.id for _, _, d in members], replaced)
            if self.calibration is not None:
                screen = prop is Proposition.SCREEN
                scores = self.calibration.apply(
                    scores,
                    n_terms=n_terms,
                    screen=screen,
                    every_instance=call.query.every_instance,
                )
            for (qid, _, _), s in zip(members, scores, strict=True):
                answers[qid] = NoulAnswer(type="noul", noul=_sigmoid(s))
        n_in = sum(len(d.text) for d in call.by_id.values()) // 4
        return ClassifierResponse(
            model=self.model,
            answers=answers,
            usage={"input_tokens": n_in, "output_tokens": 0, "total_tokens": n_in},
        )


def _inherit(scores: np.ndarray, ids: Sequence[str], replaced: Mapping[str, str]) -> np.ndarray:
    """Each replacing record scores at least what the record it replaces scores."""
    out = scores.copy()
    index = {rid: i for i, rid in enumerate(ids)}
    for old, new in replaced.items():
        if old in index and new in index:
            out[index[new]] = max(out[index[new]], scores[index[old]])
    return out


def _sigmoid(score: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, float(score)))))


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)
