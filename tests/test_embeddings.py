"""Tests of the offline MiniLM embedder (real ONNX model, a few short calls)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.search.embeddings import (
    DEFAULT_MODEL_NAME,
    MiniLMEmbeddings,
    default_embeddings,
    embedding_identity,
)

DATA = Path(__file__).resolve().parent.parent / "mnemon_langgraph" / "data"


@pytest.fixture(scope="module")
def model() -> MiniLMEmbeddings:
    return MiniLMEmbeddings(batch_size=3)


def test_construction_is_lazy() -> None:
    emb = MiniLMEmbeddings()
    assert isinstance(emb, Embeddings)
    assert emb._session is None and emb.calls == 0
    assert embedding_identity(emb) == (DEFAULT_MODEL_NAME, 384)
    assert emb._session is None  # identity does not load the model


def test_unit_vectors_and_paraphrase_property(model: MiniLMEmbeddings) -> None:
    texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "A man is riding a horse.",
        "I moved to Rotterdam for a new job.",
        "I relocated to the Netherlands because I got hired there.",
    ]
    v = np.asarray(model.embed_documents(texts))
    assert v.shape == (6, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sim = v @ v.T
    # paraphrase pairs are closer than unrelated pairs
    assert sim[0, 1] > 0.6 > sim[0, 2]
    assert sim[4, 5] > sim[4, 2] + 0.2
    assert sim[0, 1] > max(sim[0, 2], sim[1, 2], sim[4, 2])


def test_batches_keep_input_order(model: MiniLMEmbeddings) -> None:
    texts = ["short", "a somewhat longer sentence about dogs and cats", "mid length text", ""]
    together = model.embed_array(texts)  # batch_size=3: sorted by length, two batches
    for i, text in enumerate(texts):
        np.testing.assert_allclose(together[i], model.embed_array([text])[0], atol=1e-4)
    np.testing.assert_allclose(model.embed_query("short"), together[0], atol=1e-4)
    assert model.embed_array([]).shape == (0, 384)


def test_long_text_is_truncated_not_rejected(model: MiniLMEmbeddings) -> None:
    long = "word " * 2000
    vec = model.embed_array([long])
    assert vec.shape == (1, 384) and abs(float(np.linalg.norm(vec)) - 1) < 1e-5
    # beyond 256 tokens nothing changes
    np.testing.assert_allclose(vec[0], model.embed_array(["word " * 1000])[0], atol=1e-5)


def test_async_matches_sync(model: MiniLMEmbeddings) -> None:
    sync = model.embed_documents(["hello there"])
    got = asyncio.run(model.aembed_documents(["hello there"]))
    np.testing.assert_allclose(got, sync, atol=1e-6)
    np.testing.assert_allclose(asyncio.run(model.aembed_query("hello there")), sync[0], atol=1e-6)


def test_bad_settings_rejected() -> None:
    with pytest.raises(ConfigurationError):
        MiniLMEmbeddings(max_tokens=1000)
    with pytest.raises(ConfigurationError):
        MiniLMEmbeddings(batch_size=0)
    with pytest.raises(ConfigurationError):
        MiniLMEmbeddings(tokenizer_path="/nonexistent/tokenizer.json").embed_query("x")


def test_default_embeddings_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    fake = default_embeddings()
    assert isinstance(fake, DeterministicFakeEmbedding)
    assert embedding_identity(fake) == ("DeterministicFakeEmbedding-384", 384)
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "")
    assert isinstance(default_embeddings(), MiniLMEmbeddings)
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "bogus")
    with pytest.raises(ConfigurationError):
        default_embeddings()


def test_bundled_tokenizer_matches_notice() -> None:
    digest = hashlib.sha256((DATA / "minilm-tokenizer.json").read_bytes()).hexdigest()
    notice = (DATA / "NOTICE.md").read_text(encoding="utf-8")
    assert digest in notice
    assert "Apache" in notice and "sentence-transformers/all-MiniLM-L6-v2" in notice
