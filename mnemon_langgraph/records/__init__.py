"""What both backends and the loaders share about records: chunking messages into records,
the record schema (namespace keys, audit entries, record lines), survivor runs after a
deletion, and the registry of in-memory content caches every deletion empties.

Backend-specific storage lives with its backend: the SQLite journal, its deletion and its
index files in :mod:`mnemon_langgraph.store.embedded`, PostgreSQL in
:mod:`mnemon_langgraph.store.postgres`.
"""
