"""A dense-only source's short documents packed as the journal packs turns.

A conversation kept one turn per document (``RetrieverSource`` with ``title_key`` and
``position_key``) gives records of one turn each; the read path joins the records of one
session at consecutive positions that the source returned to the turn's asking searches
into records of at most ``ReadSettings.document_record_chars`` (``read._packing``), so a
reply travels with the turn it answers, as in the journal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._packing import (
    PACKED_PREFIX,
    pack_hits,
    pack_records,
    packed_span,
    sources_naming,
)
from mnemon_langgraph.read._source_match import named_terms
from mnemon_langgraph.read._view_order import Marks, _with_neighbours
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.sources import RetrieverSource
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.types import Record, SearchHit

NS = ("users", "jon")
DAY = datetime(2024, 3, 1)


def _rec(rid: str, text: str, *, session: int = 1, position: int, date: datetime = DAY) -> Record:
    return make_record(
        rid, text, namespace=NS, session=session, date=date, position=position, roles=("user",)
    )


def test_consecutive_records_of_one_session_are_joined_within_the_limit() -> None:
    records = [_rec(f"docs:r{i}", f"Jon: turn {i} " + "x" * 40, position=i) for i in range(5)]
    size = len(records[0].text)
    packed = pack_records(reversed(records), max_chars=2 * size + 1)  # two lines fit, not three
    first, second, last = packed["docs:r0"], packed["docs:r2"], packed["docs:r4"]
    assert packed["docs:r1"] is first and packed["docs:r3"] is second
    assert first.id.startswith("docs:" + PACKED_PREFIX) and first.id != second.id
    assert first.text == records[0].text + "\n" + records[1].text
    assert first.message_ids == records[0].message_ids + records[1].message_ids
    assert first.roles == records[0].roles + records[1].roles
    assert (first.position, first.session, first.date) == (0, 1, DAY)
    assert last is records[4]  # the run's last record, alone: unchanged
    # the same records give the same packed ids, whatever their order
    assert pack_records(records, max_chars=2 * size + 1)["docs:r0"].id == first.id


def test_records_apart_or_of_other_sessions_or_dates_are_never_joined() -> None:
    records = [
        _rec("a", "Jon: one", position=0),
        _rec("b", "Jon: two", position=2),  # a gap: not a neighbour
        _rec("c", "Jon: three", position=3, session=2),  # another session
        _rec("d", "Jon: four", position=4, session=2, date=datetime(2024, 3, 2)),  # another day
        _rec("e", "Jon: " + "y" * 700, position=5, session=2, date=datetime(2024, 3, 2)),
    ]
    packed = pack_records(records, max_chars=600)
    assert all(packed[r.id] is r for r in records)  # each alone (e: over the limit)


def test_packed_hits_take_the_place_of_their_first_record() -> None:
    records = [_rec(f"r{i}", f"Jon: turn {i}", position=i) for i in range(3)]
    other = _rec("o", "Jon: elsewhere", position=9, session=3)
    packed = pack_records(records, max_chars=600)
    hits = [
        SearchHit(r, i, 0.0, dense_rank=i) for i, r in enumerate([records[2], other, *records[:2]])
    ]
    out = pack_hits(hits, packed)
    assert [h.record.id for h in out] == [packed["r0"].id, "o"]
    assert [h.rank for h in out] == [0, 1] and out[0].dense_rank == 0 and out[1].dense_rank == 1
    assert out[1].record is other


QUESTION = "What got Jon into dancing?"
ANSWER = "Jon: I lost my job as a banker, so I chased what I have loved since I was a kid."


class _Near(Embeddings):
    """The question and every document about dancing point one way; the reply that
    holds the answer (no word of the question) points away: its dense rank is last."""

    def _vector(self, text: str) -> list[float]:
        return [1.0, 0.0] if "danc" in text.lower() else [0.0, 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def _documents() -> list[Document]:
    """One turn per document: the asking turn, its reply, then many turns about dancing
    in other sessions (each dated, titled by session, placed by position)."""
    turns = [("Gina", "What got you into dancing, Jon?"), ("Jon", ANSWER.split(": ", 1)[1])]
    turns += [("Gina", f"The dancing class {i} was fun, Jon, dancing all day") for i in range(60)]
    return [
        Document(
            text,
            metadata={
                "id": f"D1:{n}" if n < 2 else f"D{2 + n // 10}:{n % 10}",
                "date": "2024-03-01" if n < 2 else f"2024-04-{1 + n // 10:02d}",
                "title": "session 1" if n < 2 else f"session {2 + n // 10}",
                "speaker": speaker,
                "position": n if n < 2 else n % 10,
            },
        )
        for n, (speaker, text) in enumerate(turns)
    ]


def _judge(qid: str, question: Any, state: Any) -> float:
    """Likely when the record names dancing; the reply alone does not."""
    rows = {r["id"]: r for r in state["records"]}
    text = str(rows.get(qid.partition(".")[0], {}).get("text", "")).lower()
    return 0.9 if "into dancing" in text else (0.4 if "danc" in text else 0.05)


def _read(documents: list[Document], settings: ReadSettings) -> Any:
    """The View of QUESTION over a four-record journal and ``documents`` in a vector store."""
    vectors = InMemoryVectorStore(_Near())
    vectors.add_documents(documents)
    journal = InMemorySearchSource(
        [_rec(f"j{i}", f"Jon: the garden needs water, day {i}", position=i) for i in range(4)]
    )
    graph = create_read_graph(
        sources={
            "memory": journal,
            "docs": RetrieverSource(vectors.as_retriever(), position_key="position"),
        },
        judge=ScriptedDecisionModel(answers=_judge),
        settings=settings,
    )
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=ReadContext(namespace=NS))
    return out["view"]


def _view(**settings: Any) -> Any:
    return _read(_documents(), ReadSettings(view_chars=1_500, **settings))


def _record_of(view: Any, message_id: str) -> Any:
    return next((r for r in view.records if message_id in r.message_ids), None)


def test_a_reply_kept_as_its_own_document_reaches_the_view_with_its_question() -> None:
    view = _view()
    reply = _record_of(view, "D1:1")
    assert reply is not None, [r.message_ids for r in view.records]
    assert reply.message_ids == ("D1:0", "D1:1")  # one record, as the journal packs them
    assert reply.text == "Gina: What got you into dancing, Jon?\n" + ANSWER


def test_without_packing_the_reply_alone_is_never_pooled() -> None:
    view = _view(document_record_chars=None)
    assert _record_of(view, "D1:0") is not None  # the question turn is there
    assert _record_of(view, "D1:1") is None


def test_document_record_chars_must_be_positive() -> None:
    with pytest.raises(ConfigurationError):
        ReadSettings(document_record_chars=0)


def _entry(rid: str, position: int, ids: int = 1, session: int = 1) -> dict[str, Any]:
    return {
        "id": rid,
        "read_source": "docs",
        "source": "documents",
        "session": session,
        "position": position,
        "message_ids": [f"{rid}/{n}" for n in range(ids)],
    }


def test_a_packed_records_neighbours_are_the_records_beside_its_first_and_last() -> None:
    best = "docs:" + PACKED_PREFIX + "ab" * 16  # positions 4, 5 and 6
    pool = [
        _entry(best, 4, ids=3),
        _entry("docs:before", 3),
        _entry("docs:inside", 5),  # not beside it: the packed record holds position 5
        _entry("docs:after", 7),
        _entry("docs:other", 8),
    ]
    candidates = [(best, "best"), ("docs:other", "x"), ("docs:inside", "y")]
    candidates += [("docs:before", "z"), ("docs:after", "w")]
    settings = ReadSettings(view_neighbours=1, neighbours_after=1)
    out = _with_neighbours(candidates, pool, set(), settings, Marks())
    assert [rid for rid, _ in out[:3]] == [best, "docs:before", "docs:after"]
    assert packed_span(pool[0]) == 3 and packed_span(pool[1]) == 1
    # a journal record of several messages spans its one position
    assert packed_span({"id": "memory:r-1", "message_ids": ["a", "b"]}) == 1
    assert packed_span({"id": PACKED_PREFIX + "ab" * 16, "message_ids": ["a", "b"]}) == 1


def test_with_one_source_packing_changes_nothing() -> None:
    vectors = InMemoryVectorStore(_Near())
    vectors.add_documents(_documents())
    views = []
    for chars in (600, None):
        graph = create_read_graph(
            source=RetrieverSource(vectors.as_retriever(), position_key="position"),
            judge=ScriptedDecisionModel(answers=_judge),
            settings=ReadSettings(view_chars=1_500, document_record_chars=chars),
        )
        out = graph.invoke(
            {"messages": [HumanMessage(QUESTION)]}, context=ReadContext(namespace=NS)
        )
        views.append(out["view"])
    assert views[0].text == views[1].text and views[0].records
    assert all(len(r.message_ids) == 1 for r in views[0].records)  # one turn each, unpacked


def test_sources_naming_are_those_whose_results_name_as_many_of_the_turns_names() -> None:
    names = named_terms(["What got Jon into dancing in Paris?"])
    texts = {
        "memory": ["Jon: I was in Paris", "Gina: nice"],
        "docs": ["Jon: dancing all day"],
        "others": ["Bo: dancing in a club"],
    }
    assert sources_naming(texts, names) == {"memory"}
    assert sources_naming({**texts, "docs": ["Jon: Paris!"]}, names) == {"memory", "docs"}
    assert sources_naming(texts, named_terms(["what got you into dancing?"])) == set(texts)


def test_a_source_that_names_none_of_the_turns_names_is_not_packed() -> None:
    def others() -> list[Document]:  # the same turns, by other people
        docs = _documents()
        for d in docs:
            d.page_content = d.page_content.replace("Jon", "Al")
            d.metadata["speaker"] = d.metadata["speaker"].replace("Jon", "Al")
        return docs

    view = _read(others(), ReadSettings())
    docs = [p for p in view.trace["pool"] if p["id"].startswith("docs:")]
    assert docs and all(PACKED_PREFIX not in p["id"] for p in docs)
