"""The pool, in one place: pages, the first pool and later pages (Mnemon §4.2, "Retrieve").

Records live in the graph's state as plain dicts (see :func:`record_to_dict`), so any
checkpointer can store them. The first pool gives each search an equal quota of its top
results, then fills the remaining slots by the highest summed reciprocal rank; it is
ordered by summed reciprocal rank (the *fused order* the View falls back on).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Container, Hashable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from mnemon_langgraph.read._sessions import interleave
from mnemon_langgraph.read.state import PoolRecord
from mnemon_langgraph.search._formula import BM25_B, BM25_K1, idf
from mnemon_langgraph.search._fusion import RRF_K, reciprocal_rank, rrf_fuse
from mnemon_langgraph.search._text import terms
from mnemon_langgraph.types import Namespace, Record, Role, SearchHit

__all__ = [
    "Candidates",
    "build_first_pool",
    "dict_to_record",
    "fused_keys",
    "keyword_order",
    "keyword_rerank",
    "merge_page",
    "merge_pages",
    "record_to_dict",
    "take_page",
    "term_counts",
]


def record_to_dict(record: Record) -> PoolRecord:
    """A record as state data (dates as ISO strings).

    A turn turns the same records into state data many times (every dense-only candidate
    of each asking search, pool entries, pages), so the parts made from the record's
    fields (its date as text, its header) are kept by the record's value; every call
    returns new data (its own dict and lists). Kept by the record object first: a source
    that keeps its records (a document source) hands the same objects to every turn, found
    without hashing and comparing every field."""
    got = _DATA_BY_OBJECT.get(id(record))
    if got is not None and got[0] is record:
        data = dict(got[1])
    else:
        try:
            kept = _record_data(record)
        except TypeError:  # a field that cannot be hashed (a list a source put there)
            data = _record_data.__wrapped__(record)
        else:
            if len(_DATA_BY_OBJECT) >= _KEPT_OBJECTS:
                _DATA_BY_OBJECT.clear()  # bounded; the data stays kept by the record's value
            # the entry holds the record itself, so its id names no other object while kept
            _DATA_BY_OBJECT[id(record)] = (record, kept)
            data = dict(kept)
    data["speakers"] = list(record.speakers)
    data["roles"] = list(record.roles)
    data["message_ids"] = list(record.message_ids)
    return cast(PoolRecord, data)


_KEPT_OBJECTS = 8192
_DATA_BY_OBJECT: dict[int, tuple[Record, dict[str, Any]]] = {}


@functools.lru_cache(maxsize=8192, typed=True)
def _record_data(record: Record) -> dict[str, Any]:
    """:func:`record_to_dict`'s data of one record, its lists left to the caller (kept:
    never changed, every caller copies it)."""
    return {
        "id": record.id,
        "session": record.session,
        "date": record.date.isoformat() if record.date else None,
        "position": record.position,
        "speakers": None,
        "roles": None,
        "message_ids": None,
        "text": record.text,
        "source": record.origin,
        "seq": record.seq,
        "header": record.header,
    }


def dict_to_record(data: Mapping[str, Any], namespace: Namespace) -> Record:
    """Rebuild a :class:`Record` from :func:`record_to_dict` output.

    The same entry is rebuilt many times in a turn (every page served from a dense-only
    source's candidates, every wave's targets), so records are kept by everything they are
    built from (a record is immutable: a kept one is the one a rebuild would give)."""
    get = data.get
    return _record(
        tuple(namespace),
        data["id"],
        get("session"),
        get("date"),
        get("position"),
        tuple(get("speakers") or ()),
        tuple(get("message_ids") or ()),
        tuple(get("roles") or ()),
        get("text", ""),
        get("source", ""),
        get("seq"),
    )


@functools.lru_cache(maxsize=8192)
def _record(
    namespace: Namespace,
    rid: str,
    session: Any,
    date: str | None,
    position: Any,
    speakers: tuple[str, ...],
    message_ids: tuple[str, ...],
    roles: tuple[str, ...],
    text: str,
    origin: str,
    seq: Any,
) -> Record:
    """:func:`dict_to_record`'s record from the entry's fields."""
    return Record(
        id=rid,
        namespace=namespace,
        session=int(session or 0),
        date=datetime.fromisoformat(date) if date else None,
        position=int(position or 0),
        speakers=speakers,
        message_ids=message_ids,
        roles=cast(tuple[Role, ...], roles),
        text=text,
        origin=origin,
        seq=int(seq or 0),
    )


def _rendered(hit: SearchHit) -> str:
    return hit.record.render()


def take_page(
    hits: Sequence[SearchHit],
    *,
    max_records: int = 20,
    max_chars: int = 12_000,
    render: Callable[[SearchHit], str] = _rendered,
    pooled: Container[str] = (),
) -> list[SearchHit]:
    """The leading hits that fit a page: ``max_records`` or ``max_chars``, whichever first.

    Characters are counted over ``render(hit)`` (the record with its header). The first hit
    is always taken, even if it alone is longer than ``max_chars``, so a page is never
    empty while hits remain (paper §4.2: 20 records or 12,000 characters).

    Hits whose record id is in ``pooled`` are kept in the prefix (so their provenance and
    rank positions stay right) but count toward neither limit: a page then holds up to
    ``max_records`` records the turn has not pooled yet, however many pooled ones it
    passes over (``ReadSettings.skip_pooled``).

    Args:
        hits: Hits in ranking order.
        max_records: Most new records on a page (paper: 20).
        max_chars: Most characters of new records' rendered text (paper: 12,000).
        render: How a hit is shown (default ``hit.record.render()``).
        pooled: Ids of records already pooled (default none: every hit counts).

    Returns:
        A prefix of ``hits`` (empty only when ``hits`` is).
    """
    page: list[SearchHit] = []
    taken = used = 0
    for hit in hits:
        if hit.record.id in pooled:
            page.append(hit)
            continue
        if taken >= max(1, max_records):
            break
        size = len(render(hit))
        if taken and used + size > max_chars:
            break
        page.append(hit)
        taken += 1
        used += size
    return page


@functools.lru_cache(maxsize=8192)
def term_counts(text: str) -> tuple[dict[str, int], int]:
    """A candidate's BM25 term counts and length: one turn's candidates are re-ranked by
    several searches (and scored for their source's coverage), so each text is tokenized
    and counted once."""
    words = terms(text)
    return Counter(words), len(words)


def keyword_rerank(hits: Sequence[SearchHit], query: str, rrf_k: int = RRF_K) -> list[SearchHit]:
    """A dense-only source's candidates re-ranked by the query's words as well.

    A retriever that ranks by embeddings only (a vector store) misses a record that shares
    the question's rare words (a name, a place) rather than its gist; the journal's hybrid
    search would find it by BM25. Here the candidates are scored by BM25 (the package's
    formula and tokenizer, :mod:`~mnemon_langgraph.search._formula`, with the candidates as
    the collection: their count, document frequencies and mean length) and that ranking is
    fused with the retriever's own order by reciprocal rank fusion, as the journal fuses
    its two retrievers. Candidates that share no query word keep their dense rank only.

    Returns:
        The hits in the fused order, ``rank`` and ``score`` the fused ones, ``dense_rank``
        the retriever's order and ``bm25_rank`` the keyword rank (``None``: no word shared).
    """
    return [
        SearchHit(hits[i].record, rank, score, kr, i)  # bm25_rank, dense_rank
        for rank, (i, score, kr) in enumerate(
            keyword_order([h.record.text for h in hits], query, rrf_k)
        )
    ]


class Candidates:
    """Candidates' texts as a BM25 collection: each one's term counts and length, and their
    mean length. Made once for candidates that several queries re-rank (the union of a
    dense-only source's candidates, re-ranked by each search served from it)."""

    __slots__ = ("avgdl", "docs")

    def __init__(self, texts: Sequence[str]) -> None:
        self.docs = [term_counts(t) for t in texts]
        n = len(self.docs)
        self.avgdl = (sum(length for _, length in self.docs) / n or 1.0) if n else 1.0


def keyword_order(
    texts: Sequence[str] | Candidates, query: str, rrf_k: int = RRF_K
) -> list[tuple[int, float, int | None]]:
    """:func:`keyword_rerank`'s order of ``texts`` (given in the retriever's order, or as
    :class:`Candidates`): ``(index, fused score, keyword rank or None)``, best first; ties
    as :func:`~mnemon_langgraph.search._fusion.rrf_fuse` breaks them (best single rank, then
    the retriever's order)."""
    collection = texts if isinstance(texts, Candidates) else Candidates(texts)
    docs, avgdl = collection.docs, collection.avgdl
    n = len(docs)
    if not n:
        return []
    query_terms = _query_terms(query)
    # most candidates share no query word: each one's shared words by one set intersection,
    # then summed in the query words' own order (the same floats as term by term)
    place = {t: j for j, t in enumerate(query_terms)}
    df = dict.fromkeys(query_terms, 0)
    sharing: list[tuple[int, list[str]]] = []  # the candidates that share a query word
    for i, (counts, _) in enumerate(docs):
        # a keys view checks the fewer query words against the candidate's counts (a set's
        # isdisjoint would walk every word of the candidate)
        if counts.keys().isdisjoint(query_terms):
            continue
        words = sorted(counts.keys() & query_terms, key=place.__getitem__)
        for t in words:
            df[t] += 1
        sharing.append((i, words))
    weight = {t: idf(n, df[t]) for t in query_terms}
    scores: dict[int, float] = {}  # the others score 0: never keyword-ranked
    for i, words in sharing:
        counts, length = docs[i]
        score = 0.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)
        for t in words:
            tf = counts[t]
            score += weight[t] * tf / (tf + norm)
        scores[i] = score
    keyword = sorted((i for i in scores if scores[i] > 0), key=lambda i: (-scores[i], i))
    return _fuse_with_order(n, keyword, rrf_k)


@functools.lru_cache(maxsize=1024)
def _query_terms(query: str) -> set[str]:
    """A re-ranking query's set of terms (read only: the same set, so the same order, as
    ``set(terms(query))`` gives); a turn re-ranks by the same searches' words each round."""
    return set(terms(query))


def _fuse_with_order(
    n: int, keyword: Sequence[int], rrf_k: int
) -> list[tuple[int, float, int | None]]:
    """``rrf_fuse([range(n), keyword], rrf_k)`` as ``(index, score, keyword rank)``: the same
    scores (the same float sums, in the same order) and the same ties (best single rank,
    then the retriever's order, which is every index's first appearance). Written out
    because the general fusion's bookkeeping (a rank slot per ranking and item, a
    first-appearance map) cost more than the BM25 scoring on every re-ranking of a
    dense-only source's candidates."""
    rank_of: list[int | None] = [None] * n
    for r, i in enumerate(keyword):
        rank_of[i] = r
    # the keyword-ranked candidates in order (score descending, best rank, first seen) ...
    lead = sorted(
        (-(1.0 / (rrf_k + i) + 1.0 / (rrf_k + r)), r if r < i else i, i, r)
        for r, i in enumerate(keyword)
    )
    # ... merged into the others, already in that order: (-1 / (k + i), i, i) rises with i
    out: list[tuple[int, float, int | None]] = []
    j, m = 0, len(lead)
    for i in range(n):
        if rank_of[i] is not None:
            continue
        score = 1.0 / (rrf_k + i)  # reciprocal_rank(i, rrf_k)
        while j < m and lead[j] < (-score, i, i):
            neg, _, at, r = lead[j]
            out.append((at, -neg, r))
            j += 1
        out.append((i, score, None))
    out.extend((at, -neg, r) for neg, _, at, r in lead[j:])
    return out


def fused_keys(rankings: Sequence[Sequence[Hashable]], rrf_k: int = RRF_K) -> list[Hashable]:
    """The keys of ``rrf_fuse(rankings, rrf_k)`` in its order (the union of a dense-only
    source's candidates, fused once per round)."""
    return [f.key for f in rrf_fuse(rankings, rrf_k)]


def _best(a: int | None, b: int | None) -> int | None:
    """The better (smaller) of two optional ranks."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def _retriever_ranks(pages: Sequence[Sequence[SearchHit]]) -> dict[str, tuple[int | None, ...]]:
    """Record id → its best BM25 and best dense rank over every hit that returned it."""
    best: dict[str, tuple[int | None, ...]] = {}
    for page in pages:
        for hit in page:
            old = best.get(hit.record.id, (None, None))
            best[hit.record.id] = (_best(old[0], hit.bm25_rank), _best(old[1], hit.dense_rank))
    return best


def _found_by(pages: Sequence[Sequence[SearchHit]]) -> dict[str, dict[int, int]]:
    """Record id → {page position → best rank in that page}, in first-seen order."""
    found: dict[str, dict[int, int]] = {}
    for s, page in enumerate(pages):
        for hit in page:
            ranks = found.setdefault(hit.record.id, {})
            if s not in ranks or hit.rank < ranks[s]:
                ranks[s] = hit.rank
    return found


def _quota_then_fused(
    pages: Sequence[Sequence[SearchHit]],
    found: Mapping[str, Mapping[int, int]],
    score: Mapping[str, float],
    cap: int,
    chosen: dict[str, int] | None = None,
) -> dict[str, int]:
    """Record id → selection order: each search's quota first, then summed reciprocal rank
    (after the records already ``chosen``, which count toward ``cap``)."""
    chosen = {} if chosen is None else chosen
    quota = cap // len(pages)
    for page in pages:
        added = 0
        for hit in page:
            if added >= quota or len(chosen) >= cap:
                break
            if hit.record.id not in chosen:
                chosen[hit.record.id] = len(chosen)
                added += 1
    if len(chosen) < cap:
        first_seen = {rid: i for i, rid in enumerate(found)}
        rest = sorted(
            (rid for rid in found if rid not in chosen),
            key=lambda rid: (-score[rid], min(found[rid].values()), first_seen[rid]),
        )
        for rid in rest[: cap - len(chosen)]:
            chosen[rid] = len(chosen)
    return chosen


def _per_source(
    hits: Sequence[Sequence[SearchHit]],
    sources: Sequence[str],
    found: Mapping[str, Mapping[int, int]],
    score: Mapping[str, float],
    quota: int | Mapping[str, int],
    cap: int,
) -> dict[str, int]:
    """Each source's own first pool of at most ``quota`` records (one for all, or by source;
    its searches' quotas, then its summed reciprocal rank), in the sources' order, never
    past ``cap`` in all."""
    chosen: dict[str, int] = {}
    for name in dict.fromkeys(sources):
        mine = [s for s, src in enumerate(sources) if src == name]
        own_found = {
            rid: {s: r for s, r in ranks.items() if s in mine}
            for rid, ranks in found.items()
            if any(s in mine for s in ranks)
        }
        take = min(quota if isinstance(quota, int) else quota[name], cap - len(chosen))
        if take <= 0 or not own_found:
            continue
        # positions of the source's own pages, so its searches' quotas are its own
        own_pages = [hits[s] for s in mine]
        local = {
            rid: {mine.index(s): r for s, r in ranks.items()} for rid, ranks in own_found.items()
        }
        for rid in _quota_then_fused(own_pages, local, score, take):
            chosen.setdefault(rid, len(chosen))
    return chosen


def build_first_pool(
    pages: Sequence[tuple[int, int, Sequence[SearchHit]]],
    *,
    cap: int,
    rrf_k: int = RRF_K,
    sources: Sequence[str] | None = None,
    source_share: float | None = None,
    source_quotas: Mapping[str, int] | None = None,
    fill: Sequence[tuple[int, int, Sequence[SearchHit]]] = (),
    fill_places: int = 0,
) -> list[PoolRecord]:
    """Merge the first pages of the turn's searches into a pool of at most ``cap`` records.

    1. Quota: each search in turn (in the given order) adds its top results that are not in
       the pool yet, until it has added ``cap // len(pages)`` records or its page is spent.
    2. The remaining slots go to the other records by highest summed reciprocal rank
       ``Σ 1 / (k + rank)`` across the searches that found them (``rank`` = ``hit.rank``).

    The quota keeps one strong search from filling the pool alone; the fused order is
    what the View falls back on when System 1 gives no judgment.

    With ``sources`` (the read source of each page, for a read graph of several sources),
    each source first gets its own first pool of up to ``source_share * cap`` records
    (``None``: ``cap // sources``) by the two steps above over its own pages, so one large
    source cannot crowd the others out; the places left are filled as above from all pages.

    Args:
        pages: ``(search_index, offset, hits)`` per search.
        cap: Pool size (paper: 48).
        rrf_k: Reciprocal rank constant (paper: 60).
        sources: The read source of each page (same order as ``pages``), or ``None``.
        source_share: Share of ``cap`` each source is sure of (``None``: an equal share).
        source_quotas: Places each source is sure of, by name (``source_share`` then
            unused; ``read._source_match.pool_quotas``).
        fill: Pages that fill the places ``pages`` leave (``read._sessions``: the dense
            sessions' searches): each page's first record, then each one's second …, up to
            ``cap``; a record they find joins the pool's order and provenance as any other.
        fill_places: Places ``fill`` is sure of (``ReadSettings.session_places``): the
            last-chosen records of ``pages`` give way to its first ones, up to this many.

    Returns:
        Pool entries (record dicts plus ``found``: ``[[search, rank], ...]`` and
        ``round``: 1) by summed reciprocal rank, then best rank, then selection order.
    """
    hits = [list(page) for _, _, page in pages]
    found = _found_by(hits)
    if cap <= 0 or not (found or any(page for _, _, page in fill)):
        return []
    score = _summed(found, rrf_k)
    chosen: dict[str, int] | None = None
    if sources is not None and len(set(sources)) > 1:
        n = len(set(sources))
        quota: int | Mapping[str, int] = cap // n
        if source_share is not None:
            quota = int(source_share * cap)
        if source_quotas is not None:
            quota = {name: source_quotas.get(name, 0) for name in sources}
        chosen = _per_source(hits, list(sources), found, score, quota, cap)
    chosen = _quota_then_fused(hits, found, score, cap, chosen) if found else {}
    if fill:
        hits, pages = _filled(chosen, hits, pages, fill, cap, fill_places)
        found = _found_by(hits)
        score = _summed(found, rrf_k)
    first: dict[str, Record] = {}  # the record as the first page that found it holds it
    for page in hits:
        for hit in page:
            first.setdefault(hit.record.id, hit.record)
    ordered = sorted(chosen, key=lambda rid: (-score[rid], min(found[rid].values()), chosen[rid]))
    search_ids = [search for search, _, _ in pages]
    best = _retriever_ranks(hits)
    return [
        PoolRecord(
            **record_to_dict(first[rid]),
            found=[[search_ids[s], rank] for s, rank in sorted(found[rid].items())],
            round=1,
            bm25_rank=best[rid][0],
            dense_rank=best[rid][1],
        )
        for rid in ordered
    ]


def _filled(
    chosen: dict[str, int],
    hits: list[list[SearchHit]],
    pages: Sequence[tuple[int, int, Sequence[SearchHit]]],
    fill: Sequence[tuple[int, int, Sequence[SearchHit]]],
    cap: int,
    places: int = 0,
) -> tuple[list[list[SearchHit]], list[tuple[int, int, Sequence[SearchHit]]]]:
    """:func:`build_first_pool`'s ``fill``: its records take the places left in ``chosen``
    (updated), and at least ``places`` of them (those ``chosen`` holds last give way, and
    take back what the fill leaves); the hits and pages with the fill's after them."""
    extra = [list(page) for _, _, page in fill]
    order = list(chosen)
    sure = interleave(extra, set(order), min(max(0, places), cap))  # new to the pool
    keep = order[: max(0, min(len(order), cap - len(sure)))]
    chosen.clear()
    for rid in [*keep, *sure]:
        chosen[rid] = len(chosen)
    for rid in interleave(extra, set(chosen), cap - len(chosen)):
        chosen[rid] = len(chosen)
    for rid in order[len(keep) :]:  # given way, where the fill could not use the place
        if len(chosen) >= cap:
            break
        chosen.setdefault(rid, len(chosen))
    return hits + extra, [*pages, *fill]


def _summed(found: Mapping[str, Mapping[int, int]], rrf_k: int) -> dict[str, float]:
    """Record id → its summed reciprocal rank over the searches that found it."""
    return {
        rid: sum(reciprocal_rank(r, rrf_k) for r in ranks.values()) for rid, ranks in found.items()
    }


def merge_page(
    pool: Sequence[PoolRecord],
    search: int,
    offset: int,
    hits: Sequence[SearchHit],
    round_no: int,
) -> tuple[list[PoolRecord], int]:
    """Add a later page to the pool: new records appended, provenance updated.

    Returns:
        The new pool and how many records were new.
    """
    return merge_pages(pool, [(search, offset, hits)], round_no)


def merge_pages(
    pool: Sequence[PoolRecord],
    pages: Sequence[tuple[int, int, Sequence[SearchHit]]],
    round_no: int,
) -> tuple[list[PoolRecord], int]:
    """Add a round's later pages (``(search, offset, hits)``, in order) to the pool, as
    :func:`merge_page` one after another would, copying the pool once for the round.

    Returns:
        The new pool (the input pool is not changed) and how many records were new.
    """
    out: list[PoolRecord] = [
        cast(PoolRecord, {**p, "found": [list(f) for f in p.get("found", [])]}) for p in pool
    ]
    index = {p["id"]: i for i, p in enumerate(out)}
    new = 0
    for search, offset, hits in pages:
        for i, hit in enumerate(hits):
            rid = hit.record.id
            pair = [search, offset + i]
            if rid in index:
                entry = out[index[rid]]
                if pair not in entry["found"]:
                    entry["found"].append(pair)
                entry["bm25_rank"] = _best(entry.get("bm25_rank"), hit.bm25_rank)
                entry["dense_rank"] = _best(entry.get("dense_rank"), hit.dense_rank)
                continue
            index[rid] = len(out)
            out.append(
                PoolRecord(
                    **record_to_dict(hit.record),
                    found=[pair],
                    round=round_no,
                    bm25_rank=hit.bm25_rank,
                    dense_rank=hit.dense_rank,
                )
            )
            new += 1
    return out, new
