"""``mnemon bench search --growth``: search growth from a small to a large namespace, one run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mnemon_langgraph.bench.growth import GOALS, narrow_texts, parse_corpora, parse_pairs, render
from mnemon_langgraph.errors import ConfigurationError


@pytest.mark.integration  # writes two stores' worth of namespaces and times hundreds of calls
@pytest.mark.parametrize("backend", ["embedded", "postgres"])
def test_growth_times_both_sizes_of_every_kind_in_one_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemon_langgraph.bench.backend import WordMixEmbeddings
    from mnemon_langgraph.cli import main
    from mnemon_langgraph.store import MnemonStore

    target = str(tmp_path) if backend == "embedded" else request.getfixturevalue("postgres_url")
    argv = ["bench", "search", "--growth", "120:360", "--queries", "2", "--db", target]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["benchmark"] == "search growth" and result["backend"] == backend
    (pair,) = result["pairs"]
    assert (pair["small"], pair["large"]) == (120, 360) and pair["goal"] is None
    assert set(pair["kinds"]) == {"topical", "common", "narrow"}
    for k in pair["kinds"].values():
        assert min(k["small_ms"], k["large_ms"], k["small_cpu_ms"], k["large_cpu_ms"]) > 0
        assert k["ratio"] == round(k["large_ms"] / k["small_ms"], 2)
    assert pair["worst_ratio"] == max(k["ratio"] for k in pair["kinds"].values())
    assert pair["worst_cpu_ratio"] == max(k["cpu_ratio"] for k in pair["kinds"].values())
    if backend == "postgres":  # the test server runs here: its backends' CPU is read too
        for k in pair["kinds"].values():
            assert k["small_server_cpu_ms"] > 0 and k["large_server_cpu_ms"] > 0
            assert k["large_total_cpu_ms"] >= k["large_cpu_ms"]
            ratio = k["large_total_cpu_ms"] / k["small_total_cpu_ms"]
            assert k["total_cpu_ratio"] == round(ratio, 2)
        worst = max(k["total_cpu_ratio"] for k in pair["kinds"].values())
        assert pair["worst_total_cpu_ratio"] == worst
    else:
        assert all("total_cpu_ratio" not in k for k in pair["kinds"].values())
    # both namespaces of both corpora were really written, in the one store
    location = target if backend == "postgres" else str(Path(target) / "growth.db")
    with MnemonStore(location, WordMixEmbeddings(384)) as store:
        held = {ns: store.count(ns) for ns in store.namespaces()}
    assert held == {
        ("bench", "growth", corpus, str(n)): n for corpus in ("zipf", "narrow") for n in (120, 360)
    }
    text = render(result)
    assert "120→360" in text and "narrow" in text and "goal" not in text
    assert ("client+server CPU" in text) == (backend == "postgres")


def test_growth_goal_line_says_whether_the_worst_ratio_is_within_it() -> None:
    kinds = {
        "topical": {
            "small_ms": 2.0,
            "large_ms": 4.0,
            "small_cpu_ms": 2.0,
            "large_cpu_ms": 4.0,
            "ratio": 2.0,
            "cpu_ratio": 2.0,
        }
    }
    for worst, verdict in ((2.4, "met"), (2.6, "NOT met")):
        pair = {
            "small": 2000,
            "large": 40000,
            "goal": GOALS[(2000, 40000)],
            "worst_ratio": worst,
            "met": worst <= 2.5,
            "worst_cpu_ratio": 5 - worst,
            "met_cpu": 5 - worst <= 2.5,
            "kinds": kinds,
        }
        text = render({"backend": "embedded", "calls": 6, "cpu_count": 2, "pairs": [pair]})
        cpu_verdict = "NOT met" if verdict == "met" else "met"
        assert (
            f"ratio ≤ 2.5 — worst {worst} ({verdict}); CPU worst {5 - worst} ({cpu_verdict})"
            in text
        )


def test_growth_pairs_are_checked() -> None:
    assert parse_pairs("2000:40000,10_000:1_000_000") == [(2000, 40000), (10000, 1000000)]
    for bad in ("40000:2000", "2000", "a:b", ""):
        with pytest.raises(ConfigurationError):
            parse_pairs(bad)
    texts = narrow_texts(3, random.Random(0))
    assert all(len(t.split(": ", 1)[1].split()) == 70 for t in texts)


@pytest.mark.integration  # writes two namespaces and times a few dozen calls
def test_growth_corpora_writes_and_asks_only_the_named_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemon_langgraph.bench.backend import WordMixEmbeddings
    from mnemon_langgraph.cli import main
    from mnemon_langgraph.store import MnemonStore

    argv = ["bench", "search", "--growth", "120:360", "--queries", "2", "--db", str(tmp_path)]
    assert main([*argv, "--growth-corpora", "narrow", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["pairs"][0]["kinds"]) == {"narrow"}
    with MnemonStore(str(tmp_path / "growth.db"), WordMixEmbeddings(384)) as store:
        held = {ns: store.count(ns) for ns in store.namespaces()}
    assert held == {
        ("bench", "growth", "narrow", "120"): 120,
        ("bench", "growth", "narrow", "360"): 360,
    }


def test_growth_corpora_are_checked() -> None:
    assert parse_corpora("narrow") == ("narrow",)
    assert parse_corpora("zipf, narrow,zipf") == ("zipf", "narrow")
    for bad in ("", "zipf,wiki", " , "):
        with pytest.raises(ConfigurationError, match="--growth-corpora"):
            parse_corpora(bad)


@pytest.mark.integration  # writes two namespaces, then times a few dozen calls twice
def test_growth_reuses_the_namespaces_a_store_already_holds_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemon_langgraph.bench import backend
    from mnemon_langgraph.cli import main

    argv = ["bench", "search", "--growth", "120:360", "--queries", "2", "--db", str(tmp_path)]
    argv += ["--growth-corpora", "narrow", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)

    def no_writes(*args: object, **kwargs: object) -> None:
        raise AssertionError("a namespace held whole was written again")

    monkeypatch.setattr(backend, "turn_messages", no_writes)
    assert main(argv) == 0  # the second run asks the same namespaces without writing them
    second = json.loads(capsys.readouterr().out)
    assert set(second["pairs"][0]["kinds"]) == set(first["pairs"][0]["kinds"]) == {"narrow"}
    assert second["client_cache_mb"] is None


def test_growth_client_cache_budget_is_for_postgresql_only(tmp_path: Path) -> None:
    from mnemon_langgraph.bench.growth import run_growth

    with pytest.raises(ConfigurationError, match="--client-cache-mb"):
        run_growth([(120, 360)], str(tmp_path), calls=2, client_cache_mb=64)
    assert not (tmp_path / "growth.db").exists()  # refused before anything was written


@pytest.mark.integration  # writes two namespaces on PostgreSQL and times a few dozen calls
def test_growth_bulk_index_writes_without_hnsw_and_builds_it_after(
    postgres_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from mnemon_langgraph.bench import backend
    from mnemon_langgraph.cli import main

    seen: list[int] = []  # HNSW indexes present while each batch is written
    real_turns = backend.turn_messages

    def turns(*args: object, **kwargs: object) -> object:
        with psycopg.connect(postgres_url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname = 'mnemon_vectors_hnsw'"
            ).fetchone()
        seen.append(int(row[0]) if row else -1)
        return real_turns(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "turn_messages", turns)
    argv = ["bench", "search", "--growth", "120:360", "--queries", "2", "--db", postgres_url]
    assert main([*argv, "--growth-corpora", "narrow", "--bulk-index", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["pairs"][0]["kinds"]) == {"narrow"}
    assert seen == [0, 0]  # both namespaces written without the index
    with psycopg.connect(postgres_url) as conn:
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'mnemon_vectors_hnsw'"
        ).fetchone()
    assert index is not None and "hnsw" in index[0]  # built again after the writes
