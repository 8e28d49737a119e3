"""Long histories in the BEAM harness: filler tiers, the vector cache, resume, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.beam_eval import BeamEvalConfig, run_beam_eval
from mnemon_langgraph.search.embeddings import CachedEmbeddings
from tests.test_beam import RELEASE_CHAT, _tree_of
from tests.test_filler import _beam_chat, _lme_file


class CountingEmbeddings(Embeddings):
    """The deterministic fake embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = DeterministicFakeEmbedding(size=384)
        self.model_name = "counting-fake"
        self.dimension = 384
        self.documents = 0
        self.queries = 0
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        self.texts += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.inner.embed_query(text)


class StoppingGraph:
    """A read graph that stops the run (as a kill would) after ``allowed`` reads."""

    def __init__(self, graph: Any, allowed: int | None = None) -> None:
        self.graph = graph
        self.allowed = allowed
        self.calls = 0

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        if self.allowed is not None and self.calls >= self.allowed:
            raise KeyboardInterrupt("stopped")
        self.calls += 1
        return self.graph.invoke(*args, **kwargs)


def _beam_root(tmp_path: Path) -> Path:
    root = tmp_path / "beam"
    return root if root.is_dir() else _tree_of(root, {"1": RELEASE_CHAT})


def _filler(tmp_path: Path) -> list[str]:
    return [
        str(_lme_file(tmp_path / "lme.json", sessions=30)),
        str(_beam_chat(tmp_path / "other" / "100K" / "7")),
        str(_beam_root(tmp_path)),  # the evaluated conversation itself: left out by content
    ]


def _run(tmp_path: Path, store_target: str | Path, embedder: Embeddings, **kw: Any) -> Any:
    from mnemon_langgraph.backends import judge_from_spec
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.store import MnemonStore

    store = MnemonStore(store_target, embeddings=embedder)
    graph = StoppingGraph(
        create_read_graph(source=store, judge=judge_from_spec("local", embeddings=embedder)),
        kw.pop("allowed", None),
    )
    cfg = BeamEvalConfig(
        baseline_ks=(3,),
        plots=False,
        filler=_filler(tmp_path),
        history_tokens=kw.pop("history_tokens", (300, 1200)),
        **kw,
    )
    try:
        summary = run_beam_eval(
            _beam_root(tmp_path), tmp_path / "out", graph=graph, store=store, config=cfg
        )
    finally:
        store.close()
    return summary, graph


def _rows(tmp_path: Path, name: str = "results.jsonl") -> list[dict[str, Any]]:
    lines = (tmp_path / "out" / name).read_text().splitlines()
    return [json.loads(x) for x in lines]


def test_filler_tiers_ask_each_question_in_each_history(tmp_path: Path) -> None:
    summary, graph = _run(tmp_path, tmp_path / "j.sqlite", DeterministicFakeEmbedding(size=384))
    rows = _rows(tmp_path)
    assert graph.calls == len(rows) == 2 * 5
    assert list(summary["by_tier"]) == ["300-hist", "1.2K-hist"]
    for r in rows:
        assert r["history_tokens"] <= r["history_budget"]
        assert r["filler_tokens"] > 0 and r["filler_excluded_sessions"] >= 1
    big = [r for r in rows if r["tier"] == "1.2K-hist"]
    assert big[0]["messages"] > next(r for r in rows if r["tier"] == "300-hist")["messages"]
    # the evidence ids still name the conversation's own messages, never filler
    assert all(not e.startswith("filler:") for r in rows for e in r["gold_evidence"])
    # the same questions pair across the history sizes
    assert summary["tier_ratios"]["paired"]["1.2K-hist"]["paired"] is True
    builds = _rows(tmp_path, "builds.jsonl")
    assert [b["tier"] for b in builds] == ["300-hist", "1.2K-hist"]
    for b in builds:
        assert b["ingest_cpu_seconds"] > 0 and b["messages_per_cpu_second"] > 0
        assert b["peak_rss_bytes"] >= b["rss_bytes"] > 10**6 and b["disk_bytes"] > 0
        assert b["turn_write_seconds"] > 0
    assert set(summary["builds"]) == {"300-hist", "1.2K-hist"}
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "## Building the namespaces" in md and 'other LongMemEval "users"' in md
    from mnemon_langgraph.eval.beam_eval import summarize_beam_results

    assert set(summarize_beam_results(tmp_path / "out")["builds"]) == {"300-hist", "1.2K-hist"}


def test_second_build_embeds_nothing_cached(tmp_path: Path) -> None:
    counting = CountingEmbeddings()
    cached = CachedEmbeddings(counting, tmp_path / "vectors.sqlite")
    _run(tmp_path, tmp_path / "a.sqlite", cached)
    first = counting.documents
    assert first > 0
    # a new journal, the same histories: every record and turn vector comes from the cache
    _run(tmp_path, tmp_path / "b.sqlite", cached)
    assert counting.documents == first
    assert cached.hits >= first
    cached.close()


def test_a_stopped_run_resumes_without_redoing(tmp_path: Path) -> None:
    emb = DeterministicFakeEmbedding(size=384)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, tmp_path / "j.sqlite", emb, allowed=3)
    done = _rows(tmp_path)
    assert len(done) == 3
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    with MnemonStore(tmp_path / "j.sqlite", embeddings=emb) as store:
        # what a SIGKILL mid-build leaves (an exception erases it): part of a namespace
        store.ingest(
            ("beam", "300-hist", "100K-1"),
            [Message("a partial build's leftover", "user", id="leftover")],
            origin="killed",
        )
    with (tmp_path / "out" / "results.jsonl").open("a") as fh:
        fh.write('{"conversation": "torn')  # the line a killed run was writing
    summary, graph = _run(tmp_path, tmp_path / "j.sqlite", emb, resume=True)
    rows = _rows(tmp_path)
    assert graph.calls == 10 - 3
    assert len(rows) == 10 == summary["counts"]["questions"]
    keys = [(r["conversation"], r["ability"], r["question_index"]) for r in rows]
    assert len(set(keys)) == 10
    assert rows[:3] == done
    assert summary["metadata"]["resumed_rows"] == 3
    # the stale namespace was built again from nothing: its build ingested every message
    rebuilt = _rows(tmp_path, "builds.jsonl")[0]
    assert rebuilt["tier"] == "300-hist"
    assert rebuilt["messages_written"] == rebuilt["messages"] == rows[0]["messages"]
    assert {r["records"] for r in rows if r["tier"] == "300-hist"} == {done[0]["records"]}
    # a finished run resumed asks nothing and builds nothing
    _, graph = _run(tmp_path, tmp_path / "j.sqlite", emb, resume=True)
    assert graph.calls == 0 and len(_rows(tmp_path)) == 10
    # other settings: refused
    with pytest.raises(InputError, match="other settings"):
        _run(tmp_path, tmp_path / "j.sqlite", emb, resume=True, filler_seed=9)


def test_cli_eval_beam_history_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnemon_langgraph.cli import main

    args = [
        "eval",
        "beam",
        str(_beam_root(tmp_path)),
        "--out",
        str(tmp_path / "out"),
        "--embeddings",
        "fake",
        "--embedding-cache",
        str(tmp_path / "cache.sqlite"),
        "--baseline-k",
        "3",
        "--no-progress",
        "--no-plots",
        "--per-ability",
        "1",
        "--history-tokens",
        "300,1.2K",
        "--filler-seed",
        "5",
    ]
    for path in _filler(tmp_path):
        args += ["--filler", path]
    assert main(args) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert list(summary["by_tier"]) == ["300-hist", "1.2K-hist"]
    assert summary["config"]["filler_seed"] == 5
    assert "--history-tokens 300,1.2K" in summary["metadata"]["command"]
    assert summary["filler_pool"]["tokens_by_source"]["longmemeval"] > 0
    assert main([*args, "--resume"]) == 0
    assert len(_rows(tmp_path)) == 10
    at = args.index("--history-tokens")
    assert main(args[:at] + args[at + 2 :]) == 2  # --filler without --history-tokens
    capsys.readouterr()


def test_filler_history_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    summary, _ = _run(
        tmp_path, postgres_url, DeterministicFakeEmbedding(size=384), history_tokens=(1200,)
    )
    assert summary["counts"]["questions"] == 5
    build = _rows(tmp_path, "builds.jsonl")[0]
    assert build["disk_bytes"] > 0 and build["turn_write_seconds"] > 0


def test_filling_the_cache_ahead_leaves_only_the_conversation(tmp_path: Path) -> None:
    from mnemon_langgraph.eval.filler import embed_filler, load_filler_pool

    counting = CountingEmbeddings()
    cached = CachedEmbeddings(counting, tmp_path / "vectors.sqlite")
    texts = embed_filler(load_filler_pool(_filler(tmp_path)), cached, record_chars=600, batch=7)
    assert texts == counting.documents > 0
    counting.texts.clear()
    _run(tmp_path, tmp_path / "j.sqlite", cached)
    # the build embedded the evaluated conversation's texts, no filler text
    assert counting.texts
    assert not [t for t in counting.texts if "Topic " in t or "Garden batch" in t]
    cached.close()


def test_cli_eval_filler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnemon_langgraph.cli import main

    sources = _filler(tmp_path)
    assert main(["eval", "filler", *sources, "--stats-only"]) == 0
    assert "distinct wordpiece tokens" in capsys.readouterr().out
    cache = tmp_path / "cache.sqlite"
    args = ["eval", "filler", *sources, "--embeddings", "fake", "--embedding-cache", str(cache)]
    assert main(args) == 0
    first = capsys.readouterr().out.splitlines()[-1]
    assert main(args) == 0
    again = capsys.readouterr().out.splitlines()[-1]
    assert " 0 already cached" in first and ": 0 embedded" in again


@pytest.mark.integration  # starts a child Python process (mnemon view)
def test_cli_cold_open_reads_from_a_new_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemon_langgraph.cli import main

    args = [
        "eval",
        "beam",
        str(_beam_root(tmp_path)),
        "--out",
        str(tmp_path / "out"),
        "--embeddings",
        "fake",
        "--no-embedding-cache",
        "--baseline-k",
        "3",
        "--no-progress",
        "--no-plots",
        "--limit-questions",
        "2",
        "--history-tokens",
        "1.2K",
        "--cold-open",
        "--store",
        str(tmp_path / "j.sqlite"),
    ]
    for path in _filler(tmp_path):
        args += ["--filler", path]
    assert main(args) == 0
    build = _rows(tmp_path, "builds.jsonl")[0]
    assert "cold_open_error" not in build, build.get("cold_open_error")
    assert build["cold_open_seconds"] > build["cold_open_read_seconds"] > 0
    assert "cold open s" in (tmp_path / "out" / "summary.md").read_text()
    capsys.readouterr()


def test_cli_longmemeval_inside_other_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from _longmemeval_fixture import eval_args, questions, write

    from mnemon_langgraph.cli import main

    write(tmp_path / "lme.json", questions())
    other = _lme_file(tmp_path / "other.json", sessions=30)
    args = eval_args(
        tmp_path,
        "out",
        "--no-embedding-cache",
        "--budget-curve",
        "none",
        "--filler",
        str(other),
        "--filler",
        str(tmp_path / "lme.json"),  # the file itself: each question's own sessions left out
        "--history-tokens",
        "900",
    )
    assert main(args) == 0
    rows = _rows(tmp_path)
    own = {q["question_id"]: q for q in questions()}
    for r in rows:
        assert r["history_budget"] == 900 and r["history_tokens"] <= 900
        assert r["filler_tokens"] > 0 and r["filler_excluded_sessions"] >= 1
        assert r["messages"] > sum(len(s) for s in own[r["question_id"]]["haystack_sessions"])
        assert not [m for m in r["gold_evidence"] if m.startswith("filler:")]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["config"]["history_tokens"] == 900
    assert summary["filler_pool"]["filler_tokens_median"] > 0
    assert 'other LongMemEval "users"' in (tmp_path / "out" / "summary.md").read_text()
    assert main(eval_args(tmp_path, "out2", "--history-tokens", "1M")) == 2  # no --filler
    capsys.readouterr()


def test_cli_longmemeval_resume_keeps_what_was_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from _longmemeval_fixture import eval_args, write

    from mnemon_langgraph.cli import main

    write(tmp_path / "lme.json")
    args = eval_args(tmp_path, "out", "--no-embedding-cache", "--budget-curve", "none")
    assert main(args) == 0
    results = tmp_path / "out" / "results.jsonl"
    lines = results.read_text().splitlines()
    assert len(lines) == 4
    results.write_text(lines[0] + "\n" + lines[1][:40])  # stopped while writing the second
    assert main([*args, "--resume"]) == 0
    again = results.read_text().splitlines()
    assert len(again) == 4 and again[0] == lines[0]  # kept, not asked again (times differ)
    assert [json.loads(x)["question_id"] for x in again] == [
        json.loads(x)["question_id"] for x in lines
    ]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["metadata"]["resumed_rows"] == 1
    assert main([*args, "--resume", "--budget-chars", "3000"]) == 2  # other settings
    capsys.readouterr()


def test_resume_tells_apart_the_parts_of_a_concatenation(tmp_path: Path) -> None:
    """A concatenation asks each part's questions: the same ability and index twice."""
    from mnemon_langgraph.backends import judge_from_spec
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.store import MnemonStore
    from tests.test_beam import _shifted_chat

    root = _tree_of(tmp_path / "beam", {"1": RELEASE_CHAT, "2": _shifted_chat(30, "plot")})
    emb = DeterministicFakeEmbedding(size=384)

    def run(allowed: int | None, resume: bool) -> StoppingGraph:
        with MnemonStore(tmp_path / "j.sqlite", embeddings=emb) as store:
            graph = StoppingGraph(
                create_read_graph(source=store, judge=judge_from_spec("local", embeddings=emb)),
                allowed,
            )
            cfg = BeamEvalConfig(
                baseline_ks=(3,), plots=False, concat=[("x", ["100K/1", "100K/2"])], resume=resume
            )
            run_beam_eval(root, tmp_path / "out", graph=graph, store=store, config=cfg)
        return graph

    with pytest.raises(KeyboardInterrupt):
        run(6, False)  # the first part's five questions and one of the second's
    assert run(None, True).calls == 4
    rows = _rows(tmp_path)
    assert len(rows) == 10
    assert {(r["origin"], r["ability"]) for r in rows} == {
        (o, a) for o in ("100K/1", "100K/2") for a in {r["ability"] for r in rows}
    }


def test_smaller_histories_of_every_conversation_come_first(tmp_path: Path) -> None:
    from tests.test_beam import _shifted_chat

    _tree_of(tmp_path / "beam", {"1": RELEASE_CHAT, "2": _shifted_chat(30, "plot")})
    _run(tmp_path, tmp_path / "j.sqlite", DeterministicFakeEmbedding(size=384), per_ability=1)
    order = [
        (b["tier"], b["conversation"].rpartition("/")[2]) for b in _rows(tmp_path, "builds.jsonl")
    ]
    assert order == [
        ("300-hist", "100K-1"),
        ("300-hist", "100K-2"),
        ("1.2K-hist", "100K-1"),
        ("1.2K-hist", "100K-2"),
    ]
