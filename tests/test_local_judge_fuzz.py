"""The offline judge judges any record text: no call of it fails, whatever the records say.

The read path catches a failed judge call and lets the fused search order stand in for the
judgments (a ``degraded`` trace event), so a crash inside the local judge would be silent in
a user's Views. Hypothesis feeds it records of any text — empty of words, emoji only,
control characters, other scripts, statements of change beside them — with the read
path's propositions, and every call must come back with a probability for every question.
The whole read path is then run on journals of such records (with the rule planner and the
local judge) and must leave no fallback in its trace.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import NEEDED, SATISFIES, SCREEN, STALE
from mnemon_langgraph.read._judging import JudgeRequest, judge_wave
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ExperimentSwitches, ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message, Record

# lexical evidence alone, and with embeddings (a fake embedder: the code path is the same
# as with the bundled MiniLM, and the test stays a unit test)
JUDGES = {
    "lexical": LocalDecisionModel(lexical_only=True),
    "semantic": LocalDecisionModel(embeddings=DeterministicFakeEmbedding(size=32)),
}

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


# --- the whole read path with the real components --------------------------------------

# text a journal stores (a NUL is refused at ingest: test_reliability_fuzz covers that)
_STORABLE = _TEXT.filter(lambda t: t.strip() and "\x00" not in t)
# a long message is split into records, and a piece of it may hold no word at all
_TABLE = "Here is the table:\n" + "| --- | --- | --- |\n" * 80 + "Shall I add a column?"
_STORED = st.lists(st.one_of(st.sampled_from([*_SAID, _TABLE]), _STORABLE), max_size=8)
_CHANGE_AFTER_TABLE = (_TABLE, "Big news: I'm moving to Rotterdam at the end of July.")


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = MnemonStore(
        tmp_path_factory.mktemp("fuzz") / "j.sqlite", DeterministicFakeEmbedding(size=32)
    )
    yield store
    store.close()


# the read settings whose rules act on what the records say, dates included
_SETTINGS = st.builds(
    ReadSettings,
    view_chars=st.sampled_from([300, 1000, 2000, 12000]),
    experiments=st.builds(
        ExperimentSwitches,
        relative_date_search=st.booleans(),
        part_searches=st.sampled_from([0, 3]),
        leave_out_stale=st.booleans(),
    ),
    excerpt_slots=st.sampled_from([None, 2, 6]),
    message_pieces=st.sampled_from([None, 1]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(said=_STORED, message=_STORABLE, read=_SETTINGS, data=st.data())
def test_the_read_path_with_the_offline_judge_never_falls_back(
    journal: Any, said: list[str], message: str, read: ReadSettings, data: st.DataObject
) -> None:
    # each example writes its records to a namespace of its own, then reads it with the
    # rule planner and the local judge: no step may fail and leave a fallback behind
    ns = ("fuzz", f"n{data.draw(st.integers(0, 10**9))}")
    # every journal ends with a reply holding a table and a change stated after it, so that
    # a wordless record and a replacing one are judged together in every example
    turns = [*(t for t in said if t.strip()), _CHANGE_AFTER_TABLE[0], _CHANGE_AFTER_TABLE[1]]
    if len(turns) % 2:  # the table is the assistant's turn (odd), the change the user's
        turns.insert(0, "I live in Leeds.")
    journal.ingest(
        ns,
        [
            Message(
                text=t,
                speaker="Noor" if i % 2 == 0 else "assistant",
                role="user" if i % 2 == 0 else "assistant",
                id=f"m{i}",
                timestamp=datetime(2024, 1 + i % 12, 1),
                session=1 + i // 3,
            )
            for i, t in enumerate(turns)
        ],
        origin="fuzz",
    )
    graph = create_read_graph(source=journal, judge=JUDGES["semantic"], settings=read)
    out = graph.invoke(
        {"messages": [HumanMessage(message)]},
        context=ReadContext(namespace=ns, now=datetime(2025, 1, 1)),
    )
    view = out["view"]
    assert view.trace["degradations"] == []
    assert view.text and len(view.text) <= read.view_chars
