"""Small offline embedders for the search/store tests (fast, deterministic, countable)."""

from __future__ import annotations

import hashlib
import re

import numpy as np
from langchain_core.embeddings import Embeddings

_WORD = re.compile(r"\w+")


class HashEmbeddings(Embeddings):
    """Bag-of-words hashed into ``dim`` buckets, L2-normalised: texts sharing words are close.

    Counts how many texts it embedded (``documents``) and queries (``queries``), so tests can
    prove that index rebuilds never re-embed.
    """

    model_name = "test-hash-bow"

    def __init__(self, dim: int = 64) -> None:
        self.dimension = dim
        self.documents = 0
        self.queries = 0

    def _vec(self, text: str) -> list[float]:
        v = np.zeros(self.dimension, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "little")
            v[h % self.dimension] += 1.0
        n = float(np.linalg.norm(v))
        return (v / n if n else v).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self._vec(text)
