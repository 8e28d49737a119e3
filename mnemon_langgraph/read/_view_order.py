"""How the View orders its candidates beyond System 1's ranking: the optional re-rankers.

Each rule takes the candidates (``(record id, why)`` pairs, best first) and returns them
reordered, reading orders and ``p >= 1/2`` only, so calibration invariance holds:
records a later one replaces (:func:`replaced_stale`) or the agent already sees
(:func:`seen_in_recent`) are found here; the fused search order blended in
(:func:`blend_with_fused`); pieces of one long message spread (:func:`spread_pieces`);
sessions taken one at a time (:func:`spread_sessions`); the assistant's replies ranked lower
(:func:`demote_replies`); questions and opening turns placed before what they lead
(:func:`with_questions`, :func:`with_openings`); the best records' neighbours and the
standing instructions moved up (:func:`arranged`). :func:`~mnemon_langgraph.read.view.compose_view`
applies them in that order.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from langchain_core.messages import BaseMessage

from mnemon_langgraph.read._excerpts import Lead
from mnemon_langgraph.read._packing import packed_span
from mnemon_langgraph.read._questions import is_reply
from mnemon_langgraph.read._rules import Judgment, is_yes
from mnemon_langgraph.read.planner import message_text
from mnemon_langgraph.read.settings import ReadSettings

__all__ = [
    "STRANGER_NOTE",
    "Marks",
    "arranged",
    "blend_with_fused",
    "coverage_first",
    "demote_replies",
    "one_per_session_first",
    "placed_when",
    "replaced_stale",
    "seen_in_recent",
    "spread_pieces",
    "spread_sessions",
    "unnamed_last",
    "with_openings",
    "with_questions",
]

_NEIGHBOUR = "neighbour of one of the View's best records, same session"


def placed_when(rec: Mapping[str, Any]) -> tuple[str, int, int]:
    """Where a record sits in time: (date, session, position); unknown parts sort first."""
    position = rec.get("position")
    pos = position if isinstance(position, int) and not isinstance(position, bool) else -1
    return str(rec.get("date") or ""), int(rec.get("session") or 0), pos


def replaced_stale(
    pool: Sequence[Mapping[str, Any]], judged: Sequence[Judgment], stale: set[str]
) -> set[str]:
    """The records of ``stale`` the View leaves out: those a later record replaces.

    System 1's "no longer current" says that something later changed what a record says,
    not which record; the replacement may be one no search pooled, or one the judge rated
    irrelevant. Leaving the record out then removes what the View knows and shows nothing
    in its place. So a record judged stale is left out only when the pool holds a record
    **later** than it (date, then session, then position) that is itself not stale and is
    judged needed or satisfying a need (``p >= 1/2``, the latest judgment of each): the
    View then holds the current value (or the agent already sees it, for a record of the
    recent messages). The rule reads ``p >= 1/2`` only, so calibration invariance holds.

    Args:
        pool: Pooled records (``id``, ``date``, ``session``, ``position``).
        judged: The turn's judgments of pooled records.
        stale: Records judged no longer current.

    Returns:
        The ids of ``stale`` to leave out.
    """
    latest: dict[tuple[str, str, int | None], float] = {}
    for j in judged:
        if j.proposition in ("needed", "satisfies"):
            latest[(j.target_id, j.proposition, j.need_index)] = j.p
    wanted = {key[0] for key, p in latest.items() if is_yes(p)} - stale
    when = {r["id"]: placed_when(r) for r in pool}
    replacing = [when[rid] for rid in wanted if rid in when]
    if not replacing:
        return set()
    newest = max(replacing)
    return {rid for rid in stale if rid in when and when[rid] < newest}


_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_MIN_PIECE_MATCH = 80
"""A line shorter than a whole message matches it only from this many characters on: the
journal splits a message too long for one record into pieces, and a long piece of the same
speaker's recent message is that message, while a short one ("yes") may be chance."""


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _recent_lines(messages: Sequence[BaseMessage]) -> tuple[set[str], dict[str, list[str]]]:
    """Ids of the recent messages, and their texts by speaker as the journal writes them."""
    ids: set[str] = set()
    texts: dict[str, list[str]] = {}
    for m in messages:
        if m.id:
            ids.add(str(m.id))
        speaker = _normalized(m.name or "") or _ROLE_OF_TYPE.get(m.type, m.type)
        text = _normalized(message_text(m))
        if text:
            texts.setdefault(speaker, []).append(text)
    return ids, texts


def _line_seen(line: str, mid: str | None, ids: set[str], texts: dict[str, list[str]]) -> bool:
    if mid is not None and mid in ids:
        return True
    speaker, sep, piece = line.partition(": ")
    if not sep:
        return False
    speaker, piece = _normalized(speaker), _normalized(piece)
    return any(
        piece == text or (len(piece) >= _MIN_PIECE_MATCH and piece in text)
        for text in texts.get(speaker, ())
    )


def seen_in_recent(pool: Sequence[Mapping[str, Any]], messages: Sequence[BaseMessage]) -> list[str]:
    """Pooled records whose every message is among ``messages`` (what the agent already sees).

    A record's line is one of the recent messages when the message ids match (the journal
    stored the LangChain message's own id), else when speaker and normalized text match
    the way the journal writes a line (``speaker: text``, whitespace collapsed).

    Args:
        pool: Pooled records (``id``, ``text``, ``message_ids`` parallel to the lines).
        messages: The recent messages of the conversation.

    Returns:
        Their ids, in pool order.
    """
    ids, texts = _recent_lines(messages)
    if not ids and not texts:
        return []
    out: list[str] = []
    for rec in pool:
        lines = [ln for ln in str(rec.get("text", "")).split("\n") if ln.strip()]
        mids = list(rec.get("message_ids") or ())
        if lines and all(
            _line_seen(ln, mids[i] if i < len(mids) else None, ids, texts)
            for i, ln in enumerate(lines)
        ):
            out.append(rec["id"])
    return out


def one_per_session_first(ids: Sequence[str], session_of: Mapping[str, Hashable]) -> list[str]:
    """``ids`` reordered so each session's first record comes before any session's second.

    Within a rank (first, second … of its session) the given order stands.
    """
    taken: dict[Hashable, int] = {}
    keyed: list[tuple[int, int, str]] = []
    for pos, rid in enumerate(ids):
        session = session_of.get(rid, -1)
        keyed.append((taken.get(session, 0), pos, rid))
        taken[session] = taken.get(session, 0) + 1
    return [rid for _, _, rid in sorted(keyed)]


def blend_with_fused(
    candidates: Sequence[tuple[str, str]], order: Sequence[str], weight: float, k: int
) -> list[tuple[str, str]]:
    """``candidates`` reordered by a weighted reciprocal rank fusion with the pool's order.

    Each candidate scores ``1/(k + its rank here) + weight/(k + its rank in the pool's fused
    search order)`` (0-based ranks; a record not in ``order`` ranks last), best first; equal
    scores keep the candidates' order. System 1's ranking separates the few records it is
    sure of, but on a long history many candidates sit close together, and the searches'
    own agreement then tells them apart better than the judge's small differences. The rule
    reads both orders only, so calibration invariance holds. ``weight`` 0: unchanged.
    """
    if weight <= 0:
        return list(candidates)
    pool_rank = {rid: i for i, rid in enumerate(order)}
    last = len(pool_rank)
    w = Fraction(weight)  # exact sums: a tie is a tie, not a rounding accident

    def fused(i: int) -> Fraction:
        return Fraction(1, k + i) + w / (k + pool_rank.get(candidates[i][0], last))

    return [candidates[i] for i in sorted(range(len(candidates)), key=lambda i: -fused(i))]


_LATER_PIECE = "a further piece of one long message: after the other candidates"


def spread_pieces(
    candidates: Sequence[tuple[str, str]], pool: Sequence[Mapping[str, Any]], limit: int | None
) -> list[tuple[str, str]]:
    """``candidates`` with the pieces of one long message beyond its first ``limit`` moved last.

    The journal splits a message longer than a record into pieces, one record each (an
    assistant's reply of several thousand characters becomes five or more records). Its
    pieces share the reply's words, so System 1 ranks them together, and on a long history
    a few such replies can fill the View while the turns that answer other parts of the
    question wait behind them. A record holding one message that an earlier candidate
    also holds is that message's next piece; from the ``limit`` + 1-th on, such pieces
    keep their order but go behind every other candidate. Records packing several
    messages are never moved. Order only: calibration invariance holds. ``None``: unchanged.
    """
    if limit is None:
        return list(candidates)
    # a message id is one source's: the same id in another source is another message
    mids = {
        r["id"]: tuple((r.get("read_source"), m) for m in r.get("message_ids") or ()) for r in pool
    }
    seen: dict[tuple[Any, str], int] = {}
    head: list[tuple[str, str]] = []
    tail: list[tuple[str, str]] = []
    for rid, why in candidates:
        held = mids.get(rid, ())
        if len(held) == 1:
            seen[held[0]] = seen.get(held[0], 0) + 1
            if seen[held[0]] > limit:
                tail.append((rid, f"{why}; {_LATER_PIECE}"))
                continue
        head.append((rid, why))
    return head + tail


def spread_sessions(
    candidates: Sequence[tuple[str, str]], session_of: Mapping[str, Hashable], lead: int
) -> list[tuple[str, str]]:
    """``candidates`` after the first ``lead`` taken one per session before any second.

    When the planner names an ``ALL`` need (a count, a list, a total), the answer's
    instances are usually spread over sessions; the records judged to satisfy it already
    enter one per session first (:func:`~mnemon_langgraph.read.view.compose_view`), and
    this does the same for the rest of the ranking, so the budget that remains reaches more
    sessions. Order only.
    """
    head = list(candidates[:lead])
    rest = list(candidates[lead:])
    ids = one_per_session_first([rid for rid, _ in rest], session_of)
    why = dict(rest)
    return head + [(rid, why[rid]) for rid in ids]


_REPLY = "the assistant's words only: ranked as if {factor:g}× lower"


def demote_replies(
    candidates: Sequence[tuple[str, str]], pool: Sequence[Mapping[str, Any]], factor: float
) -> list[tuple[str, str]]:
    """``candidates`` with the records holding only the assistant's words ranked lower.

    A memory is of what the user said: the facts, plans, preferences and instructions of
    the user's own turns. An assistant's reply restates the question and elaborates on it
    at length, so it shares more of a later question's words than the short user turn that
    holds the answer, and System 1 ranks its pieces first; on a long history of such
    exchanges they fill the View. So the candidate at (0-based) place ``i`` competes at
    ``factor · i`` when every line of it is the assistant's (:func:`is_reply`) and at ``i``
    otherwise; equal places keep the candidates' order, and the first candidate stays
    first. Records of people talking to each other (LoCoMo's two speakers are both
    ``user``) or of unknown role never move. Order only: calibration invariance holds.
    ``factor`` 1: unchanged.
    """
    if factor <= 1:
        return list(candidates)
    reply = {r["id"] for r in pool if is_reply(r)}
    note = _REPLY.format(factor=factor)
    placed = sorted(
        range(len(candidates)),
        key=lambda i: (i * factor if candidates[i][0] in reply else i, i),
    )
    return [
        (rid, f"{why}; {note}" if rid in reply else why)
        for rid, why in (candidates[i] for i in placed)
    ]


_UNNAMED = (
    "placed after every other candidate: it names none of the names the turn names, and "
    "its source's pooled records name fewer of them than another source's"
)


STRANGER_NOTE = (
    "placed after every other candidate: a conversation of another source in which someone "
    "speaks whom the journal's pooled records never have speaking"
)
"""Why a record of another party's conversation comes last (``source_speakers``)."""


def unnamed_last(
    candidates: Sequence[tuple[str, str]], unnamed: set[str], note: str = _UNNAMED
) -> list[tuple[str, str]]:
    """``candidates`` with the records of ``unnamed`` after every other, in their order.

    With several read sources, a source about the same things as the user's records but
    not about the user (other people's lives, documents about other people and places)
    has records System 1 rates as likely as the user's own: they speak of what the turn
    asks, only not of whom. ``unnamed`` holds the records that name none of the turn's
    names, from a source whose records name fewer of them than another source's
    (:func:`~mnemon_langgraph.read._source_match.unnamed_records`); they still fill what
    budget the others leave. Order only: calibration invariance holds. Empty ``unnamed``:
    unchanged. ``note`` says why in each moved record's placement.
    """
    if not unnamed:
        return list(candidates)
    first = [(rid, why) for rid, why in candidates if rid not in unnamed]
    last = [(rid, f"{why}; {note}") for rid, why in candidates if rid in unnamed]
    return first + last


def _placed_before(
    candidates: Sequence[tuple[str, str]], lead: Mapping[str, str], note: str
) -> list[tuple[str, str]]:
    """``candidates`` with ``lead[rid]`` right before each ``rid`` (``note`` formatted with
    its rank says why). One already placed earlier stays there; one placed later moves up."""
    if not lead:
        return list(candidates)
    out: list[tuple[str, str]] = []
    placed: set[str] = set()
    for rank, (rid, why) in enumerate(candidates, start=1):
        first = lead.get(rid)
        if first is not None and first not in placed:
            out.append((first, note.format(rank=rank)))
            placed.add(first)
        if rid not in placed:
            out.append((rid, why))
            placed.add(rid)
    return out


_QUESTION = "the user's turn that the reply ranked {rank} answers, placed before it"


def with_questions(
    candidates: Sequence[tuple[str, str]], pool: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """``candidates`` with each reply's question (``question`` on the reply's pool entry,
    set by the compose node: :mod:`mnemon_langgraph.read._questions`) right before it.

    A question already placed earlier stays there; one placed later moves up. Order
    only: the judgments are untouched.
    """
    return _placed_before(
        candidates, {r["id"]: r["question"] for r in pool if r.get("question")}, _QUESTION
    )


_OPENING = "the turn that opens the session of the record ranked {rank}, placed before it"


def with_openings(
    candidates: Sequence[tuple[str, str]], pool: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """``candidates`` with each session's opening turn (``opening`` on the pool entry of
    the session's best record, set by the compose node: :mod:`mnemon_langgraph.read._questions`)
    right before that record, as :func:`with_questions` places a reply's question.
    """
    lead = {r["id"]: r["opening"] for r in pool if r.get("opening")}
    return _placed_before(candidates, lead, _OPENING)


def _lone_message(rec: Mapping[str, Any]) -> str | None:
    """The message a record holds alone (a piece of it, or all of it), else ``None``."""
    held = tuple(rec.get("message_ids") or ())
    return held[0] if len(held) == 1 else None


@dataclass
class Marks:
    """How the arranging rules want some records shown, by record id (read by
    :func:`~mnemon_langgraph.read._view_fill.fill`).

    Attributes:
        sides: A neighbour moved up (:func:`_with_neighbours`) → which end of it an excerpt
            keeps when no line matches the focus: ``start`` for the record just after a
            best record (its reply), ``end`` for the one just before.
        standing: A standing instruction the View leads with (:func:`_standing_first`) →
            the indices of its instruction lines, the only lines shown.
        mentions: A user's mention a coverage View leads with (:func:`coverage_first`) →
            the indices of its user lines, the only lines shown.
    """

    sides: dict[str, Lead] = field(default_factory=dict)
    standing: dict[str, Sequence[int]] = field(default_factory=dict)
    mentions: dict[str, Sequence[int]] = field(default_factory=dict)

    def only(self, rid: str) -> Sequence[int] | None:
        """The only lines of ``rid`` the View shows, or ``None`` (the rules decide)."""
        got = self.standing.get(rid)
        return got if got is not None else self.mentions.get(rid)


def _with_neighbours(
    candidates: Sequence[tuple[str, str]],
    pool: Sequence[Mapping[str, Any]],
    skip: set[str],
    settings: ReadSettings,
    marks: Marks,
) -> list[tuple[str, str]]:
    """``candidates`` with the pooled neighbours of the best ones moved up.

    The records just before and after (same source and session, position ∓ 1) each of
    the first ``settings.view_neighbours`` candidates enter right after the first
    ``settings.neighbours_after`` candidates, ahead of the rest of the ranking: an answer
    often continues in the next turn (a question and its reply, a plan and its date) that
    shares few words with the question, so System 1 scores it low while its neighbour is
    the best record of the turn. Only pooled records move (no store read), never one left
    out as no longer current or already seen. With ``settings.message_pieces`` set, the
    neighbours of a piece of a long message are the records just before and after that
    message (its other pieces are not its neighbours: :func:`spread_pieces` places them).
    The rule reads the candidates' order only,
    so calibration invariance holds. On the dev conversations, leave-one-conversation-out
    cross-validation chose 2 / 3 on every fold (docs/results/misses.md).
    """
    head_n, top_n = settings.neighbours_after, settings.view_neighbours
    if top_n <= 0:
        return list(candidates)
    at = {
        ((r.get("read_source"), r.get("source")), r.get("session"), r["position"]): r["id"]
        for r in pool
        if isinstance(r.get("position"), int)
    }
    where = {rid: key for key, rid in at.items()}
    # a packed record (read._packing) spans several positions: it ends at its last one
    last = {r["id"]: r["position"] + packed_span(r) - 1 for r in pool if r["id"] in where}
    ends = {(*key[:2], last[rid]): rid for key, rid in at.items()}
    lone = {r["id"]: _lone_message(r) for r in pool}
    head = list(candidates[:head_n])
    taken = {rid for rid, _ in head} | skip
    moved: list[tuple[str, str]] = []

    def beside(rid: str, step: int) -> str | None:
        source, session, first = where[rid]
        if step < 0:
            return ends.get((source, session, first - 1))
        return at.get((source, session, last[rid] + 1))

    for rank, (rid, _) in enumerate(candidates[:top_n], start=1):
        if rid not in where:
            continue
        for step, side in ((-1, "before"), (1, "after")):
            other = beside(rid, step)
            if settings.message_pieces is not None:
                # past the record's own message: the turn next to it, not its next piece
                while other is not None and lone[other] and lone[other] == lone[rid]:
                    other = beside(other, step)
            if other is None or other in taken:
                continue
            taken.add(other)
            marks.sides[other] = "end" if side == "before" else "start"
            moved.append((other, f"{_NEIGHBOUR} (just {side} the View's record ranked {rank})"))
    if not moved:
        return list(candidates)
    ids = {rid for rid, _ in moved}
    return head + moved + [c for c in candidates[head_n:] if c[0] not in ids]


_STANDING_WHY = "a standing instruction of the user"


def _standing_first(
    candidates: Sequence[tuple[str, str]],
    pool: Sequence[Mapping[str, Any]],
    skip: set[str],
    settings: ReadSettings,
    marks: Marks,
) -> list[tuple[str, str]]:
    """``candidates`` led by the pooled standing instructions (``read.instructions``).

    The records the instruction search found holding a standing instruction of the user
    (``standing`` in the pool) enter first: with ``ReadSettings.instruction_match``, the one
    whose instruction line is nearest the latest message first (``standing_sim``); else,
    and among equals, best rank first (the best rank any of the turn's searches gave the
    record, so an instruction the other searches also found near the top leads), at most
    ``settings.instruction_records``, each shown as its instruction lines only
    (:func:`~mnemon_langgraph.read._view_fill.fill`): an instruction says how to reply,
    which the turn's needs do not judge.
    """
    limit = settings.instruction_records
    if limit <= 0:
        return list(candidates)
    standing = [r for r in pool if r.get("standing") and r["id"] not in skip]
    # nearest to the message first (``ReadSettings.instruction_match``: a cosine in [-1, 1];
    # a record without one after those), then the best rank any of the turn's searches gave it
    standing.sort(
        key=lambda r: (
            -r.get("standing_sim", -2.0),
            min((rank for _, rank in r.get("found") or []), default=0),
        )
    )
    lead = [(r["id"], f"{_STANDING_WHY} (the instruction search)") for r in standing[:limit]]
    marks.standing.update((r["id"], r["standing"]) for r in standing[:limit])
    ids = {rid for rid, _ in lead}
    return lead + [c for c in candidates if c[0] not in ids]


def arranged(
    candidates: Sequence[tuple[str, str]],
    pool: Sequence[Mapping[str, Any]],
    skip: set[str],
    settings: ReadSettings,
) -> tuple[list[tuple[str, str]], Marks]:
    """Each session's opening turn before its best record and each reply's question before
    it (so an opening turn, a question and its reply read in the order they were said), the
    assistant's replies ranked lower, the best records' neighbours moved up behind them,
    the standing instructions first, and how those records are to be shown."""
    marks = Marks()
    candidates = with_questions(with_openings(candidates, pool), pool)
    candidates = demote_replies(candidates, pool, settings.assistant_rank_factor)
    near = _with_neighbours(candidates, pool, skip, settings, marks)
    return _standing_first(near, pool, skip, settings, marks), marks


_MENTION = "a mention of the topic by the user (coverage question: at most {n} per session)"

MENTION_OVERHEAD = 80
"""Characters a mention is reckoned to cost beyond its lines (its block's header)."""


def coverage_first(
    candidates: Sequence[tuple[str, str]],
    pool: Sequence[Mapping[str, Any]],
    per_session: int,
    room: int,
    marks: Marks,
    rank_of: Mapping[str, int] | None = None,
) -> list[tuple[str, str]]:
    """``candidates`` led by the user's mentions of the topic, for a question about a topic
    across the whole history (``read.topics.is_coverage``).

    Such a question (the order in which the user brought things up, a summary of how a
    project went) needs one mention in each of many sessions, and System 1, which judges
    each record against the whole question, ranks the user's turns below the assistant's
    long replies, so a View of whole records in its ranking holds a few sessions' replies.
    Here the records holding a line of the user's come first, at most ``per_session`` of
    each session (one session's best does not crowd out another's), each shown as its user
    lines only (``marks.mentions``), while their lines and :data:`MENTION_OVERHEAD` each
    fit in ``room`` characters; the rest of the candidates follow in their order (the
    standing instructions the View leads with stay first). Mentions are taken in
    ``rank_of`` order (lowest first; the compose step passes each topic-search record's
    place in its session, so a session's earliest mentions come first), then the records
    ``rank_of`` does not name in the candidates' order (System 1's). Order only:
    calibration invariance holds. ``per_session`` 0: unchanged.
    """
    if per_session <= 0 or room <= 0:
        return list(candidates)
    by_id = {r["id"]: r for r in pool}
    taken: dict[Any, int] = {}
    lead: list[tuple[str, str]] = []
    used = 0
    note = _MENTION.format(n=per_session)
    order = [rid for rid, _ in candidates]
    if rank_of:
        place = {rid: i for i, rid in enumerate(order)}
        order.sort(key=lambda rid: (rid not in rank_of, rank_of.get(rid, 0), place[rid]))
    for rid in order:
        rec = by_id.get(rid)
        if rec is None or rid in marks.standing:
            continue
        roles = list(rec.get("roles") or ())
        lines = str(rec.get("text", "")).split("\n")
        user = [i for i, role in enumerate(roles) if role == "user" and i < len(lines)]
        if not user or len(lines) != len(roles):
            continue
        session = (rec.get("read_source"), rec.get("session"))
        if taken.get(session, 0) >= per_session:
            continue
        size = sum(len(lines[i]) + 1 for i in user) + MENTION_OVERHEAD
        if used + size > room:
            continue
        used += size
        taken[session] = taken.get(session, 0) + 1
        marks.mentions[rid] = user
        lead.append((rid, note))
    if not lead:
        return list(candidates)
    ids = {rid for rid, _ in lead}
    head = [c for c in candidates if c[0] in marks.standing]
    rest = [c for c in candidates if c[0] not in ids and c[0] not in marks.standing]
    return head + lead + rest
