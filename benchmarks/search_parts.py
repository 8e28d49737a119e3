"""The parts of ``store.search`` at 2,000 and 40,000 records of 23 common words (CPU time).

Records of 70 words drawn from the 23 words of ``bench search --growth``'s narrow corpus, the
deterministic fake embedder, both namespaces in one journal (written on the first run, then
reused), queries of 3–8 of the words. Each part is timed back to back per question (CPU time
of this thread); prints the medians and the whole call's ratio.

    python benchmarks/search_parts.py /tmp/parts.db
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding

from mnemon_langgraph import MnemonStore
from mnemon_langgraph.bench.growth import NARROW_VOCABULARY
from mnemon_langgraph.search._vectors import normalize_rows
from mnemon_langgraph.types import Message

SIZES = (2000, 40000)


def messages(n: int, rng: random.Random) -> list[Message]:
    start = datetime(2020, 1, 1)
    return [
        Message(
            text=" ".join(rng.choice(NARROW_VOCABULARY) for _ in range(70)),
            speaker="user" if i % 2 == 0 else "assistant",
            role="user" if i % 2 == 0 else "assistant",
            session=i // 20 + 1,
            timestamp=start + timedelta(days=i // 20),
        )
        for i in range(n)
    ]


def main(db: str) -> None:
    rng = random.Random(7)
    fresh = not Path(db).exists()
    store = MnemonStore(db, DeterministicFakeEmbedding(size=384))
    for n in SIZES:
        batch = messages(n, rng)
        if fresh:
            store.ingest(("ns", str(n)), batch, origin="bench", pack=False)
    words = NARROW_VOCABULARY
    qs = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) for _ in range(60)]
    for n in SIZES:
        for q in qs[:3]:
            store.search(q, namespace=("ns", str(n)), k=20)
    times: dict[tuple[int, str], list[float]] = {}

    def timed(key: tuple[int, str], fn: Any, *args: Any, **kwargs: Any) -> None:
        t = time.thread_time()
        fn(*args, **kwargs)
        times.setdefault(key, []).append(time.thread_time() - t)

    for q in qs:
        for n in SIZES:
            ns = ("ns", str(n))
            index = store.index(ns)
            qv = normalize_rows(store.query_vector(q))[0]
            timed((n, "bm25"), index.bm25.search, q, 100)
            timed((n, "bm25-noprune"), index.bm25.search, q, 100, prune=False)
            timed((n, "vectors"), index.vectors.search, qv, 100)
            timed((n, "search"), store.search, q, namespace=ns, k=20)
    for n in SIZES:
        row = {k[1]: round(statistics.median(v) * 1000, 2) for k, v in times.items() if k[0] == n}
        print(n, row)
    whole = [statistics.median(times[(n, "search")]) for n in SIZES]
    print("whole call ratio", round(whole[1] / whole[0], 2))
    store.close()


if __name__ == "__main__":
    main(sys.argv[1])
