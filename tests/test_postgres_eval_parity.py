"""``mnemon eval locomo --store postgresql://…`` gives the same Views as on SQLite.

The evaluation reads only through the store protocol, and the PostgreSQL BM25 and dense
rankings equal the embedded ones, so every question's View (its message ids, hence every
evidence figure) must be the same on both backends. Timings are the only difference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _paths import LOCOMO_DEV

from mnemon_langgraph.cli import main

CONV30 = LOCOMO_DEV / "conv-30.json"
pytestmark = pytest.mark.skipif(not CONV30.exists(), reason="LoCoMo dev data not available")
TIMING = ("seconds", "elapsed", "time")


def _eval(store: str, out: Path) -> list[dict[str, object]]:
    code = main(
        [
            "eval", "locomo", str(CONV30), "--out", str(out), "--store", store,
            "--limit-questions", "6", "--embeddings", "fake", "--baseline-k", "3",
            "--no-plots", "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not any(t in k for t in TIMING)} for r in rows]


def test_eval_locomo_on_postgres_equals_sqlite(tmp_path: Path, postgres_url: str) -> None:
    sqlite_rows = _eval(str(tmp_path / "j.sqlite"), tmp_path / "sqlite")
    pg_rows = _eval(postgres_url, tmp_path / "pg")
    assert len(sqlite_rows) == 6
    assert any(r["view_message_ids"] for r in sqlite_rows)
    assert pg_rows == sqlite_rows
