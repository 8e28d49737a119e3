"""Calibration invariance (paper, Proposition 1) as a property test.

Replacing every judgment p by h(p), h strictly increasing with h(1/2) = 1/2, leaves every
action of the loop and the View unchanged — for the rules alone, for the composer, and for
the whole graph with a scripted System 1.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._rules import Judgment, Need, NeedStatus, decide
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.read.view import compose_view

GRID = [i / 64 for i in range(65)]  # exact binary fractions: no rounding ties


@st.composite
def monotone_h(draw: st.DrawFn) -> Callable[[float], float]:
    """A random strictly increasing piecewise-linear map of [0,1] with h(1/2) = 1/2."""
    # knots on coarse grids so every segment has a slope far from zero (no float ties)
    k = draw(st.integers(0, 4))
    m = draw(st.integers(0, 4))
    lo = sorted(draw(st.lists(st.integers(1, 49), min_size=k, max_size=k, unique=True)))
    hi = sorted(draw(st.lists(st.integers(51, 99), min_size=m, max_size=m, unique=True)))
    ylo = sorted(draw(st.lists(st.integers(1, 499), min_size=k, max_size=k, unique=True)))
    yhi = sorted(draw(st.lists(st.integers(501, 999), min_size=m, max_size=m, unique=True)))
    lo, hi = [x / 100 for x in lo], [x / 100 for x in hi]
    ylo, yhi = [y / 1000 for y in ylo], [y / 1000 for y in yhi]
    xs = [0.0, *lo, 0.5, *hi, 1.0]
    ys = [0.0, *ylo, 0.5, *yhi, 1.0]

    def h(p: float) -> float:
        if p == 0.5:
            return 0.5
        i = min(max(bisect.bisect_right(xs, p) - 1, 0), len(xs) - 2)
        x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
        return y0 + (y1 - y0) * (p - x0) / (x1 - x0)

    return h


IDS = [f"r{i}" for i in range(10)]
PROPS = ["screen", "needed", "stale", "satisfies"]


@st.composite
def judgments(draw: st.DrawFn) -> list[Judgment]:
    out = []
    for rid in draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=10, unique=True)):
        for prop in PROPS:
            needs = range(3) if prop == "satisfies" else [None]
            for n in needs:
                if draw(st.booleans()):
                    out.append(Judgment(rid, prop, draw(st.sampled_from(GRID)), n, 1))
    return out


def _mapped(js: list[Judgment], h: Callable[[float], float]) -> list[Judgment]:
    return [Judgment(j.target_id, j.proposition, h(j.p), j.need_index, j.round) for j in js]


@settings(max_examples=50, deadline=None)
@given(h=monotone_h())
def test_h_is_strictly_increasing_and_fixes_one_half(h) -> None:
    values = [h(p) for p in GRID]
    assert h(0.5) == 0.5
    assert all(a < b for a, b in itertools.pairwise(values))


@settings(max_examples=150, deadline=None)
@given(
    js=judgments(),
    h=monotone_h(),
    kinds=st.lists(st.sampled_from(["NEED", "ALL"]), min_size=1, max_size=3),
    steps=st.lists(st.integers(0, 2), min_size=3, max_size=3),
    exhausted=st.sets(st.integers(0, 2)),
)
def test_rules_are_calibration_invariant(js, h, kinds, steps, exhausted) -> None:
    needs = [Need(i, f"need {i}", k) for i, k in enumerate(kinds)]
    statuses = [NeedStatus(i, lead_step=steps[i]) for i in range(len(needs))]
    found = {
        s: {rid: (i * 7 + s * 3) % 11 for i, rid in enumerate(IDS) if (i + s) % 3} for s in range(3)
    }
    for follow in (0, 2):  # following positives reads their order only, too
        kw = dict(
            found=found,
            next_offset={0: 20, 1: 20, 2: 20},
            exhausted=exhausted,
            order=IDS,
            follow=follow,
        )
        assert decide(needs, statuses, js, **kw) == decide(needs, statuses, _mapped(js, h), **kw)


@settings(max_examples=150, deadline=None)
@given(js=judgments(), h=monotone_h(), named=st.booleans())
def test_view_is_calibration_invariant(js, h, named) -> None:
    # positions in two sessions, so the neighbours of the best records move up as well
    pool = [
        {
            "id": rid,
            "session": 1 + i % 2,
            "position": i // 2,
            "text": f"speaker: text {rid} " * 40,
            "message_ids": [rid],
        }
        for i, rid in enumerate(IDS)
    ]
    cfg = ReadSettings(view_records=5, view_chars=4000, neighbours_after=1)
    a = compose_view(pool, js, needs_named=named, index={}, settings=cfg)
    b = compose_view(pool, _mapped(js, h), needs_named=named, index={}, settings=cfg)
    assert a.text == b.text
    assert a.record_ids == b.record_ids
    assert a.trace["placement"] == b.trace["placement"]


RECORDS = [
    make_record(
        f"r{i}",
        f"Ann: note {i} about {['garden', 'tomato', 'basil'][i % 3]} {'and tea' if i % 2 else ''}",
        session=i + 1,
    )
    for i in range(30)
]


@settings(max_examples=12, deadline=None)
@given(h=monotone_h(), seed=st.integers(0, 10_000))
def test_whole_graph_is_calibration_invariant(h, seed) -> None:
    def base(qid: str, question, state) -> float:
        return GRID[(hash((qid, str(state["records"]), seed)) % 65)]

    def mapped(qid: str, question, state) -> float:
        return h(base(qid, question, state))

    src = InMemorySearchSource(RECORDS)
    msgs = {"messages": [HumanMessage("How many notes about tomato and tea did Ann write?")]}
    ctx = ReadContext(namespace="test")
    va = create_read_graph(source=src, judge=ScriptedDecisionModel(answers=base)).invoke(
        msgs, context=ctx
    )["view"]
    vb = create_read_graph(source=src, judge=ScriptedDecisionModel(answers=mapped)).invoke(
        msgs, context=ctx
    )["view"]
    assert va.record_ids == vb.record_ids and va.text == vb.text
    strip = [{k: v for k, v in a.items()} for a in va.trace["actions"]]
    assert strip == vb.trace["actions"]
    assert va.trace["counts"] == vb.trace["counts"]
