"""Real text for the benches: a file of passages, embedded once with the bundled MiniLM.

The synthetic vectors of ``bench search`` and ``bench backend`` are generated in seconds at
any size, but approximate indexes behave differently on them than on real sentence vectors
(``docs/results/ann-real-text.md``: isotropic noise around topics flatters IVF and is hard
for HNSW). Recall at a million records means something only on real vectors, and the
bundled model embeds about 300 passages a second on two cores, so they are computed once
and kept beside the corpus:

* ``PASSAGES.txt`` — one passage per line (blank lines ignored, each line distinct);
* ``PASSAGES.txt.vectors/`` — ``manifest.json`` (model name, dimension, chunk size, the
  corpus file's SHA-256) and one ``NNNNNNN.npy`` per :data:`CHUNK` lines, written
  atomically, so an interrupted run resumes where it stopped; a cache made by another model
  or for another version of the file is refused, never mixed in.

Only the chunks a run needs are embedded: the first ``records`` lines (the records) and
the last ``queries`` lines (held out as queries: passages like the records but not among
them, as a memory's questions are about what it holds).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.errors import ConfigurationError

__all__ = ["CHUNK", "read_passages", "real_corpus"]

CHUNK = 50_000
"""Lines per cached vector file (about 73 MiB of float32 at 384 dimensions)."""


def read_passages(path: str | Path) -> list[str]:
    """The file's non-blank lines, stripped; a repeated line is an error.

    Repeats would make the benches' text → vector lookup ambiguous and the exact top-k
    ill-defined, so they are refused rather than silently dropped.
    """
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    passages = [line for line in lines if line]
    if len(set(passages)) != len(passages):
        raise ConfigurationError(f"{path}: passages must be distinct (a line repeats)")
    return passages


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cache(path: Path, model: str, dim: int) -> Path:
    """The vector folder of ``path``, created with its manifest or checked against it."""
    folder = Path(f"{path}.vectors")
    manifest = {"model": model, "dimension": dim, "chunk": CHUNK, "sha256": _sha256(path)}
    found = folder / "manifest.json"
    if found.exists():
        old = json.loads(found.read_text(encoding="utf-8"))
        if old != manifest:
            raise ConfigurationError(
                f"{folder} was made for another corpus file or model ({old}); "
                "delete it to embed again"
            )
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    found.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return folder


def _chunk_vectors(folder: Path, start: int, texts: list[str], model: Any) -> np.ndarray:
    """Vectors of ``texts`` (lines ``start …``), from the cache or embedded and cached."""
    target = folder / f"{start:07d}.npy"
    if target.exists():
        vecs = np.load(target)
        if vecs.shape[0] == len(texts):
            return np.asarray(vecs, dtype=np.float32)
        # a shorter last chunk, written when the file had fewer lines: embed again
    t0 = time.perf_counter()
    vecs = model.embed_array(texts).astype(np.float32)
    tmp = folder / f"{start:07d}.tmp.npy"
    np.save(tmp, vecs)
    os.replace(tmp, target)  # never a half-written chunk under the real name
    rate = len(texts) / max(time.perf_counter() - t0, 1e-9)
    print(f"embedded lines {start}–{start + len(texts)} ({rate:.0f}/s)", file=sys.stderr)
    return vecs


def _vectors(path: Path, passages: list[str], wanted: list[int], model: Any) -> np.ndarray:
    """Vectors of the lines ``wanted`` (sorted line numbers), chunk by chunk."""
    from mnemon_langgraph.search.embeddings import embedding_identity

    name, dim = embedding_identity(model)
    folder = _cache(path, name, dim)
    out = np.zeros((len(wanted), dim), dtype=np.float32)
    wanted_arr = np.asarray(wanted, dtype=np.int64)
    for start in sorted({w - w % CHUNK for w in wanted}):
        stop = min(start + CHUNK, len(passages))
        vecs = _chunk_vectors(folder, start, passages[start:stop], model)
        rows = np.flatnonzero((wanted_arr >= start) & (wanted_arr < stop))
        out[rows] = vecs[wanted_arr[rows] - start]
    return out


def real_corpus(
    path: str | Path, records: int, queries: int, *, model: Any = None
) -> dict[str, Any]:
    """The first ``records`` passages and the last ``queries`` ones, with their vectors.

    Args:
        path: A text file, one passage per line (see the module doc).
        records: Passages used as records (the file's first lines).
        queries: Passages held out as queries (the file's last lines).
        model: Embedder with ``embed_array`` (default: the bundled MiniLM).

    Returns:
        ``{"texts", "vecs", "queries", "qvecs"}``: lists of strings and float32 arrays of
        unit vectors (one row per text).

    Raises:
        ConfigurationError: The file has fewer than ``records + queries`` passages, or its
            vector cache belongs to another file or model.
    """
    path = Path(path)
    passages = read_passages(path)
    if records < 1 or queries < 1 or records + queries > len(passages):
        raise ConfigurationError(
            f"{path} holds {len(passages)} passages: not enough for {records} records and "
            f"{queries} held-out queries"
        )
    if model is None:
        from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

        model = MiniLMEmbeddings()
    held_out = list(range(len(passages) - queries, len(passages)))
    vecs = _vectors(path, passages, list(range(records)) + held_out, model)
    return {
        "texts": passages[:records],
        "vecs": vecs[:records],
        "queries": [passages[i] for i in held_out],
        "qvecs": vecs[records:],
    }
