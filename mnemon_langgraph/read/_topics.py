"""Questions about a topic across the whole history: pool the user's turns of every session.

"Can you list the order in which I brought up different aspects of my app's deployment?"
or "Summarize how my budget tracker project progressed" need **every** mention of a topic
across the conversation, not the one record that answers best. Searched by the question,
the pool is filled by the assistant's long replies, which share the most words with it,
and by the few user turns nearest it; the user's other mentions of the topic, in earlier
or later sessions, are worded in their own terms and never pooled. With
``ReadSettings.topic_records`` set, the read path looks for them:

* :func:`is_coverage` recognises such a question (an order of mentions, a summary, "across
  our conversations", "over time", "progressed"; English);
* one more search, worded from the question's topic words alone (:func:`topic_query`: its
  content words without the words that speak about the conversation itself, "order",
  "brought up", "aspects", "summary", "throughout" …), reads ``ReadSettings.topic_depth``
  records;
* of those, the records holding a line of the user's, at most ``topic_records`` of each
  session (:func:`topic_lane`), join the pool outside the fused ranking (the other
  searches' pool is the same with and without them), so every session of the history
  brings its nearest mentions and System 1 judges them with the rest.

The rule planner also marks such a question's need ``ALL`` (every instance), so its
searches are paged and the sessions of its best records bring their opening turns
(``read.questions``). With ``ReadSettings.experiments.coverage_records`` also set, the
View spends its budget on the mentions rather than on whole records in System 1's
order: the lane's records earliest in each session lead it, a few of each session, as
their user lines only, and the View reads earliest first (``view.coverage_first``).
Nothing is decided when a record is written.

An experiment switch, off by default: on BEAM's dev conversations the lane pools many more
of the gold turns, but System 1, which judges each against the whole question, ranks them
low, and the View's evidence did not rise (docs/results/beam.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemon_langgraph.search._text import STOPWORDS, content_words
from mnemon_langgraph.types import SearchHit

__all__ = ["COVERAGE", "META_WORDS", "is_coverage", "topic_lane", "topic_query"]

COVERAGE = re.compile(
    r"\border\s+in\s+which\b|\bin\s+(?:what|which)\s+order\b|\bsummar(?:y|ies|ize|ise)\b|"
    r"\b(?:throughout|across|over)\s+(?:all\s+)?(?:our|my|the|these)\s+"
    r"(?:conversations|discussions|sessions|chats|talks)\b|"
    r"\bover\s+time\b|\bprogressed\b",
    re.IGNORECASE,
)
"""How a question about a topic across the whole history reads (English)."""

_META_TEXT = (
    "a about across all also an and any approached aspects brought can clear comprehensive "
    "concepts conversation conversations could covered developed different discussed "
    "discussion discussions do during everything far few finally first give handled how "
    "i i've in including items key learned list me mention mentioned months moved my "
    "of once only order our over past progress progressed provide related sequence "
    "session sessions since so summaries summarise summarize summary talked tell the "
    "through throughout time timeline to up various walk we we've what which with would "
    "you your one two three four five six seven eight nine ten eleven twelve"
)
META_WORDS = frozenset(_META_TEXT.split())
"""Words of a coverage question that speak about the conversation, not its topic."""


def is_coverage(text: str) -> bool:
    """Whether ``text`` asks about a topic across the whole history (:data:`COVERAGE`)."""
    return bool(COVERAGE.search(text))


def topic_query(text: str) -> str:
    """The question's topic words: its content words without :data:`META_WORDS` (the
    question itself when nothing is left)."""
    return " ".join(content_words(text, STOPWORDS | META_WORDS)) or text


def topic_lane(hits: Sequence[SearchHit], per_session: int) -> list[SearchHit]:
    """The hits holding a line of the user's, at most ``per_session`` of each session, in
    the search's order."""
    taken: dict[int, int] = {}
    out: list[SearchHit] = []
    for hit in hits:
        if "user" not in hit.record.roles:
            continue
        session = hit.record.session
        if taken.get(session, 0) >= per_session:
            continue
        taken[session] = taken.get(session, 0) + 1
        out.append(hit)
    return out
