"""Tests of the foundation CLI commands: ingest, search, stats, demo, bench."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _paths import LOCOMO_DEV

from mnemon_langgraph.cli import build_parser, main
from mnemon_langgraph.cli._common import namespace_arg
from mnemon_langgraph.loaders import SAMPLE_PATH
from mnemon_langgraph.search.embeddings import DEFAULT_MODEL_NAME

LOCOMO = LOCOMO_DEV / "conv-26.json"


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")


def test_namespace_arg() -> None:
    assert namespace_arg(["users", "ada@example.com"]) == ("users", "ada@example.com")
    assert namespace_arg("a/b") == ("a/b",)
    assert namespace_arg(None) is None
    args = build_parser().parse_args(
        ["search", "q", "--db", "x.db", "--namespace", "users", "--namespace", "ada"]
    )
    assert namespace_arg(args.namespace) == ("users", "ada")


def test_ingest_search_stats_locomo(
    fake_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not LOCOMO.exists():
        pytest.skip("LoCoMo dev data not available")
    db = str(tmp_path / "m.db")
    ns = ["--namespace", "locomo", "--namespace", "conv-26"]
    assert main(["ingest", str(LOCOMO), "--db", db, *ns, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "records written" in out and " 0 records" not in out

    assert main(["ingest", str(LOCOMO), "--db", db, *ns, "--no-progress"]) == 0
    assert "0 records written" in capsys.readouterr().out

    assert main(["search", "adoption agency", "--db", db, *ns, "-k", "4", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 4 and [h["rank"] for h in hits] == [0, 1, 2, 3]
    assert {
        "id",
        "message_ids",
        "session",
        "date",
        "text",
        "bm25_rank",
        "dense_rank",
        "score",
    } <= set(hits[0])
    assert any("adopt" in h["text"].lower() for h in hits)
    assert (
        main(["search", "adoption agency", "--db", db, *ns, "-k", "2", "--offset", "2", "--json"])
        == 0
    )
    assert [h["id"] for h in json.loads(capsys.readouterr().out)] == [h["id"] for h in hits[2:]]

    assert main(["search", "adoption agency", "--db", db, *ns, "-k", "2"]) == 0
    text = capsys.readouterr().out
    assert "#0" in text and "bm25_rank=" in text and "dense_rank=" in text and "messages: D" in text

    assert main(["stats", "--db", db, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    (row,) = stats["namespaces"]
    assert row["namespace"] == ["locomo", "conv-26"] and row["records"] > 50
    assert row["indexed"] == row["records"] == row["vectors"]
    assert main(["stats", "--db", db]) == 0
    assert "locomo / conv-26" in capsys.readouterr().out


def test_one_turn_per_record_and_errors(
    fake_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    args = ["ingest", str(SAMPLE_PATH), "--db", db, "--namespace", "n", "--no-progress"]
    assert main([*args, "--one-turn-per-record"]) == 0
    assert "40 records written from 40 messages" in capsys.readouterr().out
    assert main(["search", "x", "--db", db, "--namespace", "n", "-k", "0"]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["stats", "--db", str(tmp_path / "missing.db")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["ingest", str(bad), "--db", db, "--namespace", "n", "--no-progress"]) == 2
    assert main(["search", "nothing", "--db", db, "--namespace", "empty"]) == 0
    assert "no records found" in capsys.readouterr().out


def test_demo_with_fake_embeddings(fake_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "Ingested 40 messages" in out
    assert out.count("> ") >= 4 and "Session" in out
    # the temporary journal is named as such, and truncation is said
    assert "temporary journal" in out and "deleted when the demo ends" in out
    assert re.search(r"showing 2 of the \d+ chosen", out)
    # memory chooses: every View holds some of the 40 records and says how many it left out
    said = r"View: (\d+) of 40 records chosen \((\d+) left out\), [\d,]+ of 1,200 char"
    chosen = re.findall(said, out)
    assert len(chosen) == 4 and all(0 < int(n) < 40 and int(n) + int(m) == 40 for n, m in chosen)
    # plain words: no jargon of the read path's trace without --explain
    for jargon in ("waves", "1 rounds", "System 1", "p=", "planner named a need"):
        assert jargon not in out, jargon
    assert "in the View because" in out


def test_demo_keeps_db_and_explains(
    fake_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "-k", "1", "--db", str(db), "--explain"]) == 0
    out = capsys.readouterr().out
    assert f"into {db} (kept)" in out and db.exists()
    assert "How to read the demo" in out and "why the first record is there" in out
    assert main(["stats", "--db", str(db), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["namespaces"][0]["records"] == 40


def test_search_with_real_embedder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MNEMON_EMBEDDINGS", raising=False)
    db = str(tmp_path / "real.db")
    ns = ["--namespace", "noor"]
    assert (
        main(
            ["ingest", str(SAMPLE_PATH), "--db", db, *ns, "--one-turn-per-record", "--no-progress"]
        )
        == 0
    )
    capsys.readouterr()
    query = ["search", "which dog breed is Pepper", "--db", db, *ns, "-k", "5", "--json"]
    assert main(query) == 0
    hits = json.loads(capsys.readouterr().out)
    (beagle,) = [h for h in hits if "beagle" in h["text"]]
    # no query word in that record ("breed" ≠ "beagle"): only the embedding finds it
    assert beagle["bm25_rank"] is None and beagle["dense_rank"] is not None
    query = ["search", "relocating abroad for employment", "--db", db, *ns, "-k", "3", "--json"]
    assert main(query) == 0
    hits = json.loads(capsys.readouterr().out)
    assert "Rotterdam" in hits[0]["text"] and hits[0]["dense_rank"] == 0
    assert main(["stats", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedding_model"] == DEFAULT_MODEL_NAME


def test_bench_smoke(fake_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ingest.json"
    assert (
        main(["bench", "ingest", str(SAMPLE_PATH), "--embedders", "fake", "--out", str(out)]) == 0
    )
    result = json.loads(out.read_text())
    fake = result["runs"]["fake"]
    assert fake["messages"] == 40 and fake["messages_per_second"] > 0
    assert "messages/s" in capsys.readouterr().out
    argv = ["bench", "search", "--records", "500,1000", "--queries", "5", "--hnsw-threshold", "800"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["records"] for r in result["sizes"]] == [500, 1000]
    flat, row = result["sizes"]
    # the store's own recall only where the store searches an approximate index
    assert flat["vector_index"] == "flat" and flat["recall_at_k"] is None
    assert row["vector_index"] == "hnsw" and row["ann_own_setting"] == row["ef_search"]
    assert 0.5 <= row["recall_at_k"] <= 1.0 and row["hybrid_ratio"] > 0
