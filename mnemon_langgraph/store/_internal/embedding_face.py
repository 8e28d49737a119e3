"""The embedding side every store backend shares: documents embedded in batches and
checked, query vectors embedded once per text (both backends store unit vectors the same
way). A mixin of :class:`~mnemon_langgraph.store.base.MnemonStore`, kept apart so the store
class stays readable by role."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from mnemon_langgraph.errors import ModelCallError
from mnemon_langgraph.records._content_caches import register_content_cache
from mnemon_langgraph.search._vectors import normalize_rows
from mnemon_langgraph.store._internal.query_vectors import SingleFlightCache, query_embedding

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = ["QUERY_VECTORS_KEPT", "EmbeddingFace"]

_EMBED_BATCH = 64
QUERY_VECTORS_KEPT = 256
"""Query vectors a store keeps (:meth:`EmbeddingFace.query_vector`; least recently used
out). A read-path turn asks the store for several searches and many repeat a text it already
embedded this turn (the latest message, a planned search paged again in a later round;
docs/results/log.md), each an embedding-model call; a user's next turn repeats few. 0 keeps
none."""


class EmbeddingFace:
    """``_embed`` (documents) and ``query_vector`` of a store with ``embeddings`` and
    ``dimension``."""

    embeddings: Embeddings
    dimension: int

    def _embed(self, texts: list[str], progress: Callable[[int, int], None] | None) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), _EMBED_BATCH):
            chunk = texts[start : start + _EMBED_BATCH]
            try:
                vecs = np.asarray(self.embeddings.embed_documents(chunk), dtype=np.float32)
            except ModelCallError:
                raise
            except Exception as exc:
                raise ModelCallError(f"embedding model failed: {exc}") from exc
            if vecs.shape != (len(chunk), self.dimension):
                raise ModelCallError(
                    f"embedding model returned shape {vecs.shape}, "
                    f"expected ({len(chunk)}, {self.dimension})"
                )
            if not np.isfinite(vecs).all():
                raise ModelCallError("embedding model returned NaN or infinite values")
            out[start : start + len(chunk)] = normalize_rows(vecs)
            if progress is not None:
                progress(start + len(chunk), len(texts))
        return out

    def query_vector(self, query: str) -> np.ndarray:
        """The unit vector of ``query`` as :meth:`search` embeds it (read-only, cached).

        Kept for the :data:`QUERY_VECTORS_KEPT` most recent texts (a failed call is not
        kept). The parallel searches of a turn ask from several threads at once, often for
        the same text, and the read path's evidence asks again for the texts it compares
        with the stored record vectors:
        :class:`~mnemon_langgraph.store._internal.query_vectors.SingleFlightCache` embeds each once
        for all of them.

        Raises:
            ModelCallError: The embedder failed or returned an unusable vector.
        """
        cache = self.__dict__.get("_query_vectors")
        if cache is None:
            fresh = SingleFlightCache(self._embed_query_uncached, QUERY_VECTORS_KEPT)
            cache = self.__dict__.setdefault("_query_vectors", fresh)
            if cache is fresh:  # a deletion empties it (a query may quote deleted text)
                register_content_cache(fresh.clear)
        vec: np.ndarray = cache(query)
        return vec

    def _embed_query_uncached(self, query: str) -> np.ndarray:
        try:
            # shared with whatever else embeds queries with this embedder (a vector store
            # read beside the journal): each text is embedded once for all of them
            vec = np.asarray(query_embedding(self.embeddings, query), dtype=np.float32)
        except Exception as exc:
            raise ModelCallError(f"embedding model failed on the query: {exc}") from exc
        if vec.shape != (self.dimension,) or not np.isfinite(vec).all():
            raise ModelCallError(
                f"embedding model returned an unusable query vector (shape {vec.shape}, "
                f"expected ({self.dimension},), finite values)"
            )
        unit = normalize_rows(vec)
        unit.setflags(write=False)  # shared by every caller of the cache
        return unit
