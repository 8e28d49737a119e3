"""PostgreSQL layout of the store: tables, indexes, migrations, schema version, model identity.

Every table starts with ``mnemon_`` so the store can share a database with LangGraph's own
``PostgresSaver`` / ``PostgresStore`` tables. Every row that belongs to a namespace carries
its ``nsid`` (a small integer from ``mnemon_namespaces``), which is what an erase deletes by
and what a Citus distribution column or hash partitioning would shard by
(``docs/scale-out.md``).

Why these shapes:

* ``mnemon_records.terms`` holds the record's *distinct* BM25 terms, each prefixed with the
  namespace id (``"17:lyon"``), with ``tfs`` parallel to it. The prefix makes the GIN index
  namespace-specific: a query's candidate lookup touches only its own namespace's postings,
  however many tenants share the table.
* ``mnemon_terms`` (document frequency per namespaced term) and the ``docs`` / ``total_len``
  columns of ``mnemon_namespaces`` are the BM25 statistics; they are updated in the same
  transaction as the records, so a query always sees statistics matching the rows.
* Vectors live in ``mnemon_vectors`` (pgvector), created by :func:`setup` once the
  embedding dimension is known, with a half-precision copy in ``mnemon_halfvecs`` (schema
  version 3): the exact search scans the narrow copy and re-ranks its nearest by the float
  vectors. The cosine HNSW index is **partial** (version 9): it holds the vectors of the
  namespaces whose ``ann`` flag is set (``mnemon_namespaces.ann``, copied to each vector's
  row), which a write sets once a namespace reaches the writer's ``exact_below`` records —
  the only namespaces the server searches through HNSW. Keeping the graph up to date was
  most of every write's cost, paid by namespaces that never use it.
* ``mnemon_postings`` (schema version 4) repeats each record's terms as one narrow row per
  (record, distinct term) with its BM25 *impact*, indexed by ``(term, seq)`` (version 5;
  ``(term, impact DESC)`` before). Rows go with their record (``ON DELETE CASCADE`` on
  ``seq``), like the vectors. ``mnemon_packs`` (version 5) holds each common term's postings
  sorted by impact in parts of a few thousand, so a query reads a term's best postings as a
  few rows (``impact``); ``mnemon_terms.packed`` / ``upto`` say what a pack covers.
* ``mnemon_frames``, ``mnemon_frame_seqs`` and ``mnemon_codes`` (version 8) hold, per
  namespace, its records' ``seq`` values in order and, per common term, one byte per record
  (its impact quantised upward): the bound of common-word queries (``_frames.py``).

Migrations only add (``CREATE … IF NOT EXISTS``, new columns) or rebuild derived indexes;
they never drop rows. The version and the embedding model identity are rows of
``mnemon_meta``. An existing database migrates on the next open (or ``store.setup()``), in
one transaction under an advisory lock: version 1 → 2 fills per-term bounds from the
records, 3 → 4 the impact postings (the lock makes other processes' setup wait; a failure
rolls all of it back). A store that migrated to version 4 or 5 then packs the common terms
and runs ``VACUUM (ANALYZE) mnemon_postings`` (outside the transaction), so index-only scans
need no heap visits; one that migrated from before version 8 builds its BM25 frames.
"""

from __future__ import annotations

from typing import Any

from mnemon_langgraph.errors import EmbeddingMismatchError, SchemaVersionError
from mnemon_langgraph.search._formula import BM25_B, BM25_K1

__all__ = [
    "ANN_FROM",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_INDEX_SQL",
    "HNSW_M",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "setup_schema",
    "stored_version",
    "vector_ddl",
]

SCHEMA_VERSION = 9

TABLES = (
    "mnemon_meta",
    "mnemon_namespaces",
    "mnemon_records",
    "mnemon_messages",
    "mnemon_terms",
    "mnemon_vectors",
    "mnemon_halfvecs",
    "mnemon_postings",
    "mnemon_packs",
    "mnemon_frames",
    "mnemon_frame_seqs",
    "mnemon_codes",
    "mnemon_audit",
    "mnemon_kv_items",
    "mnemon_kv_audit",
    "mnemon_retention_holds",
)
"""Every table the store writes (the erase and its residue test cover all of them)."""

_SETUP_LOCK = 0x4D4E454D  # advisory lock key: one process migrates at a time

_V1 = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE IF NOT EXISTS mnemon_meta (key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS mnemon_namespaces (
        nsid bigserial PRIMARY KEY,
        namespace text NOT NULL UNIQUE,
        docs bigint NOT NULL DEFAULT 0,
        total_len bigint NOT NULL DEFAULT 0)""",
    "CREATE SEQUENCE IF NOT EXISTS mnemon_record_seq",
    """CREATE TABLE IF NOT EXISTS mnemon_records (
        id text PRIMARY KEY,
        seq bigint NOT NULL UNIQUE,
        nsid bigint NOT NULL REFERENCES mnemon_namespaces(nsid),
        source text NOT NULL DEFAULT '',
        session integer NOT NULL,
        date timestamp,
        date_epoch bigint NOT NULL,
        position integer NOT NULL,
        speakers jsonb NOT NULL,
        message_ids jsonb NOT NULL,
        roles jsonb NOT NULL,
        text text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        terms text[] NOT NULL,
        tfs real[] NOT NULL,
        length integer NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS mnemon_records_ns_seq ON mnemon_records (nsid, seq)",
    "CREATE INDEX IF NOT EXISTS mnemon_records_ns_session "
    "ON mnemon_records (nsid, session, position)",
    "CREATE INDEX IF NOT EXISTS mnemon_records_terms ON mnemon_records USING gin (terms)",
    """CREATE TABLE IF NOT EXISTS mnemon_messages (
        nsid bigint NOT NULL,
        message_id text NOT NULL,
        record_id text NOT NULL REFERENCES mnemon_records(id) ON DELETE CASCADE,
        PRIMARY KEY (nsid, message_id, record_id))""",
    "CREATE INDEX IF NOT EXISTS mnemon_messages_record ON mnemon_messages (record_id)",
    """CREATE TABLE IF NOT EXISTS mnemon_terms (
        term text PRIMARY KEY,
        nsid bigint NOT NULL,
        df integer NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS mnemon_terms_ns ON mnemon_terms (nsid)",
    """CREATE TABLE IF NOT EXISTS mnemon_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        actor text NOT NULL,
        action text NOT NULL,
        namespace text NOT NULL,
        count integer NOT NULL,
        record_ids jsonb NOT NULL DEFAULT '[]',
        message_ids jsonb NOT NULL DEFAULT '[]',
        reason text NOT NULL DEFAULT '')""",
    "CREATE INDEX IF NOT EXISTS mnemon_audit_ns ON mnemon_audit (namespace, id)",
]

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
"""The HNSW graph's parameters (pgvector's defaults). A denser graph (``m = 32,
ef_construction = 128``) lifts recall at 100k records but makes every insert several times
slower (docs/results/postgres-history.md, "Figures behind the backend's defaults"), for every
namespace, though only namespaces of ``EXACT_BELOW`` (150,000) records or more are searched
through HNSW. Exact search up to there (recall 1) is the better trade-off; a denser graph
would be a later migration that rebuilds the index (``DROP INDEX`` + :func:`_vector_ddl`, the index
being derived data)."""

HNSW_INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS mnemon_vectors_hnsw ON mnemon_vectors "
    "USING hnsw (embedding vector_cosine_ops) "
    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE ann"
)
"""The HNSW index as every setup creates it (``IF NOT EXISTS``): over the vectors of the
namespaces flagged ``ann`` only (schema version 9; a query uses it with ``AND v.ann``).
Maintaining it is most of the cost of a write into such a namespace
(docs/results/postgres-history.md), so a bulk load of a large history is faster with the
index dropped (``DROP INDEX mnemon_vectors_hnsw``) and rebuilt once afterwards by this
statement (or by the next store's setup), with a ``maintenance_work_mem`` large enough to
hold the graph (README, "PostgreSQL backend"; ``mnemon bench backend --bulk-index``)."""

ANN_FROM = 150_000
"""Records from which the migration to version 9 flags a namespace ``ann`` (the default
``PostgresSettings.exact_below``, from which the server searched through HNSW before);
afterwards each writer flags a namespace at its own ``exact_below``."""

_V2 = [
    # Per-term bounds (impact.term_bound). The defaults are the loosest bounds, so
    # a row the backfill below does not reach is still bounded correctly.
    "ALTER TABLE mnemon_terms ADD COLUMN IF NOT EXISTS max_tf real NOT NULL DEFAULT 1e30",
    "ALTER TABLE mnemon_terms ADD COLUMN IF NOT EXISTS min_len integer NOT NULL DEFAULT 0",
    """UPDATE mnemon_terms t SET max_tf = s.max_tf, min_len = s.min_len
    FROM (SELECT u.term, max(u.tf) AS max_tf, min(r.length) AS min_len
          FROM mnemon_records r CROSS JOIN LATERAL unnest(r.terms, r.tfs) AS u(term, tf)
          GROUP BY u.term) s
    WHERE t.term = s.term""",
]

_V3 = [
    # A half-precision copy of every vector, in a table of its own: the exact scan reads
    # about half the bytes (docs/results/postgres-history.md) and ranks
    # candidates that are then re-ranked by exact cosine on the float vectors (see
    # PostgresStore._dense): faster at the same recall, where binary quantization lost
    # recall (docs/results/postgres-history.md, "Half-precision copy"). No typmod: the
    # dimension is fixed by mnemon_vectors, which every row here is a copy of.
    """CREATE TABLE IF NOT EXISTS mnemon_halfvecs (
        record_id text PRIMARY KEY REFERENCES mnemon_records(id) ON DELETE CASCADE,
        nsid bigint NOT NULL,
        embedding halfvec NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS mnemon_halfvecs_ns ON mnemon_halfvecs (nsid)",
    # Backfill from the float vectors (absent on a fresh database: they come later).
    """DO $$ BEGIN
    IF to_regclass('mnemon_vectors') IS NOT NULL THEN
        INSERT INTO mnemon_halfvecs(record_id, nsid, embedding)
        SELECT record_id, nsid, embedding::halfvec FROM mnemon_vectors
        ON CONFLICT DO NOTHING;
    END IF;
    END $$""",
]

_IMPACT = (  # impact.impact in SQL, at the namespace's reference average length
    f"(u.tf / (u.tf + {BM25_K1}::float8 * ({1 - BM25_B}::float8 + {BM25_B}::float8 * "
    "r.length / n.ref_avgdl)))::real"
)

_V4 = [
    # Impact postings (postgres_bm25, "Impact postings"): one row per (record, distinct
    # term) outside the records' rows, so BM25 at 1M records reads index entries rather
    # than scattered heap rows. ref_avgdl fixes the length an impact is computed at.
    "ALTER TABLE mnemon_namespaces ADD COLUMN IF NOT EXISTS ref_avgdl float8",
    "UPDATE mnemon_namespaces SET ref_avgdl = total_len::float8 / docs "
    "WHERE ref_avgdl IS NULL AND total_len > 0 AND docs > 0",
    """CREATE TABLE IF NOT EXISTS mnemon_postings (
        seq bigint NOT NULL REFERENCES mnemon_records(seq) ON DELETE CASCADE,
        term text NOT NULL,
        impact real NOT NULL,
        tf real NOT NULL,
        len integer NOT NULL)""",
    # Sorting 12.8M postings for the index (1M records) needs memory; this transaction only.
    "SET LOCAL maintenance_work_mem = '512MB'",
    f"""INSERT INTO mnemon_postings(seq, term, impact, tf, len)
    SELECT r.seq, u.term, {_IMPACT}, u.tf, r.length
    FROM mnemon_records r JOIN mnemon_namespaces n ON n.nsid = r.nsid
    CROSS JOIN LATERAL unnest(r.terms, r.tfs) AS u(term, tf)""",
    # A term's best postings: an index-only range scan (seq included). tf and len stay in
    # the table only (what an impact is computed from), not in the index the query reads.
    # (Version 5 replaces it by (term, seq) and the packs.)
    "CREATE INDEX IF NOT EXISTS mnemon_postings_impact "
    "ON mnemon_postings (term, impact DESC) INCLUDE (seq)",
    # A record's postings, index-only: the cascade's lookup and the candidates' tight
    # bounds (impact.LOOKUP_SQL).
    "CREATE INDEX IF NOT EXISTS mnemon_postings_seq ON mnemon_postings (seq) "
    "INCLUDE (term, impact)",
    # Index-only scans skip the heap only on pages the visibility map marks all-visible:
    # vacuum this insert-mostly table after 2% new rows (PostgreSQL's default: 20%).
    "ALTER TABLE mnemon_postings SET (autovacuum_vacuum_insert_scale_factor = 0.02)",
]

_V5 = [
    # Packs (postgres_bm25, "Impact postings"): a common term's postings by impact, in parts
    # of a few thousand per row, so its best postings cost a few rows, not an index entry
    # each. Derived data: built from mnemon_postings after the migration (PostgresStore
    # setup) and after ingests; a term's postings above `upto` are read from the index.
    "ALTER TABLE mnemon_terms ADD COLUMN IF NOT EXISTS packed integer NOT NULL DEFAULT 0",
    "ALTER TABLE mnemon_terms ADD COLUMN IF NOT EXISTS upto bigint NOT NULL DEFAULT 0",
    """CREATE TABLE IF NOT EXISTS mnemon_packs (
        term text NOT NULL,
        part integer NOT NULL,
        nsid bigint NOT NULL,
        n integer NOT NULL,
        low real NOT NULL,
        last boolean NOT NULL,
        seqs bytea NOT NULL,
        imps bytea NOT NULL,
        PRIMARY KEY (term, part))""",
    "CREATE INDEX IF NOT EXISTS mnemon_packs_ns ON mnemon_packs (nsid)",
    # Stored out of line uncompressed: sequence numbers and float impacts barely compress,
    # and a read would pay for the decompression every time.
    "ALTER TABLE mnemon_packs ALTER COLUMN seqs SET STORAGE EXTERNAL",
    "ALTER TABLE mnemon_packs ALTER COLUMN imps SET STORAGE EXTERNAL",
    "SET LOCAL maintenance_work_mem = '512MB'",
    # A term's postings in seq order, index-only: the postings written since its pack (or
    # all of a term without one). Replaces (term, impact DESC), which the packs replace.
    "CREATE INDEX IF NOT EXISTS mnemon_postings_term ON mnemon_postings (term, seq) "
    "INCLUDE (impact)",
    "DROP INDEX IF EXISTS mnemon_postings_impact",
]

_V6 = [
    # The ingest label's column takes the label's name (indexes follow the column). Guarded,
    # as every step is safe to run again: PostgreSQL has no RENAME COLUMN IF EXISTS.
    "DO $$ BEGIN IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = "
    "current_schema() AND table_name = 'mnemon_records' AND column_name = 'source') THEN "
    "ALTER TABLE mnemon_records RENAME COLUMN source TO origin; END IF; END $$",
    # The key-value items of MnemonBaseStore (store/kv_items.py), as that code created them
    # before they joined the schema: IF NOT EXISTS, so a database that has them keeps them.
    """CREATE TABLE IF NOT EXISTS mnemon_kv_items (
        namespace text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        text text NOT NULL DEFAULT '',
        vectors bytea,
        dim integer NOT NULL DEFAULT 0,
        fields text NOT NULL DEFAULT '["$"]',
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (namespace, key)
    )""",
    """CREATE TABLE IF NOT EXISTS mnemon_kv_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        actor text NOT NULL,
        action text NOT NULL,
        ns text NOT NULL,
        keys text NOT NULL DEFAULT '[]',
        count integer NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS mnemon_kv_audit_ns ON mnemon_kv_audit(ns, id)",
]


def _retention_holds_v7() -> list[str]:
    """Version 7, retention's part: the legal holds (``store.hold``). The column is ``ns``,
    not ``namespace``, so an erase (which empties every keyed table) does not lift a hold."""
    return [
        """CREATE TABLE IF NOT EXISTS mnemon_retention_holds (
        ns text PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        actor text NOT NULL,
        reason text NOT NULL DEFAULT '')""",
    ]


_V7_KV_TTL = [
    # The key-value items' TTL (LangGraph's TTLConfig on MnemonBaseStore): when an item
    # expires and its TTL in minutes; NULL for every stored item (it never expires).
    "ALTER TABLE mnemon_kv_items ADD COLUMN IF NOT EXISTS expires_at timestamptz",
    "ALTER TABLE mnemon_kv_items ADD COLUMN IF NOT EXISTS ttl_minutes double precision",
    "CREATE INDEX IF NOT EXISTS mnemon_kv_items_expiry ON mnemon_kv_items(expires_at) "
    "WHERE expires_at IS NOT NULL",
]

_V7 = [*_retention_holds_v7(), *_V7_KV_TTL]
"""Version 7: the legal holds of retention and the key-value items' TTL; each part is its own
function or list."""

_V8 = [
    # Frames (store/postgres/_frames.py): one byte per record and common term, the bound of
    # common-word queries. Derived data, built by the store's setup after this migration and
    # by later writes; empty here.
    """CREATE TABLE IF NOT EXISTS mnemon_frames (
        nsid bigint PRIMARY KEY,
        n integer NOT NULL,
        upto bigint NOT NULL,
        docs bigint NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mnemon_frame_seqs (
        nsid bigint NOT NULL,
        part integer NOT NULL,
        lo bigint NOT NULL,
        hi bigint NOT NULL,
        seqs bytea NOT NULL,
        PRIMARY KEY (nsid, part))""",
    """CREATE TABLE IF NOT EXISTS mnemon_codes (
        term text PRIMARY KEY,
        nsid bigint NOT NULL,
        top float8 NOT NULL,
        codes bytea NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS mnemon_codes_ns ON mnemon_codes (nsid)",
    # Uncompressed out of line: a query reads every byte of its terms' codes, and positions'
    # seqs by substring, which reads only the chunks holding them when uncompressed.
    "ALTER TABLE mnemon_codes ALTER COLUMN codes SET STORAGE EXTERNAL",
    "ALTER TABLE mnemon_frame_seqs ALTER COLUMN seqs SET STORAGE EXTERNAL",
]

_V9 = [
    # The HNSW index holds only the namespaces the server searches through it (flagged
    # ``ann``): the full index is dropped here and the partial one built by the setup's
    # vector DDL, from the flagged rows. On a new database the vector table does not exist
    # yet (the DDL creates it, with the column).
    "ALTER TABLE mnemon_namespaces ADD COLUMN IF NOT EXISTS ann boolean NOT NULL DEFAULT false",
    f"UPDATE mnemon_namespaces SET ann = true WHERE docs >= {ANN_FROM}",
    """DO $$ BEGIN
    IF to_regclass('mnemon_vectors') IS NOT NULL THEN
        DROP INDEX IF EXISTS mnemon_vectors_hnsw;
        ALTER TABLE mnemon_vectors ADD COLUMN IF NOT EXISTS ann boolean NOT NULL DEFAULT false;
        UPDATE mnemon_vectors v SET ann = true FROM mnemon_namespaces n
            WHERE n.nsid = v.nsid AND n.ann;
    END IF;
    END $$""",
]

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9]
"""Entry ``i`` brings a schema from version ``i`` to ``i + 1``. Rows are never dropped:
version 2 adds two columns to ``mnemon_terms`` and fills them from the records; version 3
adds ``mnemon_halfvecs`` and fills it from ``mnemon_vectors``; version 4 adds
``mnemon_namespaces.ref_avgdl`` and ``mnemon_postings``, filled from the records' term
arrays (minutes at 1M records: docs/results/postgres-history.md); version 5 adds
``mnemon_packs`` and two columns of ``mnemon_terms``, indexes the postings by ``(term, seq)``
instead of ``(term, impact)`` and leaves the packs to the store's setup, which builds them from the
postings; version 6 renames ``mnemon_records.source`` to ``origin`` (the ingest label)
and adds the key-value items' two tables (``mnemon_kv_items``, ``mnemon_kv_audit``),
kept as they are where the BaseStore had already created them; version 7 adds the legal
holds of retention (``mnemon_retention_holds``) and the key-value items' TTL columns
(``expires_at``, ``ttl_minutes``: ``NULL`` for every stored item); version 8 adds the BM25
frames (``mnemon_frames``, ``mnemon_frame_seqs``, ``mnemon_codes``), empty, which the store's
setup then builds from the records and postings; version 9 adds the ``ann`` flags of
namespaces and vectors, sets them for namespaces of :data:`ANN_FROM` records or more, and
rebuilds the HNSW index over those alone (:data:`HNSW_INDEX_SQL`)."""


APPEND_ONLY_AUDIT = [
    # Created only when missing (also the function): a role that does not own them (an
    # application role on a database its owner migrated) can still open the store.
    """DO $$ BEGIN
    IF to_regprocedure('mnemon_audit_append_only()') IS NULL THEN
        CREATE FUNCTION mnemon_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $f$
        BEGIN
            RAISE EXCEPTION 'the mnemon audit trail is append-only: % refused', TG_OP;
        END $f$;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'mnemon_audit_append_only'
                   AND tgrelid = 'mnemon_audit'::regclass) THEN
        CREATE TRIGGER mnemon_audit_append_only BEFORE UPDATE OR DELETE ON mnemon_audit
        FOR EACH ROW EXECUTE FUNCTION mnemon_audit_append_only();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'mnemon_audit_no_truncate'
                   AND tgrelid = 'mnemon_audit'::regclass) THEN
        CREATE TRIGGER mnemon_audit_no_truncate BEFORE TRUNCATE ON mnemon_audit
        FOR EACH STATEMENT EXECUTE FUNCTION mnemon_audit_append_only();
    END IF;
    END $$""",
]
"""Triggers that make ``mnemon_audit`` append-only in the database itself: no statement of
this package (an erase included) or of anything else sharing the database can change or
delete an audit row. Ensured on every setup (they add no data, so they need no schema
version: a database set up before them gets them on its next open)."""


def _vector_ddl(dim: int) -> list[str]:
    return [
        f"""CREATE TABLE IF NOT EXISTS mnemon_vectors (
            record_id text PRIMARY KEY REFERENCES mnemon_records(id) ON DELETE CASCADE,
            nsid bigint NOT NULL,
            embedding vector({int(dim)}) NOT NULL,
            ann boolean NOT NULL DEFAULT false)""",
        "CREATE INDEX IF NOT EXISTS mnemon_vectors_ns ON mnemon_vectors (nsid)",
        HNSW_INDEX_SQL,
    ]


def vector_ddl(dim: int) -> list[str]:
    """The idempotent statements creating the vector table and its indexes (the doctor
    recreates a missing index from them)."""
    return _vector_ddl(dim)


async def _meta(conn: Any, key: str) -> str | None:
    cur = await conn.execute(
        "SELECT value FROM mnemon_meta WHERE key = %s",
        (key,),
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def _table_exists(conn: Any, name: str) -> bool:
    cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,))
    row = await cur.fetchone()
    return bool(row and row[0])


async def stored_version(conn: Any) -> int:
    """The schema version the database holds (0: none yet). Read without the setup lock:
    only a hint (the store vacuums the new postings after a migration to version 4)."""
    if not await _table_exists(conn, "mnemon_meta"):
        return 0
    return int(await _meta(conn, "schema_version") or 0)


async def setup_schema(conn: Any, model_name: str, dim: int) -> int:
    """Create or migrate the schema and record (or check) the embedding model identity.

    Runs in one transaction under an advisory lock, so processes starting together
    migrate once. Safe to call on every start.

    Args:
        conn: An async psycopg connection (autocommit off or on; a transaction is opened).
        model_name: Identity of the embedding model that writes the vectors.
        dim: Its dimension (fixes the ``vector(dim)`` column on first setup).

    Returns:
        The schema version now in place.

    Raises:
        SchemaVersionError: The database was set up by a newer version of this package.
        EmbeddingMismatchError: The database holds vectors of another model or dimension.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
        version = 0
        if await _table_exists(conn, "mnemon_meta"):
            version = int(await _meta(conn, "schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the database's mnemon schema is version {version}; this package "
                f"understands up to {SCHEMA_VERSION}: upgrade mnemon-langgraph"
            )
        for step in MIGRATIONS[version:]:
            for statement in step:
                await conn.execute(statement)
        await conn.execute(
            "INSERT INTO mnemon_meta(key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )
        stored = await _meta(conn, "embedding_model")
        stored_dim = await _meta(conn, "embedding_dim")
        if stored is None:
            await conn.execute(
                "INSERT INTO mnemon_meta(key, value) VALUES ('embedding_model', %s), "
                "('embedding_dim', %s)",
                (model_name, str(int(dim))),
            )
        elif stored != model_name or int(stored_dim or 0) != int(dim):
            raise EmbeddingMismatchError(
                f"the database holds {stored_dim}-dimensional vectors of {stored!r}; this "
                f"store embeds with {model_name!r} ({dim} dimensions). Use the same model, "
                "or another database."
            )
        for statement in APPEND_ONLY_AUDIT:
            await conn.execute(statement)
        for statement in _vector_ddl(int(stored_dim or dim)):
            await conn.execute(statement)
    return SCHEMA_VERSION
