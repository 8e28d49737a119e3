"""The search building blocks both backends share: the one tokenizer, BM25 postings and their
MaxScore query, the embedders, FAISS vectors and reciprocal rank fusion. The per-namespace
hybrid index that keeps them in step with the embedded journal is the embedded backend's
(:mod:`mnemon_langgraph.store.embedded._index`); every index is derived and can be rebuilt
from the records.
"""
