"""What a PostgreSQL write costs with and without pgvector's HNSW index to keep up to date.

Since schema version 9 the index holds only namespaces that reached ``exact_below`` records
(``store/postgres/_schema.py``, ``HNSW_INDEX_SQL``). This writes the same records twice, each
into a fresh database: once as a namespace below ``exact_below`` (not in the index, as every
namespace under 150,000 records is now), once through a store with ``exact_below=1`` (in
the index from its first record, as every namespace was before), and prints the wall time,
the client's CPU and the server's (the database's backends, read from ``/proc``: the server
must run on this machine).

    python benchmarks/pg_write_cost.py 'postgresql://postgres:@/postgres?host=/tmp/pg' 30000
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any


def _one(admin_url: str, db: str, n: int, exact_below: int | None) -> dict[str, Any]:
    import psycopg

    from mnemon_langgraph.bench.backend import WordMixEmbeddings, turn_messages
    from mnemon_langgraph.bench.growth import ServerCPU
    from mnemon_langgraph.bench.search import make_corpus
    from mnemon_langgraph.store import PostgresStore
    from mnemon_langgraph.store.postgres import PostgresSettings

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.execute(f"CREATE DATABASE {db}")
    url = psycopg.conninfo.make_conninfo(admin_url, dbname=db)
    messages = turn_messages(make_corpus(n, seed=1)["texts"], "G")
    settings = PostgresSettings() if exact_below is None else PostgresSettings(exact_below=1)
    with PostgresStore(url, WordMixEmbeddings(384), settings=settings) as store:
        server = ServerCPU(url)
        before = server.read() or {}
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, len(messages), 5000):
            store.ingest(("w",), messages[start : start + 5000], origin="bench", pack=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        server.refresh()  # the pool's connections opened during the writes too
        after = server.read() or {}
        server.close()
    server_cpu = sum(v - before.get(pid, 0) for pid, v in after.items()) / 1e9
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
    return {
        "records": n,
        "in_hnsw_index": exact_below is not None,
        "wall_s": round(wall, 1),
        "client_cpu_s": round(cpu, 1),
        "server_cpu_s": round(server_cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("admin_url", help="a database to create the scratch ones from")
    parser.add_argument("records", type=int, nargs="?", default=30_000)
    args = parser.parse_args()
    for exact_below in (None, 1):
        row = _one(args.admin_url, "mnemon_write_cost", args.records, exact_below)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
