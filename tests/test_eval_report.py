"""Tests of token counting, run metadata, the Markdown summary and the plots' extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mnemon_langgraph.errors import MissingDependencyError
from mnemon_langgraph.eval.plots import plot_evidence
from mnemon_langgraph.eval.report import TokenCounter, render_summary_markdown, run_metadata


def test_token_counter_wordpiece_and_fallback() -> None:
    counter = TokenCounter()
    assert counter.method == "wordpiece"
    assert counter.count("") == 0
    n = counter.count("Caroline went to the LGBTQ support group yesterday.")
    assert 8 <= n <= 20
    fallback = TokenCounter(use_tokenizer=False)
    assert fallback.method == "chars/4"
    assert fallback.count("abcdefghi") == 3
    missing = TokenCounter(Path("/nonexistent/tokenizer.json"))
    assert missing.method == "chars/4"


def test_run_metadata() -> None:
    meta = run_metadata(["mnemon", "eval", "locomo", "x.json"])
    assert meta["command"] == "mnemon eval locomo x.json"
    assert meta["cpu_count"] >= 1
    assert meta["platform"] and meta["date"] and meta["package_version"]


SUMMARY = {
    "metadata": {"command": "mnemon eval locomo a.json --out o"},
    "view": {
        "overall": {"n": 2, "all_hit": 0.5, "all_hit_ci95": [0.1, 0.9], "view_chars": 900.0},
        "by_category": {"1": {"name": "multi-hop", "n": 2, "all_hit": 0.5}},
    },
    "baselines": {
        "turns+cosine@3": {"overall": {"all_hit": 0.25, "all_hit_ci95": [0, 0.6], "chars": 300}},
        "turns+cosine@6": {"overall": {"all_hit": 0.4, "all_hit_ci95": [0, 0.8], "chars": 600}},
    },
    "judge_auc": {"auc": 0.8125, "records": 40, "gold": 3, "questions": 2},
}


def test_render_summary_markdown() -> None:
    md = render_summary_markdown(SUMMARY)
    assert "mnemon eval locomo a.json --out o" in md
    assert "| turns+cosine@3 | 25.0% |" in md
    assert "0.812" in md or "0.813" in md
    assert "1 multi-hop" in md


def test_plots_need_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"pip install .*\[eval\]'"):
        plot_evidence(SUMMARY, tmp_path)


def test_plots_written(tmp_path: Path) -> None:
    files = plot_evidence(SUMMARY, tmp_path)
    assert [f.name for f in files] == ["evidence_vs_chars.png", "evidence_by_category.png"]
    assert all(f.read_bytes()[:4] == b"\x89PNG" for f in files)


def test_error_bars_clip_a_perfect_rate() -> None:
    """A 100% rate whose Wilson bound rounds to just below 1 gives no negative error."""
    from mnemon_langgraph.eval.plots import error_bars

    below, above = error_bars([(100.0, 1.0, 0.72, 0.9999999999999999), (50.0, 0.0, -1e-17, 0.3)])
    assert below == pytest.approx([0.28, 0.0])
    assert above == pytest.approx([0.0, 0.3])
    assert min(below + above) >= 0.0


def test_plots_of_a_perfect_category(tmp_path: Path) -> None:
    """The README's run died here: a category at 100% with hi = 0.9999999999999999."""
    perfect = {"n": 3, "all_hit": 1.0, "all_hit_ci95": [0.44, 0.9999999999999999]}
    summary = {
        "view": {
            "overall": {**perfect, "view_chars": 800.0},
            "by_category": {"4": {**perfect, "name": "open-domain", "view_chars": 800.0}},
        },
        "baselines": {
            "turns+bm25@3": {
                "overall": {**perfect, "chars": 300},
                "by_category": {"4": {**perfect, "chars": 300}},
            }
        },
    }
    files = plot_evidence(summary, tmp_path)
    assert len(files) == 2 and all(f.stat().st_size > 1000 for f in files)
