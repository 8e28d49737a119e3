"""Hybrid search: BM25 and dense rankings fused by reciprocal rank fusion, per namespace.

Each namespace has its own derived indexes (:class:`NamespaceIndex`) in a folder next to the
journal, ``<db>.indexes/<sha256(namespace json)[:24]>/``:

* ``bm25.npz`` — :class:`~mnemon_langgraph.search._bm25.BM25Index` (postings, vocabulary, per-record
  seq/id/session/date), with its metadata inside;
* ``vectors.json`` + ``vectors-<token>.faiss`` — :class:`~.vectors.VectorIndex`;
* ``namespace.json`` — which namespace the folder belongs to (for humans and ``stats``).

The index files are *checkpoints* of the journal, which stays the log: each records the
journal ``max_seq`` and ``generation`` (bumped by every deletion) it reflects. Before every
search and after every ingest, :meth:`NamespaceIndex.sync` compares them with the journal:

* same generation, journal has newer records → **catch up**: index only the records after
  the checkpoint (text from the journal, vectors from the journal — never re-embedded);
* other generation (a deletion, maybe by another process) and the indexes are in memory →
  **apply the deletions in place**: the audit rows since our generation name the deleted
  record ids, which are masked in BM25 and tombstoned in FAISS (no rebuild);
* other generation after an erase, or nothing in memory yet → load the checkpoint if it is
  current, else (unreadable/missing/stale files) **rebuild** from the journal's records and
  stored vectors, then save.

Checkpoints are written atomically after rebuilds, when more than :data:`SAVE_EVERY`
records — or a tenth of the index, whichever is more — were added since the last one, and
when the store closes. A deletion unlinks the
checkpoint files at once (they hold the deleted words) instead of rewriting them per call;
the next save writes a compacted one. Each checkpoint carries a SHA-256 of its contents and
metadata and is rebuilt when it fails it. When the folder cannot be written (read-only,
disk full) the indexes are served from memory with one warning: a save never fails the
write that triggered it. Records the index cannot take (a journal written before input
validation) are left out with a warning rather than making the namespace unsearchable, and
the flat → approximate (HNSW, or IVF) conversion, and an IVF index's regrowth, run in a background
thread, never inside a write.

Leftovers: a process killed while saving leaves temp files (``.bm25-*.npz``,
``.vectors.json-*``) or a ``vectors-*.faiss`` that ``vectors.json`` does not name. They hold
record vocabulary and vectors — also of records deleted later — so every load and save of a
namespace index removes them (:func:`clean_index_folder`). Saves, loads and this cleanup
take an exclusive ``flock`` on ``<folder>/.lock``; since every writer holds it while its
temp files exist, a leftover seen while holding it belongs to a dead process and goes at
once. Where ``fcntl`` is missing (Windows) there is no lock, and only leftovers older than
:data:`STALE_TEMP_SECONDS` are removed, so a concurrent save's files are never touched.
(Erasing a namespace deletes the whole folder, lock file included, without the lock.)

Fusion (:func:`fused_ranking`): reciprocal rank fusion, ``score = Σ 1 / (60 + rank)`` over the
BM25 and dense rankings (0-based ranks), after Cormack, Clarke & Büttcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009. Each
retriever contributes its top ``depth = max(candidate_depth, offset + k)`` records, so pages
within the first ``candidate_depth`` (default 100) records are cut from the very same fused
ranking and concatenate to it. Filters (dates, sessions) are applied *inside* both
retrievers (BM25 masks documents; FAISS gets an ID selector), so a filtered search still
returns ``offset + k`` records whenever that many match.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.errors import EraseError
from mnemon_langgraph.search._bm25 import BM25Index, IndexFileError, date_to_epoch
from mnemon_langgraph.search._fusion import CANDIDATE_DEPTH, RRF_K, rrf_fuse
from mnemon_langgraph.search._vectors import VectorIndex, normalize_rows
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.types import MAX_SESSION, Namespace, Record, SearchFilters

try:  # POSIX only; without it leftovers are removed by age alone
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "SAVE_EVERY",
    "STALE_TEMP_SECONDS",
    "NamespaceIndex",
    "RankedSeq",
    "all_index_folders",
    "clean_index_folder",
    "index_folder",
    "indexes_root",
    "remove_index_folder",
]

logger = logging.getLogger(__name__)

SAVE_EVERY = 5_000
"""Records added since the last checkpoint after which the indexes are saved again.

Past 50,000 records a tenth of the index is used instead: a checkpoint rewrites the whole
index, so a fixed interval made ingest's disk writes quadratic in the namespace's size
(docs/results/log.md, "Records and the journal").
After a crash, at most that tenth is caught up from the journal (stored vectors, nothing
re-embedded) when the index opens.
"""

STALE_TEMP_SECONDS = 60.0
"""Age after which a leftover is removed even without the folder lock (no ``fcntl``)."""

_META_VERSION = 1
_LOCK_NAME = ".lock"
_TEMP_PREFIXES = (".bm25-", ".vectors.json-")


def indexes_root(db_path: str | Path) -> Path:
    """Folder holding every namespace's index folder: ``<real db path>.indexes``.

    Derived from the journal's *resolved* path, so a journal opened through a symlink and
    through its real path finds the same indexes (and an erase through either removes them).
    """
    p = Path(os.path.realpath(db_path))
    return p.with_name(p.name + ".indexes")


def _folder_name(namespace: Namespace) -> str:
    key = json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def index_folder(db_path: str | Path, namespace: Namespace) -> Path:
    """``<db>.indexes/<sha256(json namespace)[:24]>``: one folder per namespace."""
    return indexes_root(db_path) / _folder_name(namespace)


def all_index_folders(db_path: str | Path, namespace: Namespace) -> list[Path]:
    """Every place the namespace's index folder may be: under the real and the given path.

    Versions before the resolved-path rule put indexes next to the path as given (a
    symlink's name); an erase removes both.
    """
    given = Path(db_path)
    legacy = given.with_name(given.name + ".indexes") / _folder_name(namespace)
    current = index_folder(db_path, namespace)
    return [current] if legacy == current else [current, legacy]


def remove_index_folder(folder: Path) -> None:
    """Remove an index folder and every file in it, or raise :class:`EraseError`.

    A symlinked folder loses its *target's* files (they hold the vocabulary), then the
    link. A folder that is a plain file is removed too. Nothing is ignored: a file that
    cannot be removed (read-only folder) is an error naming it, never a silent success.
    """
    try:
        if folder.is_symlink():
            target = Path(os.path.realpath(folder))
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            folder.unlink()
        elif folder.is_dir():
            shutil.rmtree(folder)
        elif folder.exists():
            folder.unlink()
    except OSError as exc:
        raise EraseError(
            f"cannot remove index files at {folder}: {exc.strerror or exc} "
            f"({getattr(exc, 'filename', '') or folder}); fix the permissions and erase again"
        ) from exc


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[bool]:
    """Exclusive ``flock`` on ``<folder>/.lock`` while the block runs; yields whether held.

    Never creates ``folder``: a missing folder (or no ``fcntl``, or an unwritable folder)
    yields ``False`` and nothing is locked.
    """
    if fcntl is None or not folder.is_dir():
        yield False
        return
    try:
        fd = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # also releases the lock


def _live_vector_file(folder: Path) -> str | None:
    try:
        meta = json.loads((folder / "vectors.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = meta.get("file") if isinstance(meta, dict) else None
    return Path(name).name if isinstance(name, str) else None


def clean_index_folder(folder: Path, *, locked: bool, now: float | None = None) -> list[str]:
    """Remove leftovers of killed saves from a namespace's index folder.

    Leftovers are temp files (``.bm25-*``, ``.vectors.json-*``) and ``vectors-*.faiss``
    files other than the one ``vectors.json`` names. Other files are never touched.

    Args:
        folder: The namespace's index folder (missing: nothing to do).
        locked: Whether the caller holds the folder lock (see the module docstring). If
            not, only leftovers older than :data:`STALE_TEMP_SECONDS` are removed, as a
            younger one may belong to a save in progress in another process.
        now: Current time (``time.time()``), for the age rule.

    Returns:
        Names of the files removed.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    live = _live_vector_file(folder)
    cutoff = (time.time() if now is None else now) - STALE_TEMP_SECONDS
    removed: list[str] = []
    for entry in entries:
        name = entry.name
        leftover = name.startswith(_TEMP_PREFIXES) or (
            name.startswith("vectors-") and name.endswith(".faiss") and name != live
        )
        if not leftover:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if not locked and entry.stat(follow_symlinks=False).st_mtime > cutoff:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            logger.warning("cannot remove index leftover %s: %s", entry.path, exc)
            continue
        removed.append(name)
    if removed:
        logger.info("removed %d index leftover(s) in %s", len(removed), folder)
    return removed


@dataclass(frozen=True, slots=True)
class RankedSeq:
    """One entry of a fused ranking, before its record is fetched.

    Attributes:
        seq: Journal seq of the record.
        record_id: Its id.
        rank: 0-based fused rank.
        score: Fused score.
        bm25_rank: 0-based BM25 rank (``None`` if not in BM25's candidates).
        dense_rank: 0-based dense rank (``None`` if not in the dense candidates).
    """

    seq: int
    record_id: str
    rank: int
    score: float
    bm25_rank: int | None
    dense_rank: int | None


def same_journal(journal: Journal, namespace: Namespace, bm25: BM25Index) -> bool:
    """Whether a checkpoint's newest live record is ``journal``'s record at that seq.

    Generation and ``max_seq`` alone cannot tell a checkpoint of this journal from one
    left by a journal deleted and written afresh at the same path (both start at
    generation 0 and count seq from 1). Record ids are derived from the record, so a
    match means the checkpoint indexes these records.
    """
    last = bm25.last_live()
    if last is None:
        return True
    seq, record_id = last
    found = journal.get_records(namespace, [record_id])
    return bool(found) and found[0].seq == seq


class NamespaceIndex:
    """The BM25 and vector indexes of one namespace, kept in step with the journal.

    All methods take the instance's lock, so one instance may be shared by threads; searches
    of the same namespace run one at a time (they take milliseconds).

    Args:
        journal: The journal (source of truth).
        namespace: The namespace.
        folder: Its index folder.
        dim: Vector dimension.
        candidate_depth: See :data:`CANDIDATE_DEPTH`.
        vector_settings: Passed to :class:`VectorIndex` (e.g. ``hnsw_threshold``).
    """

    def __init__(
        self,
        journal: Journal,
        namespace: Namespace,
        folder: Path,
        dim: int,
        *,
        candidate_depth: int = CANDIDATE_DEPTH,
        vector_settings: dict[str, Any] | None = None,
    ) -> None:
        self.journal = journal
        self.namespace = namespace
        self.folder = folder
        self.dim = dim
        self.candidate_depth = candidate_depth
        self.vector_settings = dict(vector_settings or {})
        self.lock = threading.RLock()
        self.bm25 = BM25Index()
        self.vectors = VectorIndex(dim, **self.vector_settings)
        self.max_seq = 0
        self.generation = -1  # never synced
        self.unsaved = 0
        self.rebuilds = 0
        """How many times the indexes were rebuilt from the journal (tests read it)."""
        self.load_problem: str | None = None
        """Why the saved checkpoints were last refused (``mnemon doctor`` reports it)."""
        self.save_problem: str | None = None
        """Why the last save failed, while the indexes are served from memory."""
        self.skipped: set[str] = set()
        """Ids of committed records the index could not take (see :meth:`_add_text`)."""
        self._compact_pending = False
        self._converting = False
        self._convert_thread: threading.Thread | None = None
        self.deletions_applied = 0
        """Deletions (audit rows) applied in place by :meth:`sync`, without a rebuild."""

    # -- keeping in step with the journal --------------------------------------------------

    def _meta(self) -> dict[str, Any]:
        return {
            "version": _META_VERSION,
            "namespace": list(self.namespace),
            "max_seq": self.max_seq,
            "generation": self.generation,
        }

    def _try_load(self, generation: int, journal_max: int) -> bool:
        """Load both checkpoints if they are sound and match the journal; else ``False``."""
        reason = self._load_problem(generation, journal_max)
        if reason is not None:
            self.load_problem = reason
            logger.info("index of %s not loaded (%s); rebuilding", self.namespace, reason)
            return False
        self.load_problem = None
        return True

    def checkpoint_problem(self) -> str | None:
        """Load the saved checkpoints and say why they are unusable (``None``: loaded).

        For ``mnemon doctor``: damaged files, wrong field types, a failed checksum, or a
        checkpoint of another journal state all come back as one readable reason.
        """
        with self.lock:
            generation = self.journal.generation(self.namespace)
            return self._load_problem(generation, self.journal.max_seq(self.namespace))

    def _load_problem(self, generation: int, journal_max: int) -> str | None:
        """Load the checkpoints; returns why they cannot be used (``None``: loaded)."""
        try:
            with _folder_lock(self.folder) as locked:
                clean_index_folder(self.folder, locked=locked)
                # both files are read and checksummed at once: numpy, hashlib and FAISS
                # release the GIL, and at 1M records each takes seconds
                with ThreadPoolExecutor(1, thread_name_prefix="mnemon-load") as pool:
                    pending = pool.submit(BM25Index.load, self.folder / "bm25.npz")
                    vectors, vmeta = VectorIndex.load(self.folder, **self.vector_settings)
                    bm25, bmeta = pending.result()
        except IndexFileError as exc:
            return str(exc)
        except Exception as exc:  # e.g. a FAISS or numpy error on a damaged file
            return f"unreadable: {type(exc).__name__}: {exc}"
        for meta in (bmeta, vmeta):
            max_seq = meta.get("max_seq")
            if (
                meta.get("version") != _META_VERSION
                or meta.get("namespace") != list(self.namespace)
                or not isinstance(max_seq, int)
                or isinstance(max_seq, bool)
            ):
                return "metadata of another version or namespace"
            if meta.get("generation") != generation or max_seq > journal_max:
                return "stale (the journal changed since it was saved)"
        if bmeta["max_seq"] != vmeta["max_seq"] or vectors.dim != self.dim:
            return "BM25 and vector checkpoints disagree"
        if not same_journal(self.journal, self.namespace, bm25):
            return "a checkpoint of another journal (its last record is not in this one)"
        self.bm25, self.vectors = bm25, vectors
        self.max_seq, self.generation = int(bmeta["max_seq"]), generation
        return None

    def sync(self) -> None:
        """Bring the indexes up to date with the journal (load, catch up or rebuild)."""
        with self.lock:
            generation = self.journal.generation(self.namespace)
            journal_max = self.journal.max_seq(self.namespace)
            if (
                generation != self.generation
                and not self._apply_deletions(generation)
                and not self._try_load(generation, journal_max)
            ):
                self.rebuild(generation)
                return
            if journal_max > self.max_seq:
                self._catch_up()
        self._convert_later()

    def _apply_deletions(self, generation: int) -> bool:
        """Apply deletions made since our generation (maybe by another process) in place.

        The journal's audit rows name every deleted record id (they are the tombstones), so
        an index already in memory only has to mask those records: BM25 drops their
        postings from scoring, FAISS filters them (flat: ``remove_ids``; IVF / HNSW: tombstones
        passed as an ``IDSelector``). At 1M records this replaces a rebuild of minutes.
        Records written in the same transactions (the survivors of
        ``delete_messages``) have higher seqs and are caught up as usual.

        Returns:
            ``False`` when it cannot apply them (never synced, or an erase in between:
            the caller loads or rebuilds instead).
        """
        if self.generation < 0:
            return False
        entries = [e for e in self.journal.audit_log(self.namespace) if e.id > self.generation]
        if any(e.action == "erase_namespace" for e in entries):
            return False
        seqs = self.bm25.seqs_of_ids([rid for e in entries for rid in e.record_ids])
        self.bm25.remove(seqs)
        self.vectors.remove(seqs)
        self.generation = generation
        self.deletions_applied += len(entries)
        self._compact_pending = self._compact_pending or bool(seqs)
        return True

    def rebuild(self, generation: int | None = None) -> None:
        """Rebuild both indexes from the journal (stored vectors; nothing re-embedded)."""
        with self.lock:
            if generation is None:
                generation = self.journal.generation(self.namespace)
            self.bm25 = BM25Index()
            self.vectors = VectorIndex(self.dim, **self.vector_settings)
            self.max_seq, self.generation = 0, generation
            self.skipped = set()
            self._catch_up(save=False, convert=True)  # not a write path: convert here
            self.rebuilds += 1
            self.save()

    def _catch_up(self, *, save: bool | None = None, convert: bool = False) -> None:
        after = self.max_seq
        id_to_seq: dict[str, int] = {}
        batch: list[Record] = []
        for record in self.journal.records(self.namespace, after_seq=after):
            batch.append(record)
            id_to_seq[record.id] = record.seq
            if len(batch) >= 4096:
                self._add_text(batch)
                batch = []
        self._add_text(batch)
        if not id_to_seq:
            return
        for ids, vecs in self.journal.iter_vectors(self.namespace, after_seq=after):
            keep = [i for i, rid in enumerate(ids) if rid in id_to_seq and rid not in self.skipped]
            if keep:
                self.vectors.add(
                    [id_to_seq[ids[i]] for i in keep], normalize_rows(vecs[keep]), convert=convert
                )
        self.max_seq = max(id_to_seq.values())
        self.vectors.advance(self.max_seq)
        self.unsaved += len(id_to_seq)
        if save or (save is None and self.unsaved >= max(SAVE_EVERY, len(self.vectors) // 10)):
            self.save()

    def _add_text(self, records: list[Record]) -> None:
        """Index records' text; a record the index cannot take is skipped, visibly.

        The journal has committed these records, so one the index refuses (a value out
        of its range, from a journal written before validation) must not make the rest
        of the namespace unsearchable: it is left out with a warning, listed in
        :attr:`skipped`, and reported by ``mnemon doctor``.
        """
        try:
            self._add_text_batch(records)
        except (ValueError, OverflowError, TypeError) as exc:
            if len(records) > 1:
                for record in records:
                    self._add_text([record])
                return
            self.skipped.add(records[0].id)
            logger.warning(
                "record %s of namespace %s cannot be indexed (%s); searches leave it out, "
                "see `mnemon doctor`",
                records[0].id,
                list(self.namespace),
                exc,
            )

    def _add_text_batch(self, records: list[Record]) -> None:
        if not records:
            return
        sessions = [r.session for r in records]
        if any(not 0 <= s <= MAX_SESSION for s in sessions):
            # Only a journal written before sessions were validated holds these: index
            # the records anyway (session filters treat them as MAX_SESSION) rather than
            # make the whole namespace unsearchable; `mnemon doctor` reports them.
            logger.warning(
                "namespace %s holds records with a session number outside 1..%d; "
                "session filters treat them as %d",
                list(self.namespace),
                MAX_SESSION,
                MAX_SESSION,
            )
            sessions = [min(max(s, 0), MAX_SESSION) for s in sessions]
        self.bm25.add(
            [r.seq for r in records],
            [r.id for r in records],
            [r.text for r in records],
            sessions,
            [date_to_epoch(r.date) for r in records],
        )

    # -- approximate-index conversion off the write path ----------------------------------

    def _convert_later(self) -> None:
        """Start the flat → approximate conversion (or IVF regrowth) in the background, if due."""
        with self.lock:
            if self._converting or not self.vectors.needs_conversion:
                return
            self._converting = True
        thread = threading.Thread(
            target=self.convert_vectors, name="mnemon-hnsw-convert", daemon=True
        )
        thread.start()
        self._convert_thread = thread

    def settle(self) -> bool:
        """:meth:`sync`, then wait for a conversion under way or due (the store's
        ``warm``). Returns whether the vector index is the kind the namespace settles on
        (``False``: a conversion failed; it was logged, and exact search goes on)."""
        self.sync()
        thread = self._convert_thread
        if thread is not None:
            thread.join()
        return not self.vectors.needs_conversion

    def convert_vectors(self) -> bool:
        """Build the approximate index without holding the lock, then swap it in.

        The namespace keeps serving (exact search) and accepting writes meanwhile; what
        they changed is applied to the new index under the lock before the swap. Returns
        whether a new index was swapped in (``False``: nothing due, or a rebuild replaced
        the flat index meanwhile).
        """
        try:
            with self.lock:
                source = self.vectors
                if not source.needs_conversion:
                    return False
                seqs, vecs = source.live_vectors()
            built = VectorIndex.hnsw_from(self.dim, seqs, vecs, **self.vector_settings)
            with self.lock:
                if self.vectors is not source:
                    return False
                built.catch_up_from(source, seqs)
                self.vectors = built
                self.unsaved += 1
                return True
        except Exception as exc:  # a failed background build must not kill anything
            logger.warning("vector index conversion of %s failed: %s", list(self.namespace), exc)
            return False
        finally:
            self._converting = False

    # -- deleting --------------------------------------------------------------------------

    def remove(self, record_ids: list[str]) -> None:
        """Drop deleted records from both indexes (after a journal deletion).

        The saved checkpoint files still hold the deleted records' words and vectors, so
        they are unlinked now (cheap) instead of being rewritten on every call (a full
        save per deletion would cost more than the deletion: docs/results/log.md, "Records
        and the journal"); the next :meth:`flush` / close writes a
        compacted checkpoint, and a process opening the namespace meanwhile rebuilds it
        from the journal.
        """
        with self.lock:
            seqs = self.bm25.seqs_of_ids(record_ids)
            self.bm25.remove(seqs)
            self.vectors.remove(seqs)
            self._compact_pending = True
            self.generation = self.journal.generation(self.namespace)
            self.sync()  # also picks up anything written meanwhile
            self._unlink_checkpoints()
            self.unsaved += max(1, len(seqs))

    def drop_checkpoints(self) -> None:
        """Unlink the saved checkpoint files (the in-memory indexes stay; the next save
        writes them again, another process rebuilds them from the journal meanwhile)."""
        with self.lock:
            self._unlink_checkpoints()

    def _unlink_checkpoints(self) -> None:
        with _folder_lock(self.folder):
            for name in ("bm25.npz", "vectors.json"):
                path = self.folder / name
                try:
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink(missing_ok=True)
                except OSError as exc:
                    self._warn_unsaved(exc)
            clean_index_folder(self.folder, locked=True)

    # -- saving ----------------------------------------------------------------------------

    def save(self) -> None:
        """Write both checkpoints atomically (BM25 first, then vectors).

        Holds the folder lock meanwhile and then removes leftovers of killed saves
        (:func:`clean_index_folder`). An index that never held a record is not written (and
        an old folder is removed), so searching an erased or unknown namespace leaves no
        folder behind. Indexes are derived data: when the folder cannot be written (read
        only, disk full) one warning is logged and the namespace is served from memory;
        a save never fails the write that triggered it. Over a read-only journal
        (``mnemon ui``) nothing is written: the indexes are kept in memory only.
        """
        if getattr(self.journal, "read_only", False):
            return
        with self.lock:
            try:
                self._save()
            except OSError as exc:
                self._warn_unsaved(exc)
                return
            self.unsaved = 0
            self.save_problem = None

    def _save(self) -> None:
        if self.max_seq == 0 and len(self.bm25) == 0:
            if self.folder.exists() or self.folder.is_symlink():
                with contextlib.suppress(EraseError):
                    remove_index_folder(self.folder)
            return
        if self._compact_pending:
            self.bm25.merge(compact=True)  # the saved vocabulary keeps no deleted words
            self._compact_pending = False
        self._clear_obstacles()
        meta = self._meta()
        with _folder_lock(self.folder) as locked:
            (self.folder / "namespace.json").write_text(
                json.dumps(list(self.namespace), ensure_ascii=False), encoding="utf-8"
            )
            self.bm25.save(self.folder / "bm25.npz", meta)
            self.vectors.save(self.folder, meta)
            clean_index_folder(self.folder, locked=locked)

    def _clear_obstacles(self) -> None:
        """Make room for the checkpoints: our folder or files that are the wrong kind."""
        if self.folder.exists() and not self.folder.is_dir():
            self.folder.unlink()  # a plain file where the namespace's folder belongs
        self.folder.mkdir(parents=True, exist_ok=True)
        for name in ("bm25.npz", "vectors.json", "namespace.json"):
            path = self.folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)

    def _warn_unsaved(self, exc: OSError) -> None:
        problem = f"{exc.strerror or exc}"
        if problem != self.save_problem:
            logger.warning(
                "cannot save the indexes of namespace %s in %s (%s); serving them from "
                "memory, nothing stored is lost (`mnemon doctor` rebuilds them later)",
                list(self.namespace),
                self.folder,
                problem,
            )
        self.save_problem = problem

    def flush(self) -> None:
        """Save if anything was added since the last checkpoint.

        Not when the journal's generation moved (a deletion or an erase by another store
        or process): the in-memory index may then hold deleted text, which must not be
        written back; the next :meth:`sync` rebuilds it from the journal instead.
        """
        with self.lock:
            if self.unsaved:
                if self.journal.generation(self.namespace) != self.generation:
                    self.unsaved = 0
                    return
                self.save()

    def erase_files(self, extra: list[Path] | None = None) -> None:
        """Delete the namespace's index folder (its vocabulary contains record text).

        Args:
            extra: Other folders to remove too (see :func:`all_index_folders`).

        Raises:
            EraseError: Something could not be removed (nothing is ignored).
        """
        with self.lock:
            self.bm25 = BM25Index()
            self.vectors = VectorIndex(self.dim, **self.vector_settings)
            self.max_seq, self.generation, self.unsaved = 0, -1, 0
            for folder in [self.folder, *(extra or [])]:
                remove_index_folder(folder)

    # -- searching -------------------------------------------------------------------------

    def term_statistics(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """Live records and each term's document frequency (BM25's own counts)."""
        with self.lock:
            self.sync()
            return len(self.bm25), self.bm25.document_frequencies(terms)

    def filter_mask(
        self, filters: SearchFilters | None
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The BM25 index's mask of the records ``filters`` allows, and their seqs
        (``None, None``: no filter). Call under :attr:`lock`, after :meth:`sync`."""
        mask = self.bm25.filter_mask(filters)
        return (None, None) if mask is None else (mask, self.bm25.seqs_for(mask))

    def fused_ranking(
        self,
        query: str,
        query_vector: np.ndarray,
        *,
        k: int,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[RankedSeq]:
        """Hits ``offset .. offset + k`` of the fused ranking (see the module docstring)."""
        if k <= 0:
            return []
        with self.lock:
            self.sync()
            depth = max(self.candidate_depth, offset + k)
            mask, allowed = self.filter_mask(filters)
            if allowed is not None and not len(allowed):
                return []
            bm_seqs, _ = self.bm25.search(query, depth, mask=mask)
            qv = normalize_rows(query_vector)[0]
            dn_seqs, _ = self.vectors.search(qv, depth, allowed=allowed)
            return self.fused_page([bm_seqs.tolist(), dn_seqs.tolist()], k=k, offset=offset)

    def fused_page(
        self,
        rankings: Sequence[Sequence[int]],
        *,
        k: int,
        offset: int = 0,
        weights: Sequence[float] | None = None,
    ) -> list[RankedSeq]:
        """Hits ``offset .. offset + k`` of ``rankings`` (seqs, BM25's first, the dense
        list's second) fused by :func:`rrf_fuse`. Call under :attr:`lock`."""
        page = rrf_fuse(rankings, k=RRF_K, weights=weights, limit=offset + k)[offset:]
        ids = self.bm25.ids_for([f.key for f in page])
        if len(ids) != len(page):  # cannot happen: both indexes hold the same seqs
            known = set(self.bm25.seqs().tolist())
            page = [f for f in page if f.key in known]
            ids = self.bm25.ids_for([f.key for f in page])
        return [
            RankedSeq(
                seq=int(f.key),
                record_id=rid,
                rank=offset + i,
                score=f.score,
                bm25_rank=f.ranks[0],
                dense_rank=f.ranks[1],
            )
            for i, (f, rid) in enumerate(zip(page, ids, strict=True))
        ]
