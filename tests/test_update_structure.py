"""The update detector's structural rules, each with a case it must mark and a hard negative.

A slot (what a statement is about) and a value: an update is a later statement by the same
person about the same slot with another value (a count restated, an event at a new or
shifted date, a thing gone, something absent now present), while history (a dated event, a
memory), someone else's or a thing's unrelated change, and a number shared by chance
change nothing. Sentences invented for these tests.
"""

from __future__ import annotations

import pytest

from mnemon_langgraph.judges._features import Doc
from mnemon_langgraph.judges._staleness import STALE_NO, clauses, stale_p


def _p(earlier: str, later: str) -> float:
    a = Doc({"id": "a", "header": "Session 1", "text": f"user: {earlier}"}, 0)
    b = Doc({"id": "b", "header": "Session 2", "text": f"user: {later}"}, 1)
    return stale_p(a, [a, b], [])


# (rule, earlier, later): each later statement replaces the earlier one
UPDATES = [
    (
        "a count restated with a new value",
        "I've added 17 new postcards to my collection since I started collecting again.",
        "I just realized I've added 25 new postcards to my collection since I started again.",
    ),
    (
        "a count said with a question after a dash",
        "I've been using my Fitbit Charge 3 for 6 months now - any tips on step goals?",
        "I've been using my Fitbit Charge 3 for 9 months now - it's crazy.",
    ),
    (
        "an unnamed count in a clause beside a wish",
        "I've added 17 new ones since I started collecting again, and I'd like to track them.",
        "I've added 25 new postcards since I started collecting again.",
    ),
    (
        "an ordinal",
        "I just finished my third issue, and I'm currently on my fourth.",
        "I've finished five issues so far and they've all been great.",
    ),
    (
        "a frequency",
        "I've been doing yoga twice a week to help me relax.",
        "These days I attend yoga classes three times a week.",
    ),
    ("an age", "I'm 41.", "I'm 42 actually, I forgot my birthday had passed."),
    (
        "an event at a new date with a chatty cue",
        "We're viewing the flat on Saturday morning.",
        "The viewing is now Sunday afternoon instead.",
    ),
    (
        "a date shifted by an amount",
        "The deadline for the report is the end of this month.",
        "The report deadline was extended by two weeks.",
    ),
    (
        "a thing gone",
        "We heat the house with an old oil boiler.",
        "The oil boiler is gone, we have a heat pump now.",
    ),
    (
        "what was missing is there again",
        "I realized I misplaced the small screwdriver I use for my laptop.",
        "I actually have a spare screwdriver that I picked up a while back.",
    ),
    (
        "a plan put off, then done",
        "I've been meaning to get back to The Nightingale, which I put down for a while.",
        "I also recently finished The Nightingale by Kristin Hannah, which was amazing.",
    ),
    (
        "a plan that is now the state",
        "We intend to repaint the living room green.",
        "The living room is green now, we painted it on Sunday.",
    ),
    (
        "a state that is no longer the speaker's, said of the thing",
        "I go to the Pilates studio on Bridge Street.",
        "The Bridge Street Pilates studio isn't my studio any longer.",
    ),
    (
        "a manager's change to the speaker's meeting",
        "My team's standup is at 9:30 every morning.",
        "Our manager moved the standup to 10:15.",
    ),
    (
        "a correction of a number",
        "My gym class is at 6 pm.",
        "It's 6:30, not 6, I checked.",
    ),
    (
        "an explicit change still undoes a dated event",
        "I booked a table at Nopi for Friday yesterday.",
        "I cancelled the table at Nopi.",
    ),
]

# (rule, earlier, later): hard negatives — the later statement replaces nothing
NOT_UPDATES = [
    (
        "another thing counted",
        "I've completed three courses on Coursera so far.",
        "I've completed two courses on edX so far.",
    ),
    (
        "another head noun counted",
        "I've scored 3 goals so far in the indoor soccer league.",
        "I've had two assists in the indoor soccer league so far.",
    ),
    ("dated events, not counts", "I ran 5 miles yesterday.", "I ran 8 miles today."),
    (
        "the same count said again",
        "I've been using my Fitbit Charge 3 for 6 months now - any tips?",
        "I've been using my Fitbit Charge 3 for 6 months now.",
    ),
    (
        "a model number is no count",
        "I've had my Fitbit Charge 3 for a while now.",
        "I've had my Fitbit Charge 4 box on the shelf for a while now.",
    ),
    (
        "a dated past event is history",
        "I started listening to 'The Power' by Naomi Alderman today.",
        "I just finished listening to 'The Power' by Naomi Alderman today.",
    ),
    (
        "a memory is history",
        "I remember buying a designer handbag for a pretty penny.",
        "Instead, I've started buying beauty products at a discount store.",
    ),
    (
        "a replaced item of a dated purchase",
        "I just replaced my old kitchen faucet with a new Moen one last Sunday.",
        "I've been decluttering my kitchen and got rid of my old toaster.",
    ),
    (
        "a thing's change about something else",
        "I'm trying to improve the engagement of my Twitter account.",
        "USCIS will no longer accept a single, combined fee payment for these forms.",
    ),
    (
        "a shared number is no name",
        "I got a 50-pound batch, and I'm trying to track my expenses for the farm.",
        "Closed deals with 50+ new logos and surpassed quotas.",
    ),
    (
        "a past change as background",
        "By the way, I finally set up my smart thermostat on 2/10.",
        "My years as a coordinator before moving into this role helped me.",
    ),
    (
        "a slot with no old value",
        "I'm in the process of buying a house.",
        "I'm moving to Melbourne soon.",
    ),
    (
        "another event moved",
        "We're viewing the flat on Saturday morning.",
        "Dinner with Ola is on Sunday instead.",
    ),
    (
        "someone else's date shifted",
        "The deadline for the report is the end of this month.",
        "My gym membership was extended by two weeks.",
    ),
    (
        "a step of a plan is not the plan done",
        "We're going to Iceland for our honeymoon.",
        "We booked the hotels for Iceland.",
    ),
    (
        "a plan's word said of something else",
        "I was thinking of making a strawberry shortcake.",
        "A strawberry rhubarb crisp I made a few weeks ago was great, I bake a lot lately.",
    ),
    (
        "a visit is no stop",
        "I like to train on weekends.",
        "I stopped by Target on my way home, the baby shower is next weekend.",
    ),
    (
        "someone else's thing gone",
        "We heat the house with an old oil boiler.",
        "The neighbours' old car is gone, they have a bike now.",
    ),
    (
        "another person's meeting moved",
        "My appointment is on Monday.",
        "My manager moved his meeting to Wednesday.",
    ),
]


@pytest.mark.parametrize(("rule", "earlier", "later"), UPDATES, ids=[u[0] for u in UPDATES])
def test_an_update_of_the_same_slot_is_marked(rule: str, earlier: str, later: str) -> None:
    assert _p(earlier, later) >= 0.5, rule


@pytest.mark.parametrize(("rule", "earlier", "later"), NOT_UPDATES, ids=[u[0] for u in NOT_UPDATES])
def test_a_hard_negative_is_left_current(rule: str, earlier: str, later: str) -> None:
    # not stale, and at the floor: nothing in the later statement counts for the earlier
    assert _p(earlier, later) == STALE_NO, rule


def test_counts_are_read_with_what_they_count() -> None:
    [clause] = clauses("user: I've added 25 new postcards to my collection so far.")
    assert ("25", "postcard") in clause.standing
    [clause] = clauses("user: I've had my Fitbit Charge 3 for 9 months now.")
    assert {v for v, _ in clause.standing} == {"9"}  # "Charge 3" is a name
    [clause] = clauses("user: The wedding is on June 24th, I've told everyone.")
    assert not clause.quantities  # a date is no count
    [clause] = clauses("user: I'd like to have 3 cats one day.")
    assert not clause.standing  # a wish, not where things stand
