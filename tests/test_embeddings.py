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
    return MiniLMEmbeddings()


@pytest.fixture(scope="module")
def legacy() -> MiniLMEmbeddings:
    from mnemon_langgraph.search.embeddings import LEGACY_MODEL_NAME

    return MiniLMEmbeddings(model_name=LEGACY_MODEL_NAME, batch_size=3)


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


@pytest.mark.parametrize("which", ["model", "legacy"])
def test_batches_keep_input_order(which: str, request: pytest.FixtureRequest) -> None:
    emb: MiniLMEmbeddings = request.getfixturevalue(which)
    texts = ["short", "a somewhat longer sentence about dogs and cats", "mid length text", ""]
    together = emb.embed_array(texts)  # legacy batch_size=3: sorted by length, two batches
    for i, text in enumerate(texts):
        np.testing.assert_allclose(together[i], emb.embed_array([text])[0], atol=1e-4)
    np.testing.assert_allclose(emb.embed_query("short"), together[0], atol=1e-4)
    assert emb.embed_array([]).shape == (0, 384)


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


_TURNS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's awesome! I painted a sunrise over the lake last week.",
    "Caroline: I'm looking into adoption agencies, I want to give kids a loving home.",
    "Melanie: We took the kids camping in the mountains, they loved roasting marshmallows.",
    "Jon: I lost my job at the bank so I'm opening my own dance studio.",
    "Gina: My online clothing store finally launched after months of work!",
    "",
]


def test_default_model_is_genuinely_int8_and_close_to_the_legacy_one(
    model: MiniLMEmbeddings, legacy: MiniLMEmbeddings
) -> None:
    """Issue 15: int8 compute (MatMulInteger), vectors within cosine ~0.98 of the float model."""
    import onnx

    from mnemon_langgraph.search.embeddings import LEGACY_MODEL_NAME, quantized_model_path

    ops = [n.op_type for n in onnx.load(str(quantized_model_path())).graph.node]
    assert "DynamicQuantizeLinear" in ops
    # 36 weight MatMuls: 30 in int8, the 6 feed-forward output projections left in float
    assert ops.count("MatMulInteger") == 30
    assert embedding_identity(legacy) == (LEGACY_MODEL_NAME, 384) != embedding_identity(model)
    new, old = model.embed_array(_TURNS), legacy.embed_array(_TURNS)
    cos = (new * old).sum(axis=1)
    assert cos.min() > 0.98 and cos.mean() > 0.99, cos
    assert not np.allclose(new, old, atol=1e-4)  # really another computation


def test_quantized_file_is_derived_once_and_deterministically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemon_langgraph.search.embeddings import quantized_model_path

    shared = quantized_model_path()  # the default cache (made by another test or run)
    monkeypatch.setenv("MNEMON_CACHE_DIR", str(tmp_path / "cache"))
    made = quantized_model_path()
    assert made.parent == tmp_path / "cache" and made.name == shared.name
    assert made.read_bytes() == shared.read_bytes()  # same recipe, same bytes
    stamp = made.stat().st_mtime_ns
    assert quantized_model_path() == made and made.stat().st_mtime_ns == stamp  # reused
    assert [p.name for p in made.parent.iterdir()] == [made.name]  # no temp files left
    made.write_bytes(b"not a model")  # a damaged cache file is derived again
    vec = MiniLMEmbeddings().embed_query("hello there")
    assert len(vec) == 384 and made.read_bytes() == shared.read_bytes()


def test_old_journal_keeps_its_legacy_model(tmp_path: Path) -> None:
    """A journal written with the shipped file's variant opens with that variant."""
    from mnemon_langgraph.search.embeddings import LEGACY_MODEL_NAME
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    legacy = MiniLMEmbeddings(model_name=LEGACY_MODEL_NAME)
    with MnemonStore(tmp_path / "old.db", legacy) as old:
        old.ingest(("u",), [Message("I adopted a beagle named Pepper", "Ada")], origin="chat")
    with MnemonStore(tmp_path / "old.db") as again:  # default embedder, old journal
        assert again.model_name == LEGACY_MODEL_NAME
        assert "Pepper" in again.search("my dog", namespace=("u",), k=1)[0].record.text
    with MnemonStore(tmp_path / "new.db") as fresh:
        assert fresh.model_name == DEFAULT_MODEL_NAME
    with pytest.raises(ConfigurationError):
        MiniLMEmbeddings(model_name="something-else")
    with pytest.raises(ConfigurationError, match="one text per call"):
        MiniLMEmbeddings(batch_size=8)


# -- concurrent embedding (issue 15: several one-text calls at once on 2 cores) -----------

_VARIED = [
    "ok",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful, and the "
    "stories people told about coming out to their families stayed with me all week.",
    "Melanie: We took the kids camping.",
    "",
    "Jon: I lost my job at the bank so I'm opening my own dance studio downtown next spring.",
    "Gina: launched!",
    "Caroline: adoption agencies, loving home, kids, " * 12,
    "Melanie: That's awesome! I painted a sunrise over the lake last week.",
]


def _embedding_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name.startswith("mnemon-embed")]


def test_concurrent_embedding_is_bit_identical_and_in_input_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    sequential = MiniLMEmbeddings(workers=1)
    concurrent = MiniLMEmbeddings(workers=2, intra_op_threads=2)
    seen: list[str] = []
    original = MiniLMEmbeddings._embed_batch

    def spy(self: MiniLMEmbeddings, texts: list[str], *, bulk: bool = False) -> np.ndarray:
        seen.append(threading.current_thread().name)
        return original(self, texts, bulk=bulk)

    monkeypatch.setattr(MiniLMEmbeddings, "_embed_batch", spy)
    seq = sequential.embed_array(_VARIED)
    assert set(seen) == {threading.current_thread().name}  # workers=1: no thread of its own
    seen.clear()
    con = concurrent.embed_array(_VARIED)
    assert len(seen) == len(_VARIED) and all(n.startswith("mnemon-embed") for n in seen)
    assert concurrent._bulk_session is not None  # the one-thread session ran them
    assert concurrent.calls == len(_VARIED) == sequential.calls
    assert np.array_equal(con, seq), float(np.abs(con - seq).max())  # bit for bit
    for i, text in enumerate(_VARIED):  # row i is text i's own vector
        assert np.array_equal(con[i], sequential.embed_array([text])[0])
    assert _embedding_threads() == []  # the pool ended with the call
    with pytest.raises(ConfigurationError, match="workers"):
        MiniLMEmbeddings(workers=0)


class _FailingSession:
    """Wraps an ONNX session; its ``fail_on``-th ``run`` raises as onnxruntime would."""

    def __init__(self, session: object, fail_on: int) -> None:
        self._session, self._fail_on, self.runs = session, fail_on, 0

    def run(self, *args: object) -> object:
        self.runs += 1
        if self.runs == self._fail_on:
            raise RuntimeError("onnxruntime: simulated failure")
        return self._session.run(*args)  # type: ignore[attr-defined]


def test_worker_failure_is_a_model_call_error_and_stores_nothing(tmp_path: Path) -> None:
    """A failed call on a worker thread fails the ingest; no record, no thread left."""
    from mnemon_langgraph.errors import ModelCallError
    from mnemon_langgraph.search._vectors import normalize_rows
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    emb = MiniLMEmbeddings(workers=2, intra_op_threads=2)
    messages = [Message(t or "(silence)", "Ada", id=f"m{i}") for i, t in enumerate(_VARIED)]
    with MnemonStore(tmp_path / "j.db", emb) as store:
        real, _tokenizer = emb._load_bulk()
        emb._bulk_session = _FailingSession(real, fail_on=3)  # type: ignore[assignment]
        with pytest.raises(ModelCallError, match="simulated failure"):
            store.ingest(("u",), messages, origin="chat", pack=False)
        assert store.count(("u",)) == 0 and store.known_message_ids(("u",), ["m0"]) == set()
        assert _embedding_threads() == []
        emb._bulk_session = real
        result = store.ingest(("u",), messages, origin="chat", pack=False)
        assert result.records_written == len(messages)
        ((ids, stored),) = store.journal.iter_vectors(("u",))
        texts = [r.text for r in store.get_records(("u",), ids)]
    expected = normalize_rows(MiniLMEmbeddings(workers=1).embed_array(texts))
    assert np.array_equal(stored, expected)  # stored in record order, bit for bit
    assert _embedding_threads() == []


def test_bench_ingest_compares_todays_path_with_the_concurrent_one_in_one_run() -> None:
    """``bench ingest``: both paths ingest the same input, interleaved, in one process."""
    import argparse

    from mnemon_langgraph.bench import ingest
    from mnemon_langgraph.loaders import SAMPLE_PATH

    args = argparse.Namespace(
        files=[str(SAMPLE_PATH)], embedders="minilm-seq,minilm", repeat=2, one_turn_per_record=True
    )
    result = ingest.run(args)
    seq, new = result["runs"]["minilm-seq"], result["runs"]["minilm"]
    assert seq["messages"] == new["messages"] == 40 and seq["records"] == new["records"] == 40
    assert len(seq["all_messages_per_second"]) == len(new["all_messages_per_second"]) == 2
    assert seq["messages_per_second_ratio"] == 1.0 and new["messages_per_second_ratio"] > 0
    assert seq["all_pass_ratios"] == [1.0, 1.0] and len(new["all_pass_ratios"]) == 2
    assert new["best_messages_per_second"] == max(new["all_messages_per_second"])
    assert [f["source"] for f in seq["per_file"]] == [f["source"] for f in new["per_file"]]
    assert "minilm-seq" in ingest.render(result) and _embedding_threads() == []
