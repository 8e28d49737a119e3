"""Search over the journal: the one tokenizer, BM25 postings, the embedder, FAISS vectors,
reciprocal rank fusion and the per-namespace hybrid index that keeps them in step with the
journal. Every index here is derived and can be rebuilt from the records.
"""
