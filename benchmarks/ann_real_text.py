"""Recall@48 of the store's approximate indexes on REAL MiniLM vectors (not synthetic).

Corpus: distinct sentences (40–300 characters) from the docstrings of the Python standard
library and the installed packages — real English, embedded with the package's default
MiniLM; nothing to download. Queries: held-out sentences of the same corpus, and LoCoMo dev
questions (``$MNEMON_LOCOMO_DEV``, if present) as queries unlike the records. Both index kinds
are the package's own :class:`~mnemon_langgraph.search._vectors.VectorIndex`; the truth is an
exact inner-product search over the same vectors.

Run: ``python benchmarks/ann_real_text.py 60000`` (about 5 minutes of embedding on 2 cores).
"""

from __future__ import annotations

import ast
import glob
import json
import os
import random
import re
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

from mnemon_langgraph.search._vectors import VectorIndex
from mnemon_langgraph.search.embeddings import MiniLMEmbeddings


def docstring_sentences(limit: int) -> list[str]:
    """Distinct docstring sentences of the stdlib and site-packages, shuffled (seed 0)."""
    roots = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    paths = [p for root in roots for p in sorted(glob.glob(f"{root}/**/*.py", recursive=True))]
    seen: set[str] = set()
    out: list[str] = []
    for path in paths:
        try:
            tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        for node in ast.walk(tree):
            doc = ast.get_docstring(node) if isinstance(node, kinds) else None
            for s in re.split(r"(?<=[.!?])\s+", " ".join((doc or "").split())):
                if 40 <= len(s) <= 300 and re.match(r"^[A-Z][a-z]", s) and s not in seen:
                    seen.add(s)
                    out.append(s)
        if len(out) >= 4 * limit:
            break
    random.Random(0).shuffle(out)
    return out


def locomo_questions(n: int) -> list[str]:
    folder = os.environ.get("MNEMON_LOCOMO_DEV", "")
    qs = [
        str(q["question"])
        for f in sorted(glob.glob(f"{folder}/*.json"))
        if folder
        for q in json.loads(Path(f).read_text(encoding="utf-8")).get("qa", [])
    ]
    random.Random(0).shuffle(qs)
    return qs[:n]


def recall(index: VectorIndex, queries: np.ndarray, truth: list[set[int]], k: int) -> tuple:
    t0 = time.perf_counter()
    found = [set(index.search(q, k)[0].tolist()) for q in queries]
    ms = (time.perf_counter() - t0) / len(queries) * 1000
    return np.array([len(f & t) / k for f, t in zip(found, truth, strict=True)]), ms


def main(n: int, k: int = 48) -> None:
    sentences = docstring_sentences(n + 100)
    texts, held = sentences[:n], sentences[n : n + 100]
    questions = locomo_questions(100)
    emb = MiniLMEmbeddings()
    vecs = emb.embed_array(texts).astype(np.float32)
    qsets = {"held-out sentences": emb.embed_array(held).astype(np.float32)}
    if questions:
        qsets["LoCoMo questions"] = emb.embed_array(questions).astype(np.float32)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    truths = {}
    for name, qv in qsets.items():
        top = np.argsort(-(qv @ vecs.T), axis=1)[:, :k]
        truths[name] = [set((row + 1).tolist()) for row in top]
    print(f"{n} real sentence vectors; recall@{k} vs exact, mean (p10) and ms per query")
    for ann, attr, values in (
        ("hnsw", "ef_search", (128, 256, 512)),
        ("ivf", "nprobe", (16, 32, 64)),
    ):
        index = VectorIndex(vecs.shape[1], hnsw_threshold=1, ann=ann)
        t0 = time.perf_counter()
        index.add(seqs, vecs)
        built = time.perf_counter() - t0
        for value in values:
            setattr(index, attr, value)  # applied per search (SearchParameters)
            cells = [f"{ann} {attr} {value} (built {built:.0f} s, {index.nlist or '-'} cells)"]
            for name, qv in qsets.items():
                r, ms = recall(index, qv, truths[name], k)
                cells.append(f"{name}: {r.mean():.3f} ({np.percentile(r, 10):.2f}) {ms:.2f} ms")
            print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60_000)
