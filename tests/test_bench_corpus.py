"""Real-text corpora for the benches: cached vectors, resumed chunks, refused mismatches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mnemon_langgraph.bench import corpus
from mnemon_langgraph.bench.corpus import read_passages, real_corpus
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.search.embeddings import MiniLMEmbeddings


class CountingModel:
    """Deterministic unit vectors per text; counts the texts it was asked to embed."""

    def __init__(self, name: str = "counting-model") -> None:
        self.model_name = name
        self.dimension = 8
        self.embedded: list[str] = []

    def embed_array(self, texts: list[str]) -> np.ndarray:
        self.embedded.extend(texts)
        out = np.stack(
            [np.random.default_rng(sum(map(ord, t))).standard_normal(8) for t in texts]
        ).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _write(path: Path, count: int) -> list[str]:
    lines = [
        f"Passage number {i} talks about topic {i % 7} and item {i * 13 % 101}."
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return lines


def test_read_passages_skips_blank_lines_and_refuses_repeats(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("first one\n\n  second one  \n", encoding="utf-8")
    assert read_passages(f) == ["first one", "second one"]
    f.write_text("same\nother\nsame\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="distinct"):
        read_passages(f)


def test_records_and_held_out_queries_with_cached_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus, "CHUNK", 10)
    f = tmp_path / "p.txt"
    lines = _write(f, 40)
    model = CountingModel()
    data = real_corpus(f, 25, 5, model=model)
    assert data["texts"] == lines[:25] and data["queries"] == lines[35:]
    assert not set(data["queries"]) & set(data["texts"])
    # only the chunks holding the records (0, 10, 20) and the queries (30) were embedded
    assert sorted(model.embedded) == sorted(lines[:40])
    expected = CountingModel().embed_array(lines[:25] + lines[35:])
    np.testing.assert_array_equal(np.vstack([data["vecs"], data["qvecs"]]), expected)
    folder = Path(f"{f}.vectors")
    assert sorted(p.name for p in folder.glob("*.npy")) == [
        "0000000.npy",
        "0000010.npy",
        "0000020.npy",
        "0000030.npy",
    ]
    assert json.loads((folder / "manifest.json").read_text())["model"] == "counting-model"
    # a second run embeds nothing; a lost chunk is embedded again, alone
    again = CountingModel()
    np.testing.assert_array_equal(real_corpus(f, 25, 5, model=again)["vecs"], data["vecs"])
    assert again.embedded == []
    (folder / "0000010.npy").unlink()
    real_corpus(f, 25, 5, model=again)
    assert again.embedded == lines[10:20]


def test_a_cache_of_another_file_or_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus, "CHUNK", 10)
    f = tmp_path / "p.txt"
    _write(f, 30)
    real_corpus(f, 10, 5, model=CountingModel())
    with pytest.raises(ConfigurationError, match="another corpus file or model"):
        real_corpus(f, 10, 5, model=CountingModel("other-model"))
    _write(f, 31)
    with pytest.raises(ConfigurationError, match="another corpus file or model"):
        real_corpus(f, 10, 5, model=CountingModel())


def test_too_few_passages_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    _write(f, 12)
    with pytest.raises(ConfigurationError, match="12 passages"):
        real_corpus(f, 10, 5, model=CountingModel())
    assert not Path(f"{f}.vectors").exists()  # refused before anything was embedded


def test_bench_search_on_a_real_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--corpus``: records are the file's first passages with the real MiniLM's vectors."""
    from mnemon_langgraph.cli import main

    f = tmp_path / "p.txt"
    _write(f, 330)
    argv = ["bench", "search", "--corpus", str(f), "--records", "300", "--queries", "8"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["vectors"] == "corpus p.txt, MiniLM"
    (row,) = result["sizes"]
    assert row["records"] == 300 and row["search_p50_ms"] > 0
    grid = row["ann_tradeoff"]
    assert [t["ef_search"] for t in grid] == [64, 128, 256, 512, 1024]
    assert all(0.0 < t["recall"] <= 1.0 for t in grid)
    manifest = json.loads(Path(f"{f}.vectors/manifest.json").read_text())
    assert manifest["dimension"] == 384 and manifest["model"] == MiniLMEmbeddings().model_name
