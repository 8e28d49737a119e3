"""The offline judge judges any record text: no call of it fails, whatever the records say.

The read path catches a failed judge call and lets the fused search order stand in for the
judgments (a ``degraded`` trace event), so a crash inside the local judge would be silent in
a user's Views. Hypothesis feeds it records of any text — empty of words, emoji only,
control characters, other scripts, statements of change beside them — with the read
path's propositions, and every call must come back with a probability for every question.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import NEEDED, SATISFIES, SCREEN, STALE
from mnemon_langgraph.read.judging import JudgeRequest, judge_wave
from mnemon_langgraph.types import Record

# lexical evidence alone, and with the bundled MiniLM embedder (the default judge)
JUDGES = {"lexical": LocalDecisionModel(lexical_only=True), "minilm": LocalDecisionModel()}

# Statements the update detector and the judge's cues act on, mixed with arbitrary text.
_SAID = [
    "I live in Leeds at the moment, in a flat near the park.",
    "Big news: I'm moving to Rotterdam at the end of July.",
    "We cancelled the trip to Lisbon, no longer going.",
    "I don't have a car anymore.",
    "Turns out the wedding is on 6 September, not 14 June.",
    "I have 3 cats now, it was 2 last year.",
    "👍",
    "...",
    "",
    "ok",
    "¿Dónde vives ahora?",
    "Я переехал в Москву.",
]
_TEXT = st.one_of(
    st.sampled_from(_SAID),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=120),
)


@st.composite
def _records(draw: st.DrawFn) -> list[Record]:
    texts = draw(st.lists(_TEXT, min_size=1, max_size=6))
    speakers = draw(st.lists(st.sampled_from(["Noor", "assistant", "Sam"]), min_size=1))
    out = []
    for i, body in enumerate(texts):
        speaker = speakers[i % len(speakers)]
        out.append(
            Record(
                id=f"r{i}",
                namespace=("fuzz",),
                session=1 + i // 2,
                date=datetime(2024, 1 + i, 1),
                position=i,
                speakers=(speaker,),
                message_ids=(f"m{i}",),
                text=f"{speaker}: {body}",
            )
        )
    return out


@pytest.mark.parametrize("judge", sorted(JUDGES))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=_records(), message=_TEXT, need=_TEXT)
def test_every_call_of_the_local_judge_gives_every_judgment(
    judge: str, records: list[Record], message: str, need: str
) -> None:
    request = JudgeRequest(
        (SCREEN, NEEDED, STALE, SATISFIES),
        tuple(records),
        (message or "?",),
        needs=(need or "anything",),
    )
    result = judge_wave(JUDGES[judge], [request])
    assert not result.errors
    asked = {(r.id, p) for r in records for p in ("screen", "needed", "stale", "satisfies")}
    got = {(j.target_id, str(j.proposition)) for j in result.judgments}
    assert got == asked
    assert all(0.0 <= j.p <= 1.0 for j in result.judgments)
