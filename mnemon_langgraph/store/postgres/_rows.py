"""SQL shared by the parts of the PostgreSQL store: record rows and search filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.search._bm25 import date_to_epoch
from mnemon_langgraph.types import Namespace, Record, SearchFilters

__all__ = ["NO_DATE", "RECORD_SQL", "filter_sql", "row_to_record"]

NO_DATE = int(np.iinfo(np.int64).min)
RECORD_SQL = (
    "SELECT id, seq, origin, session, date, position, speakers, message_ids, roles, text "
    "FROM mnemon_records"
)


def row_to_record(row: Sequence[Any], ns: Namespace) -> Record:
    """The :class:`Record` of a :data:`RECORD_SQL` row of namespace ``ns``."""
    rid, seq, origin, session, date, position, speakers, mids, roles, text = row
    return Record(
        id=rid,
        namespace=ns,
        session=session,
        date=date,
        position=position,
        speakers=tuple(speakers),
        message_ids=tuple(mids),
        text=text,
        origin=origin,
        seq=seq,
        roles=tuple(roles),
    )


def filter_sql(filters: SearchFilters | None, params: dict[str, Any]) -> str:
    """SQL conditions on ``r`` for ``filters`` (inclusive bounds, as the embedded mask)."""
    if filters is None:
        return ""
    out = []
    if filters.session_from is not None:
        out.append("r.session >= %(s_from)s")
        params["s_from"] = int(filters.session_from)
    if filters.session_to is not None:
        out.append("r.session <= %(s_to)s")
        params["s_to"] = int(filters.session_to)
    if filters.date_from is not None or filters.date_to is not None:
        out.append(f"r.date_epoch <> {NO_DATE}")
        if filters.date_from is not None:
            out.append("r.date_epoch >= %(d_from)s")
            params["d_from"] = date_to_epoch(filters.date_from)
        if filters.date_to is not None:
            out.append("r.date_epoch <= %(d_to)s")
            params["d_to"] = date_to_epoch(filters.date_to)
    return "".join(f" AND {c}" for c in out)
