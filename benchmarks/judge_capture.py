"""Capture every System 1 call of a read run, to replay candidate local judges (judge.md).

Runs the default read graph (offline defaults: MiniLM, rule planner, local judge) over
LoCoMo-format files with a fresh store — or over LongMemEval questions already ingested in a
journal that ``mnemon eval longmemeval FILE --store JOURNAL --keep-namespaces`` filled — and
keeps, per scored question:

* each System 1 call's state (what every backend receives: messages, needs, records with
  their retrieval evidence, the memory's word counts), its question ids and which record,
  proposition and need each id stands for;
* the inputs of the question's ``compose_view`` (pool, judgments, keyword arguments);
* the gold message ids (for scoring only; nothing reaches the memory).

``judge_replay.py`` answers the same calls with a candidate judge, puts its p in place of
the shipped judge's and composes the View again. Pools stay those of the capture run (the
read loop's later rounds depend on the judgments, so the replay approximates a run with the
candidate; the chosen judge is then measured by a real run).

Usage::

    python benchmarks/judge_capture.py locomo OUT.pkl conv-26.json conv-30.json ...
    # (the eval's own results and summary go to OUT.pkl.d; CAPTURE_LIMIT=N: N questions a file)
    python benchmarks/judge_capture.py longmemeval OUT.pkl FILE JOURNAL
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

import mnemon_langgraph.read._judging as judging
import mnemon_langgraph.read._nodes as nodes
from mnemon_langgraph.cli._common import embeddings_for, judge
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.search.embeddings import CachedEmbeddings, default_embedding_cache_path

SCORED = (1, 2, 3, 4)
LIMIT = int(os.environ.get("CAPTURE_LIMIT", "0")) or None


class _Recorder:
    """Keeps the System 1 calls and the compose inputs of the question being asked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []

    def read_answers(self, call: Any, response: Any) -> Any:
        judgments = ORIGINAL_READ(call, response)
        keys = {q: (t, p.value, n) for q, (t, p, n) in call.keys.items()}
        with self.lock:
            self.calls.append({"state": call.state, "keys": keys, "round": call.round})
        return judgments

    def compose_view(self, pool: Any, judgments: Any, **kw: Any) -> Any:
        kept = {k: v for k, v in kw.items() if k != "trace"}
        self.questions.append(
            {"pool": list(pool), "judgments": list(judgments), "kw": kept, "calls": self.calls}
        )
        self.calls = []
        return ORIGINAL_COMPOSE(pool, judgments, **kw)


ORIGINAL_READ = judging.read_answers
ORIGINAL_COMPOSE = nodes.compose_view


@contextmanager
def recording() -> Iterator[_Recorder]:
    rec = _Recorder()
    judging.read_answers = rec.read_answers  # type: ignore[assignment]
    nodes.compose_view = rec.compose_view  # type: ignore[assignment]
    try:
        yield rec
    finally:
        judging.read_answers = ORIGINAL_READ  # type: ignore[assignment]
        nodes.compose_view = ORIGINAL_COMPOSE  # type: ignore[assignment]


def _embedder() -> Any:
    return CachedEmbeddings(embeddings_for("minilm"), default_embedding_cache_path())


def capture_locomo(files: Sequence[str], out: str) -> list[dict[str, Any]]:
    import json

    from mnemon_langgraph.eval.locomo import EvalConfig, run_locomo_eval
    from mnemon_langgraph.store import MnemonStore

    emb = _embedder()
    with tempfile.TemporaryDirectory() as tmp, recording() as rec:
        store = MnemonStore(Path(tmp) / "journal.sqlite", embeddings=emb)
        graph = create_read_graph(
            source=store, judge=judge("local", emb), planner=None, settings=ReadSettings()
        )
        run_locomo_eval(
            files,
            out,
            graph=graph,
            store=store,
            embeddings=emb,
            config=EvalConfig(plots=False, limit_questions=LIMIT),
        )
        store.close()
        lines = (Path(out) / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == len(rec.questions), (len(rows), len(rec.questions))
    return [
        dict(q, conv=r["conversation"], gold=set(r["gold_evidence"]), category=r["category"])
        for r, q in zip(rows, rec.questions, strict=True)
        if r.get("gold_evidence") and r.get("category") in SCORED
    ]


def capture_longmemeval(file: str, journal: str) -> list[dict[str, Any]]:
    from mnemon_langgraph.loaders.longmemeval import load_longmemeval
    from mnemon_langgraph.read.state import ReadContext
    from mnemon_langgraph.store import MnemonStore

    emb = _embedder()
    store = MnemonStore(Path(journal), embeddings=emb)
    graph = create_read_graph(
        source=store, judge=judge("local", emb), planner=None, settings=ReadSettings()
    )
    out: list[dict[str, Any]] = []
    with recording() as rec:
        for q in load_longmemeval(file):
            if q.is_abstention or not q.gold_turns:
                continue
            graph.invoke(
                {"messages": [HumanMessage(q.question)]},
                context=ReadContext(namespace=("longmemeval", q.question_id), now=q.question_date),
            )
            out.append(
                dict(
                    rec.questions[-1],
                    conv=q.question_id,
                    gold=set(q.gold_turns),
                    category=q.question_type,
                )
            )
            print(q.question_id, flush=True)
    store.close()
    return out


def main(argv: Sequence[str]) -> None:
    kind, out = argv[0], argv[1]
    if kind == "locomo":
        rows = capture_locomo(argv[2:], out + ".d")
    else:
        rows = capture_longmemeval(argv[2], argv[3])
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
    print(f"{len(rows)} questions, {sum(len(r['calls']) for r in rows)} calls -> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
