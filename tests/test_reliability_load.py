"""``mnemon bench load`` at a tiny size: the report has its fields and zero errors.

Not a timed test: it checks the benchmark runs end to end and counts what it should.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemon_langgraph.bench.load import synthetic_messages
from mnemon_langgraph.cli import main


def test_bench_load_tiny_reports_fields_and_no_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "load.json"
    code = main(
        [
            "bench",
            "load",
            "--records",
            "300",
            "--concurrency",
            "4",
            "--requests",
            "12",
            "--db",
            str(tmp_path / "load.db"),
            "--json",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads(out.read_text())
    assert printed == saved
    assert saved["records"] == 300
    assert saved["completed"] == saved["requests"] == 12
    assert saved["errors"] == 0 and saved["error_examples"] == [] and not saved["warmup_errors"]
    assert saved["concurrency"] == 4
    lat = saved["latency_s"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    assert saved["throughput_views_per_s"] > 0
    assert saved["mean_view_records"] > 0  # the Views were not empty
    assert "stand-in" in saved["vectors_note"]
    # reusing the journal does not ingest again
    assert (
        main(
            [
                "bench",
                "load",
                "--records",
                "300",
                "--requests",
                "2",
                "--concurrency",
                "2",
                "--db",
                str(tmp_path / "load.db"),
                "--json",
                "--judge",
                "scripted",
            ]
        )
        == 0
    )
    again = json.loads(capsys.readouterr().out)
    assert again["records"] == 300 and again["errors"] == 0


def test_synthetic_messages_are_deterministic_and_distinct() -> None:
    a = synthetic_messages(120)
    assert a == synthetic_messages(120)
    assert len({m.id for m in a}) == 120
    assert {m.session for m in a} == {1, 2, 3}
