"""End-to-end tests of the LoCoMo harness and the ``mnemon eval locomo`` command.

Runs on conv-30 (the smallest dev conversation), a few questions, with LangChain's
deterministic fake embeddings and the offline local judge (lexical + fake vectors).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from _paths import LOCOMO_DEV
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from mnemon_langgraph.cli import main
from mnemon_langgraph.eval.locomo import EvalConfig, judge_scores, run_locomo_eval, view_counts
from mnemon_langgraph.eval.metrics import CATEGORY_NAMES

CONV30 = LOCOMO_DEV / "conv-30.json"
if not CONV30.exists():  # pragma: no cover - data lives beside the repo in this workplace
    CONV30 = Path(__file__).resolve().parents[2] / "shared/data/locomo-dev/conv-30.json"

pytestmark = pytest.mark.skipif(not CONV30.exists(), reason="LoCoMo dev data not available")

ROW_KEYS = {
    "conversation",
    "question_index",
    "category",
    "question",
    "gold_evidence",
    "view_message_ids",
    "all_hit",
    "any_hit",
    "recall",
    "view_chars",
    "view_tokens",
    "searches",
    "s1_calls",
    "waves",
    "rounds",
    "read_seconds",
    "baselines",
    "pool_scores",
}


def _graph_and_store(tmp_path: Path):
    from mnemon_langgraph.judges.local import LocalDecisionModel
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.store import MnemonStore

    emb = DeterministicFakeEmbedding(size=384)
    store = MnemonStore(tmp_path / "journal.sqlite", embeddings=emb)
    graph = create_read_graph(source=store, judge=LocalDecisionModel(embeddings=emb))
    return graph, store


def test_harness_end_to_end_with_answers(tmp_path: Path) -> None:
    graph, store = _graph_and_store(tmp_path)
    n = 3
    # Scripted answer model and grader: 3 answers, then grades CORRECT, WRONG, CORRECT.
    answer = FakeMessagesListChatModel(responses=[AIMessage(f"answer {i}") for i in range(n)])
    grader = FakeMessagesListChatModel(
        responses=[
            AIMessage('{"label": "CORRECT"}'),
            AIMessage('{"label": "WRONG"}'),
            AIMessage('{"label": "CORRECT"}'),
        ]
    )
    out = tmp_path / "out"
    try:
        summary = run_locomo_eval(
            [CONV30],
            out,
            graph=graph,
            store=store,
            config=EvalConfig(limit_questions=n),
            answer_model=answer,
            grader_model=grader,
        )
    finally:
        store.close()
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == n
    for row in rows:
        assert set(row) >= ROW_KEYS
        assert row["conversation"] == "conv-30"
        assert row["gold_evidence"], "conv-30's first questions all have evidence"
        assert row["view_chars"] > 0 and row["view_tokens"] > 0
        assert row["searches"] >= 1 and row["waves"] >= 1
        # all_hit is exactly "every gold id among the View's message ids"
        assert row["all_hit"] == (set(row["gold_evidence"]) <= set(row["view_message_ids"]))
        assert "turns+cosine@3" in row["baselines"]
        assert row["baselines"]["turns+cosine@3"]["records"] == 3
        assert row["baselines"]["turns+rrf@view"]["chars"] <= row["view_chars"]
        assert row["pool_scores"], "the local judge scored the pooled records"
    assert [r["correct"] for r in rows] == [True, False, True]
    assert [r["generated_answer"] for r in rows] == ["answer 0", "answer 1", "answer 2"]

    assert summary["counts"]["questions"] == n
    assert summary["view"]["overall"]["n"] == n
    expected_all = sum(r["all_hit"] for r in rows) / n
    assert summary["view"]["overall"]["all_hit"] == pytest.approx(expected_all)
    assert len(summary["baselines"]) == 18
    assert summary["judge_auc"]["records"] == sum(len(r["pool_scores"]) for r in rows)
    answers = summary["answers"]
    assert answers["overall"]["correct"] == pytest.approx(2 / 3)
    ratio = sum(r["view_tokens"] / r["c_full_tokens"] for r in rows) / n
    assert answers["eci"] == pytest.approx(1 / 3 + ratio)
    assert rows[0]["c_full_tokens"] > 10_000  # the whole conversation
    saved = json.loads((out / "summary.json").read_text())
    assert saved["metadata"]["cpu_count"] >= 1
    assert saved["evidence_repairs"]["unparseable"] == 0
    md = (out / "summary.md").read_text()
    assert "turns+cosine@3" in md and "ROC AUC" in md and "ECI" in md
    for png in ("evidence_vs_chars.png", "evidence_by_category.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_eval_locomo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli-out"
    code = main(
        [
            "eval",
            "locomo",
            str(CONV30),
            "--out",
            str(out),
            "--limit-questions",
            "2",
            "--embeddings",
            "fake",
            "--store",
            str(tmp_path / "j.sqlite"),
            "--no-progress",
            "--budget-chars",
            "4000",
            "--baseline-k",
            "3,6",
            "--no-plots",
            "--conversations",
            "conv-30",
            "--read-setting",
            "assistant_rank_factor=1",
            "--read-setting",
            "excerpt_slots=none",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "scored questions" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["questions"] == 2
    assert summary["config"]["budget_chars"] == 4000
    assert summary["read_settings"]["view_chars"] == 4000
    assert summary["read_settings"]["assistant_rank_factor"] == 1
    assert summary["read_settings"]["excerpt_slots"] is None
    assert set(summary["baselines"]) == {
        f"turns+{m}@{k}" for m in ("cosine", "bm25", "rrf") for k in ("3", "6", "view")
    }
    assert "--budget-chars 4000" in summary["metadata"]["command"]
    assert not (out / "evidence_vs_chars.png").exists()
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert all(r["view_chars"] <= 4000 + 600 for r in rows)

    # `mnemon eval summarize DIR` rebuilds the same aggregates from results.jsonl
    (out / "summary.json").unlink()
    assert main(["eval", "summarize", str(out), "--no-plots"]) == 0
    rebuilt = json.loads((out / "summary.json").read_text())
    assert rebuilt["view"] == summary["view"]
    assert rebuilt["baselines"] == summary["baselines"]
    assert rebuilt["judge_auc"] == summary["judge_auc"]
    assert rebuilt["counts"] == summary["counts"]
    assert main(["eval", "summarize", str(tmp_path / "nothing-here")]) == 2


def test_cli_rejects_unknown_conversation_and_judge(tmp_path: Path) -> None:
    args = [
        "eval",
        "locomo",
        str(CONV30),
        "--out",
        str(tmp_path / "o"),
        "--embeddings",
        "fake",
        "--store",
        str(tmp_path / "j.sqlite"),
        "--no-progress",
    ]
    assert main([*args, "--conversations", "conv-999"]) == 2
    assert main([*args, "--judge", "oracle"]) == 2
    assert main([*args, "--judge", "llm:no-provider"]) == 2
    assert main([*args, "--planner", "no-provider"]) == 2
    assert main([*args, "--baseline-k", "3,x"]) == 2
    assert main([*args, "--read-setting", "no_such_field=1"]) == 2
    assert main([*args, "--read-setting", "assistant_rank_factor"]) == 2
    assert main([*args, "--read-setting", "assistant_rank_factor=0.5"]) == 2
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_read_setting_values_are_typed_and_checked_by_read_settings() -> None:
    from mnemon_langgraph.cli._common import read_settings
    from mnemon_langgraph.errors import ConfigurationError

    got = read_settings(
        ["excerpt_slots=None", "leave_out_recent=false", "fused_weight=0.5", "follow_scope=both"],
        3000,
    )
    assert (got.excerpt_slots, got.leave_out_recent) == (None, False)
    assert got.experiments.fused_weight == 0.5  # a switch, by its name
    assert (got.follow_scope, got.view_chars) == ("both", 3000)
    assert read_settings([]) == read_settings([], None)
    for bad in ("view_chars=-1", "follow_scope=everywhere", "=3", "view_chars=many"):
        with pytest.raises(ConfigurationError):
            read_settings([bad])


def test_cli_eval_writes_records_of_the_asked_size(tmp_path: Path) -> None:
    """``--record-chars`` sizes the journal's records (the README's record-size figures)."""
    sizes = {}
    for n in (300, None):
        journal = tmp_path / f"j{n}.sqlite"
        argv = ["eval", "locomo", str(CONV30), "--out", str(tmp_path / f"o{n}")]
        argv += ["--limit-questions", "1", "--embeddings", "fake", "--store", str(journal)]
        argv += ["--no-progress", "--no-plots", *(["--record-chars", str(n)] if n else [])]
        assert main(argv) == 0
        command = json.loads((tmp_path / f"o{n}" / "summary.json").read_text())["metadata"]
        assert ("--record-chars 300" in command["command"]) == (n == 300)
        with closing(sqlite3.connect(journal)) as db:
            texts = [row[0] for row in db.execute("SELECT text FROM records")]
        sizes[n] = (len(texts), max(map(len, texts)))
    assert sizes[300][1] <= 300 < sizes[None][1] <= 600
    assert sizes[300][0] > sizes[None][0]
    assert main([*argv[:-1], "--record-chars", "50"]) == 2  # refused, with the reason


class _FakeView:
    def __init__(self, trace: dict) -> None:
        self.trace = trace


def test_judge_scores_and_counts_from_trace() -> None:
    view = _FakeView(
        {
            "pool": [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d"}],
            "judgments": [
                {"target": "a", "proposition": "screen", "p": 0.9},
                {"target": "a", "proposition": "needed", "p": 0.8},
                {"target": "b", "proposition": "screen", "p": 0.2},
                {"target": "c", "proposition": "stale", "p": 0.7},
            ],
            "counts": {"searches": 5, "s1_calls": 3, "waves": 2, "rounds": 1},
            "timings": {"read_path_s": 0.25, "model_s": 1.0},
        }
    )
    lookup = {"a": ("D1:1",), "b": ("D1:2", "D1:3"), "c": ("D2:1",), "d": ("D3:1",)}
    scores = judge_scores(view, ["D1:3"], lookup)
    assert scores == [("a", 0.8, False), ("b", 0.2, True)]
    counts = view_counts(view)
    assert counts["searches"] == 5 and counts["waves"] == 2 and counts["read_seconds"] == 0.25


def test_category_names() -> None:
    assert CATEGORY_NAMES[5] == "adversarial"


def _tiny_conversation(sample_id: str) -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "I am learning the violin."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister moved to Lisbon."},
            ],
            "session_2_date_time": "10:00 am on 20 May, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "I ran a marathon in Chicago."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Biscuit loves the beach."},
            ],
        },
        "qa": [
            {
                "question": "What is Ann's puppy called?",
                "answer": "Biscuit",
                "evidence": ["D1:1; D2:2"],
                "category": 4,
            },
            {
                "question": "Where did Ann's sister move?",
                "answer": "Lisbon",
                "evidence": ["D:1:3", "D1:3"],
                "category": 1,
            },
            {
                "question": "Where did Bob run a marathon?",
                "answer": "Chicago",
                "evidence": ["D9:99", "D"],
                "category": 2,
            },
            {
                "question": "What did Bob's cat eat?",
                "adversarial_answer": "fish",
                "evidence": ["D2:01"],
                "category": 5,
            },
        ],
        "session_1_summary": "NEVER INGEST THIS SUMMARY",
    }


def test_locomo10_list_with_malformed_evidence(tmp_path: Path) -> None:
    data = [_tiny_conversation("conv-a"), _tiny_conversation("conv-b")]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    graph, store = _graph_and_store(tmp_path)
    out = tmp_path / "out"
    try:
        summary = run_locomo_eval(
            [path],
            out,
            graph=graph,
            store=store,
            config=EvalConfig(conversations=["conv-b"], plots=False, baseline_ks=(3,)),
        )
        texts = [r.text for r in store.journal.records(("locomo", "conv-b"))]
        assert store.journal.count(("locomo", "conv-a")) == 0
    finally:
        store.close()
    assert texts and not any("SUMMARY" in t for t in texts)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["conversation"] for r in rows] == ["conv-b"] * 4
    assert rows[0]["gold_evidence"] == ["D1:1", "D2:2"]
    assert rows[1]["gold_evidence"] == ["D1:3"]
    assert rows[2]["gold_evidence"] == [] and rows[2]["all_hit"] is None
    assert rows[3]["gold_evidence"] == ["D2:1"] and rows[3]["category"] == 5
    assert summary["evidence_repairs"] == {
        "split": 1,
        "separator": 1,
        "zero_padded": 1,
        "duplicate": 1,
        "unknown_turn": 1,
        "unparseable": 1,
    }
    counts = summary["counts"]
    assert counts["questions"] == 4 and counts["questions_without_gold"] == 1
    # categories 1 and 4 with gold are scored; 5 is reported apart
    assert summary["view"]["overall"]["n"] == 2
    assert summary["view"]["unscored"]["n"] == 1
    assert summary["view"]["by_category"]["5"]["name"] == "adversarial"
    # the question is asked one day after the last session (20 May 2023, 10:00)
    assert rows[0]["asked_at"] == "2023-05-21T10:00:00"
    assert rows[0]["c_full_tokens"] > 0


def test_build_judge_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    import mnemon_langgraph.cli._eval as cli_eval
    from mnemon_langgraph import backends
    from mnemon_langgraph.judges import ChatDecisionModel, LocalDecisionModel

    fake = FakeMessagesListChatModel(responses=[AIMessage("yes")])
    monkeypatch.setattr(backends, "chat_model_from_spec", lambda spec: fake)
    judge = cli_eval.build_judge("llm:openai:gpt-4.1-mini")
    assert isinstance(judge, ChatDecisionModel) and judge.llm is fake
    assert isinstance(cli_eval.build_judge("local"), LocalDecisionModel)
    assert cli_eval.build_planner("rules") is None
    assert cli_eval.build_planner("openai:gpt-4.1-mini") is fake


def test_missing_matplotlib_warns_before_work_and_summary_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Plots are a bonus: no matplotlib → a warning up front, and summary.json/.md anyway."""
    import sys

    import mnemon_langgraph.eval.locomo as locomo

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    warned_before_ingest: list[bool] = []
    real_prepare = locomo._prepare

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        warned_before_ingest.append("matplotlib is not installed" in caplog.text)
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(locomo, "_prepare", spy)
    graph, store = _graph_and_store(tmp_path)
    out = tmp_path / "out"
    with caplog.at_level("WARNING", logger="mnemon_langgraph.eval.locomo"):
        try:
            summary = run_locomo_eval(
                [CONV30],
                out,
                graph=graph,
                store=store,
                config=EvalConfig(limit_questions=1, baseline_ks=(3,)),
                progress=True,
            )
        finally:
            store.close()
    assert warned_before_ingest == [True]
    assert "plots" not in summary
    assert json.loads((out / "summary.json").read_text())["counts"]["questions"] == 1
    assert (out / "summary.md").read_text().startswith("# LoCoMo evaluation")
    assert not list(out.glob("*.png"))
    # ingest is its own progress step, finished before the questions' bar starts
    err = capsys.readouterr().err
    assert "ingest conv-30" in err and "questions" in err
    assert err.index("ingest conv-30") < err.index("questions")


def test_failed_plot_still_writes_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mnemon_langgraph.eval.plots as plots

    def broken(summary: object, out_dir: object) -> list[Path]:
        raise ValueError("'yerr' must not contain negative values")

    monkeypatch.setattr(plots, "plot_evidence", broken)
    graph, store = _graph_and_store(tmp_path)
    out = tmp_path / "out"
    try:
        run_locomo_eval(
            [CONV30],
            out,
            graph=graph,
            store=store,
            config=EvalConfig(limit_questions=1, baseline_ks=(3,)),
        )
    finally:
        store.close()
    saved = json.loads((out / "summary.json").read_text())
    assert "yerr" in saved["plots_error"]
    assert "No plots: ValueError" in (out / "summary.md").read_text()


def test_cli_eval_with_unreachable_planner_says_so_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The read path falls back per question; the run still exits 1 with one clear line."""
    import socket

    pytest.importorskip("langchain_openai")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    out = tmp_path / "o"
    argv = ["eval", "locomo", str(CONV30), "--out", str(out), "--limit-questions", "1"]
    argv += ["--embeddings", "fake", "--store", str(tmp_path / "j.sqlite"), "--no-progress"]
    assert main([*argv, "--no-plots", "--planner", "openai:gpt-4.1-mini"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "model calls failed on 1 of 1 questions" in err[0], err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["questions_with_model_errors"] == 1
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert row["model_errors"] >= 1
