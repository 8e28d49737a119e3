"""State and runtime context of the read graph.

The state holds only data (JSON-able dicts, lists and LangChain messages), so any
LangGraph checkpointer can store it; backends (the store, the judge, the planner, the
index) reach the nodes through closures, never through state. The namespace comes from
the runtime context (:class:`ReadContext`) or, as a fallback, from
``config["configurable"]["namespace"]`` / ``["user_id"]``; on a LangGraph server with
authentication, from the authenticated identity (:mod:`~mnemon_langgraph.read.namespaces`).
"""

from __future__ import annotations

import dataclasses
import keyword
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any, Literal, cast

from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.read._rules import Judgment, Need, NeedKind, NeedStatus
from mnemon_langgraph.read._view_types import View
from mnemon_langgraph.read.namespaces import resolve_namespace
from mnemon_langgraph.read.settings import ReadSettings

__all__ = [
    "IndexData",
    "IndexGroup",
    "IndexLine",
    "JudgmentEntry",
    "NeedEntry",
    "PendingAction",
    "PlanEntry",
    "PoolRecord",
    "ReadContext",
    "ReadInput",
    "ReadOutput",
    "ReadState",
    "RecordEvidence",
    "SearchEntry",
    "judgment_entry",
    "judgments_of",
    "needs_of",
    "read_context_schema",
    "recent_messages",
    "resolve_namespace",
    "s1_messages",
    "statuses_of",
]


@dataclass(frozen=True, slots=True)
class ReadContext:
    """Per-invocation context of the read graph (``context=`` of ``invoke``).

    Attributes:
        namespace: Whose memory to read, e.g. ``"ada@example.com"`` or
            ``("users", "ada")``.
        now: When the latest message is asked (defaults to ``as_of`` when only that is
            given, else the wall clock); System 1 sees it, so questions asked after the last
            session are judged against the right day.
        user_id: Whose memory to read when ``namespace`` is not given: ``user_id="ada"``
            reads the namespace ``("users", "ada")``. ``context={"user_id": "ada"}`` works
            too (LangGraph builds this class from the dict).
        as_of: Read the memory as it stood then: only records dated at or before it are
            searched, judged and shown, and the View says the date (``read.as_of``). A
            datetime, a date (the end of that day) or an ISO string; also the
            ``configurable`` key ``as_of``. ``None`` (the default): the whole memory.

    A graph whose namespace is a template (``("org", "{org}", "user", "{user_id}")``) takes
    a context with one field per placeholder: see :func:`read_context_schema`.
    """

    namespace: str | tuple[str, ...] | None = None
    now: datetime | None = None
    user_id: str | int | None = None
    as_of: datetime | date | str | None = None


def read_context_schema(fields: Sequence[str] = ()) -> type[ReadContext]:
    """:class:`ReadContext`, extended by one optional field per name in ``fields``.

    A graph whose namespace template names ``{org}`` declares this as its
    ``context_schema``, so ``context={"org": "acme", "user_id": "ada"}`` is accepted and
    LangGraph Studio's context form shows every field the template needs.

    Args:
        fields: Field names (identifiers) besides ``namespace``, ``now``, ``user_id`` and
            ``as_of``.

    Returns:
        ``ReadContext`` itself when no new field is named, else a frozen subclass.

    Raises:
        ConfigurationError: A name is not an identifier.
    """
    own = {f.name for f in dataclasses.fields(ReadContext)}
    extra = [name for name in dict.fromkeys(fields) if name not in own]
    bad = [name for name in extra if not name.isidentifier() or keyword.iskeyword(name)]
    if bad:
        raise ConfigurationError(f"context fields must be plain identifiers, got {bad}")
    if not extra:
        return ReadContext
    schema = dataclasses.make_dataclass(
        "ReadContext",
        [(name, str | int | None, dataclasses.field(default=None)) for name in extra],
        bases=(ReadContext,),
        frozen=True,
        slots=True,
    )
    schema.__module__ = __name__
    return cast("type[ReadContext]", schema)


class ReadInput(TypedDict):
    """Input of the read graph: the conversation so far (the latest message last)."""

    messages: Annotated[list[AnyMessage], add_messages]


class SearchEntry(TypedDict, total=False):
    """One search of the turn (written by ``plan`` and ``retrieve``)."""

    index: int
    query: str
    origin: str
    next_offset: int
    exhausted: bool
    round: int
    need_index: int  # only for searches the planner wrote for an unmet need, or a follow
    record_id: str  # a follow search: the positive record whose text it searches with
    session: int | None  # a follow search kept to the record's session
    k: int  # records per page when not ``page_records`` (a follow search)
    date_from: str  # a date search: ISO bounds of the days the latest message names
    date_to: str
    read_source: str  # several sources: the source this search asks (read.nodes_sources)
    failed: bool  # several sources: its source failed this turn (not asked again)


class PoolRecord(TypedDict, total=False):
    """A pooled record as plain data (see :mod:`mnemon_langgraph.read._pooling`).

    ``found`` lists ``[search_index, rank]`` for every search page that returned it;
    ``round`` is the round that first pooled it; ``bm25_rank`` / ``dense_rank`` are its
    best 0-based rank in the BM25 / embedding ranking of any search that returned it
    (``None``: that retriever never ranked it). System 1 reads them as retrieval evidence.
    ``roles`` is parallel to the lines of ``text`` (``user``, ``assistant`` …; empty when the
    source did not say). ``standing`` (only on records the instruction search found): the
    indices of its lines that are standing instructions of the user (``read.instructions``);
    ``standing_sim`` (with ``ReadSettings.instruction_match``): the highest cosine of those
    lines with the latest message, which orders the View's lead instructions.
    ``topic_rank`` (only on records the topic search found, ``read.topics``): its 0-based
    rank in that search.
    ``question`` (only set for the View, on a reply judged in depth): the id of the record
    holding the user's turn the reply answers (``read.questions``). ``opening`` (only set
    for the View, on the best of its session among the records judged most needed): the id
    of the record holding the session's opening turn (``read.questions``). ``read_source``
    (only in a read graph of several sources): the name of the source it came from; its
    ``id`` is then qualified by it (``read.sources.binding.qualify_id``). ``source`` is the
    record's ingest label (``Record.origin``), not where the read path found it.
    """

    id: str
    session: int
    date: str | None
    position: int
    speakers: list[str]
    roles: list[str]
    message_ids: list[str]
    text: str
    source: str
    seq: int
    header: str
    found: list[list[int]]
    round: int
    bm25_rank: int | None
    dense_rank: int | None
    standing: list[int]
    standing_sim: float
    topic_rank: int
    question: str
    opening: str
    read_source: str


class RecordEvidence(TypedDict, total=False):
    """Retrieval evidence of one pooled record, sent to System 1 beside its text.

    Computed by the read path from the pool and the journal's *stored* vectors (pooled
    records are never re-embedded): ``sim`` holds the cosine of the record's stored vector
    with the latest message (``latest``), the earlier dialogue (``context``) and each need
    (``needs``, in need order); ``rank`` is its best fused rank over the turn's searches,
    ``rrf`` its summed reciprocal rank ``Σ 1/(k + rank)`` with ``rrf_k`` the ``k`` used
    (``ReadSettings.rrf_k``), ``searches`` how many searches found it, ``bm25`` /
    ``dense`` its best rank in each retriever (``None``: not ranked).
    """

    sim: dict[str, Any]
    rank: int
    rrf: float
    rrf_k: int
    searches: int
    bm25: int | None
    dense: int | None


class JudgmentEntry(TypedDict):
    """One System 1 judgment, as plain data (see :class:`~._rules.Judgment`)."""

    target: str
    proposition: str
    p: float
    need_index: int | None
    round: int


class NeedEntry(TypedDict):
    """A need of the plan and where it stands (see :class:`~._rules.NeedStatus`)."""

    index: int
    text: str
    kind: NeedKind
    state: Literal["open", "met", "dropped"]
    lead_step: int
    positives: list[str]


class PendingAction(TypedDict, total=False):
    """An action ``act`` decided for the next ``retrieve``: ``page``, ``new_search``, ``follow``."""

    kind: str
    need_index: int
    round: int
    reason: str
    executed: bool
    search_index: int
    offset: int
    record_id: str


class PlanEntry(TypedDict):
    """Who planned the turn, and notes on any fallback."""

    planner: str
    notes: list[str]


class IndexLine(TypedDict):
    """An index item as the View shows it."""

    id: str
    kind: str
    text: str
    line: str
    record_ids: list[str]


class IndexGroup(TypedDict):
    """A timeline (events) or value history judged needed, with its members."""

    kind: str
    title: str
    items: list[IndexLine]


class IndexData(TypedDict, total=False):
    """What ``judge_items`` found; empty when the graph has no index."""

    instructions: list[IndexLine]
    topics: list[str]
    groups: list[IndexGroup]
    candidates: list[str]


class ReadState(TypedDict, total=False):
    """Everything one turn decided, as plain data.

    Keys (the input, then exactly those the nodes write):
        messages: The conversation, the graph's input (``add_messages``); the last
            ``recent_messages`` are read, none is written.
        namespace: The resolved namespace, as a list of strings (``plan``).
        now: ISO time the message is asked, or ``""`` (``plan``).
        as_of: ISO bound of an as-of View, or ``""`` (``plan``; ``read.as_of``).
        plan: :class:`PlanEntry` (``plan``).
        searches: :class:`SearchEntry` per search (``plan``, ``retrieve``).
        pool: :class:`PoolRecord` per pooled record, in pool order (``retrieve``).
        judgments: :class:`JudgmentEntry` in the order made (``judge``, ``judge_items``;
            ``operator.add``, reset by ``plan``).
        needs: :class:`NeedEntry` per need (``plan``, ``act``).
        pending: :class:`PendingAction` the next ``retrieve`` runs (``plan``, ``act``).
        rounds: Rounds of ``act`` done (``plan``, ``act``).
        index: :class:`IndexData` (``plan`` resets it, ``judge_items``).
        trace: Append-only trace events (``operator.add``, reset by ``plan``).
        view: The composed :class:`~mnemon_langgraph.read.view.View` (``compose``).
        sources: Each named source's namespace for this run (``plan``; only when the
            graph reads several sources or one that binds to the run:
            :mod:`~mnemon_langgraph.read._nodes_sources`). A source missing from it could
            not be bound (the trace says why).
        fields: The run's fields a source's ``for_run`` sees (``plan``; only when a
            source has ``for_run``).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    namespace: list[str]
    now: str
    as_of: str
    plan: PlanEntry
    searches: list[SearchEntry]
    pool: list[PoolRecord]
    judgments: Annotated[list[JudgmentEntry], operator.add]
    needs: list[NeedEntry]
    pending: list[PendingAction]
    rounds: int
    index: IndexData
    trace: Annotated[list[dict[str, Any]], operator.add]
    # typed (not Any) so that under LANGGRAPH_STRICT_MSGPACK a checkpointer's allowlist,
    # which LangGraph builds from the state's annotations, admits the View on restore
    view: View
    sources: dict[str, list[str]]
    fields: dict[str, str]


class ReadOutput(TypedDict, total=False):
    """Output of the read graph."""

    view: View
    messages: Annotated[list[AnyMessage], add_messages]


# --- accessors: the state's plain data as the rules' types ----------------------------


def judgments_of(state: ReadState) -> list[Judgment]:
    """Every judgment of the turn, in the order made."""
    return [
        Judgment(j["target"], j["proposition"], j["p"], j.get("need_index"), j.get("round", 1))
        for j in state.get("judgments", [])
    ]


def judgment_entry(j: Judgment) -> JudgmentEntry:
    """A judgment as state data."""
    return {
        "target": j.target_id,
        "proposition": j.proposition,
        "p": j.p,
        "need_index": j.need_index,
        "round": j.round,
    }


def needs_of(state: ReadState) -> list[Need]:
    """The planner's needs."""
    return [Need(n["index"], n["text"], n["kind"]) for n in state.get("needs", [])]


def statuses_of(state: ReadState) -> list[NeedStatus]:
    """Where each need stands, in need order."""
    return [
        NeedStatus(n["index"], n["state"], n["lead_step"], tuple(n["positives"]))
        for n in state.get("needs", [])
    ]


def recent_messages(state: ReadState, settings: ReadSettings) -> list[BaseMessage]:
    """The last ``settings.recent_messages`` messages: what the planner and System 1 read."""
    messages: list[BaseMessage] = list(state.get("messages", []))
    return messages[-settings.recent_messages :]


def s1_messages(state: ReadState, settings: ReadSettings) -> list[Any]:
    """The messages System 1 reads: the recent ones, after a date note when ``now`` is known."""
    recent: list[Any] = list(recent_messages(state, settings))
    now = state.get("now")
    if now:
        note = {
            "role": "system",
            "text": f"The latest message is asked on {now[:16].replace('T', ' ')}.",
        }
        return [note, *recent]
    return recent
