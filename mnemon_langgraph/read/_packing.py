"""A dense-only source's short documents read as the journal's records: neighbours packed.

The journal packs short consecutive turns of one session into one record of at most
``record_chars`` (:func:`~mnemon_langgraph.records._chunking.chunk_messages`): a reply
travels with the turn it answers, so a search or a judgment that reads the question's words
in one finds the other. A document source holding one turn per document (a conversation
put into a vector store turn by turn) gives records of one turn each: the reply that holds
an answer ("They look so graceful!") shares no word with the question and is neither
pooled nor judged needed on its own.

A plain retriever cannot read a session, but the documents it returns say where they sit
(:class:`~mnemon_langgraph.read.sources.RetrieverSource`'s ``title_key`` and
``position_key``: one session per title, consecutive positions). With
``ReadSettings.document_record_chars`` the read path packs the records a dense-only source
returned to the turn's asking searches as the journal packs turns: records of one session
and date at consecutive positions, joined in position order while the joined text stays
within the limit. The packing is made once per turn over everything the source returned to
those searches, so every search of the turn served from the source's candidates sees the
same records. Records the source returned alone (no neighbour among its results), or of
documents without positions (placed apart by the adapter), stay as they are; so does any
other source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from mnemon_langgraph.read._pooling import term_counts
from mnemon_langgraph.read.sources.binding import SOURCE_ID_SEPARATOR, split_id
from mnemon_langgraph.records._chunking import stable_hash
from mnemon_langgraph.types import Record, SearchHit

__all__ = ["PACKED_PREFIX", "pack_hits", "pack_records", "packed_span", "sources_naming"]

PACKED_PREFIX = "packed-"
"""Prefix of a packed record's own id, followed by a hash of its records' ids."""

_UNDATED = datetime(1, 1, 1)

_PACKED_ID = re.compile(re.escape(PACKED_PREFIX) + "[0-9a-f]{32}")


def packed_span(entry: Mapping[str, Any]) -> int:
    """How many positions a pool entry spans: a packed record one per record it joined
    (each held one message), any other record one."""
    _, own = split_id(str(entry.get("id", "")))
    if not _PACKED_ID.fullmatch(own):  # packed records exist only beside other sources
        return 1
    return max(1, len(entry.get("message_ids") or ()))


def _runs(records: Iterable[Record]) -> list[list[Record]]:
    """The records of each session, date and origin in runs of consecutive positions (only
    records of one message each: a document or a piece of one)."""
    by_place: dict[tuple[str, int, bool, datetime, int], Record] = {}
    for r in records:
        if len(r.message_ids) != 1:
            continue
        day = r.date or _UNDATED
        by_place.setdefault((r.origin, r.session, r.date is None, day, r.position), r)
    runs: list[list[Record]] = []
    last: tuple[str, int, bool, datetime, int] | None = None
    for key in sorted(by_place):
        if last is not None and key[:4] == last[:4] and key[4] == last[4] + 1:
            runs[-1].append(by_place[key])
        else:
            runs.append([by_place[key]])
        last = key
    return runs


@functools.lru_cache(maxsize=8192)
def _packed(members: tuple[Record, ...]) -> Record:
    """One record of ``members`` (consecutive records of one session), as the journal's;
    kept by its members (a source returns the same documents turn after turn)."""
    if len(members) == 1:
        return members[0]
    first = members[0]
    name, rid = split_id(first.id)
    own = PACKED_PREFIX + stable_hash(*(m.id for m in members))
    speakers = tuple(dict.fromkeys(s for m in members for s in m.speakers))
    return Record(
        id=f"{name}{SOURCE_ID_SEPARATOR}{own}" if rid else own,
        namespace=first.namespace,
        session=first.session,
        date=first.date,
        position=first.position,
        speakers=speakers,
        message_ids=tuple(i for m in members for i in m.message_ids),
        text="\n".join(m.text for m in members),
        origin=first.origin,
        seq=first.seq,
        roles=tuple(role for m in members for role in m.roles),
    )


def pack_records(records: Iterable[Record], max_chars: int) -> dict[str, Record]:
    """Each record's id → the record that holds it once packed.

    Records of one session, date and origin at consecutive positions are joined in position
    order while the joined text (lines joined by a newline) stays within ``max_chars``,
    greedily from the first of each run, as the journal packs a session's turns; a record
    that alone reaches the limit stays alone. Records of different sessions, dates or
    origins are never joined, nor records that already hold several messages (absent from
    the result, like every record left as it is: :func:`pack_hits` keeps them).
    """
    out: dict[str, Record] = {}
    for run in _runs(records):
        group: list[Record] = []
        size = 0
        for r in [*run, None]:
            if r is not None and group and size + 1 + len(r.text) <= max_chars:
                group.append(r)
                size += 1 + len(r.text)
                continue
            if group:
                try:
                    packed = _packed(tuple(group))
                except TypeError:  # a field that cannot be hashed (a list a source put there)
                    packed = _packed.__wrapped__(tuple(group))
                out.update((m.id, packed) for m in group)
            if r is not None:
                group, size = [r], len(r.text)
    return out


def sources_naming(texts: Mapping[str, Iterable[str]], names: Iterable[str]) -> set[str]:
    """The read sources whose ``texts`` (what each returned to the turn) name as many of
    the turn's ``names`` (index terms, :func:`~mnemon_langgraph.read._source_match.named_terms`)
    as any source's do: every source when the turn names no name.

    A source that names fewer of them than another (other people's lives beside the user's
    own records) holds look-alikes the View takes last (``ReadSettings.source_names``);
    packing its records would only give each more of the View, so it is left as it is."""
    wanted = set(names)
    if not wanted:
        return set(texts)
    named = {
        name: {n for text in its for n in wanted.intersection(term_counts(text)[0])}
        for name, its in texts.items()
    }
    best = max((len(v) for v in named.values()), default=0)
    return {name for name, found in named.items() if len(found) == best}


def pack_hits(hits: Sequence[SearchHit], packed: Mapping[str, Record]) -> list[SearchHit]:
    """``hits`` with each record replaced by its packed record, at the place of the first of
    its records in ``hits`` (with that hit's ranks); later hits of the same packed record
    are dropped. A hit whose record is not in ``packed`` is kept as it is."""
    out: list[SearchHit] = []
    seen: set[str] = set()
    for hit in hits:
        record = packed.get(hit.record.id, hit.record)
        if record.id in seen:
            continue
        seen.add(record.id)
        if record is not hit.record or hit.rank != len(out):
            hit = SearchHit(record, len(out), hit.score, hit.bm25_rank, hit.dense_rank)
        out.append(hit)
    return out
