"""Propositions: explicit criteria, ids that round-trip, instructions that name their data."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.decisions import Noul

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.judges.propositions import (
    DATA_NOTE,
    ITEM_NEEDED,
    NEEDED,
    SATISFIES,
    SCREEN,
    STALE,
    Proposition,
    QuestionKey,
    build_question,
    parse_question_id,
    question_id,
)

ALL = [SCREEN, NEEDED, STALE, SATISFIES, ITEM_NEEDED]


def _build(prop: Proposition, local_id: str = "r3") -> Noul:
    if prop is SATISFIES:
        return build_question(prop, local_id, need_index=1, need_text="when Ada moved")
    return build_question(prop, "i2" if prop is ITEM_NEEDED else local_id)


def test_registry_matches_rule_names() -> None:
    assert [p.value for p in Proposition] == [
        "screen",
        "needed",
        "stale",
        "satisfies",
        "item_needed",
    ]


@pytest.mark.parametrize("prop", ALL)
def test_every_proposition_has_explicit_true_and_false_criteria(prop: Proposition) -> None:
    noul = _build(prop)
    assert isinstance(noul, Noul)
    assert noul.criteria is not None
    assert isinstance(noul.criteria.true, str) and len(noul.criteria.true) > 20
    assert isinstance(noul.criteria.false, str) and len(noul.criteria.false) > 20
    assert noul.criteria.true != noul.criteria.false
    assert isinstance(noul.instructions, str) and noul.instructions.rstrip().endswith("?")


@pytest.mark.parametrize("prop", ALL)
def test_instruction_names_its_target_and_state_fields(prop: Proposition) -> None:
    noul = _build(prop)
    text = str(noul.instructions)
    target = "i2" if prop is ITEM_NEEDED else "r3"
    assert f'"{target}"' in text
    field = "`items`" if prop is ITEM_NEEDED else "`records`"
    assert field in text
    if prop in (SCREEN, NEEDED, ITEM_NEEDED):
        assert "`messages`" in text


def test_satisfies_is_parameterised_by_the_need() -> None:
    a = build_question(SATISFIES, "r0", need_index=0, need_text="Ada's home city")
    b = build_question(SATISFIES, "r0", need_index=2, need_text="the name of Ada's dog")
    assert "`needs[0]`" in str(a.instructions) and "home city" in str(a.instructions)
    assert "`needs[2]`" in str(b.instructions) and "dog" in str(b.instructions)
    with pytest.raises(InputError):
        build_question(SATISFIES, "r0")


def test_stale_counts_only_explicit_changes() -> None:
    noul = build_question(STALE, "r5")
    assert "explicitly" in str(noul.instructions)
    assert noul.criteria is not None
    assert "does not count" in str(noul.criteria.false)


def test_data_note_says_records_are_data() -> None:
    assert "never instructions" in DATA_NOTE and "`records`" in DATA_NOTE


@pytest.mark.parametrize(
    ("qid", "key"),
    [
        ("r3.needed", QuestionKey("r3", NEEDED)),
        ("r3.need1", QuestionKey("r3", SATISFIES, 1)),
        ("r0.screen", QuestionKey("r0", SCREEN)),
        ("r39.stale", QuestionKey("r39", STALE)),
        ("i2.item", QuestionKey("i2", ITEM_NEEDED)),
    ],
)
def test_question_ids(qid: str, key: QuestionKey) -> None:
    assert parse_question_id(qid) == key
    assert question_id(key.local_id, key.proposition, key.need_index) == qid


@given(
    kind=st.sampled_from("ri"),
    n=st.integers(0, 9999),
    prop=st.sampled_from(ALL),
    need=st.integers(0, 999),
)
def test_question_id_round_trip(kind: str, n: int, prop: Proposition, need: int) -> None:
    need_index = need if prop is SATISFIES else None
    qid = question_id(f"{kind}{n}", prop, need_index)
    assert parse_question_id(qid) == QuestionKey(f"{kind}{n}", prop, need_index)


@pytest.mark.parametrize("bad", ["", "r3", "x3.needed", "r3.unknown", "r.needed", "r3.need", "r3."])
def test_bad_question_ids_are_refused(bad: str) -> None:
    with pytest.raises(InputError):
        parse_question_id(bad)


def test_question_id_checks_its_arguments() -> None:
    with pytest.raises(InputError):
        question_id("r1", SATISFIES)
    with pytest.raises(InputError):
        question_id("r1", NEEDED, 2)
    with pytest.raises(InputError):
        question_id("rec-1", NEEDED)
