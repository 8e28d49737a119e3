"""The local judge's calibration: p comparable across turns, every read-path action unchanged.

``p = σ(k · t(s))``: ``k`` grows with the latest message's distinct content words, ``t``
moves a negative *screen* score down and shrinks a negative score of a turn with an ``ALL``
need. Within a turn the map is strictly increasing and keeps
the sign of ``s``, so the read graph takes the same actions and composes the same View with
or without it (calibration invariance); only the p's values change.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges._features import terms
from mnemon_langgraph.judges.learned import Calibration
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import NEEDED, SCREEN
from mnemon_langgraph.read._judging import JudgeRequest, judge_wave
from mnemon_langgraph.read._rules import Need
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message
from tests._conversations import TALK
from tests._search_fakes import HashEmbeddings
from tests.test_judges_local import LOCOMO_LIKE

SCORES = np.array([-9.0, -3.2, -1.0, -0.01, 0.0, 0.02, 0.7, 2.5, 11.0])


@pytest.mark.parametrize("n_terms", [0, 1, 2, 5, 9, 30])
@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("every_instance", [False, True])
def test_calibration_keeps_every_order_and_every_decision(
    n_terms: int, screen: bool, every_instance: bool
) -> None:
    out = Calibration().apply(SCORES, n_terms=n_terms, screen=screen, every_instance=every_instance)
    assert np.all(np.diff(out) > 0)  # strictly increasing: the same order
    assert np.array_equal(out >= 0, SCORES >= 0)  # p >= 1/2 exactly where s >= 0


def test_the_scale_grows_with_the_square_root_of_the_words() -> None:
    cal = Calibration()
    assert cal.factor(5) == pytest.approx(1.0)  # the pivot keeps σ(s)
    assert cal.factor(20) == pytest.approx(2.0)
    assert cal.factor(0) == cal.factor(1) == pytest.approx(math.sqrt(1 / 5))
    # negative control: without the scale every question keeps σ(s)
    assert Calibration(exponent=0).factor(20) == 1.0


def test_only_a_negative_screen_score_is_moved_down() -> None:
    cal = Calibration(screen_no_shift=3.0)
    screen = cal.apply(SCORES, n_terms=5, screen=True)
    needed = cal.apply(SCORES, n_terms=5, screen=False)
    assert np.allclose(needed, SCORES)
    assert np.allclose(screen[SCORES < 0], SCORES[SCORES < 0] - 3.0)
    assert np.allclose(screen[SCORES >= 0], SCORES[SCORES >= 0])


@pytest.mark.parametrize("screen", [False, True])
def test_an_all_turn_shrinks_only_its_negative_scores(screen: bool) -> None:
    cal = Calibration(screen_no_shift=2.0, all_no_scale=0.6)
    plain = cal.apply(SCORES, n_terms=5, screen=screen)
    every = cal.apply(SCORES, n_terms=5, screen=screen, every_instance=True)
    neg = SCORES < 0
    assert np.allclose(every[neg], 0.6 * plain[neg])  # after the screen shift
    assert np.allclose(every[~neg], plain[~neg])
    assert np.all(every[neg] > plain[neg])  # a "no" says less
    # negative control: a scale of 1 turns it off
    off = Calibration(all_no_scale=1.0)
    assert np.array_equal(
        off.apply(SCORES, n_terms=5, screen=screen, every_instance=True),
        off.apply(SCORES, n_terms=5, screen=screen),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"exponent": -0.5},
        {"exponent": math.nan},
        {"pivot_terms": 0},
        {"screen_no_shift": -1},
        {"all_no_scale": 0.0},
        {"all_no_scale": -0.5},
        {"all_no_scale": math.inf},
    ],
)
def test_a_bad_calibration_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="calibration"):
        Calibration(**kwargs)


def _wave(
    judge: LocalDecisionModel, question: str, prop: Any, needs: Any = None
) -> dict[str, float]:
    request = JudgeRequest([prop], LOCOMO_LIKE, [question], needs=needs or ())
    result = judge_wave(judge, [request])
    assert result.errors == []
    return {j.target_id: j.p for j in result.judgments}


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.mark.parametrize("prop", [NEEDED, SCREEN])
def test_the_judge_applies_the_calibration_to_its_one_score(prop: Any) -> None:
    question = "When did Caroline go to the LGBTQ support group meeting in her town?"
    n_terms = len(set(terms(question)))
    assert n_terms != 5  # the scale is not 1 here
    raw = _wave(LocalDecisionModel(lexical_only=True, calibration=None), question, prop)
    cal = _wave(LocalDecisionModel(lexical_only=True), question, prop)
    assert set(raw) == set(cal) == {r.id for r in LOCOMO_LIKE}
    expect = Calibration().apply(
        np.array([_logit(raw[r]) for r in raw]), n_terms=n_terms, screen=prop is SCREEN
    )
    assert [cal[r] for r in raw] == pytest.approx(list(1 / (1 + np.exp(-expect))), abs=1e-9)
    assert sorted(raw, key=raw.__getitem__) == sorted(cal, key=cal.__getitem__)
    assert {r for r, p in raw.items() if p >= 0.5} == {r for r, p in cal.items() if p >= 0.5}
    assert any(abs(raw[r] - cal[r]) > 1e-3 for r in raw)  # negative control: p did move


def test_the_judge_reads_an_all_need_from_the_plan() -> None:
    """A need of kind ALL makes the turn's "no" weaker; NEED and no need leave it as it was."""
    question = "What activities does Melanie do with her kids?"
    judge = LocalDecisionModel(lexical_only=True)
    raw = _wave(
        LocalDecisionModel(lexical_only=True, calibration=None),
        question,
        NEEDED,
        [Need(0, question, "ALL")],
    )
    every = _wave(judge, question, NEEDED, [Need(0, question, "ALL")])
    one = _wave(judge, question, NEEDED, [Need(0, question, "NEED")])
    k = Calibration().factor(len(set(terms(question))))
    for r, p in raw.items():
        s = _logit(p)
        scale = 0.6 if s < 0 else 1.0
        assert _logit(every[r]) == pytest.approx(k * scale * s, abs=1e-6)
        assert _logit(one[r]) == pytest.approx(k * s, abs=1e-6)
    assert any(_logit(p) < 0 for p in raw.values())  # the scale had something to move
    assert sorted(every, key=every.__getitem__) == sorted(one, key=one.__getitem__)
    assert {r for r, p in every.items() if p >= 0.5} == {r for r, p in one.items() if p >= 0.5}


@pytest.mark.parametrize(
    "question",
    ["What bread is Ada baking?", "Where did Bo's band play the gig that sold every ticket?"],
)
def test_the_read_graph_composes_the_same_view_with_or_without_it(
    tmp_path: Path, question: str
) -> None:
    store = MnemonStore(tmp_path / "j.sqlite", embeddings=HashEmbeddings(dim=48))
    try:
        msgs = [
            Message(id=f"m{i}", speaker=sp, text=t, session=1 + i // 4)
            for i, (sp, t) in enumerate(TALK)
        ]
        store.ingest(("ada",), msgs, origin="test")
        states = []
        for calibration in (None, Calibration()):
            judge = LocalDecisionModel(embeddings=store.embeddings, calibration=calibration)
            graph = create_read_graph(source=store, judge=judge)
            states.append(
                graph.invoke(
                    {"messages": [HumanMessage(question)]}, context=ReadContext(namespace="ada")
                )
            )
    finally:
        store.close()
    raw, cal = (s["view"] for s in states)
    assert raw.records and raw.text == cal.text
    assert list(raw.message_ids) == list(cal.message_ids)
    jr, jc = (s["view"].trace["judgments"] for s in states)
    assert [(j["target"], j["proposition"]) for j in jr] == [
        (j["target"], j["proposition"]) for j in jc
    ]
    assert [j["p"] >= 0.5 for j in jr] == [j["p"] >= 0.5 for j in jc]
    assert any(abs(a["p"] - b["p"]) > 1e-6 for a, b in zip(jr, jc, strict=True))
