"""The general labelled update pairs: size, coverage and a split that cannot drift."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.judges.updatedata import GENERAL_PAIRS, load_pairs, split_of

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
