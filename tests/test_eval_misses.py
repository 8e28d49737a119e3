"""Miss analysis of a LoCoMo run: each gold turn's fate, sorted into the four buckets."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from mnemon_langgraph.cli import main
from mnemon_langgraph.eval.misses import (
    BUCKETS,
    gold_fates,
    miss_bucket,
    miss_table,
    misses_of_results,
)

_BUDGET = "left out: over the View's budget (12000 characters, index included); was ranked for 'x'"


def _view() -> SimpleNamespace:
    """A View whose trace pooled r1 (shown), r2 (judged low, cut), r3 (needed, cut), r4
    (stale); D9:9 was never pooled."""
    trace = {
        "pool": [{"id": f"r{i}"} for i in range(1, 5)],
        "judgments": [
            {"target": "r1", "proposition": "needed", "p": 0.9},
            {"target": "r2", "proposition": "screen", "p": 0.2},
            {"target": "r3", "proposition": "screen", "p": 0.1},
            {"target": "r3", "proposition": "needed", "p": 0.7},
            {"target": "r4", "proposition": "needed", "p": 0.8},
        ],
        "placement": {
            "r1": "in the View, taken at rank 1: judged needed (p >= 1/2)",
            "r2": _BUDGET,
            "r3": _BUDGET,
            "r4": "left out: judged no longer current (p >= 1/2 on 'stale')",
        },
    }
    return SimpleNamespace(trace=trace, message_ids=["D1:1"])


MIDS = {"r1": ["D1:1"], "r2": ["D1:2"], "r3": ["D1:3"], "r4": ["D1:4"]}


def test_each_gold_turn_gets_its_record_p_placement_and_bucket() -> None:
    fates = gold_fates(_view(), ["D1:1", "D1:2", "D1:3", "D1:4", "D9:9"], MIDS)
    assert [f["record"] for f in fates] == ["r1", "r2", "r3", "r4", None]
    assert [f["p"] for f in fates] == [0.9, 0.2, 0.7, 0.8, None]  # needed over screen
    assert [miss_bucket(f) for f in fates] == [None, 2, 3, 3, 1]


def test_a_turn_brought_in_for_a_judged_record_and_cut_is_lost_not_unpooled() -> None:
    """r5 was never pooled: the View brought it in (a reply's question) and cut it; r6 was
    brought and shown. Their message ids come from the store's mapping."""
    view = _view()
    view.trace["placement"]["r5"] = (
        "left out: over the View's budget (12000 characters, index included); was ranked "
        "for 'the user's turn that the reply ranked 3 answers, placed before it'"
    )
    view.trace["placement"]["r6"] = "in the View, taken at rank 2: the turn that opens …"
    view.message_ids.append("D2:6")
    mids = {**MIDS, "r5": ["D2:5"], "r6": ["D2:6"]}
    fates = gold_fates(view, ["D2:5", "D2:6", "D1:2", "D9:9"], mids)
    assert [f["record"] for f in fates] == ["r5", "r6", "r2", None]
    assert [f["brought"] for f in fates] == [True, True, False, False]
    assert [miss_bucket(f) for f in fates] == [3, None, 2, 1]


def test_a_question_counts_once_under_its_earliest_lost_stage() -> None:
    fates = gold_fates(_view(), ["D1:1", "D1:2", "D1:3", "D1:4", "D9:9"], MIDS)
    rows = [
        {"conversation": "c", "category": 1, "all_hit": False, "gold_fates": fates},
        {"conversation": "c", "category": 4, "all_hit": False, "gold_fates": fates[1:3]},
        {"conversation": "d", "category": 2, "all_hit": True, "gold_fates": fates[:1]},
        {"conversation": "d", "category": 5, "all_hit": False, "gold_fates": fates},  # unscored
    ]
    table = miss_table(rows)
    assert (table["questions"], table["missed"]) == (3, 2)
    assert table["by_question"] == {BUCKETS[0]: 1, BUCKETS[1]: 1, BUCKETS[2]: 0, BUCKETS[3]: 0}
    assert table["by_turn"][BUCKETS[2]] == 3 and table["by_turn"][BUCKETS[1]] == 2
    assert table["by_conversation"] == {
        "c": {BUCKETS[0]: 1, BUCKETS[1]: 1, **dict.fromkeys(BUCKETS[2:], 0)}
    }
    assert table["removed_as_stale"] == 1  # r4 of the first row; the unscored row not counted


def test_no_rows_means_no_misses_and_a_hit_is_no_miss() -> None:
    """Negative control: nothing is invented for an empty run or for shown turns."""
    assert miss_table([])["missed"] == 0
    assert miss_table([])["removed_as_stale"] == 0
    hit = gold_fates(_view(), ["D1:1"], MIDS)
    assert miss_bucket(hit[0]) is None
    assert miss_table([{"category": 1, "all_hit": True, "gold_fates": hit}])["missed"] == 0


def test_cli_prints_the_table_of_a_results_file(tmp_path: Path, capsys) -> None:
    fates = gold_fates(_view(), ["D1:2", "D9:9"], MIDS)
    row = {"conversation": "c", "category": 1, "all_hit": False, "gold_fates": fates}
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert misses_of_results(tmp_path)["by_question"][BUCKETS[0]] == 1
    assert main(["eval", "misses", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 1. not pooled | 1 | 100.0% | 1 | 1 |" in out
    assert "1 of 1 scored questions" in out
