"""The local judge: offline, deterministic, ranks evidence above chatter, explicit staleness."""

from __future__ import annotations

from datetime import datetime

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from mnemon_langgraph.judges.local import LocalDecisionModel, score_to_p
from mnemon_langgraph.judges.propositions import NEEDED, SATISFIES, SCREEN, STALE
from mnemon_langgraph.read._judging import JudgeRequest, WaveResult, judge_wave
from mnemon_langgraph.types import Record


def rec(rid: str, session: int, text: str, day: int = 1) -> Record:
    return Record(
        id=rid,
        namespace=("t",),
        session=session,
        date=datetime(2023, 5, day),
        position=0,
        speakers=(text.split(":")[0],),
        message_ids=(rid,),
        text=text,
    )


LOCOMO_LIKE = [
    rec("gold", 1, "Caroline: I went to a LGBTQ support group yesterday, it was powerful.", 8),
    rec("paint", 1, "Melanie: I'm swamped with the kids & work. Painting helps me unwind.", 8),
    rec("greet", 2, "Caroline: Hey Mel! Good to see you! How have you been?", 20),
    rec("camp", 2, "Melanie: We went camping with the kids at the beach last weekend.", 20),
    rec("school", 3, "Caroline: I'm thinking of studying counseling and psychology.", 27),
    rec("pottery", 3, "Melanie: I signed up for a pottery class, it is so relaxing.", 27),
]
QUESTION = "When did Caroline go to the LGBTQ support group?"


def _p(result: WaveResult, prop: str = "needed") -> dict[str, float]:
    assert result.errors == []
    return {j.target_id: j.p for j in result.judgments if j.proposition == prop}


@pytest.mark.parametrize(
    "judge",
    [
        LocalDecisionModel(lexical_only=True),
        LocalDecisionModel(embeddings=DeterministicFakeEmbedding(size=32)),
    ],
    ids=["lexical", "fake-embeddings"],
)
def test_relevant_record_ranks_above_irrelevant(judge: LocalDecisionModel) -> None:
    p = _p(judge_wave(judge, [JudgeRequest([NEEDED], LOCOMO_LIKE, [QUESTION])]))
    assert set(p) == {r.id for r in LOCOMO_LIKE}
    assert p["gold"] == max(p.values())
    assert p["gold"] >= 0.5
    assert all(p[k] < 0.5 for k in ("paint", "camp", "pottery"))


def test_screen_and_satisfies_use_their_queries() -> None:
    judge = LocalDecisionModel(lexical_only=True)
    needs = ["Caroline's plans for her education", "where Melanie went camping"]
    result = judge_wave(
        judge, [JudgeRequest([SCREEN, SATISFIES], LOCOMO_LIKE, ["Tell me about them"], needs)]
    )
    sat = {(j.target_id, j.need_index): j.p for j in result.judgments if j.need_index is not None}
    assert sat[("school", 0)] > sat[("camp", 0)]
    assert sat[("camp", 1)] > sat[("school", 1)]
    assert len([j for j in result.judgments if j.proposition == "screen"]) == len(LOCOMO_LIKE)


def test_local_judge_is_deterministic() -> None:
    request = [JudgeRequest([NEEDED, STALE], LOCOMO_LIKE, [QUESTION])]
    emb = DeterministicFakeEmbedding(size=32)
    first = judge_wave(LocalDecisionModel(embeddings=emb), request).judgments
    second = judge_wave(LocalDecisionModel(embeddings=emb), request).judgments
    again = judge_wave(LocalDecisionModel(embeddings=emb), list(reversed(request))).judgments
    assert first == second == again
    assert len(first) == 2 * len(LOCOMO_LIKE)


def test_stale_needs_an_explicit_later_change_on_the_same_subject() -> None:
    judge = LocalDecisionModel(lexical_only=True)
    old = rec("old", 1, "Ada: I live in Berlin and work at the corner bakery.", 1)
    moved = rec("moved", 3, "Ada: I moved to Lisbon last month, so no longer in Berlin.", 20)
    chatter = rec("chatter", 3, "Ada: Berlin was sunny today, the bakery smelled great.", 20)
    other = rec("other", 4, "Ben: I quit the choir and sold my piano.", 25)

    def stale(records: list[Record]) -> dict[str, float]:
        return _p(judge_wave(judge, [JudgeRequest([STALE], records, ["Where is Ada?"])]), "stale")

    assert stale([old, moved])["old"] >= 0.5
    assert stale([old, moved])["moved"] < 0.5  # the later record itself is current
    assert stale([old, chatter])["old"] < 0.5  # same subject, no change signal
    assert stale([old, other])["old"] < 0.5  # change signal, other subject
    early_move = rec("early", 1, "Ada: I moved to Berlin, no longer in Lisbon.", 1)
    late_stay = rec("late", 3, "Ada: Lisbon is lovely, I live in Lisbon.", 20)
    assert stale([early_move, late_stay])["late"] < 0.5  # an EARLIER change does not count


def test_a_message_that_cancels_a_plan_makes_it_stale() -> None:
    judge = LocalDecisionModel(lexical_only=True)
    plan = rec("plan", 2, "Ada: I booked the pottery workshop in Porto for June.", 5)
    messages = ["Ada: I cancelled the pottery workshop in Porto.", "Noted."]
    result = judge_wave(judge, [JudgeRequest([STALE], [plan], messages)])
    assert _p(result, "stale")["plan"] >= 0.5


def test_score_to_p_is_monotone_with_midpoint() -> None:
    scores = [-1.0, 0.0, 0.1, 0.29, 0.3, 0.31, 0.6, 2.0]
    ps = [score_to_p(s) for s in scores]
    assert ps == sorted(ps) and len(set(ps)) == len(ps)
    assert score_to_p(0.3) == pytest.approx(0.5)
    assert all(0.0 <= p <= 1.0 for p in ps)


def test_real_minilm_ranks_the_evidence_first() -> None:
    pytest.importorskip("onnxruntime")
    from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

    judge = LocalDecisionModel(embeddings=MiniLMEmbeddings())
    question = "What does Caroline want to study?"
    p = _p(judge_wave(judge, [JudgeRequest([NEEDED], LOCOMO_LIKE, [question])]))
    assert p["school"] == max(p.values()) and p["school"] >= 0.5
    assert p["camp"] < 0.5


def _stale_of(records: list[Record], messages: list[str]) -> dict[str, float]:
    judge = LocalDecisionModel(lexical_only=True)
    return _p(judge_wave(judge, [JudgeRequest([STALE], records, messages)]), "stale")


def test_a_question_with_a_change_word_changes_nothing() -> None:
    job = rec("job", 1, "Jon: I work as a banker at Chase and dream of a dance studio.", 1)
    assert _stale_of([job], ["When did Jon quit his job as a banker at Chase?"])["job"] < 0.5
    # …while the same words as a statement of a change do make it stale
    said = ["Jon: I quit my job at Chase, no longer a banker."]
    assert _stale_of([job], said)["job"] >= 0.5


def test_generic_overlap_or_another_speaker_is_not_a_change() -> None:
    gym = rec("gym", 1, "Jon: Started hitting the gym last week to stay on track.", 1)
    other_topic = rec("smoke", 3, "Jon: I quit smoking last week, feeling great.", 20)
    assert _stale_of([gym, other_topic], ["Hi"])["gym"] < 0.5
    studio = rec("studio", 1, "Jon: I opened my dance studio downtown in Paris.", 1)
    gina = rec("gina", 3, "Gina: I quit the dance studio downtown in Paris.", 20)
    jon = rec("jon", 3, "Jon: I sold my dance studio downtown in Paris.", 20)
    assert _stale_of([studio, gina], ["Hi"])["studio"] < 0.5  # someone else's change
    assert _stale_of([studio, jon], ["Hi"])["studio"] >= 0.5  # the same speaker's change


def test_a_negated_change_is_not_a_change() -> None:
    plan = rec("plan", 1, "Gina: I opened my clothing store on Main Street.", 1)
    keep = rec("keep", 3, "Gina: The store on Main Street is hard, but I'm not giving up!", 20)
    assert _stale_of([plan, keep], ["Hi"])["plan"] < 0.5


def test_a_record_from_the_asked_date_ranks_higher() -> None:
    judge = LocalDecisionModel(lexical_only=True)
    texts = "Melanie: Here is the painting I did, a lake at sunrise."
    same = [rec("asked", 4, texts, 13), rec("other", 2, texts, 3)]
    question = ["What painting did Melanie share on 13 May, 2023?"]
    p = _p(judge_wave(judge, [JudgeRequest([NEEDED], same, question)]))
    assert p["asked"] > p["other"]


def test_a_when_question_favours_the_record_that_says_when() -> None:
    """Hand formula: a time expression earns a bonus only when the message asks *when*.

    Negative control: the same two records asked a question that is not a *when* question
    score alike, so the gap comes from the bonus, not from the words.
    """
    said = rec("said", 1, "Jon: The studio opened yesterday, I still can't believe it.")
    other = rec("other", 1, "Jon: The studio opened downtown, I still can't believe it.")
    judge = LocalDecisionModel(lexical_only=True)

    def p(question: str) -> dict[str, float]:
        return _p(judge_wave(judge, [JudgeRequest([NEEDED], [said, other], [question])]))

    when = p("When did Jon's studio open?")
    what = p("What did Jon say about the studio opening?")
    assert when["said"] > when["other"]
    assert what["said"] == pytest.approx(what["other"], abs=1e-9)
