"""The write path's durable half: the journal (SQLite), its schema, audited deletion and
the chunking that turns messages into records.

Everything derived from the journal (BM25 and vector indexes) lives in
:mod:`mnemon_langgraph.search`; :class:`mnemon_langgraph.MnemonStore` joins the two.
"""
