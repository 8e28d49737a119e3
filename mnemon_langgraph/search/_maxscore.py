"""Top-k BM25 without reading every posting: term-at-a-time MaxScore over the index's postings.

Turtle & Flood 1995, "Query evaluation: strategies and optimizations". Each query term has
an upper bound on what it can add to any document (its IDF times the largest
``tf / (tf + norm)`` among its postings, :meth:`MaxScore._term`). Terms are scored in order
of that bound, rarest first, each adding its documents to the candidates, until the bounds
of the terms left sum below the ``k``-th best partial score: no document outside the
candidates can reach the top ``k`` any more, so the remaining (common) terms are looked up
only for the candidates (a binary search in their sorted postings) and candidates that
cannot reach the ``k``-th score are dropped. The survivors are then scored again in one
fixed term order, so scores and ties do not depend on which terms were pruned. Exact: the
ranking equals scoring every posting (``prune=False``). When every term left is found
in at least one document in 16 (in 32 for a term with very many postings), nothing can be
pruned term by term; those terms are
then read as one byte per document (each term's impacts quantised upward, cached per term)
to bound every document's score, and only the documents whose bound reaches the ``k``-th
exact score of the best-bounded ones are scored (:meth:`MaxScore._bounded`, :mod:`._bounds`:
WAND's two-level evaluation, Broder et al. 2003).

:class:`MaxScore` is the query half of :class:`~mnemon_langgraph.search._bm25.BM25Index`,
which holds the postings (adding, deleting, merging, saving) and inherits it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from mnemon_langgraph.search._bounds import (
    CODE_MAX,
    code_weights,
    impact_codes,
    sample_level,
    sum_codes,
)
from mnemon_langgraph.search._formula import idf as bm25_idf
from mnemon_langgraph.search._text import terms as tokenize

__all__ = ["MaxScore"]


class MaxScore:
    """Mixin: :meth:`search` over the postings of a :class:`~._bm25.BM25Index`.

    Needs the index's per-document arrays, live counts and :meth:`_parts` / :meth:`_live_df`.
    """

    k1: float
    b: float
    _vocab: dict[str, int]
    _indptr: np.ndarray
    _tail: dict[int, tuple[list[int], list[float]]]
    _seqs: np.ndarray
    _lengths: np.ndarray
    _alive: np.ndarray
    _n_live: int
    _len_live: int
    _main_bounds: dict[int, tuple[float, float]]
    _tail_docs: int
    _dense: dict[int, tuple[np.ndarray, float, float, np.ndarray | None]]
    _dense_lock: threading.Lock
    _tail_dense: dict[int, tuple[int, np.ndarray, float]]
    _scratch: np.ndarray
    _scratch_lock: threading.Lock
    last_postings: int

    def _parts(self, tid: int) -> list[tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError

    def _live_df(self, tid: int, parts: list[tuple[np.ndarray, np.ndarray]]) -> int:
        raise NotImplementedError

    def _main_bound(self, tid: int, docs: np.ndarray, tfs: np.ndarray, avgdl: float) -> float:
        """The largest ``tf / (tf + norm)`` of a term's main postings at this ``avgdl``.

        Computed on the term's first search and kept until the next merge (the main
        segment does not change in between; dead documents count, a looser bound, never a
        wrong one). At a larger ``avgdl`` ``A`` the kept value is scaled by ``A / A_ref``:
        for fixed ``tf`` and length the expression grows with ``A``, never faster than that.
        """
        kept = self._main_bounds.get(tid)
        if kept is None:
            kept = (float((tfs / (tfs + self._norm_of(docs, avgdl))).max()), avgdl)
            self._main_bounds[tid] = kept
        impact, ref = kept
        return impact * max(1.0, avgdl / ref)

    def _norm_of(self, docs: np.ndarray, avgdl: float) -> np.ndarray:
        """``k1 · (1 - b + b · |d| / avgdl)`` of these documents, in float32."""
        # one multiply-add per posting (float32 throughout): this runs for every posting read
        lengths = self._lengths[docs]
        return lengths * np.float32(self.k1 * self.b / avgdl) + np.float32(self.k1 * (1 - self.b))

    def _term(self, tid: int, n_live: int, avgdl: float) -> _Term | None:
        """A query term's IDF, postings and upper bound (``None`` if no live document has it).

        ``df`` counts live documents only (:meth:`_live_df`).
        """
        parts = self._parts(tid)
        size = sum(len(docs) for docs, _ in parts)
        df = self._live_df(tid, parts)
        if df <= 0:
            return None
        idf = bm25_idf(n_live, df)
        impact = 0.0
        in_main = tid + 1 < len(self._indptr) and self._indptr[tid + 1] > self._indptr[tid]
        if in_main:
            impact = self._main_bound(tid, *parts[0], avgdl)
        if tid in self._tail:  # small and changing: taken at every search
            docs, tfs = parts[-1]
            impact = max(impact, float((tfs / (tfs + self._norm_of(docs, avgdl))).max()))
        return _Term(tid, idf, size, idf * impact * (1 + _SLACK), parts)

    def search(
        self, query: str, k: int, *, mask: np.ndarray | None = None, prune: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` documents for ``query``: ``(seqs, scores)``, best first.

        Only documents with at least one query term are returned. Ties are broken by
        ``seq`` (older first), so the order is deterministic.

        Args:
            query: Free text (tokenized like the documents; repeated terms count once).
            k: How many to return at most.
            mask: Restrict the ranking to these document positions (from
                :meth:`allowed_mask`); ``None`` means every live document.
            prune: Skip postings that cannot change the top ``k`` (MaxScore, see the
                module docstring). ``False`` reads every posting of every query term; the
                ranking is the same, which the tests and ``bench search`` check.
        """
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
        self.last_postings = 0
        if k <= 0 or self._n_live == 0:
            return empty
        tids = sorted({self._vocab[t] for t in tokenize(query) if t in self._vocab})
        avgdl = self._len_live / self._n_live or 1.0
        found = [self._term(tid, self._n_live, avgdl) for tid in tids]
        terms = [t for t in found if t is not None]
        if not terms:
            return empty
        if mask is not None and prune:
            few = self._few_allowed(terms, mask, k, avgdl)
            if few is not None:
                return few
        live = self._alive if mask is None else mask
        with self._partial_scores() as partial:
            acc = _Touched(
                partial, live, filtered=live is not self._alive or self._n_live < len(self._seqs)
            )
            try:
                cand, bounded = self._candidates(terms, k, avgdl, prune, acc)
                if len(cand) > k and not bounded:  # near-ties of the k-th partial score
                    cand = cand[partial[cand] >= _kth(partial[cand], k) * (1 - _SLACK)]
            finally:
                acc.clear()  # the scratch array goes back all zeros
        cand = np.sort(cand)
        scores = self._exact_scores(terms, cand, avgdl, self._kept_tfs(terms) if bounded else {})
        order = np.lexsort((cand, -scores))[:k]
        return self._seqs[cand[order]].copy(), scores[order].copy()

    def _few_allowed(
        self, terms: list[_Term], mask: np.ndarray, k: int, avgdl: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The top ``k`` of a filter that allows few documents (one session of a long
        history), scored directly: every allowed document's exact score, each term looked up
        by binary search, instead of reading every posting of the query's terms to keep the
        allowed ones. ``None`` when reading the postings costs less.

        The same scores (:meth:`_exact_scores`) and the same order of ties as the pruned
        search: documents without a query term score 0 and are left out.
        """
        postings = sum(t.size for t in terms)
        if int(np.count_nonzero(mask)) * len(terms) * _LOOKUP_COST >= postings:
            return None
        allowed = np.flatnonzero(mask)
        scores = self._exact_scores(terms, allowed, avgdl)
        self.last_postings = len(allowed) * len(terms)
        held = scores > 0
        cand, scores = allowed[held], scores[held]
        order = np.lexsort((cand, -scores))[:k]
        return self._seqs[cand[order]].copy(), scores[order].copy()

    @contextmanager
    def _partial_scores(self) -> Iterator[np.ndarray]:
        """A zeroed float32 array with one slot per document, for one search.

        Reused between searches (the search zeroes the slots it touched): allocating and
        scanning a fresh array of a million slots cost more than scoring the postings.
        A concurrent search gets a fresh array instead of waiting; an error mid-search
        drops the reused one (its slots may not be zero any more).
        """
        n = len(self._seqs)
        if not self._scratch_lock.acquire(blocking=False):
            yield np.zeros(n, dtype=np.float32)
            return
        try:
            if len(self._scratch) < n:
                self._scratch = np.zeros(n + n // 4, dtype=np.float32)
            yield self._scratch[:n]
        except BaseException:
            self._scratch = np.zeros(0, dtype=np.float32)
            raise
        finally:
            self._scratch_lock.release()

    def _candidates(
        self, terms: list[_Term], k: int, avgdl: float, prune: bool, acc: _Touched
    ) -> tuple[np.ndarray, bool]:
        """MaxScore's first phase: every posting of the terms with the largest bounds.

        Adds partial scores into ``acc.partial`` and returns the candidates, and whether
        they are final already (:meth:`_bounded`'s). Before a term with many postings,
        ``theta`` is raised: the best candidates so far are scored in full (every query term
        looked up, :meth:`_full_kth`), and ``k`` real documents reaching it make it a lower
        bound of the final ``k``-th score — far above the ``k``-th *partial* score — so the
        common terms go to the second phase (:meth:`_refine`) as soon as the bounds of the
        terms left sum below it. When every term left is common (:meth:`_is_dense`), the
        rest is bounded from bytes (:meth:`_bounded`) unless a check made before the next
        one prunes: queries whose every word is in most documents, and a rare word beside
        common ones (reading a byte per document for the common ones costs less than
        adding their postings one by one and looking each up for the candidates of the
        rare word: the candidates grow with the namespace).
        Without ``prune`` every posting is added one by one (the reference the tests
        compare with).
        """
        order = sorted(terms, key=lambda t: (-t.bound, t.tid))
        left = [sum(t.bound for t in order[j:]) for j in range(len(order))]
        n_main = len(self._seqs) - self._tail_docs
        dense_from = len(order)
        while dense_from and self._is_dense(order[dense_from - 1], n_main):
            dense_from -= 1
        for j, term in enumerate(order):
            if prune and j and term.size >= _CHECK_POSTINGS:
                cand = acc.candidates()
                # a check costs a lookup per candidate: not made when reading the rest costs less
                if not (j >= dense_from and len(cand) * _LOOKUP_COST >= n_main):
                    theta = self._full_kth(terms, cand, acc.partial, k, avgdl)
                    if left[j] < theta * (1 - _SLACK):
                        cand = self._refine(order[j:], left[j:], cand, acc.partial, theta, k, avgdl)
                        return cand, False
            if prune and j >= dense_from:
                return self._bounded(terms, order[j:], k, avgdl, acc, n_main), True
            for docs, tfs in term.parts:
                acc.add_postings(docs, np.float32(term.idf) * self._impacts(docs, tfs, avgdl))
                self.last_postings += len(docs)
        return acc.candidates(), False

    def _impacts(self, docs: np.ndarray, tfs: np.ndarray, avgdl: float) -> np.ndarray:
        """``tf / (tf + norm)`` of these postings (float32: the very values of
        :meth:`_exact_scores`)."""
        return tfs / (tfs + self._norm_of(docs, avgdl))

    def _is_dense(self, term: _Term, n_main: int) -> bool:
        """Whether the term's main postings cover at least one main document in
        :data:`_DENSE_SHARE`, or in :data:`_DENSE_SHARE_MANY` when they are at least
        :data:`_DENSE_MANY_POSTINGS` (then :meth:`_bounded` reads them as bytes)."""
        if n_main < _DENSE_MIN_DOCS or not term.parts:
            return False
        in_main = (
            term.tid + 1 < len(self._indptr) and self._indptr[term.tid + 1] > self._indptr[term.tid]
        )
        size = len(term.parts[0][0])
        share = _DENSE_SHARE_MANY if size >= _DENSE_MANY_POSTINGS else _DENSE_SHARE
        return bool(in_main) and size * share >= n_main

    def _bounded(
        self,
        terms: list[_Term],
        rest: list[_Term],
        k: int,
        avgdl: float,
        acc: _Touched,
        n_main: int,
    ) -> np.ndarray:
        """The documents that may reach the top ``k``, when every term of ``rest`` is in most
        documents (:mod:`._bounds`: WAND's two levels on byte-quantised impacts).

        ``acc.partial`` holds the other terms' partial scores; the ``rest``'s unmerged tail
        postings are added to it, and their main postings as an upper bound read from each
        term's cached codes (:meth:`_codes`), so ``partial`` bounds every document's score
        from above. The documents whose bound reaches a sampled level (at least ``k`` of
        them) are scored exactly; the ``k``-th of those scores, ``theta``, is a lower bound of
        the final ``k``-th score, and every document whose bound reaches ``theta`` (with
        float slack) is returned: the top ``k`` and all its ties are among them.
        """
        codes, per_code, tails, tail_per_code = [], [], [], []
        for term in rest:
            main, tail = term.parts[0], term.parts[1:]
            code, top, ref, _ = self._codes(term.tid, *main, avgdl, n_main)
            codes.append(code)
            per_code.append(term.idf * top * max(1.0, avgdl / ref) / CODE_MAX)
            self.last_postings += len(main[0])
            for docs, tfs in tail:  # the unmerged tail: its own codes, over the tail's records
                tail_code, tail_ref = self._tail_codes(term.tid, docs, tfs, avgdl, n_main)
                tails.append(tail_code)
                tail_per_code.append(term.idf * max(1.0, avgdl / tail_ref) / CODE_MAX)
                self.last_postings += len(docs)
        weights, unit = code_weights(per_code + tail_per_code)
        total = sum_codes(codes, weights[: len(codes)], n_main)
        if self._tail_docs:
            tail_total = sum_codes(tails, weights[len(codes) :], self._tail_docs)
            total = np.concatenate([total, tail_total])
        if not acc.dense and not any(len(p) for p in acc.pieces):  # no other term scored
            return self._bounded_codes(terms, rest, total, unit, k, avgdl, acc)
        acc.add_dense(np.float32(unit) * total)
        bound = acc.partial
        level = sample_level(bound, _LEVEL_SAMPLE * k, _SAMPLE_SIZE)
        best = acc.reaching(max(float(level), _TINY))
        if len(best) < k:  # the sample guessed too high: the exact k-th bound of the live
            best = acc.reaching(max(float(_kth(bound[acc.reaching(0.0)], k)), _TINY))
        theta = _kth(self._exact_scores(terms, best, avgdl, self._kept_tfs(rest)), k)
        return acc.reaching(max(float(theta * (1 - _SLACK)), _TINY))

    def _bounded_codes(
        self,
        terms: list[_Term],
        rest: list[_Term],
        total: np.ndarray,
        unit: float,
        k: int,
        avgdl: float,
        acc: _Touched,
    ) -> np.ndarray:
        """:meth:`_bounded` when the codes are the whole bound (every query term common, no
        tail posting): the same steps on the integer sums ``total`` (the bound is ``unit ·
        total``), without a float array of every document."""

        def live(cand: np.ndarray) -> np.ndarray:
            return cand[acc.live[cand]] if acc.filtered else cand

        level = sample_level(total, _LEVEL_SAMPLE * k, _SAMPLE_SIZE)
        best = live(np.flatnonzero(total >= max(level, 1)))
        if len(best) < k:  # the sample guessed too high: the exact k-th bound of the live
            every = live(np.flatnonzero(total))
            best = live(np.flatnonzero(total >= max(_kth(total[every], k), 1)))
        theta = _kth(self._exact_scores(terms, best, avgdl, self._kept_tfs(rest)), k)
        # unit · total >= theta · (1 - slack)  ⇐  total >= floor(theta · (1 - slack) / unit)
        return live(np.flatnonzero(total >= max(1, math.floor(theta * (1 - _SLACK) / unit))))

    def _tail_codes(
        self, tid: int, docs: np.ndarray, tfs: np.ndarray, avgdl: float, n_main: int
    ) -> tuple[np.ndarray, float]:
        """A term's unmerged tail postings as one byte per tail record, ``ceil(255 ·
        impact)`` (impacts are below 1), and the ``avgdl`` they were taken at.

        The tail only grows between merges (documents appended, each term's postings in
        document order), so the kept bytes are extended by the postings added since, at the
        same ``avgdl`` (the caller scales the bound like the main segment's codes), and
        dropped at the next merge.
        """
        size = self._tail_docs
        with self._dense_lock:
            done, code, ref = self._tail_dense.get(tid, (0, np.zeros(0, dtype=np.uint8), avgdl))
        if len(code) < size:
            code = np.concatenate([code, np.zeros(size - len(code), dtype=np.uint8)])
        if done < len(docs):
            new, new_tfs = docs[done:], tfs[done:]
            impacts = self._impacts(new, new_tfs, ref).astype(np.float64)
            code[new - n_main] = np.clip(np.ceil(impacts * CODE_MAX), 1, CODE_MAX)
        with self._dense_lock:
            self._tail_dense[tid] = (len(docs), code, ref)
        return code, ref

    def _codes(
        self, tid: int, docs: np.ndarray, tfs: np.ndarray, avgdl: float, n_main: int
    ) -> tuple[np.ndarray, float, float, np.ndarray | None]:
        """A term's main postings as bytes (:func:`~._bounds.impact_codes`): ``(codes, top,
        avgdl they were taken at, tf per main document)``, kept until the next merge. The
        tfs (``uint8``; ``None`` unless every tf is a whole number below 256) let
        :meth:`_exact_scores` read a candidate's tf directly instead of searching for it.

        Kept across writes: at a larger ``avgdl`` ``A`` every impact grows by at most
        ``A / A_ref`` (:meth:`_main_bound`), which the caller multiplies in; at a smaller one
        they only shrink. At most :data:`_DENSE_BUDGET` bytes are kept; the term used longest
        ago goes first.
        """
        with self._dense_lock:
            kept = self._dense.pop(tid, None)
            if kept is not None and len(kept[0]) == n_main:
                self._dense[tid] = kept  # last used goes last
                return kept
        code, top = impact_codes(docs, self._impacts(docs, tfs, avgdl), n_main)
        tf_bytes = None
        if float(tfs.max()) < 256 and bool(np.all(tfs == np.floor(tfs))):
            tf_bytes = np.zeros(n_main, dtype=np.uint8)
            tf_bytes[docs] = tfs
        kept = (code, top, avgdl, tf_bytes)
        with self._dense_lock:
            self._dense[tid] = kept
            while (
                sum(2 * len(v[0]) for v in self._dense.values()) > _DENSE_BUDGET
                and len(self._dense) > 1
            ):
                del self._dense[next(iter(self._dense))]
        return kept

    def _full_kth(
        self, terms: list[_Term], cand: np.ndarray, partial: np.ndarray, k: int, avgdl: float
    ) -> float:
        """The ``k``-th full score among the :data:`_THETA_SAMPLE` ``· k`` best candidates.

        0.0 (no bound) when there are fewer than ``k`` candidates.
        """
        if len(cand) < k:
            return 0.0
        size = min(len(cand), _THETA_SAMPLE * k)
        best = cand[np.argpartition(-partial[cand], size - 1)[:size]]
        return _kth(self._exact_scores(terms, np.sort(best), avgdl), k)

    def _refine(
        self,
        rest: list[_Term],
        left: list[float],
        cand: np.ndarray,
        partial: np.ndarray,
        theta: float,
        k: int,
        avgdl: float,
    ) -> np.ndarray:
        """MaxScore's second phase: the remaining terms, looked up for candidates only.

        Returns the surviving candidates (their full scores are in ``partial``).
        ``left[i]`` is the sum of the bounds of ``rest[i:]``. Before each term, candidates
        whose partial score plus the bounds still to come stays below ``theta`` are
        dropped (with float slack on the side of keeping them).
        """
        for i, term in enumerate(rest):
            cand = cand[partial[cand] + left[i] >= theta * (1 - _SLACK)]
            for docs, tfs in term.parts:
                if len(cand) * _LOOKUP_COST < len(docs):  # binary searches
                    found, pos = _find(docs, cand)
                    hit, tf = cand[found], tfs[pos[found]]
                    self.last_postings += len(cand)
                else:  # fewer postings than candidates' searches: read them, add no one
                    known = partial[docs] > 0
                    hit, tf = docs[known], tfs[known]
                    self.last_postings += len(docs)
                partial[hit] += np.float32(term.idf) * tf / (tf + self._norm_of(hit, avgdl))
            theta = max(theta, _kth(partial[cand], k))  # partial scores only grow
        return cand

    def _kept_tfs(self, terms: list[_Term]) -> dict[int, np.ndarray]:
        """The tf per main document that :meth:`_codes` keeps, of those of ``terms`` it has."""
        with self._dense_lock:
            kept = {t.tid: self._dense.get(t.tid) for t in terms}
        return {tid: v[3] for tid, v in kept.items() if v is not None and v[3] is not None}

    def _exact_scores(
        self,
        terms: list[_Term],
        cand: np.ndarray,
        avgdl: float,
        tf_of: dict[int, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Full BM25 scores of ``cand`` (sorted positions), summed in term-id order.

        One fixed order of float32 additions, whichever terms MaxScore pruned: a pruned
        and an unpruned search give bit-identical scores and hence identical ties.
        ``tf_of`` holds terms' tfs per main document (:meth:`_kept_tfs`): the same values
        as their main postings, read without a binary search.
        """
        scores = np.zeros(len(cand), dtype=np.float32)
        norm = self._norm_of(cand, avgdl)
        for term in sorted(terms, key=lambda t: t.tid):
            direct = (tf_of or {}).get(term.tid)
            if direct is not None:
                tf = _direct_tf(direct, term.parts[1:], cand)
            elif len(term.parts) == 1:  # one sorted piece: a term's usual case
                docs, tfs = term.parts[0]
                hit, pos = _find(docs, cand)
                tf = np.where(hit, tfs[pos], np.float32(0))
            else:
                tf = np.zeros(len(cand), dtype=np.float32)
                for docs, tfs in term.parts:
                    hit, pos = _find(docs, cand)
                    tf[hit] = tfs[pos[hit]]
            # documents without the term add 0.0, which leaves a float32 sum unchanged
            scores += np.float32(term.idf) * tf / (tf + norm)
        return scores


_SLACK = 1e-4
"""Relative float slack of MaxScore's comparisons, always on the side of keeping a document:
partial scores are float32 sums in another order than the final one (about 1e-7 apart)."""


_CHECK_POSTINGS = 32_768
"""MaxScore raises its threshold (:meth:`MaxScore._full_kth`) before a term with at least
this many postings: each raise scores a few hundred documents in full, which only pays
before a long posting list (the fastest of the sizes tried on 1M real passages:
docs/results/log.md, "BM25 index and tokenizer"). Smaller indexes never reach it."""
_LOOKUP_COST = 4
"""A binary search for one candidate costs about as much as reading this many postings
(4, 8 and 16 were about as fast at 1M and 4 reads the fewest: docs/results/log.md)."""
_THETA_SAMPLE = 2
"""How many candidates, per result wanted, are scored in full to raise the threshold."""
_DENSE_SHARE = 16
"""A term whose main-segment postings cover at least one main document in this many is read
as one byte per document (:meth:`MaxScore._bounded`) when every term after it in MaxScore's
order is too: adding a byte per document costs less than scattering that many postings
(a quarter was the share before; the growth benchmark's common-word questions, whose
filler words are in fewer records than that, gain from this one:
docs/results/search-scaling.md)."""
_DENSE_SHARE_MANY = 32
_DENSE_MANY_POSTINGS = 32_768
"""A term with at least this many main postings is read as bytes from a share of
:data:`_DENSE_SHARE_MANY` instead. Reading bytes costs a byte per document and a fixed pass
(:meth:`MaxScore._bounded` scores :data:`_LEVEL_SAMPLE` documents per result wanted in
full); adding postings costs per posting. A term in one document in 17 to 32 pays for that
pass only when its postings are many (a million-record namespace), not in a namespace of
tens of thousands, where it would cost more than the postings it replaces
(docs/results/search-scaling.md)."""
_DENSE_MIN_DOCS = 4096
"""Main segments smaller than this score every term from its postings."""
_DENSE_BUDGET = 64 << 20
"""Bytes of impact codes and tfs kept per index (two per document and term: 32 terms at a
million documents)."""
_LEVEL_SAMPLE = 4
""":meth:`MaxScore._bounded` scores exactly about this many documents per result wanted
(those of the best bounds) to find its threshold."""
_SAMPLE_SIZE = 32_768
"""How many documents' bounds :func:`~._bounds.sample_level` reads to place that level."""
_TINY = float(np.finfo(np.float32).tiny)
"""The least threshold :meth:`MaxScore._bounded` asks for: a document whose bound is zero
(no query word) never reaches it."""


class _Touched:
    """The partial scores of one search and which documents got one.

    Sparse additions record the documents they gave a first score to; a dense addition
    covers the main segment at once, after which the candidates are read off the scores
    and the whole array is zeroed at the end.
    """

    def __init__(self, partial: np.ndarray, live: np.ndarray, *, filtered: bool) -> None:
        self.partial, self.live, self.filtered = partial, live, filtered
        self.pieces: list[np.ndarray] = []
        self.dense = False

    def add(self, docs: np.ndarray, values: np.ndarray) -> None:
        """Add ``values`` (all > 0) to the scores of ``docs`` (distinct, live)."""
        before = self.partial[docs]
        if not self.dense:
            self.pieces.append(docs[before == 0])
        self.partial[docs] = before + values

    def add_postings(self, docs: np.ndarray, values: np.ndarray) -> None:
        """:meth:`add` for the live ones of ``docs`` (dead documents or a filter skip the
        others)."""
        if self.filtered:
            keep = self.live[docs]
            docs, values = docs[keep], values[keep]
        self.add(docs, values)

    def reaching(self, level: float) -> np.ndarray:
        """Live documents whose score is at least ``level`` (ascending)."""
        cand = np.flatnonzero(self.partial >= level)
        return cand[self.live[cand]] if self.filtered else cand

    def add_dense(self, values: np.ndarray) -> None:
        """Add ``values`` (one per main document, ≥ 0) to the first ``len(values)`` scores."""
        self.partial[: len(values)] += values
        self.dense = True

    def candidates(self) -> np.ndarray:
        """Live documents with a partial score."""
        if not self.dense:
            return np.concatenate(self.pieces) if self.pieces else np.zeros(0, dtype=np.int64)
        cand = np.flatnonzero(self.partial)
        return cand[self.live[cand]] if self.filtered else cand

    def clear(self) -> None:
        """Zero every score this search set."""
        if self.dense:
            self.partial[:] = 0.0
            return
        for docs in self.pieces:
            self.partial[docs] = 0.0


class _Term(NamedTuple):
    """One query term as a search uses it."""

    tid: int
    idf: float
    size: int
    """Postings, dead ones included."""
    bound: float
    """The most this term adds to any document's score (IDF × largest saturation)."""
    parts: list[tuple[np.ndarray, np.ndarray]]


def _kth(values: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``values``; 0.0 when there are fewer (no bound yet)."""
    if len(values) < k or k <= 0:
        return 0.0
    return float(np.partition(values, len(values) - k)[len(values) - k])


def _direct_tf(
    main: np.ndarray, tails: list[tuple[np.ndarray, np.ndarray]], cand: np.ndarray
) -> np.ndarray:
    """The tf of each of ``cand`` (sorted): read from ``main`` (one per main document) below
    its length, searched for in the ``tails`` above it; float32 as in the postings."""
    inside = np.searchsorted(cand, len(main))  # cand is sorted: main documents come first
    tf = np.zeros(len(cand), dtype=np.float32)
    tf[:inside] = main[cand[:inside]]
    for docs, tfs in tails:
        hit, pos = _find(docs, cand[inside:])
        tf[inside:][hit] = tfs[pos[hit]]
    return tf


def _find(docs: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``cand`` are in the sorted ``docs``, and where: ``(found mask, positions)``.

    A binary search per candidate: ``O(c · log p)`` instead of reading all ``p`` postings.
    The candidates take the postings' integer type first: given another one, numpy converts
    the whole of ``docs`` at every call.
    """
    cand = cand.astype(docs.dtype, copy=False)
    pos = np.minimum(np.searchsorted(docs, cand), len(docs) - 1)
    return docs[pos] == cand, pos
