"""``mnemon eval compare``: two runs paired by question, what moved, the exact McNemar p."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest
from _longmemeval_fixture import eval_args, write

from mnemon_langgraph.cli import main
from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.compare import (
    compare_rows,
    mcnemar_exact,
    question_key,
    render_comparison,
)


def _row(conv: str, index: int, hit: bool | None, **extra: Any) -> dict[str, Any]:
    """A LoCoMo-shaped results.jsonl row (the fields the comparison reads)."""
    return {
        "conversation": conv,
        "question_index": index,
        "category": 1,
        "question": f"question {index} of {conv}?",
        "all_hit": hit,
        "any_hit": hit,
        "recall": None if hit is None else float(hit),
        "view_message_ids": ["D1:1", "D1:2"] if hit else ["D2:1"],
        **extra,
    }


def test_pairs_by_question_and_names_what_moved() -> None:
    before = [_row("c1", 0, True), _row("c1", 1, False), _row("c2", 0, True), _row("c2", 1, True)]
    after = [_row("c1", 0, True), _row("c1", 1, True), _row("c2", 0, False), _row("c2", 1, True)]
    after[3]["view_message_ids"] = ["D1:2", "D1:1"]  # same messages, another order
    c = compare_rows(before, after)
    assert (c.paired, c.all_before, c.all_after) == (4, 3, 3)
    assert [q for _, q in c.gained] == ["question 1 of c1?"]
    assert [q for _, q in c.lost] == ["question 0 of c2?"]
    assert c.views_changed == 3
    assert c.p_value == 1.0
    text = render_comparison(c, ("A", "B"))
    assert "| all evidence | 3 (75.0%) | 3 (75.0%) |" in text
    assert "- c1 1 #1: question 1 of c1?" in text and "## Lost" in text


def test_unscored_questions_are_left_out_and_unshared_ones_counted() -> None:
    before = [
        _row("c1", 0, True),
        _row("c1", 1, None),  # a question without gold: no hit value
        _row("c1", 2, False, scored=False),  # an abstention question (LongMemEval, BEAM)
        _row("c1", 3, False),
        _row("c1", 4, False, category=5),  # LoCoMo's adversarial category
    ]
    after = [
        _row("c1", 0, False),
        _row("c1", 1, None),
        _row("c1", 2, True, scored=False),
        _row("c1", 4, True, category=5),
        _row("c9", 0, True),  # a question the first run does not have
    ]
    c = compare_rows(before, after)
    assert (c.paired, c.only_before, c.only_after) == (1, 1, 1)
    assert len(c.lost) == 1 and not c.gained
    assert "Not paired: 1 scored only in before, 1 only in after" in render_comparison(c)


def test_beam_concatenated_tiers_are_told_apart_by_tier_and_origin() -> None:
    rows = [
        _row("100K/1", 0, True, tier="100K", origin="100K/1", ability="event_ordering"),
        _row("1M-cat", 0, True, tier="1M-cat", origin="100K/1", ability="event_ordering"),
        _row("1M-cat", 0, False, tier="1M-cat", origin="100K/2", ability="event_ordering"),
    ]
    assert len({question_key(r) for r in rows}) == 3
    assert compare_rows(rows, rows).paired == 3


def test_exact_mcnemar_is_the_two_sided_binomial_tail() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 1) == 1.0
    assert mcnemar_exact(5, 0) == mcnemar_exact(0, 5) == 2 / 2**5
    # 9 against 1: 2 * (C(10,0) + C(10,1)) / 2^10
    assert mcnemar_exact(9, 1) == pytest.approx(2 * (comb(10, 0) + comb(10, 1)) / 2**10)
    assert 0.0 < mcnemar_exact(12, 2) < 0.05 < mcnemar_exact(3, 1)
    with pytest.raises(InputError, match=">= 0"):
        mcnemar_exact(-1, 2)


def test_runs_of_different_files_or_joined_runs_are_refused() -> None:
    with pytest.raises(InputError, match="share no scored question"):
        compare_rows([_row("c1", 0, True)], [_row("c2", 0, True)])
    with pytest.raises(InputError, match="twice"):
        compare_rows([_row("c1", 0, True), _row("c1", 0, False)], [_row("c1", 0, True)])


def _lme(tmp_path: Path, out: str, *extra: str) -> list[str]:
    quick = ("--no-embedding-cache", "--budget-curve", "none", "--baseline-k", "3")
    return eval_args(tmp_path, out, *quick, *extra)


def test_cli_on_two_real_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A full View against one too small for any record: the tight run loses every
    question the full one gets, and the command says which."""
    write(tmp_path / "lme.json")
    assert main(_lme(tmp_path, "full")) == 0
    assert main(_lme(tmp_path, "tight", "--budget-chars", "250")) == 0
    capsys.readouterr()
    assert main(["eval", "compare", str(tmp_path / "full"), str(tmp_path / "tight")]) == 0
    text = capsys.readouterr().out
    assert "paired scored questions" in text and "## Lost" in text
    assert main(["eval", "compare", str(tmp_path / "full"), str(tmp_path / "tight"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    full = [json.loads(x) for x in (tmp_path / "full" / "results.jsonl").read_text().splitlines()]
    hits = sum(bool(r["all_hit"]) for r in full if r.get("scored", True))
    assert hits >= 1, "the full run gets a question: the comparison is not vacuous"
    assert got["all_before"] == hits and got["all_after"] == 0
    assert len(got["lost"]) == hits and got["gained"] == []
    assert main(["eval", "compare", str(tmp_path / "full"), str(tmp_path / "none")]) == 2
