"""Every ``ReadSettings`` field reaches the code it budgets.

One scripted turn over a 144-record history (a chat planner naming two needs and three
searches, a judge answering from the text, a small consolidated index) is run with the
defaults and then with one field changed; for each field, the observable that field
budgets must move — the number of needs, the size of a search page, the judge's batch,
the View's length, the searches a follow makes, and so on — and the default run is
checked to be one where it could move (so no case passes on an empty or degenerate turn).
A field added to ``ReadSettings`` without a case here fails ``test_every_field_has_a_case``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

import pytest
from _chat_records import PlainSource, WordVectors
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from test_planner import NEED_JSON, RoutingFakeChat

from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._instructions import instruction_query
from mnemon_langgraph.read._nodes_sources import INSTRUCTIONS
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemoryItemSource, InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import (
    EXPERIMENT_SWITCHES,
    LOOKAHEAD,
    ExperimentSwitches,
    ReadSettings,
)
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.search._fusion import RRF_K
from mnemon_langgraph.types import Record

NS = ("users", "ada")
SEARCHES = '{"searches": ["garden plans with the support group", "garden tools", "support group dates"], "hypothetical_record": "Ada: our support group meets in the garden."}'  # noqa: E501
QUESTION = (
    "When does Ada's support group meet in the garden, what did it plan in March 2023, "
    "and where are my garden notes?"
)
EARLY = "Ada: I keep my garden notes in a blue notebook."
RELATIVE_QUESTION = "What did the support group plan in the garden last month, and the garden club?"
UNNAMED_QUESTION = "when does the support group meet in the garden, and what did it plan?"
TOPIC_QUESTION = "Summarize how the garden plans of the support group progressed."
LONG_INSTRUCTION = "Always answer with the garden's plant names first. " * 12


def _text(session: int, position: int) -> str:
    words = ["tulip", "rose", "basil", "mint", "fern", "ivy"]
    topic = "support group" if position % 3 == 0 else "garden club"
    extra = " ".join(words[(session + position + j) % len(words)] for j in range(4))
    return (
        f"Ada: the {topic} met in the garden in session {session}, "
        f"turn {position}; we talked about {extra} and the watering rota for the plot."
    )


def _records(
    pieces: bool = False, two_lines: bool = False, instruction: bool = False, replies: bool = False
) -> list[Any]:
    """The history; ``pieces``: every three records of a session are pieces of one message;
    ``two_lines``: every record is a turn and its reply (two lines, two message ids);
    ``replies``: the records at odd positions are the assistant's, the others the user's."""
    out = []
    for session in range(1, 13):
        month = 1 + (session - 1) % 4  # January .. April 2023
        for position in range(12):
            rid = f"s{session}p{position}"
            text, mids = _text(session, position), [f"s{session}m{position // 3}"]
            if replies and position % 2:  # a reply of a few lines (read.questions)
                text += (
                    " Noted; the rota and the plot both sound right for the season ahead,"
                    " week by week."
                )
            if two_lines:
                text += f"\nBo: lovely, the {'rota' if position % 2 else 'plot'} sounds right."
                mids = [f"{rid}:a", f"{rid}:b"]
            out.append(
                make_record(
                    rid,
                    text,
                    namespace=NS,
                    session=session,
                    date=datetime(2023, month, 1 + session),
                    position=position,
                    seq=len(out) + 1,
                    message_ids=mids if pieces or two_lines else None,
                    roles=(("assistant",) if position % 2 else ("user",)) if replies else (),
                )
            )
    out.append(make_record("note", EARLY, namespace=NS, session=13, seq=len(out) + 1))
    if instruction:
        out.append(
            make_record(
                "instruction",
                "Ada: Always name the plants in Latin when I ask about the garden.",
                namespace=NS,
                session=14,
                roles=("user",),
                seq=len(out) + 1,
            )
        )
        # an instruction on another topic in a record the instruction search ranks first
        # (it shares the question's words), whose own line is farther from the question;
        # its assistant's line makes the history one with an assistant (read.instructions)
        out.append(
            make_record(
                "instruction-far",
                "assistant: the support group plan for March 2023 and your garden notes.\n"
                "Ada: Always use metric units when I ask about the watering rota.",
                namespace=NS,
                session=15,
                roles=("assistant", "user"),
                seq=len(out) + 1,
            )
        )
    return out


def _items() -> InMemoryItemSource:
    events = [
        IndexItem(
            f"x-e{i}",
            NS,
            "event",
            f"The support group met in the garden on day {i} and planned the {w} beds",
            (f"s{i}p0",),
            topic="support group",
            date=datetime(2023, 3, i),
        )
        for i, w in zip(
            range(1, 9),
            ["tulip", "rose", "basil", "mint", "fern", "ivy", "oak", "elm"],
            strict=True,
        )
    ]
    return InMemoryItemSource(
        [
            IndexItem("x-i0", NS, "instruction", LONG_INSTRUCTION, ("s1p1",)),
            *events,
            IndexItem("x-t1", NS, "event", "Ada took up pottery", ("s2p1",), topic="pottery"),
        ]
    )


def _judge_rule(low: bool, by_parity: bool = False, stale: bool = False) -> Callable[..., float]:
    def answer(qid: str, question: Any, state: Any) -> float:
        local, _, suffix = qid.partition(".")
        if suffix == "stale":
            if not stale:
                return 0.05
            rows = {r["id"]: r for r in state["records"]}
            said = str(rows.get(local, {}).get("text", ""))
            return 0.9 if "session 1, turn 0;" in said else 0.05  # later turns replace it
        if low:
            return 0.05
        if by_parity:  # a ranking that disagrees with the searches' order
            return 0.4 if int("0" + "".join(c for c in local if c.isdigit())) % 2 else 0.3
        if local.startswith("i"):  # an index item (local ids: r<n> records, i<n> items)
            return 0.8
        rows = {r["id"]: r for r in state["records"]}
        text = str(rows.get(local, {}).get("text", ""))
        return 0.9 if "support group" in text and "session 1," in text else 0.3

    return answer


class SlowFirstCall:
    """Makes the first call of a scripted backend slow (then every call is instant)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.done = seconds, False

    def __call__(self) -> None:
        if not self.done:
            self.done = True
            time.sleep(self.seconds)


class SlowPlannerChat(RoutingFakeChat):
    delay: float = 0.0

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        if self.delay:
            time.sleep(self.delay)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)


def _team_notes(line: Callable[[int, int], str]) -> list[Record]:
    """A team's notes: six weekly sessions of eight, ``line(session, position)`` each."""
    return [
        make_record(
            f"s{s}p{p}",
            line(s, p),
            namespace=NS,
            session=s,
            date=datetime(2023, 3, s),
            position=p,
        )
        for s in range(1, 7)
        for p in range(8)
    ]


class _Team(InMemorySearchSource):
    """A second source (a team's notes, ids and sessions as the user's), each search
    ``delay`` seconds slow."""

    def __init__(self, delay: float, dense: bool = False) -> None:
        if dense:  # ranks by embeddings only, as a vector store's retriever does
            self.ranks_keywords = False
        super().__init__(
            _team_notes(
                lambda s, p: (
                    f"Bo: the support group of the team met in the garden, week {s}, note {p}."
                )
            )
        )
        self.delay = delay

    def search(self, query: str, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().search(query, **kwargs)


def _plain_team() -> PlainSource:
    """A team's conversations behind a plain search source (no session reads: not a
    journal): Bo and Cy, and Cy never speaks in Ada's records."""
    return PlainSource(
        InMemorySearchSource(
            _team_notes(
                lambda s, p: (
                    f"{'Bo' if p % 2 else 'Cy'}: the support group met in the garden, week {s}."
                )
            )
        )
    )


@dataclass
class Turn:
    """What one turn did: its View as a dict, the source's calls and the planner's prompts."""

    view: dict[str, Any]
    calls: list[tuple[str, int, int]]
    prompts: list[str]
    judged_rrf: list[float]

    @property
    def trace(self) -> dict[str, Any]:
        return self.view["trace"]

    def searches(self, prefix: str) -> list[dict[str, Any]]:
        return [s for s in self.trace["searches"] if str(s["origin"]).startswith(prefix)]


def run_turn(
    settings: ReadSettings,
    *,
    low_judge: bool = False,
    parity_judge: bool = False,
    planner_delay: float = 0.0,
    judge_delay: float = 0.0,
    pieces: bool = False,
    rule_planner: bool = False,
    question: str = QUESTION,
    now: datetime | None = None,
    stale_judge: bool = False,
    two_lines: bool = False,
    view_chars: int | None = None,
    instruction: bool = False,
    replies: bool = False,
    team_delay: float | None = None,
    topic: bool = False,
    coverage: bool = False,
    team_dense: bool = False,
    sessions: bool = False,
    team_plain: bool = False,
) -> Turn:
    if sessions and not settings.session_searches:  # dense sessions searched: a size to budget
        settings = replace(settings, session_searches=3)
    if view_chars is not None:
        settings = replace(settings, view_chars=view_chars)
    if topic or coverage:  # the topic search runs, so its depth has something to budget;
        # the coverage View leads with the user's mentions, so its share has some to budget
        switches = ExperimentSwitches(topic_records=6 * topic, coverage_records=12 * coverage)
        settings = replace(settings, experiments=switches)
    memory = WordVectors if instruction else InMemorySearchSource
    source = memory(_records(pieces, two_lines, instruction, replies))
    team: Any = None if team_delay is None else _Team(team_delay, team_dense)
    team = _plain_team() if team_plain else team
    sources = None if team is None else {"memory": source, "team": team}
    rule = _judge_rule(low_judge, parity_judge, stale_judge)
    slow = SlowFirstCall(judge_delay)
    seen_rrf: list[float] = []

    def answer(qid: str, question: Any, state: Any) -> float:
        if judge_delay:
            slow()
        for r in state["records"]:
            rrf = (r.get("evidence") or {}).get("rrf")
            if isinstance(rrf, float):
                seen_rrf.append(rrf)
        return rule(qid, question, state)

    planner = SlowPlannerChat(
        script={"search": [SEARCHES], "need": [NEED_JSON]}, delay=planner_delay
    )
    graph = create_read_graph(
        source=None if sources else source,
        sources=sources,
        judge=ScriptedDecisionModel(answers=answer),
        planner=None if rule_planner else planner,
        items=_items(),
        settings=settings,
    )
    messages: list[BaseMessage] = [
        HumanMessage("The tulips are up."),
        AIMessage("Lovely."),
        HumanMessage("The mint is spreading."),
        AIMessage("It does that."),
        HumanMessage("I keep my garden notes in a blue notebook.", name="Ada", id="note:m0"),
        AIMessage("Noted."),
        HumanMessage(question),
    ]
    out = graph.invoke({"messages": messages}, context=ReadContext(namespace=NS, now=now))
    return Turn(out["view"].to_dict(), list(source.calls), list(planner.prompts), seen_rrf)


@pytest.fixture(scope="module")
def default() -> Turn:
    return run_turn(ReadSettings())


def _round1_page(t: Turn) -> int:
    """The largest page of the first round's paged searches (the instruction search reads
    ``instruction_depth`` records, not a page)."""
    calls = t.trace["search_calls"]
    return max(c["returned"] for c in calls if c["round"] == 1 and c["origin"] != INSTRUCTIONS)


def _first_wave_calls(t: Turn) -> int:
    return int(t.trace["waves"][0]["calls"])


def _items_judged(t: Turn) -> int:
    return len({j["target"] for j in t.trace["judgments"] if j["proposition"] == "item_needed"})


def _depth_judged(t: Turn) -> int:
    """Records judged beyond the screen (need, staleness ... propositions)."""
    return len(
        {
            j["target"]
            for j in t.trace["judgments"]
            if j["proposition"] not in ("screen", "item_needed")
            and not j["target"].startswith("x-")
        }
    )


def _follow_returned(t: Turn) -> int:
    return max(
        (c["returned"] for c in t.trace["search_calls"] if str(c["origin"]).startswith("follow")),
        default=0,
    )


def _follow_words(t: Turn) -> int:
    return max(len(s["query"].split()) for s in t.searches("follow"))


def _neighbours(t: Turn) -> list[int]:
    return [
        i for i, r in enumerate(t.view["records"]) if str(r["placed_by"]).startswith("neighbour")
    ]


def _placement_of_early(t: Turn) -> str:
    return str(t.trace["placement"].get("note", ""))


def _early_in_prompts(t: Turn) -> bool:
    return any("blue notebook" in p for p in t.prompts)


def _lines_shown(t: Turn) -> list[int]:
    return [len(r["message_ids"]) for r in t.view["records"]]


def _later_page_k(t: Turn) -> int:
    """The most hits a later page (or a deeper first read) asked for, the instruction
    search (which reads ``instruction_depth`` records) left out."""
    lane = instruction_query("")
    return max(k for q, k, off in t.calls if (off > 0 or k > 20) and not q.startswith(lane))


# field -> (changed value, observable, extra run options). The observable must differ
# between the default run (with the same options) and the changed one.
CASES: dict[str, tuple[Any, Callable[[Turn], Any], dict[str, Any]]] = {
    "max_needs": (1, lambda t: len(t.trace["needs"]), {}),
    "searches_per_plan": (1, lambda t: len(t.searches("plan")), {}),
    "page_records": (4, _round1_page, {}),
    "page_chars": (400, _round1_page, {}),
    "pool_size": (10, lambda t: sum(1 for p in t.trace["pool"] if p["round"] == 1), {}),
    "max_rounds": (1, lambda t: t.trace["counts"]["rounds"], {}),
    "view_records": (2, lambda t: len(t.view["records"]), {}),
    "view_chars": (1500, lambda t: len(t.view["text"]), {}),
    "max_records_per_call": (5, _first_wave_calls, {}),
    "recent_messages": (1, _early_in_prompts, {}),
    "rrf_k": (2, lambda t: sorted(set(t.judged_rrf))[-3:], {}),
    "nearest_items": (2, _items_judged, {}),
    "instructions_share": (
        0.01,
        lambda t: LONG_INSTRUCTION[:40] in t.view["text"],
        {},
    ),
    "directory_share": (0.0, lambda t: "support group; pottery" in t.view["text"], {}),
    "groups_share": (0.0, lambda t: "planned the tulip beds" in t.view["text"], {}),
    "candidates_floor": (0, _depth_judged, {"low_judge": True}),
    "deep_records": (4 if ReadSettings().deep_records != 4 else 8, _depth_judged, {}),
    "planner_timeout_s": (0.2, lambda t: ("notes", t.trace["plan_notes"]), {"planner_delay": 1.0}),
    "judge_timeout_s": (0.2, lambda t: ("degraded", t.trace["degradations"]), {"judge_delay": 1.0}),
    "leave_out_recent": (False, _placement_of_early, {}),
    "follow_positives": (0, lambda t: len(t.searches("follow")), {}),
    "follow_scope": ("session", lambda t: sorted({s["origin"] for s in t.searches("follow")}), {}),
    "follow_records": (2, _follow_returned, {}),
    "follow_words": (2, _follow_words, {}),
    "skip_pooled": (False, _later_page_k, {}),
    "view_neighbours": (0, _neighbours, {}),
    "neighbours_after": (0, _neighbours, {}),
    "date_search": (False, lambda t: len(t.searches("date")), {}),
    "fused_weight": (4.0, lambda t: [r["id"] for r in t.view["records"]], {"parity_judge": True}),
    "relative_date_search": (
        not ReadSettings().experiments.relative_date_search,
        lambda t: [s["origin"] for s in t.trace["searches"]],
        {"question": RELATIVE_QUESTION, "now": datetime(2023, 4, 20)},
    ),
    "part_searches": (
        0 if ReadSettings().experiments.part_searches else 3,
        lambda t: len(t.trace["searches"]),
        {"rule_planner": True},
    ),
    "message_pieces": (
        None if ReadSettings().message_pieces else 1,
        lambda t: [r["id"] for r in t.view["records"]],
        {"pieces": True},
    ),
    "leave_out_stale": (
        not ReadSettings().experiments.leave_out_stale,
        lambda t: str(t.trace["placement"].get("s1p0", ""))[:40],
        {"stale_judge": True},
    ),
    "excerpt_slots": (
        100 if ReadSettings().excerpt_slots != 100 else 200,
        _lines_shown,
        {"two_lines": True},
    ),
    "excerpt_after": (
        ReadSettings().excerpt_after + 4,
        _lines_shown,
        {"two_lines": True, "view_chars": 1500},
    ),
    "instruction_records": (
        0 if ReadSettings().instruction_records else 1,
        lambda t: [r["id"] for r in t.view["records"][:2]],
        {"instruction": True},
    ),
    "instruction_depth": (
        ReadSettings().instruction_depth + 7,
        lambda t: sorted(k for _, k, _ in t.calls),
        {},
    ),
    "instruction_match": (
        not ReadSettings().instruction_match,
        lambda t: [r["id"] for r in t.view["records"][:1]],
        {"instruction": True},
    ),
    "instruction_floor": (
        0.9,  # neither instruction's line is that near the question: none leads
        lambda t: [r["id"] for r in t.view["records"][:2]],
        {"instruction": True},
    ),
    "assistant_rank_factor": (
        1.0 if ReadSettings().assistant_rank_factor != 1 else 3.0,
        lambda t: [r["id"] for r in t.view["records"]],
        {"replies": True},
    ),
    "reply_questions": (
        not ReadSettings().reply_questions,
        lambda t: [r["id"] for r in t.view["records"]],
        {"replies": True},
    ),
    "opening_turns": (
        0 if ReadSettings().opening_turns else 8,
        lambda t: [r["id"] for r in t.view["records"]],
        {"replies": True},
    ),
    "source_share": (
        1.0,  # the first source may take the whole first pool before the team's get any
        lambda t: sum(1 for p in t.trace["pool"] if p["round"] == 1 and p["id"][:5] == "team:"),
        {"team_delay": 0.0},
    ),
    "source_timeout_s": (
        0.05,
        lambda t: ("errors", [e["source"] for e in t.trace["source_errors"]]),
        {"team_delay": 0.25},
    ),
    "dense_candidates": (
        None,  # every search asks the dense-only team source, none served from candidates
        lambda t: [s["origin"] for s in t.trace["searches"] if s.get("read_source") == "team"],
        {"team_delay": 0.0, "team_dense": True},
    ),
    "dense_searches": (
        1,  # only the message's search asks the team source
        lambda t: [s["origin"] for s in t.trace["searches"] if s.get("read_source") == "team"],
        {"team_delay": 0.0, "team_dense": True},
    ),
    "document_record_chars": (
        None,  # the dense-only team source's notes of a week stay one record each
        lambda t: sorted(p["id"] for p in t.trace["pool"] if p["id"][:5] == "team:"),
        # a question naming no name: the team's notes (Bo's, not Ada's) are packed too
        {"team_delay": 0.0, "team_dense": True, "question": UNNAMED_QUESTION},
    ),
    "topic_records": (
        0 if ReadSettings().experiments.topic_records else 6,
        lambda t: [(s["query"], s["origin"]) for s in t.trace["searches"]],
        {"question": TOPIC_QUESTION},
    ),
    "topic_depth": (
        ReadSettings().topic_depth + 7,
        lambda t: sorted(k for _, k, _ in t.calls),
        {"question": TOPIC_QUESTION, "topic": True},
    ),
    "coverage_records": (
        0 if ReadSettings().experiments.coverage_records else 2,
        lambda t: [r["id"] for r in t.view["records"]],
        {"question": TOPIC_QUESTION, "replies": True},
    ),
    "coverage_share": (
        0.05 if ReadSettings().coverage_share != 0.05 else 0.5,
        lambda t: sum("a mention of the topic" in r["placed_by"] for r in t.view["records"]),
        {"question": TOPIC_QUESTION, "replies": True, "coverage": True},
    ),
    "source_match": (
        0.0,  # equal shares of the first pool, whatever each source's results name
        lambda t: sum(1 for p in t.trace["pool"] if p["round"] == 1 and p["id"][:5] == "team:"),
        {"team_delay": 0.0},
    ),
    "source_names": (
        False,  # the team's notes name no Ada nor March: with the rule they enter last
        lambda t: [r["id"] for r in t.view["records"]],
        {"team_delay": 0.0},
    ),
    "source_speakers": (
        not ReadSettings().source_speakers,  # Cy speaks in the team's, never in Ada's
        lambda t: [r["id"] for r in t.view["records"]],
        {"team_delay": 0.0, "team_plain": True, "question": UNNAMED_QUESTION, "two_lines": True},
    ),
    "session_searches": (
        0 if ReadSettings().session_searches else 3,
        lambda t: [(s["origin"], s.get("session")) for s in t.trace["searches"]],
        {},
    ),
    "session_records": (
        ReadSettings().session_records + 3,
        lambda t: sorted(k for _, k, _ in t.calls),
        {"sessions": True},
    ),
    "session_depth": (
        ReadSettings().session_depth + 30,
        lambda t: sorted(k for _, k, _ in t.calls),
        {"sessions": True},
    ),
    "session_nearness": (
        ReadSettings().session_searches + 3,  # the densest eight, the nearest five searched
        lambda t: [s.get("session") for s in t.trace["searches"] if s["origin"] == "session"],
        {"sessions": True, "instruction": True},
    ),
    "session_places": (
        ReadSettings().experiments.session_places + 10,
        lambda t: sorted(p["id"] for p in t.trace["pool"] if p["round"] == 1),
        {"sessions": True},
    ),
    "session_queries": (
        not ReadSettings().experiments.session_queries,
        lambda t: sorted((s["query"], s.get("session") or 0) for s in t.trace["searches"]),
        {"sessions": True},
    ),
    "spread_sessions": (
        not ReadSettings().experiments.spread_sessions,
        lambda t: [r["id"] for r in t.view["records"]],
        {},
    ),
}


def _trivial(value: Any) -> bool:
    return (
        value is None or value is False or value in ([], "") or (type(value) is int and value == 0)
    )


def test_every_field_has_a_case() -> None:
    tuned = [f.name for f in fields(ReadSettings) if f.name != "experiments"]
    assert sorted(CASES) == sorted([*tuned, *EXPERIMENT_SWITCHES])


def _value(settings: ReadSettings, name: str) -> Any:
    part = settings.experiments if name in EXPERIMENT_SWITCHES else settings
    return getattr(part, name)


def _changed(name: str, value: Any) -> ReadSettings:
    if name in EXPERIMENT_SWITCHES:
        return ReadSettings(experiments=ExperimentSwitches(**{name: value}))
    return replace(ReadSettings(), **{name: value})


@pytest.mark.parametrize("name", sorted(CASES))
def test_changing_the_field_moves_what_it_budgets(name: str, default: Turn) -> None:
    value, observe, options = CASES[name]
    base = run_turn(ReadSettings(), **options) if options else default
    assert _value(ReadSettings(), name) != value
    changed = run_turn(_changed(name, value), **options)
    assert changed.trace["settings"][name] == value, "the turn did not run with the change"
    before, after = observe(base), observe(changed)
    assert not _trivial(before), f"{name}: the default turn gives nothing to move ({before!r})"
    assert before != after, f"{name}: {before!r} in both runs"


def test_the_default_turn_exercises_every_path(default: Turn) -> None:
    t = default.trace
    assert len(t["needs"]) == 2 and len(default.searches("plan")) == 3
    assert default.searches("follow:session")
    assert [s for s in t["searches"] if s["origin"] == "follow"], "no follow over every session"
    assert default.searches("date"), "the message names March 2023"
    assert _neighbours(default), "no neighbour was brought forward"
    assert "left out" in _placement_of_early(default)
    assert _items_judged(default) >= 8
    assert max(k for _, k, _ in default.calls) == LOOKAHEAD * ReadSettings().page_records


def test_the_rrf_constant_reaches_the_judges_rank_feature() -> None:
    from mnemon_langgraph.judges._features import Doc

    row = {"id": "r", "text": "x", "evidence": {"rrf": 0.05, "rrf_k": 20}}
    assert Doc(row, 0).retrieval()[0] == pytest.approx(1.0)
    row["evidence"] = {"rrf": 0.05}  # evidence written before the constant was recorded
    assert Doc(row, 0).retrieval()[0] == pytest.approx(0.05 * RRF_K)


def test_deep_records_bounds_the_records_judged_in_depth_over_every_round(default: Turn) -> None:
    capped = run_turn(replace(ReadSettings(), deep_records=4))
    assert capped.trace["counts"]["rounds"] >= 2  # the cap holds across rounds, not per round
    assert _depth_judged(default) > 4
    assert 1 <= _depth_judged(capped) <= 4
    # the best-screened records of the first round are the ones judged in depth
    screened = {
        j["target"]: j["p"]
        for j in capped.trace["judgments"]
        if j["proposition"] == "screen" and j["round"] == 1 and not j["target"].startswith("x-")
    }
    deep = {
        j["target"]
        for j in capped.trace["judgments"]
        if j["proposition"] not in ("screen", "item_needed") and not j["target"].startswith("x-")
    }
    assert len(screened) > 4 and deep <= set(screened)
    fourth_best = sorted(screened.values(), reverse=True)[3]
    assert min(screened[t] for t in deep) >= fourth_best
