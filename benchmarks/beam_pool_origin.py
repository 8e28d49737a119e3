"""Where a concatenated BEAM tier's pooled records come from: the question's own part or another.

Usage: python benchmarks/beam_pool_origin.py BEAM_DIR BASE_RUN RUN_DIR [RUN_DIR ...]

For each run of ``mnemon eval beam --concat`` (default record size), the concatenated
conversation is rebuilt from BEAM_DIR and chunked as the journal chunks it, so every pooled
record id of ``results.jsonl`` maps back to its messages and so to its part. Per tier, over
the warm scored questions: pooled records, those judged in (P >= 1/2), and the share of each
from another part than the question's own; beside them, the same questions' figures in
BASE_RUN (each asked in its own conversation, the 100K tier). Prints a Markdown table.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from mnemon_langgraph.eval.beam import (
    concatenate_conversations,
    find_beam_conversations,
    load_beam_conversation,
)
from mnemon_langgraph.records._chunking import chunk_messages


def part_of_records(root: str, conv_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """Record id → part, and message id → part, of the concatenation ``conv_id``."""
    tier, _, name = conv_id.partition("/")
    loaded = {
        c.id: c for c in (load_beam_conversation(f, t) for t, f in find_beam_conversations(root))
    }
    parts = [loaded[p.replace("-", "/", 1)] for p in name.split("+")]
    cat = concatenate_conversations(parts, tier)
    assert cat.id == conv_id, (cat.id, conv_id)
    part_of_msg: dict[str, str] = {}
    start = 0
    for p in parts:
        for m in cat.messages[start : start + len(p.messages)]:
            part_of_msg[str(m.id)] = p.id
        start += len(p.messages)
    records = chunk_messages(cat.messages, namespace=("beam", tier, name), origin=f"beam:{cat.id}")
    part_of_rec = {r.id: part_of_msg[r.message_ids[0]] for r in records}
    return part_of_rec, part_of_msg


def _key(r: dict) -> tuple:
    return (r.get("origin") or r["conversation"], r["ability"], r["question_index"])


def _judged_in(r: dict) -> list[str]:
    return [rid for rid, p, _ in r.get("pool_scores") or [] if p >= 0.5]


def main(root: str, base_run: str, runs: list[str]) -> None:
    base = {
        _key(r): r
        for r in map(json.loads, (Path(base_run) / "results.jsonl").read_text().splitlines())
    }
    print(
        "| tier | warm scored questions | pooled (median): 100K / here | from another part "
        "| judged in, P >= 1/2 (median): 100K / here | from another part | pool ids matched |"
    )
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        rows = [json.loads(x) for x in (Path(run) / "results.jsonl").read_text().splitlines()]
        rows = [r for r in rows if r.get("scored") and not r.get("first_read")]
        part_of, _ = part_of_records(root, rows[0]["conversation"])
        pooled, other, judged_in, other_in = [], [], [], []
        base_pooled, base_in = [], []
        matched = total = 0
        for r in rows:
            scores = r.get("pool_scores") or []
            total += len(scores)
            known = [(rid, p) for rid, p, _ in scores if rid in part_of]
            matched += len(known)
            pooled.append(len(known))
            other.append(sum(1 for rid, _ in known if part_of[rid] != r["origin"]))
            yes = [rid for rid, p in known if p >= 0.5]
            judged_in.append(len(yes))
            other_in.append(sum(1 for rid in yes if part_of[rid] != r["origin"]))
            b = base.get(_key(r))
            if b is not None:
                base_pooled.append(len(b.get("pool_scores") or []))
                base_in.append(len(_judged_in(b)))
        print(
            f"| {rows[0]['tier']} | {len(rows)} | {statistics.median(base_pooled):.0f} / "
            f"{statistics.median(pooled):.0f} | {sum(other) / max(1, sum(pooled)):.0%} | "
            f"{statistics.median(base_in):.0f} / {statistics.median(judged_in):.0f} | "
            f"{sum(other_in) / max(1, sum(judged_in)):.0%} | {matched}/{total} |"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
