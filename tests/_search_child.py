"""Child process of the cross-process deletion test: a long-lived searcher.

Usage::

    python _search_child.py DB HNSW_THRESHOLD

Opens the store, prints ``ready`` once its indexes are in memory, then answers one line per
query read from stdin with a JSON line: the hit texts and ids and the index's counters
(rebuilds, deletions applied in place, vector index kind). Ends on an empty line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _search_fakes import HashEmbeddings

from mnemon_langgraph.store import MnemonStore

NS = ("x", "searcher")


def main() -> None:
    """Serve searches until stdin gives an empty line."""
    db, threshold = sys.argv[1], int(sys.argv[2])
    store = MnemonStore(db, HashEmbeddings(), vector_settings={"hnsw_threshold": threshold})
    store.search("warm up", namespace=NS, k=1)
    print("ready", flush=True)
    for line in sys.stdin:
        query = line.strip()
        if not query:
            break
        hits = store.search(query, namespace=NS, k=50)
        index = store.index(NS)
        out = {
            "ids": [h.record.id for h in hits],
            "texts": [h.record.text for h in hits],
            "rebuilds": index.rebuilds,
            "deletions_applied": index.deletions_applied,
            "kind": index.vectors.kind,
        }
        print(json.dumps(out), flush=True)
    store.close()


if __name__ == "__main__":
    main()
