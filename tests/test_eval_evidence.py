"""Tests of evidence-id repair and hit computation (pure functions)."""

from __future__ import annotations

import pytest

from mnemon_langgraph.eval.evidence import (
    ISSUE_KINDS,
    count_issues,
    evidence_hits,
    repair_evidence,
)

KNOWN = {"D1:1", "D1:2", "D1:3", "D8:6", "D9:17", "D11:26", "D30:5", "D10:18"}


def test_valid_ids_are_kept_without_issues() -> None:
    repair = repair_evidence(["D1:3", "D8:6"], KNOWN)
    assert repair.ids == ("D1:3", "D8:6")
    assert repair.issues == ()


def test_semicolon_joined_ids_are_split() -> None:
    repair = repair_evidence(["D8:6; D9:17"], KNOWN)
    assert repair.ids == ("D8:6", "D9:17")
    assert [i.kind for i in repair.issues] == ["split"]


def test_stray_separator_is_repaired() -> None:
    repair = repair_evidence(["D:11:26"], KNOWN)
    assert repair.ids == ("D11:26",)
    assert [(i.kind, i.repaired) for i in repair.issues] == [("separator", "D11:26")]


def test_zero_padded_turn_is_repaired() -> None:
    repair = repair_evidence(["D30:05"], KNOWN)
    assert repair.ids == ("D30:5",)
    assert [(i.kind, i.raw, i.repaired) for i in repair.issues] == [
        ("zero_padded", "D30:05", "D30:5")
    ]


def test_duplicates_are_kept_once_and_counted() -> None:
    repair = repair_evidence(["D1:3", "D1:3", "D30:05", "D30:5"], KNOWN)
    assert repair.ids == ("D1:3", "D30:5")
    kinds = [i.kind for i in repair.issues]
    assert kinds.count("duplicate") == 2
    assert "zero_padded" in kinds


def test_id_naming_no_turn_is_dropped() -> None:
    repair = repair_evidence(["D10:19", "D1:1"], KNOWN)
    assert repair.ids == ("D1:1",)
    assert [(i.kind, i.repaired) for i in repair.issues] == [("unknown_turn", None)]
    assert repair.dropped == ("D10:19",)


@pytest.mark.parametrize("raw", ["D", "", "session one", 17, None])
def test_unparseable_entries_are_dropped(raw: object) -> None:
    repair = repair_evidence([raw], KNOWN)
    assert repair.ids == ()
    assert [i.kind for i in repair.issues] == ["unparseable"]


def test_zero_padded_but_missing_turn_is_dropped_not_invented() -> None:
    repair = repair_evidence(["D30:07"], KNOWN)
    assert repair.ids == ()
    assert [i.kind for i in repair.issues] == ["unknown_turn"]


def test_count_issues_has_every_kind() -> None:
    repairs = [
        repair_evidence(["D8:6; D9:17"], KNOWN),
        repair_evidence(["D:11:26", "D", "D10:19"], KNOWN),
        repair_evidence(["D30:05", "D30:5"], KNOWN),
    ]
    counts = count_issues(repairs)
    assert set(counts) == set(ISSUE_KINDS)
    assert counts == {
        "split": 1,
        "separator": 1,
        "zero_padded": 1,
        "duplicate": 1,
        "unknown_turn": 1,
        "unparseable": 1,
    }


def test_evidence_hits() -> None:
    assert evidence_hits(["D1:1", "D1:2"], {"D1:1", "D5:5"}) == {
        "all_hit": False,
        "any_hit": True,
        "recall": 0.5,
    }
    assert evidence_hits(["D1:1"], {"D1:1"})["all_hit"] is True
    assert evidence_hits(["D1:1"], set())["any_hit"] is False
    with pytest.raises(ValueError):
        evidence_hits([], {"D1:1"})
