"""Another party's conversations in a second source enter the View last
(``ReadSettings.source_speakers``, ``read._source_match.stranger_records``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from _chat_records import PlainSource
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._source_match import stranger_records
from mnemon_langgraph.read._view_order import STRANGER_NOTE, unnamed_last
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext

NS = ("users", "ada")
QUESTION = "What did Ada plant in the allotment beside the greenhouse?"


def _rec(rid: str, source: str, session: int, *speakers: str) -> dict[str, Any]:
    return {
        "id": f"{source}:{rid}",
        "read_source": source,
        "session": session,
        "speakers": list(speakers),
    }


def test_a_session_of_another_source_where_a_stranger_speaks_is_another_partys() -> None:
    pool = [
        _rec("m1", "memory", 1, "Ada"),
        _rec("m2", "memory", 2, "Bo"),
        _rec("o1", "others", 1, "Ada"),  # another Ada, in a session where Cy speaks
        _rec("o2", "others", 1, "Cy"),
        _rec("o3", "others", 2, "Ada", "Bo"),  # a session of the journal's people: kept
        _rec("o4", "others", 3),  # no speakers: kept
        _rec("o5", "others", 4, "Handbook"),  # one speaker: a document, not a conversation
        _rec("o6", "others", 4, "Handbook"),
    ]
    assert stranger_records(pool, ["memory"]) == {"others:o1", "others:o2"}
    # the journal's own records are never another party's, whoever speaks in them
    assert stranger_records([*pool, _rec("m3", "memory", 3, "Cy")], ["memory"]) == set()
    # no journal among the sources, or no journal record with a speaker: nothing
    assert stranger_records(pool, []) == set()
    assert stranger_records(pool[2:], ["memory"]) == set()
    # a journal that shows one speaker shows no conversation: whom the user talks with is
    # not known (a partner of the user's own kept only in documents is not a stranger)
    assert stranger_records([r for r in pool if r["id"] != "memory:m2"], ["memory"]) == set()
    # one history split across two sources: the same people on both sides
    split = [_rec("m1", "memory", 1, "Ada", "Bo"), _rec("d1", "docs", 4, "Bo")]
    assert stranger_records(split, ["memory"]) == set()


def test_another_partys_records_come_after_every_other_candidate() -> None:
    cands = [("o1", "needed"), ("m1", "needed"), ("o2", "rank"), ("m2", "rank")]
    out = unnamed_last(cands, {"o1", "o2"}, STRANGER_NOTE)
    assert [rid for rid, _ in out] == ["m1", "m2", "o1", "o2"]
    assert out[2][1] == f"needed; {STRANGER_NOTE}"


def _journal() -> InMemorySearchSource:
    """The user's journal: Ada and Bo, turn by turn."""
    return InMemorySearchSource(
        [
            make_record(
                f"m{i}",
                f"{'Ada' if i % 2 else 'Bo'}: Ada planted {crop} in the allotment, week {i}",
                namespace=NS,
                session=1 + i // 4,
                date=datetime(2024, 4, 1) + timedelta(days=i),
                position=i % 4,
            )
            for i, crop in enumerate(["beans", "peas", "leeks", "onions"] * 5)
        ]
    )


def _documents(speakers: tuple[str, str]) -> PlainSource:
    """A plain search source (no session reads: not a journal) over ``speakers``' turns
    about the same things, naming the same Ada."""
    return PlainSource(
        InMemorySearchSource(
            [
                make_record(
                    f"o{i}",
                    f"{speakers[i % 2]}: Ada planted carrots in the allotment beside the "
                    f"greenhouse, week {i}",
                    namespace=NS,
                    session=1 + i // 4,
                    date=datetime(2024, 5, 1) + timedelta(days=i),
                    position=i % 4,
                )
                for i in range(20)
            ]
        )
    )


def _rates_documents_higher(qid: str, question: Any, state: Any) -> float:
    rows = {r["id"]: r for r in state["records"]}
    return 0.95 if "carrots" in str(rows.get(qid.partition(".")[0], {}).get("text", "")) else 0.9


def _read(sources: Any, speakers: bool) -> Any:
    settings = ReadSettings(view_chars=1_500, pool_size=24, source_speakers=speakers)
    kind = {"sources": sources} if isinstance(sources, dict) else {"source": sources}
    judge = ScriptedDecisionModel(answers=_rates_documents_higher)
    graph = create_read_graph(**kind, judge=judge, settings=settings)
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=ReadContext(namespace=NS))
    return out["view"]


def _shown(view: Any, source: str) -> int:
    return sum(1 for r in view.records if r.source == source)


def test_another_partys_conversation_gives_the_view_to_the_users_journal() -> None:
    sources = {"memory": _journal(), "docs": _documents(("Ada", "Cy"))}
    off, on = _read(sources, False), _read(sources, True)
    # both sources name Ada, and the judge rates the documents higher: they lead the View
    assert _shown(off, "docs") > 0
    assert _shown(on, "docs") == 0 and _shown(on, "memory") > _shown(off, "memory")
    placed = on.trace["placement"]
    assert any(STRANGER_NOTE in placed[p["id"]] for p in on.trace["pool"])
    assert on.trace["judgments"] == off.trace["judgments"]  # order only


def test_documents_of_the_journals_own_people_keep_their_places() -> None:
    sources = {"memory": _journal(), "docs": _documents(("Ada", "Bo"))}
    off, on = _read(sources, False), _read(sources, True)
    assert _shown(on, "docs") > 0
    assert on.text == off.text and on.trace["placement"] == off.trace["placement"]


def test_with_one_source_the_speakers_rule_changes_nothing() -> None:
    off, on = _read(_journal(), False), _read(_journal(), True)
    assert on.records and on.text == off.text
    assert on.trace["placement"] == off.trace["placement"]
