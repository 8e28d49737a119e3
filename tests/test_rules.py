"""Unit tests of the read path's rules (mnemon_langgraph.read._rules), one per rule."""

from __future__ import annotations

from mnemon_langgraph.read._rules import (
    DropNeed,
    FollowRecord,
    Judgment,
    Need,
    NeedStatus,
    NewSearch,
    PageSearch,
    decide,
    is_yes,
    rank_by,
    should_continue,
)


def sat(rid: str, p: float, need: int = 0, rnd: int = 1) -> Judgment:
    return Judgment(rid, "satisfies", p, need, rnd)


FOUND = {0: {"a": 0, "b": 3, "c": 5}, 1: {"b": 0, "d": 1}, 2: {"c": 0, "e": 2}}
OFFSETS = {0: 20, 1: 20, 2: 20}


def run(needs, statuses, judgments, exhausted=(), follow=0):
    return decide(
        needs,
        statuses,
        judgments,
        found=FOUND,
        next_offset=OFFSETS,
        exhausted=exhausted,
        order=["a", "b", "c", "d", "e"],
        follow=follow,
    )


def test_threshold_is_one_half() -> None:
    assert is_yes(0.5) and not is_yes(0.4999)


def test_rank_by_orders_by_p_and_keeps_latest_judgment() -> None:
    js = [sat("a", 0.2), sat("b", 0.9), sat("a", 0.95)]
    assert rank_by(js, "satisfies", need_index=0) == [("a", 0.95), ("b", 0.9)]


def test_rank_by_breaks_ties_by_pool_order() -> None:
    js = [sat("c", 0.7), sat("a", 0.7)]
    assert [r for r, _ in rank_by(js, "satisfies", order=["a", "c"])] == ["a", "c"]


def test_single_need_is_met_by_one_positive_without_action() -> None:
    actions, st = run([Need(0, "x")], [NeedStatus(0)], [sat("a", 0.8), sat("b", 0.1)])
    assert actions == []
    assert st[0].state == "met" and st[0].positives == ("a",)


def test_all_need_pages_the_search_that_found_the_new_positive() -> None:
    actions, st = run([Need(0, "x", "ALL")], [NeedStatus(0)], [sat("d", 0.8), sat("a", 0.2)])
    assert len(actions) == 1
    act = actions[0]
    assert isinstance(act, PageSearch) and act.search_index == 1 and act.offset == 20
    assert st[0].state == "open" and "ALL" in act.reason


def test_need_two_records_satisfy_is_treated_as_all() -> None:
    actions, st = run([Need(0, "x")], [NeedStatus(0)], [sat("a", 0.8), sat("e", 0.7)])
    assert len(actions) == 1 and isinstance(actions[0], PageSearch)
    assert actions[0].search_index == 0  # 'a' at rank 0 of search 0 beats 'e' at rank 2
    assert "two records" in actions[0].reason and st[0].state == "open"


def test_all_need_is_met_when_no_new_positive_appears() -> None:
    before = NeedStatus(0, positives=("d",))
    actions, st = run([Need(0, "x", "ALL")], [before], [sat("d", 0.8), sat("a", 0.1)])
    assert actions == [] and st[0].state == "met"


def test_all_need_met_when_every_search_with_a_new_positive_is_exhausted() -> None:
    actions, st = run([Need(0, "x", "ALL")], [NeedStatus(0)], [sat("d", 0.8)], exhausted=[1])
    assert actions == [] and st[0].state == "met"


def test_unmet_need_pages_the_search_that_ranked_its_lead_highest() -> None:
    # lead = 'c' (highest p, still below 1/2): search 2 ranked it 0, search 0 ranked it 5.
    js = [sat("a", 0.1), sat("c", 0.4), sat("b", 0.3)]
    actions, st = run([Need(0, "x")], [NeedStatus(0)], js)
    assert len(actions) == 1 and isinstance(actions[0], PageSearch)
    assert actions[0].search_index == 2 and "lead c" in actions[0].reason
    assert st[0].lead_step == 1


def test_unmet_need_then_asks_for_a_new_search_then_drops() -> None:
    js = [sat("c", 0.4)]
    actions, st = run([Need(0, "x")], [NeedStatus(0, lead_step=1)], js)
    assert [type(a) for a in actions] == [NewSearch] and st[0].lead_step == 2
    actions, st = run([Need(0, "x")], st, js)
    assert [type(a) for a in actions] == [DropNeed] and st[0].state == "dropped"
    actions, st = run([Need(0, "x")], st, js)
    assert actions == []


def test_unmet_need_without_lead_goes_straight_to_new_search() -> None:
    actions, st = run([Need(0, "x")], [NeedStatus(0)], [])
    assert [type(a) for a in actions] == [NewSearch] and st[0].lead_step == 2


def test_lead_in_exhausted_search_skips_to_new_search() -> None:
    actions, _ = run([Need(0, "x")], [NeedStatus(0)], [sat("d", 0.3)], exhausted=[1])
    assert [type(a) for a in actions] == [NewSearch]


def test_one_action_per_open_need_and_closed_needs_get_none() -> None:
    needs = [Need(0, "a"), Need(1, "b", "ALL"), Need(2, "c")]
    statuses = [NeedStatus(0), NeedStatus(1), NeedStatus(2, state="met")]
    js = [sat("a", 0.2, 0), sat("d", 0.9, 1), sat("e", 0.9, 2)]
    actions, st = run(needs, statuses, js)
    assert sorted(a.need_index for a in actions) == [0, 1]
    assert st[2].state == "met"


def test_should_continue_needs_a_fetching_action_and_rounds_left() -> None:
    page = PageSearch(0, 20, 0, "r")
    assert should_continue([page], 1, 3)
    assert not should_continue([page], 3, 3)
    assert not should_continue([DropNeed(0, "r")], 1, 3)
    assert should_continue([NewSearch(0, "r")], 2, 3)


def test_follow_is_off_by_default_and_a_met_need_gets_no_action() -> None:
    actions, st = run([Need(0, "x")], [NeedStatus(0)], [sat("a", 0.8)])
    assert actions == [] and st[0].state == "met"


def test_a_single_need_met_by_a_positive_follows_it() -> None:
    actions, st = run([Need(0, "x")], [NeedStatus(0)], [sat("a", 0.8), sat("b", 0.1)], follow=1)
    assert [(type(a), a.record_id) for a in actions] == [(FollowRecord, "a")]
    assert st[0].state == "met" and st[0].positives == ("a",)
    assert should_continue(actions, 1, 3) and not should_continue(actions, 3, 3)


def test_an_all_need_pages_and_follows_its_best_new_positives_only() -> None:
    js = [sat("d", 0.7), sat("e", 0.95), sat("c", 0.6), sat("a", 0.9)]
    before = NeedStatus(0, positives=("a",))  # seen in an earlier round: not followed again
    actions, st = run([Need(0, "x", "ALL")], [before], js, follow=2)
    assert isinstance(actions[0], PageSearch)
    assert [a.record_id for a in actions[1:]] == ["e", "d"]  # best p first, at most 2
    assert all(isinstance(a, FollowRecord) and a.need_index == 0 for a in actions[1:])
    assert st[0].state == "open" and set(st[0].positives) == {"a", "e", "d", "c"}


def test_no_new_positive_no_follow() -> None:
    before = NeedStatus(0, positives=("d",))
    actions, st = run([Need(0, "x", "ALL")], [before], [sat("d", 0.8)], follow=3)
    assert actions == [] and st[0].state == "met"


def test_an_unmet_need_follows_nothing() -> None:
    actions, _ = run([Need(0, "x")], [NeedStatus(0)], [sat("c", 0.4)], follow=2)
    assert actions and not [a for a in actions if isinstance(a, FollowRecord)]
