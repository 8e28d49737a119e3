"""``stats`` of a PostgreSQL store: counts per namespace, the schema and model identity."""

from __future__ import annotations

from typing import Any

from mnemon_langgraph.records.schema import ns_from_key, ns_to_key
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._schema import TABLES
from mnemon_langgraph.types import Namespace

__all__ = ["store_stats"]


async def store_stats(
    engine: PostgresEngine,
    namespace: Namespace | None,
    *,
    exact_below: int,
    model_name: str,
    dimension: int,
) -> dict[str, Any]:
    """Counts of one namespace (zeros if unknown) or of every namespace holding records
    (the same keys as the embedded store's, plus ``schema_version`` and ``tables``)."""
    sql = (
        "SELECT n.namespace, n.docs, (SELECT max(seq) FROM mnemon_records r "
        "WHERE r.nsid = n.nsid), (SELECT count(*) FROM mnemon_vectors v "
        "WHERE v.nsid = n.nsid), (SELECT max(id) FROM mnemon_audit a "
        "WHERE a.namespace = n.namespace), n.ann FROM mnemon_namespaces n"
    )
    params: tuple[Any, ...] = ()
    if namespace is not None:
        sql += " WHERE n.namespace = %s"
        params = (ns_to_key(namespace),)
    else:
        sql += " WHERE n.docs > 0"
    rows = await engine.read(sql + " ORDER BY n.namespace", params)
    meta = dict(await engine.read("SELECT key, value FROM mnemon_meta"))
    out = [
        {
            "namespace": list(ns_from_key(key)),
            "records": int(docs),
            "max_seq": int(top or 0),
            "generation": int(gen or 0),
            "indexed": int(docs),
            "vectors": int(vecs),
            "vector_index": "hnsw" if ann and int(docs) >= exact_below else "exact",
        }
        for key, docs, top, vecs, gen, ann in rows
    ]
    if namespace is not None and not out:
        ns = namespace
        out = [
            {
                "namespace": list(ns),
                "records": 0,
                "max_seq": 0,
                "generation": 0,
                "indexed": 0,
                "vectors": 0,
                "vector_index": "exact",
            }
        ]
    return {
        "path": engine.path,
        "embedding_model": meta.get("embedding_model", model_name),
        "dimension": int(meta.get("embedding_dim", dimension)),
        "schema_version": int(meta.get("schema_version", 0)),
        "namespaces": out,
        "tables": list(TABLES),
    }
