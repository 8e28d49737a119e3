"""Time a ``bench search --growth`` pair again on the store the command wrote, writing nothing.

FOLDER is the command's ``--db``: a folder (embedded) or a ``postgresql://`` URL (then the
server's CPU per call is measured too, as the command does; opening the store with a newer
package migrates its schema first).

Writing a 1M-record namespace takes tens of minutes; this reopens the embedded store the
command left in DIR and times the pair with the command's own questions (the same seed and
random stream as ``growth._workload``, ``calls`` + 5 warm) and its own timing loop
(``growth._time_pair``: calls alternating between the sizes). Run it with one code version
and then another (``PYTHONPATH``) to compare them on one store. Prints one JSON line, with
the load average before and after.

    python benchmarks/growth_retime.py /tmp/growth narrow 10000:1000000 --calls 150
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

import mnemon_langgraph
from mnemon_langgraph.bench import growth
from mnemon_langgraph.bench.backend import WordMixEmbeddings
from mnemon_langgraph.bench.search import common_word_queries, make_corpus, topic_queries
from mnemon_langgraph.store import MnemonStore, is_postgres_url


def questions(corpus: str, n: int, seed: int, calls: int) -> dict[str, list[str]]:
    """The questions ``growth._workload`` asks of that namespace (without keeping its texts)."""
    if corpus == "narrow":
        rng = random.Random(seed * 1_000_003 + n)
        growth.narrow_texts(n, rng)  # advances the stream as the command did
        return {"narrow": growth.narrow_queries(calls, rng)}
    data = make_corpus(n, seed=seed)
    topical = [q for q, _ in topic_queries(data, calls, data["rng"])]
    return {"topical": topical, "common": common_word_queries(data, calls, data["rng"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("corpus", choices=growth.CORPORA)
    parser.add_argument("pair", help="SMALL:LARGE, as given to --growth")
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--client-cache-mb",
        type=int,
        help="PostgreSQL: PostgresSettings.client_cache_mb (a namespace whose vector copy "
        "does not fit it is searched by pgvector's HNSW)",
    )
    args = parser.parse_args()
    (pair,) = growth.parse_pairs(args.pair)
    asked = [questions(args.corpus, n, args.seed, args.calls + 5) for n in pair]
    namespaces = tuple(("bench", "growth", args.corpus, str(n)) for n in pair)
    load = [os.getloadavg()]
    out: dict[str, object] = {"code": mnemon_langgraph.__file__, "pair": list(pair)}
    postgres = is_postgres_url(args.folder)
    target = args.folder if postgres else str(Path(args.folder) / "growth.db")
    server = growth.ServerCPU(target) if postgres else None  # the server's CPU too
    options: dict[str, object] = {}
    if postgres and args.client_cache_mb is not None:
        from mnemon_langgraph.store.postgres import PostgresSettings

        options["settings"] = PostgresSettings(client_cache_mb=args.client_cache_mb)
    with MnemonStore(target, WordMixEmbeddings(384), **options) as store:  # type: ignore[arg-type]
        if postgres:  # the namespaces' vector copies load off the search path: wait for them
            for ns in namespaces:
                store.search("settle", namespace=ns, k=1)
            store.engine.run(store.dense.cache.settle())
        for kind in asked[0]:
            pair_questions = (asked[0][kind], asked[1][kind])
            out[kind] = growth._time_pair(store, namespaces, pair_questions, server)
    if server is not None:
        server.close()
    load.append(os.getloadavg())
    out["load"] = load
    print(json.dumps(out))


if __name__ == "__main__":
    main()
