"""Incremental BM25 over records: numpy postings, lazy scoring, no pickle.

Why not ``bm25s`` or ``rank-bm25`` directly? ``bm25s`` ranks identically to ``rank-bm25`` on
the same tokens and is much faster (docs/results/log.md, "BM25 index and tokenizer"), but it
precomputes every token's score with
the IDF baked in, so one new record means re-indexing everything — and the write path adds
records one message at a time. ``rank-bm25`` keeps Python dicts per document and is far too
slow at 1M records. So this module keeps its own inverted index and scores lazily:

* **Postings**: a main segment in CSR form (per term: document positions and term
  frequencies, numpy arrays) plus a small in-memory *tail* of postings for documents added
  since; the tail is merged into the main segment (one vectorised sort) once it holds more
  than ``max(2048, main / 8)`` documents, and before saving.
* **IDF at query time**: ``N``, each query term's document frequency and the average document
  length are computed *when a query runs*, counting only live documents. Adding or deleting
  a record therefore never leaves stale IDFs behind, and an index updated incrementally
  scores exactly like one rebuilt from scratch (the tests check identical rankings).
* **Deletion**: a tombstone bit per document (dead postings are skipped and not counted);
  merges drop dead documents once they exceed a fifth of the index.
* **Top-k without reading every posting** (term-at-a-time MaxScore, Turtle & Flood 1995,
  "Query evaluation: strategies and optimizations"): each query term has an upper bound on
  what it can add to any document (its IDF times the largest ``tf / (tf + norm)`` among its
  postings, :meth:`~._maxscore.MaxScore._term`; the query half lives in :mod:`._maxscore`).
  Terms are scored in order of that bound, rarest
  first, each adding its documents to the candidates, until the bounds of the terms left
  sum below the ``k``-th best partial score: no document outside the candidates can reach
  the top ``k`` any more, so the remaining (common) terms are looked up only for the
  candidates (a binary search in their sorted postings) and candidates that cannot reach
  the ``k``-th score are dropped. The survivors are then scored again in one fixed term
  order, so scores and ties do not depend on which terms were pruned. Exact: the ranking
  equals scoring every posting (``prune=False``; the tests compare both on many queries).
  ``mnemon bench search --corpus`` times both (README).
* **Formula**: the Lucene BM25 variant that ``bm25s`` uses by default, written once in
  :mod:`._formula` (``k1 = 1.5``, ``b = 0.75``). A test checks that rankings equal
  ``bm25s``'s on the same tokens.

Tokenizer (:func:`tokenize`): the package's one tokenizer,
:func:`mnemon_langgraph.search._text.terms` (Unicode letter/digit runs, so ``Caroline's`` →
``caroline``, ``s``; case-folded; English stopwords and one-letter words removed, numbers
kept; a light English stemmer written there, needing no package). The index stores
:func:`~mnemon_langgraph.search._text.tokenizer_id` and :meth:`BM25Index.load` refuses an index
built by other rules, so the caller rebuilds it from the journal.

Each document also carries its journal ``seq``, session number and date, so date/session
filters are applied *inside* the ranking (a filtered search ranks only allowed records).
Persistence: one ``.npz`` file (``allow_pickle=False``) written to a temporary file and moved
into place with :func:`os.replace`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np

from mnemon_langgraph.search._formula import BM25_B, BM25_K1
from mnemon_langgraph.search._maxscore import MaxScore
from mnemon_langgraph.search._text import STOPWORDS, terms, tokenizer_id
from mnemon_langgraph.types import SearchFilters

__all__ = ["NO_DATE", "STOPWORDS", "BM25Index", "IndexFileError", "date_to_epoch", "tokenize"]

_FORMAT = 2  # 2: meta names the tokenizer (``tokenizer``) instead of an optional stemmer
NO_DATE = np.iinfo(np.int64).min
"""Stored date of a record without one (epoch seconds otherwise)."""


def date_to_epoch(value: datetime | None) -> int:
    """Epoch seconds of ``value`` (naive datetimes are taken as UTC); ``NO_DATE`` for None."""
    if value is None:
        return int(NO_DATE)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp())


tokenize = terms
"""Split text into BM25 terms: :func:`mnemon_langgraph.search._text.terms`."""


class IndexFileError(Exception):
    """An index file is missing, unreadable or inconsistent (the caller rebuilds it)."""


class BM25Index(MaxScore):
    """An incrementally updatable BM25 index whose document ids are journal ``seq`` numbers.

    Not thread-safe by itself: the store serialises access per namespace.

    Args:
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    def __init__(self, *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1, self.b = k1, b
        self.tokenizer = tokenizer_id()
        self._vocab: dict[str, int] = {}
        # main segment (CSR by term id)
        self._indptr = np.zeros(1, dtype=np.int64)
        self._post_doc = np.zeros(0, dtype=np.int32)
        self._post_tf = np.zeros(0, dtype=np.float32)
        # tail postings: term id -> ([doc positions], [tfs])
        self._tail: dict[int, tuple[list[int], list[float]]] = {}
        self._tail_docs = 0
        # per document (position = order of addition)
        self._seqs = np.zeros(0, dtype=np.int64)
        self._ids = np.zeros(0, dtype="S1")
        self._lengths = np.zeros(0, dtype=np.float32)
        self._sessions = np.zeros(0, dtype=np.int32)
        self._dates = np.zeros(0, dtype=np.int64)
        self._alive = np.zeros(0, dtype=bool)
        # live documents and their total length, kept up to date (N and avgdl of a query)
        self._n_live = 0
        self._len_live = 0
        # per term: (largest tf / (tf + norm) of its main postings, the avgdl it was taken at)
        self._main_bounds: dict[int, tuple[float, float]] = {}
        # per common term: (one byte per main document, its largest impact, avgdl), see MaxScore
        self._dense: dict[int, tuple[np.ndarray, float, float, np.ndarray | None]] = {}
        self._dense_lock = threading.Lock()  # concurrent searches share the cache
        # per common term: (tail postings coded, one byte per tail document, avgdl)
        self._tail_dense: dict[int, tuple[int, np.ndarray, float]] = {}
        self._tail_arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._dead_postings: dict[int, int] = {}  # per term, cleared on remove / merge
        self._scratch = np.zeros(0, dtype=np.float32)
        self._scratch_lock = threading.Lock()
        self.last_postings = 0
        """Postings the last :meth:`search` read (benches and tests show the pruning)."""

    # -- size ------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Number of live documents."""
        return self._n_live

    @property
    def max_seq(self) -> int:
        """Highest ``seq`` ever added (0 when empty)."""
        return int(self._seqs[-1]) if len(self._seqs) else 0

    def seqs(self) -> np.ndarray:
        """The ``seq`` of every live document, ascending."""
        return self._seqs[self._alive]

    # -- writing ---------------------------------------------------------------------------

    def add(
        self,
        seqs: Sequence[int],
        ids: Sequence[str],
        texts: Sequence[str],
        sessions: Sequence[int],
        dates: Sequence[int],
        *,
        bulk: bool = False,
    ) -> None:
        """Add documents; ``seqs`` must be ascending and above :attr:`max_seq`.

        Args:
            seqs: Journal sequence numbers.
            ids: Record ids (ASCII), returned by :meth:`ids_for`.
            texts: Texts to index.
            sessions: Session numbers (for filters).
            dates: Dates as epoch seconds, :data:`NO_DATE` when unknown (for filters).
            bulk: Many documents at once (a whole index loaded from elsewhere): their
                postings, gathered as arrays, join the main segment in one merge. Added
                without it they wait in the tail's Python lists, merged each time the tail
                passes an eighth of the index: about 25 sorts of the whole index to load
                100,000 documents in batches of 4,096. The index is the same either way.
        """
        if not seqs:
            return
        arr = self._checked_seqs(seqs)
        base = len(self._seqs)
        lengths = np.zeros(len(arr), dtype=np.float32)
        if bulk:
            parts: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] = ([], [], [])
            for i, counts in enumerate(self._term_counts(texts, lengths)):
                parts[0].append(np.fromiter(counts.keys(), np.int64, len(counts)))
                parts[1].append(np.full(len(counts), base + i, dtype=np.int32))
                parts[2].append(np.fromiter(counts.values(), np.float32, len(counts)))
            self._append_documents(arr, ids, lengths, sessions, dates)
            terms, docs, tfs = (np.concatenate(p) for p in parts)
            self.merge(extra=(terms, docs, tfs))
            return
        for i, counts in enumerate(self._term_counts(texts, lengths)):
            for tid, tf in counts.items():
                tail_docs, tail_tfs = self._tail.setdefault(tid, ([], []))
                tail_docs.append(base + i)
                tail_tfs.append(float(tf))
                self._tail_arrays.pop(tid, None)
        self._append_documents(arr, ids, lengths, sessions, dates)
        self._tail_docs += len(arr)
        if self._tail_docs > max(2048, (len(self._seqs) - self._tail_docs) // 8):
            self.merge()

    def _term_counts(self, texts: Sequence[str], lengths: np.ndarray) -> Iterator[dict[int, int]]:
        """Each text's ``{term id: tf}`` (new words join the vocabulary); its length into
        ``lengths``."""
        vocab = self._vocab
        for i, text in enumerate(texts):
            counts: dict[int, int] = {}
            terms = tokenize(text)
            lengths[i] = len(terms)
            for term in terms:
                tid = vocab.setdefault(term, len(vocab))
                counts[tid] = counts.get(tid, 0) + 1
            yield counts

    def _checked_seqs(self, seqs: Sequence[int]) -> np.ndarray:
        arr = np.asarray(seqs, dtype=np.int64)
        if np.any(np.diff(arr) <= 0) or arr[0] <= self.max_seq:
            raise ValueError("BM25Index.add needs ascending seqs above the current max_seq")
        return arr

    def _append_documents(
        self,
        arr: np.ndarray,
        ids: Sequence[str],
        lengths: np.ndarray,
        sessions: Sequence[int],
        dates: Sequence[int],
    ) -> None:
        """The per-document arrays and live counts of documents just added."""
        self._seqs = np.concatenate([self._seqs, arr])
        self._ids = np.concatenate([self._ids, np.asarray([i.encode() for i in ids], dtype=bytes)])
        self._lengths = np.concatenate([self._lengths, lengths])
        self._sessions = np.concatenate([self._sessions, np.asarray(sessions, dtype=np.int32)])
        self._dates = np.concatenate([self._dates, np.asarray(dates, dtype=np.int64)])
        self._alive = np.concatenate([self._alive, np.ones(len(arr), dtype=bool)])
        self._n_live += len(arr)
        self._len_live += int(lengths.astype(np.int64).sum())

    def remove(self, seqs: Iterable[int]) -> int:
        """Tombstone documents by ``seq``; returns how many live ones were removed."""
        arr = np.asarray(sorted(set(seqs)), dtype=np.int64)
        if not len(arr) or not len(self._seqs):
            return 0
        pos = np.searchsorted(self._seqs, arr)
        inside = pos < len(self._seqs)
        pos, arr = pos[inside], arr[inside]
        pos = pos[self._seqs[pos] == arr]
        pos = pos[self._alive[pos]]
        self._alive[pos] = False
        self._n_live -= len(pos)
        self._len_live -= int(self._lengths[pos].astype(np.int64).sum())
        self._dead_postings = {}
        return len(pos)

    def merge(
        self,
        *,
        compact: bool = False,
        extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Fold the tail into the main segment, dropping dead documents if many.

        Args:
            compact: Drop every dead document now and forget words that only they used
                (done after deletions, so the saved vocabulary holds no deleted words).
            extra: More postings ``(term ids, document positions, tfs)`` to fold in with
                the tail (:meth:`add` with ``bulk``).
        """
        n = len(self._seqs)
        terms, docs, tfs = [self._term_ids_main()], [self._post_doc], [self._post_tf]
        if extra is not None:
            terms.append(extra[0])
            docs.append(extra[1])
            tfs.append(extra[2])
        for tid, (d, t) in self._tail.items():
            terms.append(np.full(len(d), tid, dtype=np.int64))
            docs.append(np.asarray(d, dtype=np.int32))
            tfs.append(np.asarray(t, dtype=np.float32))
        term_arr = np.concatenate(terms)
        doc_arr = np.concatenate(docs)
        tf_arr = np.concatenate(tfs)
        dead = n - int(self._alive.sum())
        if dead and (compact or dead * 5 > n):
            keep = self._alive[doc_arr]
            term_arr, doc_arr, tf_arr = term_arr[keep], doc_arr[keep], tf_arr[keep]
            remap = np.cumsum(self._alive) - 1
            doc_arr = remap[doc_arr].astype(np.int32)
            for name in ("_seqs", "_ids", "_lengths", "_sessions", "_dates"):
                setattr(self, name, getattr(self, name)[self._alive])
            self._alive = np.ones(len(self._seqs), dtype=bool)
        if compact:
            used = np.zeros(len(self._vocab), dtype=bool)
            used[term_arr] = True
            if not used.all():
                new_id = np.cumsum(used) - 1
                term_arr = new_id[term_arr]
                self._vocab = {t: int(new_id[i]) for t, i in self._vocab.items() if used[i]}
        order = np.lexsort((doc_arr, term_arr))
        term_arr, self._post_doc, self._post_tf = term_arr[order], doc_arr[order], tf_arr[order]
        counts = np.bincount(term_arr, minlength=len(self._vocab))
        self._indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._tail, self._tail_docs = {}, 0
        self._tail_arrays, self._dead_postings, self._main_bounds = {}, {}, {}
        self._dense, self._tail_dense = {}, {}

    def _term_ids_main(self) -> np.ndarray:
        counts = np.diff(self._indptr)
        return np.repeat(np.arange(len(counts), dtype=np.int64), counts)

    # -- searching -------------------------------------------------------------------------

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many live documents hold each of ``terms`` (already tokenized; 0 if none)."""
        out: dict[str, int] = {}
        for term in dict.fromkeys(terms):
            tid = self._vocab.get(term)
            out[term] = 0 if tid is None else self._live_df(tid, self._parts(tid))
        return out

    def _live_df(self, tid: int, parts: list[tuple[np.ndarray, np.ndarray]]) -> int:
        """Live documents holding a term: its postings less the dead ones, which are
        counted once per term and cached until the next deletion or merge."""
        df = sum(len(docs) for docs, _ in parts)
        if self._n_live < len(self._seqs):
            dead = self._dead_postings.get(tid)
            if dead is None:
                dead = sum(int((~self._alive[docs]).sum()) for docs, _ in parts)
                self._dead_postings[tid] = dead
            df -= dead
        return df

    def _parts(self, tid: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """A term's postings as ``(docs, tfs)`` pieces, each sorted by document position.

        The main segment's slice (a view, nothing copied) and the tail's postings (converted
        once and cached until the term is added to again). Tail documents were added after
        every main one, so each piece is sorted and a binary search can look a document up.
        """
        parts = []
        if tid + 1 < len(self._indptr):
            lo, hi = int(self._indptr[tid]), int(self._indptr[tid + 1])
            if hi > lo:
                parts.append((self._post_doc[lo:hi], self._post_tf[lo:hi]))
        if tid in self._tail:
            cached = self._tail_arrays.get(tid)
            if cached is None:
                docs, tfs = self._tail[tid]
                cached = (np.asarray(docs, dtype=np.int32), np.asarray(tfs, dtype=np.float32))
                self._tail_arrays[tid] = cached
            parts.append(cached)
        return parts

    def allowed_mask(
        self,
        *,
        session_from: int | None = None,
        session_to: int | None = None,
        date_from: int | None = None,
        date_to: int | None = None,
    ) -> np.ndarray:
        """Boolean mask over document positions: live and inside every given bound."""
        mask = self._alive.copy()
        if session_from is not None:
            mask &= self._sessions >= session_from
        if session_to is not None:
            mask &= self._sessions <= session_to
        if date_from is not None or date_to is not None:
            mask &= self._dates != NO_DATE
            if date_from is not None:
                mask &= self._dates >= date_from
            if date_to is not None:
                mask &= self._dates <= date_to
        return mask

    def filter_mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """:meth:`allowed_mask` of a search's ``filters`` (their dates as epoch seconds);
        ``None`` when there is no filter (every live document)."""
        if filters is None or filters == SearchFilters():
            return None
        low, high = filters.date_from, filters.date_to
        return self.allowed_mask(
            session_from=filters.session_from,
            session_to=filters.session_to,
            date_from=None if low is None else date_to_epoch(low),
            date_to=None if high is None else date_to_epoch(high),
        )

    def last_live(self) -> tuple[int, str] | None:
        """``(seq, id)`` of the live document with the highest ``seq`` (``None``: none)."""
        live = np.flatnonzero(self._alive)
        if not len(live):
            return None
        p = int(live[-1])  # positions are in seq order
        return int(self._seqs[p]), self._ids[p].decode()

    def ids_for(self, seqs: Sequence[int] | np.ndarray) -> list[str]:
        """Record ids of the documents with these ``seq`` numbers (unknown seqs skipped)."""
        arr = np.asarray(seqs, dtype=np.int64)
        if not len(arr) or not len(self._seqs):
            return []
        pos = np.searchsorted(self._seqs, arr)
        inside = pos < len(self._seqs)
        hit = np.zeros(len(arr), dtype=bool)
        hit[inside] = self._seqs[pos[inside]] == arr[inside]
        return [raw.decode() for raw in self._ids[pos[hit]].tolist()]

    def seqs_of_ids(self, ids: Sequence[str]) -> list[int]:
        """``seq`` of the live documents with these record ids."""
        if not ids or not len(self._ids):
            return []
        hit = np.isin(self._ids, np.asarray([i.encode() for i in ids], dtype=bytes))
        return self._seqs[hit & self._alive].tolist()

    def seqs_for(self, mask: np.ndarray) -> np.ndarray:
        """The ``seq`` of every document selected by ``mask``."""
        return self._seqs[mask]

    # -- persistence -----------------------------------------------------------------------

    def save(self, path: Path, meta: dict[str, Any]) -> None:
        """Write the index (tail merged first) and ``meta`` atomically to ``path``.

        The metadata carries a SHA-256 of every array (:func:`_arrays_digest`), so a file
        whose bytes were changed after writing (a flipped bit, negative postings that still
        parse) is detected on load and rebuilt instead of silently ranking wrong.
        """
        if self._tail:
            self.merge()
        vocab = sorted(self._vocab, key=self._vocab.__getitem__)
        arrays: dict[str, np.ndarray] = {
            "vocab": np.frombuffer("\n".join(vocab).encode("utf-8"), dtype=np.uint8),
            "vocab_size": np.asarray([len(vocab)], dtype=np.int64),
            "indptr": self._indptr,
            "post_doc": self._post_doc,
            "post_tf": self._post_tf,
            "seqs": self._seqs,
            "ids": self._ids,
            "lengths": self._lengths,
            "sessions": self._sessions,
            "dates": self._dates,
            "alive": self._alive,
        }
        info = dict(meta, format=_FORMAT, k1=self.k1, b=self.b, tokenizer=self.tokenizer)
        info["sha256"] = _arrays_digest(arrays, info)
        info_blob = np.frombuffer(json.dumps(info).encode("utf-8"), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".bm25-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, meta=info_blob, **cast(dict[str, Any], arrays))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> tuple[BM25Index, dict[str, Any]]:
        """Read an index written by :meth:`save`; returns it with its ``meta``.

        Raises:
            IndexFileError: If the file is missing, unreadable, fails its checksum, holds
                wrong contents (any field of the wrong type or shape, negative postings),
                or was built with another format or tokenizer (:func:`~._text.tokenizer_id`)
                than this process uses.
        """
        info, data = _read_npz(path)
        # Settings first: a file from another format or tokenizer is stale, not damaged,
        # and the error should say so (its checksum may follow other rules too).
        if info.get("format") != _FORMAT or info.get("tokenizer") != tokenizer_id():
            raise IndexFileError(
                f"BM25 index {path} was built with other settings "
                f"(format {info.get('format')}, tokenizer {info.get('tokenizer')!r})"
            )
        if info.get("sha256") != _arrays_digest(data, info):
            raise IndexFileError(f"BM25 index {path} fails its checksum")
        k1, b = info.get("k1"), info.get("b")
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (k1, b)):
            raise IndexFileError(f"BM25 index {path} has unusable settings k1={k1!r}, b={b!r}")
        index = cls(k1=float(k1), b=float(b))  # type: ignore[arg-type]
        try:
            index._fill(data)
        except (KeyError, IndexError, TypeError, ValueError, UnicodeDecodeError) as exc:
            raise IndexFileError(f"BM25 index {path} is inconsistent: {exc}") from exc
        return index, info

    def _fill(self, data: dict[str, np.ndarray]) -> None:
        """Take the arrays of a loaded file, checking every shape and value range."""
        text = data["vocab"].tobytes().decode("utf-8")
        vocab = text.split("\n") if text else []
        if len(vocab) != int(data["vocab_size"][0]):
            raise ValueError("vocabulary size")
        self._vocab = {term: i for i, term in enumerate(vocab)}
        self._indptr = data["indptr"].astype(np.int64, copy=False)
        self._post_doc = data["post_doc"].astype(np.int32, copy=False)
        self._post_tf = data["post_tf"].astype(np.float32, copy=False)
        self._seqs = data["seqs"].astype(np.int64, copy=False)
        self._ids = data["ids"]
        if self._ids.dtype.kind != "S":
            raise ValueError("ids")
        self._lengths = data["lengths"].astype(np.float32, copy=False)
        self._sessions = data["sessions"].astype(np.int32, copy=False)
        self._dates = data["dates"].astype(np.int64, copy=False)
        self._alive = data["alive"].astype(bool, copy=False)
        n = len(self._seqs)
        if (
            len(self._indptr) != len(vocab) + 1
            or int(self._indptr[0]) != 0
            or int(self._indptr[-1]) != len(self._post_doc)
            or (len(self._indptr) > 1 and np.any(np.diff(self._indptr) < 0))
            or len(self._post_tf) != len(self._post_doc)
            or any(len(a) != n for a in (self._ids, self._lengths, self._sessions, self._dates))
            or len(self._alive) != n
            or (len(self._post_doc) and int(self._post_doc.max()) >= n)
            or (len(self._post_doc) and int(self._post_doc.min()) < 0)
            or (len(self._post_tf) and not bool(np.all(self._post_tf > 0)))
            or (n and not bool(np.all(self._lengths >= 0)))
            or (n > 1 and np.any(np.diff(self._seqs) <= 0))
        ):
            raise ValueError("array shapes or values disagree")
        if not _sorted_within_terms(self._indptr, self._post_doc):
            raise ValueError("postings not sorted by document")  # MaxScore looks them up
        alive = np.flatnonzero(self._alive)
        self._n_live = len(alive)
        self._len_live = int(self._lengths[alive].astype(np.int64).sum())


def _sorted_within_terms(indptr: np.ndarray, docs: np.ndarray) -> bool:
    """Every term's postings strictly ascending by document (as :meth:`merge` writes them)."""
    if len(docs) < 2:
        return True
    rising = np.diff(docs) > 0
    starts = indptr[1:-1]
    rising[starts[(starts > 0) & (starts < len(docs))] - 1] = True  # a new term may restart
    return bool(rising.all())


def _read_npz(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The metadata dict and arrays of a saved index, or :class:`IndexFileError`."""
    try:
        with np.load(path, allow_pickle=False) as z:
            info = json.loads(z["meta"].tobytes().decode("utf-8"))
            data = {key: z[key] for key in z.files if key != "meta"}
    except Exception as exc:  # zipfile, OSError (a directory, no permission), JSON …
        raise IndexFileError(f"cannot read BM25 index {path}: {exc}") from exc
    if not isinstance(info, dict):
        raise IndexFileError(f"BM25 index {path}: metadata is not an object")
    return info, data


def _arrays_digest(arrays: dict[str, np.ndarray], info: dict[str, Any]) -> str:
    """SHA-256 over the metadata (but its own ``sha256``) and every array's name, dtype,
    shape and bytes, in name order: a field or byte changed after saving is detected."""
    digest = hashlib.sha256()
    fields = {k: v for k, v in info.items() if k != "sha256"}
    digest.update(json.dumps(fields, sort_keys=True, default=str).encode("utf-8"))
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()
