"""Tests of ``mnemon bench scale`` at tiny sizes: report structure and bounded per-turn work.

No timing is asserted; only that the per-turn counts do not grow with the history.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemon_langgraph.bench.scale import (
    PROBE_QUESTIONS,
    ratios,
    run_scale,
    synthetic_messages,
)
from mnemon_langgraph.cli import main as cli_main
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.read.settings import ReadSettings


def test_synthetic_messages_are_deterministic_and_locomo_like() -> None:
    a = synthetic_messages(45, seed=3)
    b = synthetic_messages(45, seed=3)
    assert a == b
    assert len(a) == 45
    assert a[0].id == "D1:1" and a[20].id == "D2:1" and a[44].id == "D3:5"
    assert {m.speaker for m in a} == {"Caroline", "Melanie"}
    assert all(m.timestamp is not None for m in a)
    assert a[20].timestamp > a[19].timestamp
    assert synthetic_messages(45, seed=4) != a


def test_scale_report_counts_do_not_grow(tmp_path: Path) -> None:
    report = run_scale([600, 200], folder=tmp_path, searches_per_probe=1)
    sizes = report["sizes"]
    assert [s["records"] for s in sizes] == [200, 600]
    for s in sizes:
        assert s["search_ms_median"] > 0
        assert s["peak_rss_mb"] > 0
        assert len(s["per_turn"]["waves"]) == len(PROBE_QUESTIONS)
        assert s["view_chars_median"] > 0
    large = sizes[1]
    # Following positives adds searches worded from the records found, so the per-turn
    # counts depend on what is found, not on how much is stored: bounded by the budgets,
    # and not growing with the history (the bench's goal: ≤ 1.05× on average).
    cfg = ReadSettings()
    bounds = {
        # 5 planned at most; per later round a page or new search per need, 2 scopes
        # per followed positive
        "searches": 5 + (cfg.max_rounds - 1) * cfg.max_needs * (1 + 2 * cfg.follow_positives),
        "waves": 2 * cfg.max_rounds,  # a screen and a judge wave per round
        "rounds": cfg.max_rounds,
    }
    for key in ("searches", "s1_calls", "waves", "rounds"):
        counts = [s["per_turn"][key] for s in sizes]
        assert min(counts[0]) >= 1 and max(counts[0] + counts[1]) <= bounds.get(key, 10**6), key
        assert sum(counts[1]) <= 1.05 * sum(counts[0]), key
    # the View is sized by characters (no record-count cap by default): bounded, not equal
    for s in sizes:
        assert max(s["per_turn"]["view_records"]) > 0 and s["view_chars_median"] <= 12_000
    # judgments are bounded by the budgets: ≤ 3 rounds × 48 pooled × 6 propositions
    assert max(large["per_turn"]["judgments"]) <= 3 * 48 * 6
    rows = report["ratios"]
    assert rows[0]["records"] == 200 and rows[0]["waves_per_turn"] == 1.0
    assert rows[1]["waves_per_turn"] == 1.0
    assert rows[1]["search_ms_median"] is not None
    assert report["settings"]["vectors"] == "random"


def test_ratios_divide_by_smallest() -> None:
    rows = ratios(
        [
            {"records": 10, "search_ms_median": 2.0, "waves_per_turn": 0},
            {"records": 1, "search_ms_median": 1.0, "waves_per_turn": 0},
        ]
    )
    assert rows[0]["search_ms_median"] == 2.0
    assert rows[1]["search_ms_median"] == 1.0
    assert rows[0]["waves_per_turn"] is None  # 0 in the smallest size: no ratio


def test_bad_arguments() -> None:
    with pytest.raises(ConfigurationError):
        run_scale([])
    with pytest.raises(ConfigurationError):
        run_scale([10], vectors="magic")


def test_cli_bench_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scale.json"
    code = cli_main(
        ["bench", "scale", "--records", "150", "--folder", str(tmp_path / "j"), "--out", str(out)]
    )
    assert code == 0
    assert "ratio to the smallest size" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["sizes"][0]["records"] == 150
    assert data["ratios"][0]["waves_per_turn"] == 1.0
