"""Budgets of the read path, each with the paper's value as default (Mnemon §4.3)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, get_args

from mnemon_langgraph.errors import ConfigurationError, warn_deprecated

__all__ = ["EXPERIMENT_SWITCHES", "LOOKAHEAD", "ExperimentSwitches", "FollowScope", "ReadSettings"]

FollowScope = Literal["session", "memory", "both"]


@dataclass(frozen=True, slots=True)
class ExperimentSwitches:
    """What an experiment switches in the read path, not a user: each is off by default
    and its documentation links the measurement in ``docs/results/`` that left it off; they
    stay so that those figures can be reproduced (``--read-setting NAME=VALUE``, or
    ``ReadSettings(experiments=ExperimentSwitches(NAME=VALUE))``).

    Attributes:
        fused_weight: Experiment switch. The View's candidates
            are reordered by a weighted reciprocal rank fusion of System 1's ranking (weight
            1) and the pool's fused search order (this weight), with the pool's ``rrf_k``
            (``view.blend_with_fused``). 0 (the default): System 1's ranking alone; a blend
            tried on the long histories was left off (docs/results/log.md, "The View on
            long histories").
        relative_date_search: Experiment switch. When the
            latest message names no calendar month with its year but names a time relative
            to when it is asked ("last Saturday", "two weeks ago", "in April", "the past
            month"; ``read.dates.relative_date_range``), the first round's date search keeps
            the message to the records dated in that window, placed from
            ``ReadContext.now``. Needs ``now``. Off by default: on the dev sets it changed
            no View's evidence (docs/results/longmemeval.md).
        part_searches: Experiment switch. Most searches of the
            rule planner worded from the coordinated parts of the latest message ("A and B",
            "A or B", "A, B and C"; ``read.planner.question_parts``), so records of each
            part are pooled. 0 (the default) turns it off: on the dev sets the extra records
            were pooled and cut (docs/results/longmemeval.md).
        spread_sessions: Experiment switch. When the planner
            names an ``ALL`` need, the candidates after the ones satisfying it are taken one
            per session before a second of any session (``view.spread_sessions``), as those
            satisfying it already are. Off: it cost LoCoMo and gained nothing on the long
            histories (docs/results/longmemeval.md).
        leave_out_stale: Experiment switch. Leave out of the
            View a record judged no longer current when a later pooled record judged needed
            or satisfying a need may replace it (``view.replaced_stale``). ``False`` (the
            default): the staleness judgment moves no record (the trace's ``placement``
            still notes it): with the offline update detector, leaving them out removed gold
            evidence on LoCoMo and BEAM and helped no question; chosen by cross-validation
            (docs/results/longmemeval.md).
        topic_records: Experiment switch. When the latest message asks about a topic across
            the whole history (the order in which the user brought things up, a summary,
            "across our conversations": ``read.topics.is_coverage``), one more search worded
            from its topic words alone reads ``ReadSettings.topic_depth`` records, and the
            user's records among them, at most this many of each session, join the pool
            outside the fused ranking (``read.topics``); the rule planner also names such a
            question's need ``ALL``. 0 (the default) turns it off: on BEAM's dev
            conversations it pools many more of the gold turns but System 1 ranks them low,
            and no setting raised the View's evidence; chosen off by
            leave-one-conversation-out (docs/results/beam.md, "Topics across the history").
        coverage_records: Experiment switch. When the latest message asks about a topic
            across the whole history (``read.topics.is_coverage``), the records holding a
            line of the user's lead the View, at most this many of each session, each shown
            as its user lines only, within ``ReadSettings.coverage_share`` of the records'
            budget, and the View's blocks are shown earliest first
            (``view.coverage_first``): with ``topic_records`` on, the topic search's records
            earliest in their session first (a session's first turns bring up what it is
            about), then the rest in System 1's order. The rule planner also names such a
            question's need ``ALL``. 0 (the default) turns it off: on BEAM's dev
            conversations it lifts event ordering but not summarization, and stays an
            experiment (docs/results/beam.md, "Coverage Views").
        session_places: Experiment switch. With ``ReadSettings.session_searches``, places
            of the first pool the dense sessions' records are sure of: the planned
            searches' last-chosen records give way to them, up to this many (the pool's
            size unchanged). 0 (the default): the sessions take only the places the
            planned searches leave. Larger values were tried on the 10M-token histories by
            conversation folds and not chosen (docs/results/ten-million.md, "The last
            questions at 10M").
        session_queries: Experiment switch. With ``ReadSettings.session_searches``, each
            dense session is searched with every distinct query of the first round's
            planned searches (the message, its keywords, its names), not the latest
            message alone; the pages fill the first pool session by session, as before.
            ``False`` (the default): the message alone. Tried on the 10M-token histories by
            conversation folds and not chosen (docs/results/ten-million.md, "Dense
            sessions searched with the planned queries, and ordered by nearness").
        session_nearness: Experiment switch. With ``ReadSettings.session_searches``, this
            many sessions are taken by the count of the planned searches' hits (densest
            first) and ordered by the mean cosine of their three records nearest to the
            message (the vectors the source stored; ``read._sessions.session_nearness``)
            before the first ``session_searches`` are searched. 0 (the default, or any
            value not above ``session_searches``): the count's order alone. Tried with
            ``session_queries`` and not chosen (docs/results/ten-million.md, the same
            section).
    """

    fused_weight: float = 0.0
    relative_date_search: bool = False
    part_searches: int = 0
    spread_sessions: bool = False
    leave_out_stale: bool = False
    topic_records: int = 0
    coverage_records: int = 0
    session_places: int = 0
    session_queries: bool = False
    session_nearness: int = 0

    def __post_init__(self) -> None:
        names = ("fused_weight", "part_searches", "topic_records", "coverage_records")
        for name in (*names, "session_places", "session_nearness"):
            if getattr(self, name) < 0:
                raise ConfigurationError(
                    f"ReadSettings.experiments.{name} must be >= 0, got {getattr(self, name)}"
                )


EXPERIMENT_SWITCHES: Mapping[str, object] = MappingProxyType(
    {f.name: f.default for f in fields(ExperimentSwitches)}
)
"""Each field of :class:`ExperimentSwitches` with the value that turns it off (its
default). Every field of :class:`ReadSettings` but ``experiments`` is what a user tunes."""

LOOKAHEAD = 4
"""With ``ReadSettings.skip_pooled``, a search after the first pool reads this many times
its page's records and keeps the first ones not pooled yet (24 for a follow search, 80
for a page of a planned search)."""


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """Every budget of one read-path turn.

    A user tunes these; what an experiment switches is the nested ``experiments``
    (:class:`ExperimentSwitches`, all off by default). The switches' old spellings
    (``ReadSettings(fused_weight=…)``, ``settings.fused_weight``) still work for one
    release, with a ``DeprecationWarning`` (docs/migration.md).

    Attributes:
        max_needs: Needs the planner may name per turn (paper: 3).
        searches_per_plan: Searches the search plan writes, worded as a stored record
            would be (paper: 3). With the HyDE record and the message itself a turn starts
            with five searches.
        page_records: Records per search page (paper: 20).
        page_chars: Characters per search page (paper: 12,000).
        pool_size: Records in the first pool (paper: 48); pages the rules ask for add to it.
        max_rounds: Rounds of judge → act (paper: 3).
        view_records: Most records in the View, or ``None`` (default): no count limit, the
            View's size is ``view_chars`` alone. Set 16 for the paper's View (why the
            default differs: docs/results/misses.md).
        view_chars: Characters of the View's blocks, index included (paper: 12,000).
        max_records_per_call: Records per System 1 call (paper: 40; Jev's batch size).
        recent_messages: Messages of the conversation the planner and System 1 read (paper: 6).
        rrf_k: Reciprocal rank fusion constant of the pool, which fuses the turn's
            searches (paper: 60); the judge's rank feature is scaled by the same ``k``.
            Inside one search, the store fuses its BM25 and dense rankings with its own
            constant (:data:`mnemon_langgraph.search._fusion.RRF_K`).
        nearest_items: Index items nearest the message that System 1 judges (paper: a dozen).
        instructions_share: Share of ``view_chars`` for standing instructions (10%).
        directory_share: Share of ``view_chars`` for the one-line topic directory (5%).
        groups_share: Share of ``view_chars`` for the timelines and value histories judged
            needed (25%). Records get what the index leaves.
        candidates_floor: When fewer than this many pooled records pass the screen, the
            best-screened ones (by order, never by threshold) are judged in depth anyway,
            so a miscalibrated judge still fills the need table (default 16: the paper's View).
        deep_records: Most records judged in depth (needed, satisfies, stale) in one turn,
            over every round, the best-screened first; it bounds ``candidates_floor`` too.
            A budget on System 1's work, which otherwise grows with the memory around the
            pool. ``None``: every record that passes the screen (or is in the floor).
            Default 24, a cost budget rather than a tuned choice: it holds a turn's
            judgments nearly flat from BEAM 100K to ~1M tokens at the cost of a few BEAM
            questions' evidence (docs/results/beam.md, "A budget on judgments").
        planner_timeout_s: Seconds before a System 2 call is abandoned (rule planner then).
        judge_timeout_s: Seconds before a System 1 wave is abandoned (fused order then).
        leave_out_recent: Leave out of the View the records whose every message is among
            the ``recent_messages`` the agent already sees (matched by message id, else by
            speaker and text); the trace's ``placement`` says so for each. ``False`` puts
            them in like any other record.
        follow_positives: New positives of each need that the next round **follows**:
            searches worded from the record (``read.rules.FollowRecord``), so the other
            parts of an answer that spans records are pooled. 0 turns it off (the paper
            has no such step). Default 2 with ``follow_scope="both"``, chosen by
            leave-one-conversation-out cross-validation (docs/results/misses.md).
        follow_scope: Where a followed record's search looks: ``session`` (its own
            session: what was said around it), ``memory`` (every session: the same
            people and things later or earlier) or ``both`` (two searches).
        follow_records: Records each follow search returns (the followed record itself
            is usually the first); such a search is never paged.
        follow_words: Most words of a follow search: the record's longest content words
            the need does not use (``read.planner.record_query``).
        skip_pooled: Once the first pool is built, every later search (a page of a
            planned search, a follow) returns up to its budget of records **not pooled
            yet**, reading up to :data:`LOOKAHEAD` times deeper; records already pooled
            that it passes over only gain provenance. ``False``: a page is its next
            ``page_records`` hits whether pooled or not (the paper's paging). With it (the
            default), each page and follow adds the same number of records to judge however
            large the memory is, so the per-turn work is a function of the budgets alone
            (``mnemon bench scale``). Chosen by cross-validation (docs/results/log.md).
        view_neighbours: The View's best this many records bring their pooled
            neighbours (same session, the records just before and after) forward: an
            answer often continues in the next turn, which shares few words with the
            question, so System 1 ranks it low. 0 turns it off. No store read: only pooled
            records move. Default 2, chosen with ``neighbours_after`` by cross-validation
            (docs/results/misses.md).
        neighbours_after: Those neighbours enter right after this many of the View's
            records, ahead of the rest of the ranking (3: about what a 2,000-character View
            holds, so there they change nothing).
        date_search: When the latest message names a calendar month or day ("on 3 June
            2023", "in November 2022", "2023-08-15"), the first round adds one search
            with the message kept to the records dated in the named months
            (``judges.features.named_date_range``): a question about a date is often
            answered by a record that shares few of its words, and without the date's
            records in the pool the judge's date cue has nothing to lift. ``False``
            turns it off.
        message_pieces: The View's candidates take at most this many pieces of one long
            message (a message the journal split over several records) before every other
            candidate; its further pieces follow the rest (``view.spread_pieces``).
            ``None``: no limit. Default 1, chosen by cross-validation on BEAM and
            LongMemEval (docs/results/longmemeval.md); LoCoMo's turns are never split.
        experiments: What an experiment switches (:class:`ExperimentSwitches`), off by
            default: ``ReadSettings(experiments=ExperimentSwitches(fused_weight=0.5))``.
        excerpt_slots: Under a View budget that holds fewer whole records than this, each
            record after the first ``excerpt_after`` that is longer than
            ``budget / excerpt_slots`` characters shows only its best lines for the turn's
            message and needs, with ``…`` for the lines left out (``read.excerpts``): a
            tight View shows more of System 1's ranking. A budget that holds this many
            records of the longest size (``records.chunking``) is never cut, so the
            default 12,000-character View is not. ``None``: records are always shown
            whole. Default 6, with ``excerpt_after`` 1: chosen by leave-one-conversation-out
            cross-validation over the budgets 1,000 to 12,000 (docs/results/excerpts.md).
        excerpt_after: The View's first records, shown whole whatever ``excerpt_slots``
            says: the record System 1 ranks first holds the answer most often, and a
            record's best lines by their words can miss it.
        instruction_records: Most standing instructions of the user ("always … when I ask
            about …") the View leads with, found each turn by one more search worded as
            such an instruction about the message, outside the fused pool, and shown as
            their instruction lines only (``read.instructions``). 0 turns the search off.
            Default 2, with ``instruction_depth`` 40, ``instruction_match`` and
            ``instruction_floor``: in a long history other standing instructions on the
            same request compete with the user's own, and two lines hold both. Chosen by
            leave-one-conversation-out folds on BEAM (at 100K and 10M tokens) and LoCoMo,
            with LongMemEval's Views kept (docs/results/ten-million.md, "A floor for the
            instruction lines").
        instruction_depth: Records the instruction search reads (``instruction_records``);
            the ones holding a standing instruction join the pool. Default 80 (40 before the
            dense sessions' folds, which chose it with ``session_searches``; its old fixed
            value was 10).
        instruction_match: Order the standing instructions the View leads with by the
            cosine of each one's instruction line with the latest message (the source's
            embedder, a few short lines a turn), not by the instruction search's rank of
            the whole record (``read.instructions.line_similarities``). A source that
            cannot embed, or an embedder error, keeps the search's order. ``False``: the
            search's order. Chosen with ``instruction_records``.
        instruction_floor: With ``instruction_match``, a standing instruction whose line's
            cosine with the latest message is below this is not about the request: it
            neither joins the pool nor leads the View (a line between people that opens
            like an instruction, "Always good to hear!", is far from any question). At 0
            only a line with a negative cosine leaves (a lone line is not checked). Default
            0.1: chosen by leave-one-conversation-out folds over a grid of floors on BEAM
            and LoCoMo, with LongMemEval's Views kept (docs/results/ten-million.md, "The
            floor's value by folds"). A cosine's scale is the embedder's: the value was
            chosen with the bundled MiniLM; an embedder whose unrelated texts sit at higher
            cosines (the E5 family) needs a higher floor for the same effect.
        assistant_rank_factor: A record holding only the assistant's words competes for a
            place in the View as if System 1 had ranked it this many times lower
            (``view.demote_replies``): the memory is of what the user said, and a long reply
            shares more of a question's words than the user's turn that holds the answer.
            Records of people (LoCoMo's two speakers) or of unknown role never move. 1: off.
            Default 6: chosen by cross-validation over BEAM's conversations, LongMemEval's
            question folds and LoCoMo's conversations, with the questions and opening turns
            the View brings (docs/results/replies.md).
        reply_questions: Each reply of the assistant judged in depth brings the user's turn
            it answers into the View, right before it (``read.questions``): the user's words
            are what the reply restates, and they share few of the question's words. Read
            from the pool, else from the journal's records written just before the reply
            (a source that is not a journal: the pool only). ``False`` turns it off.
            Chosen by the same cross-validation (docs/results/replies.md).
        opening_turns: When the planner names an ``ALL`` need (every instance: a count, a
            list, an order), the session of each of this many records System 1 judges most
            needed brings its opening turn into the View, right before the session's best
            record (``read.questions``): on a history of exchanges with an assistant the
            user opens a session with what they want and why, often telling one instance in
            passing, and the follow-ups and replies after it share the question's words.
            Only sessions with an assistant in them (people's greetings open LoCoMo's). Read
            from the pool, else the journal. 0 turns it off. Default 8: chosen by the same
            cross-validation (docs/results/replies.md).
        source_share: With several read sources (``create_read_graph(sources=...)``), the
            places of the first pool each source is sure of: its own best records (by the
            same per-search quota and summed reciprocal rank as the whole pool), up to
            ``source_share * pool_size``; the places left go to every source's records by
            summed reciprocal rank. ``None`` (the default): an equal share,
            ``pool_size // sources``, so one large source cannot crowd the others out, or
            shares by the sources' weights (``source_match``).
            One source: unused.
        source_timeout_s: With several read sources, seconds one source's search may take
            before the read path stops waiting for it: its searches of the turn are marked
            failed in the trace (``source_errors``) and the View is built from the others.
            A source may set its own ``timeout_s`` attribute. One source: unused (there is
            nothing to build the View from without it).
        dense_candidates: With several read sources, a source that ranks by embeddings only
            (``ranks_keywords = False``: a :class:`~mnemon_langgraph.read.sources.RetrieverSource`
            over a vector store) is asked **once** per turn, with the message's own search,
            for this many documents, re-ranked by the words of the turn's planned searches
            (BM25 fused with the retriever's order,
            :func:`~mnemon_langgraph.read._pooling.keyword_rerank`). The source's other
            searches of the turn (the other planned wordings, new and follow searches, later
            pages, the date-bounded search) are served from these candidates, each
            re-ranked by its own words; only its topic search still asks it. ``None``:
            every search asks it, unranked by words.
        dense_searches: How many of the turn's planned searches ask such a source for
            ``dense_candidates`` each (the message's search first); the source's other
            searches of the turn are served from their candidates, fused by rank. Default
            3 (the rule planner's three wordings): chosen over 1 by leave-one-conversation-out
            folds on LoCoMo's dev conversations with half of each history in documents
            (docs/results/documents.md).
        source_match: With several read sources, the first pool's places are shared among
            them by weight instead of equally: a source's weight is ``(coverage / best
            coverage) ** source_match``, its coverage the share of the turn's search terms
            found in the records its first-round searches returned
            (``read._source_match``), so a source whose records do not name what the turn
            names (other people's lives beside the user's journal) cannot halve the pool of
            one whose records do. 0 turns it off (equal shares); with ``source_share`` set,
            unused; one source: unused. Default 2: chosen over equal shares and over weighing
            System 1's scores by the weights as well or alone, by leave-one-conversation-out
            folds on LoCoMo's dev conversations with the other conversations as distractors
            and with half of each history in documents (docs/results/documents.md,
            "Sources on one scale").
        source_names: With several read sources, the records of a source whose pooled
            records name fewer of the turn's names (the capitalised words of its message
            and needs: people, places) than another source's, and that name none of them
            themselves, enter the View after every other candidate
            (``read._source_match.unnamed_records``, ``view.unnamed_last``): other people's
            lives beside a user's journal speak of the same things, and System 1 rates
            them as likely, but they do not name whom the turn asks about. Order only;
            they still fill what budget is left. ``False`` turns it off; one source, or a
            turn that names no name: unused. Chosen on by leave-one-conversation-out folds
            on LoCoMo's dev conversations, the distractor and the split runs together
            (docs/results/documents.md, "Fifth pass").
        source_speakers: With several read sources, a conversation of a source that is not
            a journal (its records of one session, two speakers or more; a session of one
            speaker is a document) in which someone speaks whom none of the
            journal's pooled records has speaking is another party's: its records enter the
            View after every other candidate, look-alikes included
            (``read._source_match.stranger_records``). Names do not tell two people of one
            name apart; who else takes part in the conversation does. Order only; records
            without speakers, one source, no journal among the sources, or a journal whose
            pooled records show fewer than two speakers: unused. Chosen on, with
            ``document_record_chars``, by leave-one-conversation-out folds on LoCoMo's dev
            conversations, the split and the distractor runs together
            (docs/results/documents.md, "Seventh pass").
        document_record_chars: With several read sources, the records a dense-only source
            returns to the turn's asking searches (``dense_candidates``) are packed as the
            journal packs short turns: records of one session and date at consecutive
            positions (a :class:`~mnemon_langgraph.read.sources.RetrieverSource` whose
            documents carry ``title_key`` and ``position_key``, e.g. a conversation kept one
            turn per document) are joined in order into records of at most this many
            characters (``read._packing``), so a reply is searched, judged and shown with
            the turn it answers, as in the journal. Documents without positions, or
            returned without their neighbours, stay as they are, and so do the records of a
            source whose results name fewer of the turn's names than another source's
            (look-alikes: see ``source_names``). ``None`` turns it off;
            unused with one source or with ``dense_candidates=None``. Default 300 (about a
            turn and its reply; the journal's own records are up to 600): chosen over off,
            each with and without ``source_speakers``, by leave-one-conversation-out folds
            on LoCoMo's dev conversations, the split and the distractor runs together,
            among the values that keep the distractor runs within a point of one journal;
            600, which those folds preferred, was left out for what it costs BEAM's split
            (docs/results/documents.md, "Seventh pass").
        session_searches: The first round's dense sessions searched again inside: the
            sessions holding the most distinct records of the planned searches' first
            ``session_depth`` hits (at least two) are each searched once more with the
            latest message, kept to the session, ``session_records`` records each, and
            those records fill the first pool's places the planned searches left, never
            past ``pool_size`` (``read._sessions``): in a long history other people's turns
            share the question's words and push the ones that answer it off the first
            pages, and inside the session they come back to the message ranks its turns
            among few others. 0 turns it off. Default 5, with ``session_records`` 10,
            ``session_depth`` 50 and ``instruction_depth`` 80: chosen by
            leave-one-conversation-out folds on BEAM at 100K and 10M tokens, with LoCoMo's
            and LongMemEval's evidence kept (docs/results/ten-million.md, "Dense sessions
            searched again inside").
        session_records: Records each dense session's search returns
            (``session_searches``). Default 10, chosen with it.
        session_depth: With ``session_searches``, the planned first-round searches read
            this many hits (at least their page; the page is cut from them as before) and
            the dense sessions are counted over all of them: in a long history the first
            pages are too few to show which sessions a question keeps coming back to.
            Default 50, chosen with ``session_searches``.
        topic_depth: Records the topic search reads before its user records are taken per
            session (``experiments.topic_records``).
        coverage_share: Share of the records' budget the user's mentions that lead a
            coverage View may take (``experiments.coverage_records``).
    """

    max_needs: int = 3
    searches_per_plan: int = 3
    page_records: int = 20
    page_chars: int = 12_000
    pool_size: int = 48
    max_rounds: int = 3
    view_records: int | None = None
    view_chars: int = 12_000
    max_records_per_call: int = 40
    recent_messages: int = 6
    rrf_k: int = 60
    nearest_items: int = 12
    instructions_share: float = 0.10
    directory_share: float = 0.05
    groups_share: float = 0.25
    candidates_floor: int = 16
    deep_records: int | None = 24
    planner_timeout_s: float = 60.0
    judge_timeout_s: float = 30.0
    leave_out_recent: bool = True
    follow_positives: int = 2
    follow_scope: FollowScope = "both"
    follow_records: int = 6
    follow_words: int = 16
    skip_pooled: bool = True
    view_neighbours: int = 2
    neighbours_after: int = 3
    date_search: bool = True
    experiments: ExperimentSwitches = field(default_factory=ExperimentSwitches)
    message_pieces: int | None = 1
    excerpt_slots: int | None = 6
    excerpt_after: int = 1
    instruction_records: int = 2
    instruction_depth: int = 80
    instruction_match: bool = True
    instruction_floor: float = 0.1
    assistant_rank_factor: float = 6.0
    reply_questions: bool = True
    opening_turns: int = 8
    source_share: float | None = None
    source_timeout_s: float = 10.0
    dense_candidates: int | None = 100
    dense_searches: int = 3
    source_match: float = 2.0
    source_names: bool = True
    source_speakers: bool = True
    document_record_chars: int | None = 300
    topic_depth: int = 150
    coverage_share: float = 0.5
    session_searches: int = 5
    session_records: int = 10
    session_depth: int = 50

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or value is None:
                continue  # a switch, or a limit left off
            if f.name == "experiments":
                if not isinstance(value, ExperimentSwitches):
                    raise ConfigurationError(
                        f"ReadSettings.experiments must be ExperimentSwitches, got {value!r}"
                    )
                continue
            if f.name == "follow_scope":
                if value not in get_args(FollowScope):
                    raise ConfigurationError(
                        f"ReadSettings.follow_scope must be one of {get_args(FollowScope)}, "
                        f"got {value!r}"
                    )
                continue
            if f.name.endswith("_share"):
                if not 0.0 <= value <= 1.0:
                    raise ConfigurationError(
                        f"ReadSettings.{f.name} must be in [0, 1], got {value}"
                    )
            elif f.name in (
                "candidates_floor",
                "follow_positives",
                "view_neighbours",
                "neighbours_after",
                "excerpt_after",
                "instruction_records",
                "instruction_floor",
                "opening_turns",
                "topic_depth",
                "source_match",
                "session_searches",
            ):
                if value < 0:
                    raise ConfigurationError(f"ReadSettings.{f.name} must be >= 0, got {value}")
            elif f.name == "assistant_rank_factor":
                if value < 1:
                    raise ConfigurationError(
                        f"ReadSettings.assistant_rank_factor must be >= 1, got {value}"
                    )
            elif f.name == "message_pieces":
                if value < 1:
                    raise ConfigurationError(
                        f"ReadSettings.message_pieces must be >= 1 or None, got {value}"
                    )
            elif value <= 0:
                raise ConfigurationError(f"ReadSettings.{f.name} must be positive, got {value}")
        total = self.instructions_share + self.directory_share + self.groups_share
        if total > 1.0:
            raise ConfigurationError(f"index shares add up to {total:.2f} > 1 of the View")

    def to_dict(self) -> dict[str, float | int | bool | str | None]:
        """The settings as a JSON-able dict (recorded in the trace), one level: the
        experiment switches beside the user's fields, under their own names."""
        flat = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "experiments"}
        switches = self.experiments
        return flat | {name: getattr(switches, name) for name in EXPERIMENT_SWITCHES}


def _with_old_switch_names(init: Callable[..., None]) -> Callable[..., None]:
    """``ReadSettings.__init__`` taking the switches' old spellings for one release
    (``ReadSettings(fused_weight=0.5)``: the ``experiments`` part, with a warning)."""

    @functools.wraps(init)
    def __init__(self: ReadSettings, *args: Any, **kwargs: Any) -> None:
        moved = {name: kwargs.pop(name) for name in EXPERIMENT_SWITCHES if name in kwargs}
        if moved:
            warn_deprecated(
                f"ReadSettings({', '.join(f'{n}=…' for n in moved)})",
                "ReadSettings(experiments=ExperimentSwitches(…))",
            )
            base = kwargs.get("experiments") or ExperimentSwitches()
            kwargs["experiments"] = dataclasses.replace(base, **moved)
        init(self, *args, **kwargs)

    __init__.__signature__ = inspect.signature(init)  # type: ignore[attr-defined]
    return __init__


def _old_switch(name: str) -> property:
    def get(self: ReadSettings) -> Any:
        warn_deprecated(f"ReadSettings.{name}", f"ReadSettings.experiments.{name}")
        return getattr(self.experiments, name)

    return property(get, doc=f"Deprecated: ``experiments.{name}``.")


ReadSettings.__init__ = _with_old_switch_names(ReadSettings.__init__)  # type: ignore[method-assign]
for _name in EXPERIMENT_SWITCHES:
    setattr(ReadSettings, _name, _old_switch(_name))
del _name
