"""A conversation as in-memory records for the read-path tests: one record per turn, in
order, with its role and message id (the journal's positions and seqs)."""

from __future__ import annotations

from collections.abc import Sequence

from mnemon_langgraph.read.memory import make_record
from mnemon_langgraph.types import Namespace, Record, Role


def chat_records(namespace: Namespace, turns: Sequence[tuple[str, Role, str, str]]) -> list[Record]:
    """Records of ``turns`` = ``(record id, role, text, message id)``, at positions 0, 1, …
    of session 1 and written in that order (seq 1, 2, …); the text is ``role: text``."""
    return [
        make_record(
            rid,
            f"{role}: {text}",
            namespace=namespace,
            position=i,
            message_ids=[mid],
            roles=(role,),
            seq=i + 1,
        )
        for i, (rid, role, text, mid) in enumerate(turns)
    ]
