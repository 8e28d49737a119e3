"""Following positive records (``ReadSettings.follow_positives``): real SQLite, real graph.

An answer that spans records: the question names the trip, one record tells of it, and
the other part (what was brought back) shares the found record's words — not the
question's. Only a search worded from the found record pools it. The store is a real
:class:`MnemonStore` (SQLite journal, BM25 and vector indexes) with bag-of-words hash
embeddings, so only shared words connect records (no random dense neighbours); the judge
is scripted from each record's text.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from test_read_graph import by_text

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.planner import record_query
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

NS = ("users", "priya")
CTX = ReadContext(namespace=NS, now=datetime(2024, 6, 1))
QUESTION = "What did Priya bring back from her trip to Lisbon?"
FOUND = (
    "Priya: I just got back from Lisbon! The highlight was the tile museum and its custard tarts."
)
SAME_SESSION = "Sam: Did the museum guide show you how the tile panels are glazed?"
OTHER_SESSION = "Sam: Those tile coasters you bought at the museum shop arrived by post."
_FILLER = (
    "weather garden running coffee meeting book movie dinner music budget train office "
    "laptop printer soccer yoga recipe salad bicycle traffic podcast painting guitar "
    "concert library homework neighbour puppy kitten balcony sofa curtains laundry "
    "trip bring back"  # the question's words: its searches' pages fill with distractors
)
FILLER = _FILLER.split()


class WordHashEmbeddings(Embeddings):
    """Bag-of-words vectors (each word hashed to one of 384 dimensions): no meaning beyond
    shared words, and deterministic — unlike random hash vectors, whose dense ranking would
    pool arbitrary records."""

    def _vector(self, text: str) -> list[float]:
        v = np.zeros(384)
        v[0] = 1e-3  # never the zero vector
        for word in re.findall(r"\w+", text.casefold()):
            if len(word) > 3:
                v[1 + int(hashlib.sha256(word.encode()).hexdigest(), 16) % 383] += 1.0
        return list(v / np.linalg.norm(v))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def _messages() -> list[Message]:
    """40 sessions of filler chat; the trip in session 12, the souvenir in session 30."""
    out: list[Message] = []
    start = datetime(2024, 1, 1)
    for session in range(1, 41):
        lines = [
            f"{'Priya' if i % 2 else 'Sam'}: "
            + " ".join(FILLER[(session * 7 + i * 5 + j * 3) % len(FILLER)] for j in range(9))
            for i in range(6)
        ]
        if session == 12:
            lines[1], lines[4] = FOUND, SAME_SESSION
        if session == 30:
            lines[3] = OTHER_SESSION
        for i, line in enumerate(lines):
            speaker, text = line.split(": ", 1)
            out.append(
                Message(
                    text=text,
                    speaker=speaker,
                    id=f"D{session}:{i + 1}",
                    timestamp=start + timedelta(days=3 * session, minutes=i),
                    session=session,
                )
            )
    return out


def _judge(prop: str, text: str, need: int | None) -> float:
    if prop == "stale":
        return 0.1
    return 0.9 if "Lisbon" in text or "coasters" in text else 0.1


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = MnemonStore(
        tmp_path_factory.mktemp("follow") / "journal.sqlite",
        embeddings=WordHashEmbeddings(),
    )
    s.ingest(NS, _messages(), origin="test", pack=False)  # one record per message
    yield s
    s.close()


def _ask(store, **settings):
    judge = ScriptedDecisionModel(answers=by_text(_judge))
    graph = create_read_graph(source=store, judge=judge, settings=ReadSettings(**settings))
    view = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=CTX)["view"]
    pooled = {p["id"] for p in view.trace["pool"]}
    by_text_id = {r.text: r.id for r in store.records(NS)}
    return view, pooled, by_text_id


def test_without_following_the_other_part_is_never_pooled(store) -> None:
    view, pooled, ids = _ask(store, follow_positives=0)
    assert ids[FOUND] in pooled and ids[FOUND] in view.record_ids  # fails on an empty View
    assert ids[OTHER_SESSION] not in pooled and ids[SAME_SESSION] not in pooled
    assert not [s for s in view.trace["searches"] if s["origin"].startswith("follow")]
    assert not [a for a in view.trace["actions"] if a["kind"] == "follow"]


def test_following_across_the_memory_pools_and_shows_the_other_part(store) -> None:
    view, pooled, ids = _ask(store, follow_positives=1, follow_scope="memory")
    assert ids[OTHER_SESSION] in pooled
    assert {ids[FOUND], ids[OTHER_SESSION]} <= set(view.record_ids)
    assert {"D12:2", "D30:4"} <= set(view.message_ids)
    follows = [s for s in view.trace["searches"] if s["origin"] == "follow"]
    assert len(follows) == 1
    search = follows[0]
    assert search["record_id"] == ids[FOUND] and search["session"] is None
    assert search["exhausted"] is True  # a look around one record, never paged
    assert "tile" in search["query"] and "museum" in search["query"]
    assert "Lisbon" not in search["query"]  # the need's words are not repeated
    action = next(a for a in view.trace["actions"] if a["kind"] == "follow")
    assert action["record_id"] == ids[FOUND] and action["executed"]
    entry = next(p for p in view.trace["pool"] if p["id"] == ids[OTHER_SESSION])
    assert entry["round"] == 2 and [search["index"]] == [f[0] for f in entry["found"]]
    # the trace names each pooled record's messages, so a reader can map it to the chat
    (record,) = store.journal.get_records(NS, [entry["id"]])
    assert entry["message_ids"] == list(record.message_ids) != []


def test_following_within_the_session_stays_in_the_session(store) -> None:
    view, pooled, ids = _ask(store, follow_positives=1, follow_scope="session")
    assert ids[SAME_SESSION] in pooled
    assert ids[OTHER_SESSION] not in pooled
    follows = [s for s in view.trace["searches"] if s["origin"].startswith("follow")]
    assert [s["origin"] for s in follows] == ["follow:session"]
    assert follows[0]["session"] == 12
    session_of = {r.id: r.session for r in store.records(NS)}
    new = [p["id"] for p in view.trace["pool"] if p["round"] == 2]
    assert new and {session_of[rid] for rid in new} == {12}


def test_both_scopes_and_the_cost_stays_bounded(store) -> None:
    base, _, _ = _ask(store, follow_positives=0)
    view, pooled, ids = _ask(store, follow_positives=2, follow_scope="both", follow_records=4)
    assert {ids[SAME_SESSION], ids[OTHER_SESSION]} <= pooled
    follows = [s for s in view.trace["searches"] if s["origin"].startswith("follow")]
    # two positives (the trip, then the coasters), two searches each, at most
    assert 2 <= len(follows) <= 2 * 2 * (ReadSettings().max_rounds - 1)
    calls = [c for c in view.trace["search_calls"] if c["origin"].startswith("follow")]
    assert all(c["new"] <= 4 for c in calls)  # pooled hits passed over do not count
    grown = view.trace["counts"]["pool"] - base.trace["counts"]["pool"]
    assert 0 < grown <= len(calls) * 4


def test_record_query_drops_speakers_and_the_needs_words() -> None:
    query = record_query(FOUND + "\n" + SAME_SESSION, QUESTION, 16)
    words = query.split()
    assert {"tile", "museum", "custard", "tarts", "glazed"} <= set(words)
    assert not {"Priya", "Sam", "Lisbon", "back"} & set(words)
    assert words.index("tile") < words.index("glazed")  # the record's order


def test_record_query_keeps_the_longest_words_of_any_script() -> None:
    text = "Ana: Renée met Søren at the Zürich Kunsthaus exhibition opening"
    assert record_query(text, "Who did Renée meet?", 4) == "Zürich Kunsthaus exhibition opening"
    assert record_query(text, "Who did Renée meet?", 16).split()[:2] == ["met", "Søren"]
    assert record_query("Ana: the and of", "x", 16) == ""  # nothing left: no search


@pytest.mark.parametrize(
    "field, value",
    [("follow_scope", "everywhere"), ("follow_positives", -1), ("follow_records", 0)],
)
def test_bad_follow_settings_are_refused(field, value) -> None:
    with pytest.raises(ConfigurationError, match=field):
        ReadSettings(**{field: value})


def test_ainvoke_follows_like_invoke(store) -> None:
    import asyncio

    judge = ScriptedDecisionModel(answers=by_text(_judge))
    graph = create_read_graph(source=store, judge=judge, settings=ReadSettings())
    sync = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=CTX)["view"]
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=CTX))
    view = out["view"]
    assert view.text == sync.text and "D30:4" in view.message_ids
    assert [s["query"] for s in view.trace["searches"]] == [
        s["query"] for s in sync.trace["searches"]
    ]


def test_skip_pooled_follow_skips_records_already_pooled(store) -> None:
    """With one record per follow search, its top hit is the followed record itself
    (already pooled): the follow adds nothing, unless ``skip_pooled`` asks for records
    not pooled yet — then the best one sharing the followed record's words is pooled."""
    plain, pooled, ids = _ask(
        store, follow_positives=1, follow_scope="memory", follow_records=1, skip_pooled=False
    )
    assert ids[FOUND] in pooled  # fails on an empty pool
    assert not [p for p in plain.trace["pool"] if p["round"] == 2]  # the follow found no one new
    assert ids[SAME_SESSION] not in pooled and ids[OTHER_SESSION] not in pooled
    view, pooled, ids = _ask(
        store, follow_positives=1, follow_scope="memory", follow_records=1, skip_pooled=True
    )
    new = [p["id"] for p in view.trace["pool"] if p["round"] == 2]
    assert new == [ids[SAME_SESSION]]  # one record, as asked, and not the followed one
    follows = [s for s in view.trace["searches"] if s["origin"] == "follow"]
    assert len(follows) == 1 and follows[0]["exhausted"] is True  # still never paged
