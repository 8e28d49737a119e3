"""Several read sources on one scale: the first pool's places shared by how well each
source's results match the turn (``ReadSettings.source_match``).

System 1 judges each pooled record alone, so a source of *other* people's lives (or any
collection about the same things but not about this user) has records it rates as likely
as the user's own: they speak of the same things, only not of the people, places and
words the turn names. With an equal share of the first pool each, such a source halves the
first pool of the source that does name them, and later rounds page and follow around the
records judged best, often its own.

The rule, general to any sources: a source's **coverage** of the turn is the share of the
turn's search terms (the package's tokenizer over the first round's planned searches:
stemmed, stopwords out) that appear in at least one of the records its first-round searches
returned. Its **weight** is ``(coverage / the best source's coverage) ** power``, and the
first pool's places are shared among the sources in proportion to the weights
(:func:`pool_quotas`; ``read._pooling.build_first_pool``) instead of equally. A source that
names every term the best source names keeps its equal share; with one source, or when
the first round found records in one source only, there are no weights and nothing
changes. System 1's scores are left as they are: weighing them too cost a history split
across two stores (docs/results/documents.md).

The View's side (``ReadSettings.source_names``, :func:`unnamed_records`): what the turn
names (its capitalised words) sets the user's records apart from look-alikes better than
its words at large. A record of a source that names fewer of those names than another
source, and that names none of them itself, enters the View after every other candidate.
With one source, with sources that name the names alike (one person's history split
across two stores), or with a turn that names no name, nothing changes.

Who speaks (``ReadSettings.source_speakers``, :func:`stranger_records`): names do not tell
two people of one name apart (another history's John beside the user's), but a
conversation is also known by who takes part in it. A journal records the user's own
conversations turn by turn, each with its speaker; a conversation kept in another source
(its records of one session, two speakers or more) in which someone speaks whom none of
the journal's pooled records has speaking is another party's conversation, and its
records enter the View after every other candidate, look-alikes included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mnemon_langgraph.read._pooling import term_counts
from mnemon_langgraph.search._text import capitalised_words, terms

__all__ = [
    "named_terms",
    "pool_quotas",
    "source_coverage",
    "source_weights",
    "stranger_records",
    "unnamed_records",
]

_NOT_PLANNED = ("instructions", "topic")
"""Search origins that are not a wording of the turn (the standing-instruction and topic
lanes); follow searches are left out by their ``record_id``."""


def _turn_terms(searches: Iterable[Mapping[str, Any]]) -> set[str]:
    """Terms of the first round's planned searches (every source's copy is the same)."""
    out: set[str] = set()
    for s in searches:
        if s.get("round", 1) != 1 or "record_id" in s:
            continue
        if str(s.get("origin", "")).split("+")[0] in _NOT_PLANNED:
            continue
        out.update(terms(str(s.get("query", ""))))
    return out


def source_coverage(
    searches: Iterable[Mapping[str, Any]], texts: Mapping[str, Iterable[str]]
) -> dict[str, float]:
    """Read source → share of the turn's terms found in ``texts`` (its first round's
    results); empty when the turn has no terms."""
    wanted = _turn_terms(searches)
    if not wanted:
        return {}
    out = {}
    for name, its in texts.items():
        found: set[str] = set()
        for text in its:  # the keys view walks the fewer turn terms, not the text's words
            found.update(term_counts(text)[0].keys() & wanted)
        out[name] = len(found) / len(wanted)
    return out


def source_weights(
    searches: Iterable[Mapping[str, Any]], texts: Mapping[str, Iterable[str]], power: float
) -> dict[str, float]:
    """Read source → its weight for the turn (see the module docstring); empty (every
    weight 1) with fewer than two sources or ``power`` 0."""
    if power <= 0:
        return {}
    coverage = source_coverage(searches, texts)
    best = max(coverage.values(), default=0.0)
    if len(coverage) < 2 or best <= 0:
        return {}
    return {name: (c / best) ** power for name, c in coverage.items()}


def pool_quotas(cap: int, names: Sequence[str], weights: Mapping[str, float]) -> dict[str, int]:
    """Each source's sure places of a first pool of ``cap``, in proportion to its weight
    (a source without one weighs 1); every source keeps at least one place."""
    total = sum(weights.get(n, 1.0) for n in names) or 1.0
    return {n: max(1, int(cap * weights.get(n, 1.0) / total)) for n in names}


def named_terms(texts: Iterable[str]) -> set[str]:
    """The index terms of the names ``texts`` name: their capitalised words (people,
    places, things with a name), through the package's tokenizer."""
    return set(terms(" ".join(w for t in texts for w in capitalised_words(t))))


def unnamed_records(records: Iterable[Mapping[str, Any]], names: Iterable[str]) -> set[str]:
    """The ids of the records that name none of ``names`` (index terms,
    :func:`named_terms`) and belong to a read source whose records name fewer of them than
    another source's records do.

    Other people's lives (or any collection about the same things, not about this user)
    speak of what the turn asks about, but not of the people and places it names, while
    the source that holds the user's own records names them, in its records' text or
    speakers. Such records are the look-alikes the View leaves for last
    (``ReadSettings.source_names``). Every record of a source that names as many of the
    names as the best source stays; with one source, or a turn that names no name,
    nothing is returned.
    """
    wanted = set(names)
    records = list(records)
    if not wanted:
        return set()
    named: dict[str, set[str]] = {}
    own: dict[str, set[str]] = {}
    for r in records:  # the keys view walks the fewer names, not the text's words
        found = term_counts(str(r.get("text", "")))[0].keys() & wanted
        named.setdefault(str(r.get("read_source") or ""), set()).update(found)
        own[r["id"]] = found
    if len(named) < 2:
        return set()
    best = max(len(v) for v in named.values())
    return {
        r["id"]
        for r in records
        if len(named[str(r.get("read_source") or "")]) < best and not own[r["id"]]
    }


def stranger_records(records: Iterable[Mapping[str, Any]], journals: Iterable[str]) -> set[str]:
    """The ids of the records of another party's conversations: records of a read source
    that is not one of ``journals`` (the sources that keep the user's conversations turn
    by turn), in a conversation of theirs (one source's records of one session, in which
    at least two speakers speak) where someone speaks whom no pooled record of a journal
    has speaking.

    A session of one speaker is a document, not a conversation (a retriever's document is
    spoken by its ``speaker_key``, its title or ``"document"``): kept, as are records
    without speakers. Nothing is returned unless the journals' pooled records show a
    conversation too (two speakers or more: who takes part in the user's conversations is
    known only then); one person's history split across two stores has the same speakers
    on both sides and keeps every record.
    """
    journal_names = set(journals)
    records = list(records)
    known: set[str] = set()
    for r in records:
        if str(r.get("read_source") or "") in journal_names:
            known.update(str(s) for s in r.get("speakers") or ())
    if len(known) < 2:
        return set()
    sessions: dict[tuple[str, Any], list[str]] = {}
    speakers: dict[tuple[str, Any], set[str]] = {}
    for r in records:
        source = str(r.get("read_source") or "")
        if source in journal_names:
            continue
        place = (source, r.get("session"))
        sessions.setdefault(place, []).append(r["id"])
        speakers.setdefault(place, set()).update(str(s) for s in r.get("speakers") or ())
    return {
        rid
        for place, ids in sessions.items()
        if len(speakers[place]) >= 2 and speakers[place] - known
        for rid in ids
    }
