"""HNSW recall@48 at a million REAL MiniLM vectors, for two kinds of query.

Records: the first ``N`` passages of a corpus file (``mnemon_langgraph.bench.corpus``: one
passage per line, vectors of the bundled MiniLM cached beside the file), plus every turn of
the LoCoMo dev conversations (``$MNEMON_LOCOMO_DEV``) as ``Speaker: text``, so that a
question about a chat history has its chat in the index. Queries:

* **held-out passages** — the corpus file's last 100 lines, never indexed: queries from the
  records' own distribution, the standard way ANN benchmarks ask;
* **LoCoMo questions** — 100 dev questions, whose nearest records are mostly their own
  conversation's turns among a million unrelated passages (questions are phrased unlike any
  record: the harder case for a graph index).

The index is the package's own :class:`~mnemon_langgraph.search._vectors.VectorIndex` with the
store's HNSW settings (``--m``, ``--efc`` to try others); truth is exact inner-product search
over the same vectors. Nothing of the LoCoMo labels is used: questions are only queries.

Run (about 10 minutes at 1M on 2 cores once the vectors are cached; embedding them the first
time takes about an hour): ``MNEMON_LOCOMO_DEV=../shared/data/locomo-dev python
benchmarks/ann_real_1m.py PASSAGES.txt 1000000``
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import time
from pathlib import Path

import numpy as np

from mnemon_langgraph.bench.corpus import real_corpus
from mnemon_langgraph.search._vectors import VectorIndex
from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

EF_GRID = (128, 256, 512, 1024, 2048)


def locomo(folder: str) -> tuple[list[str], list[str]]:
    """Every dev turn as ``Speaker: text`` and 100 shuffled questions (seed 0)."""
    turns, questions = [], []
    for f in sorted(glob.glob(f"{folder}/*.json")):
        data = json.loads(Path(f).read_text(encoding="utf-8"))
        conv = data.get("conversation", data)
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [f"{t['speaker']}: {t['text']}" for t in value]
        questions += [str(q["question"]) for q in data.get("qa", [])]
    random.Random(0).shuffle(questions)
    return sorted(set(turns)), questions[:100]


def truth(vecs: np.ndarray, queries: np.ndarray, k: int) -> list[set[int]]:
    """Exact top-k row numbers (+1: index ids start at 1), in blocks to bound memory."""
    out = []
    for q in queries:
        scores = vecs @ q
        out.append(set((np.argpartition(-scores, k)[:k] + 1).tolist()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("records", type=int)
    parser.add_argument("--m", type=int, default=32)
    parser.add_argument("--efc", type=int, default=64)
    parser.add_argument("--k", type=int, default=48)
    args = parser.parse_args()
    data = real_corpus(args.corpus, args.records, 100)
    turns, questions = locomo(os.environ.get("MNEMON_LOCOMO_DEV", ""))
    model = MiniLMEmbeddings()
    vecs = np.vstack([data["vecs"], model.embed_array(turns)]) if turns else data["vecs"]
    qsets = {"held-out passages": data["qvecs"]}
    if questions:
        qsets["LoCoMo questions"] = model.embed_array(questions)
    truths = {name: truth(vecs, qv, args.k) for name, qv in qsets.items()}
    print(
        f"{len(vecs)} real MiniLM vectors ({args.records} passages + {len(turns)} LoCoMo dev "
        f"turns); HNSW M={args.m} efConstruction={args.efc}; recall@{args.k} vs exact",
        flush=True,
    )
    index = VectorIndex(vecs.shape[1], hnsw_threshold=1, hnsw_m=args.m, ef_construction=args.efc)
    t0 = time.perf_counter()
    index.add(np.arange(1, len(vecs) + 1, dtype=np.int64), vecs)
    print(f"built in {time.perf_counter() - t0:.0f} s", flush=True)
    for ef in EF_GRID:
        index.ef_search = ef
        cells = [f"efSearch {ef:>4}"]
        for name, qv in qsets.items():
            t0 = time.perf_counter()
            found = [set(index.search(q, args.k)[0].tolist()) for q in qv]
            ms = (time.perf_counter() - t0) / len(qv) * 1000
            r = np.array([len(f & t) / args.k for f, t in zip(found, truths[name], strict=True)])
            cells.append(f"{name}: {r.mean():.4f} (p10 {np.percentile(r, 10):.2f}) {ms:.2f} ms")
        print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
