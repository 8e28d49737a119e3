"""Pure helpers of the ``retrieve`` node: pages and the pool (Mnemon §4.2, "Retrieve").

Records live in the graph's state as plain dicts (see :func:`record_to_dict`), so any
checkpointer can store them. The first pool gives each search an equal quota of its top
results, then fills the remaining slots by the highest summed reciprocal rank; it is
ordered by summed reciprocal rank (the *fused order* the View falls back on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from mnemon_langgraph.search import fusion
from mnemon_langgraph.types import Namespace, Record, SearchHit

__all__ = ["build_first_pool", "dict_to_record", "merge_page", "record_to_dict", "take_page"]


def record_to_dict(record: Record) -> dict[str, Any]:
    """A record as state data (dates as ISO strings)."""
    return {
        "id": record.id,
        "session": record.session,
        "date": record.date.isoformat() if record.date else None,
        "position": record.position,
        "speakers": list(record.speakers),
        "message_ids": list(record.message_ids),
        "text": record.text,
        "source": record.source,
        "seq": record.seq,
        "header": record.header,
    }


def dict_to_record(data: Mapping[str, Any], namespace: Namespace) -> Record:
    """Rebuild a :class:`Record` from :func:`record_to_dict` output."""
    date = data.get("date")
    return Record(
        id=data["id"],
        namespace=namespace,
        session=int(data.get("session") or 0),
        date=datetime.fromisoformat(date) if date else None,
        position=int(data.get("position") or 0),
        speakers=tuple(data.get("speakers") or ()),
        message_ids=tuple(data.get("message_ids") or ()),
        text=data.get("text", ""),
        source=data.get("source", ""),
        seq=int(data.get("seq") or 0),
    )


def take_page(hits: Sequence[SearchHit], max_records: int, max_chars: int) -> list[SearchHit]:
    """The first hits that fit ``max_records`` and ``max_chars`` (at least one hit).

    A positional face of :func:`mnemon_langgraph.search.fusion.take_page`, the one page rule.
    """
    return fusion.take_page(hits, max_records=max_records, max_chars=max_chars)


def build_first_pool(
    pages: Sequence[tuple[int, int, Sequence[SearchHit]]],
    *,
    cap: int,
    rrf_k: int,
) -> list[dict[str, Any]]:
    """Merge the first pages into the pool, as state data.

    The pool rule itself (equal quota per search, then highest summed reciprocal rank) is
    :func:`mnemon_langgraph.search.fusion.build_pool`; this turns its entries into plain dicts
    that any checkpointer can store.

    Args:
        pages: ``(search_index, offset, hits)`` per search.
        cap: Pool size.
        rrf_k: Reciprocal rank constant.

    Returns:
        Pool entries (record dicts plus ``found``: ``[[search, rank], ...]`` and
        ``round``: 1), in fused order (summed reciprocal rank, highest first).
    """
    search_ids = [search for search, _, _ in pages]
    pool = fusion.build_pool([list(hits) for _, _, hits in pages], cap=cap, k=rrf_k)
    return [
        dict(
            record_to_dict(entry.record),
            found=[[search_ids[s], rank] for s, rank in sorted(entry.found_by.items())],
            round=1,
        )
        for entry in pool
    ]


def merge_page(
    pool: Sequence[Mapping[str, Any]],
    search: int,
    offset: int,
    hits: Sequence[SearchHit],
    round_no: int,
) -> tuple[list[dict[str, Any]], int]:
    """Add a later page to the pool: new records appended, provenance updated.

    Returns:
        The new pool and how many records were new.
    """
    out = [dict(p, found=[list(f) for f in p.get("found", [])]) for p in pool]
    index = {p["id"]: i for i, p in enumerate(out)}
    new = 0
    for i, hit in enumerate(hits):
        rid = hit.record.id
        pair = [search, offset + i]
        if rid in index:
            if pair not in out[index[rid]]["found"]:
                out[index[rid]]["found"].append(pair)
            continue
        index[rid] = len(out)
        out.append(dict(record_to_dict(hit.record), found=[pair], round=round_no))
        new += 1
    return out, new
