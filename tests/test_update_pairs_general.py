"""The general labelled update pairs: size, coverage and a split that cannot drift."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.judges._features import Doc
from mnemon_langgraph.judges._staleness import stale_p
from mnemon_langgraph.judges._updatedata import (
    GENERAL_PAIRS,
    UpdatePair,
    confusion,
    load_pairs,
    split_of,
)

POSITIVE_FAMILIES = {
    "other_change",
    "value_to_none",
    "none_to_value",
    "negation",
    "cancellation",
    "completion",
    "correction",
    "plan_to_fact",
    "relative_date",
    "turns_out",
    "no_longer",
    "these_days",
    "new_value",
    "device_switch",
}
NEGATIVE_FAMILIES = {
    "same_topic",
    "hypothetical",
    "question",
    "other_unrelated",
    "other_speaker",
    "repetition",
    "negated_change",
}


def test_the_set_is_big_and_covers_every_family() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 300
    assert len({p.digest for p in pairs}) == len(pairs)  # no pair twice
    kinds = Counter((p.kind, p.stale) for p in pairs)
    assert {k for k, stale in kinds if stale} == POSITIVE_FAMILIES
    assert {k for k, stale in kinds if not stale} == NEGATIVE_FAMILIES
    assert all(n >= 6 for n in kinds.values())  # several phrasings per family


def test_the_recorded_split_is_the_rule_s_split() -> None:
    pairs = load_pairs()
    rule = split_of(pairs)
    assert [p.split for p in pairs] == [rule[p.digest] for p in pairs]
    halves = Counter(p.split for p in pairs)
    assert set(halves) == {"writing", "frozen"}
    assert abs(halves["writing"] - halves["frozen"]) <= len({p.kind for p in pairs})
    for kind in {p.kind for p in pairs}:  # stratified: each family in both halves
        assert {p.split for p in pairs if p.kind == kind} == {"writing", "frozen"}


def test_one_split_at_a_time() -> None:
    frozen = load_pairs(split="frozen")
    writing = load_pairs(split="writing")
    assert frozen and writing
    assert not {p.digest for p in frozen} & {p.digest for p in writing}
    assert len(frozen) + len(writing) == len(load_pairs())


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="split"):
        load_pairs(split="train")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"earlier": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1"):
        load_pairs(bad)


def test_the_file_is_the_package_data_file() -> None:
    assert GENERAL_PAIRS.is_file()
    assert GENERAL_PAIRS.parent.name == "data" and GENERAL_PAIRS.parent.parent.name == "judges"


def _flags(pairs: list[UpdatePair]) -> list[bool]:
    """The detector's verdict on each pair: the earlier statement in session 1, the later in
    session 2, by one speaker (or two, when the pair says so)."""
    out = []
    for p in pairs:
        earlier = Doc({"id": "a", "header": "Session 1", "text": f"Sam: {p.earlier}"}, 0)
        who = "Sam" if p.same_speaker else "Alex"
        later = Doc({"id": "b", "header": "Session 2", "text": f"{who}: {p.later}"}, 1)
        out.append(stale_p(earlier, [earlier, later], []) >= 0.5)
    return out


@pytest.mark.parametrize(
    ("split", "min_precision", "min_recall"),
    # Measured (docs/results/updates.md, "Structure over phrasings"): writing 104/104
    # precision, 104/112 recall; frozen 78/78 and 78/112. The floors sit just under them,
    # so a regression fails.
    [("writing", 0.97, 0.90), ("frozen", 0.97, 0.67)],
)
def test_precision_and_recall_floors(split: str, min_precision: float, min_recall: float) -> None:
    pairs = load_pairs(split=split)
    c = confusion(_flags(pairs), pairs)
    assert c["tp"] > 0 and c["tn"] > 0
    assert c["precision"] >= min_precision, c
    assert c["recall"] >= min_recall, c


def test_every_hard_negative_family_is_mostly_left_alone() -> None:
    pairs = [p for p in load_pairs() if not p.stale]
    flags = _flags(pairs)
    for kind in {p.kind for p in pairs}:
        marked = [f for f, p in zip(flags, pairs, strict=True) if p.kind == kind]
        assert sum(marked) <= 1, kind


def test_confusion_counts() -> None:
    pairs = [UpdatePair("k", "a", "b", True, True), UpdatePair("k", "c", "d", True, False)]
    assert confusion([True, True], pairs) == {
        "tp": 1,
        "fp": 1,
        "fn": 0,
        "tn": 0,
        "precision": 0.5,
        "recall": 1.0,
    }
    assert confusion([False, False], pairs)["recall"] == 0.0
