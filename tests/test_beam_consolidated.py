"""``eval beam`` with the consolidated index: each namespace consolidated before its
questions, the View read with the index (issue 48 §5: the paper's route, wired).

No model is reachable here: the consolidation model is the suite's scripted one, which folds
each batch from its own text (``_consolidation_fakes.deriving_model``), and System 1 is a
scripted one that calls every index item needed, so what these tests
check is the wiring — the job runs per namespace, its items reach the Views and link back
to that namespace's records, and the run's report says what the job did — not the
quality a real model's index would give.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model
from test_beam import BEAM_DEV, _release_tree

from mnemon_langgraph.eval.beam_eval import BeamEvalConfig, consolidator, run_beam_eval
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.store import MnemonStore


def _items_needed(qid: str, question: str, state: Any) -> float | None:
    """System 1 stand-in: every index item is needed, every record even odds."""
    return 0.5 if qid.startswith("r") else 0.9


def _run(
    root: Path, out: Path, store: MnemonStore, *, consolidate: bool, **cfg: Any
) -> dict[str, Any]:
    items = store.item_store() if consolidate else None
    judge = ScriptedDecisionModel(answers=_items_needed, record_requests=False)
    graph = create_read_graph(source=store, items=items, judge=judge)
    model = deriving_model()
    return run_beam_eval(
        root,
        out,
        graph=graph,
        store=store,
        config=BeamEvalConfig(
            baseline_ks=(3,),
            plots=False,
            consolidation_model="scripted" if consolidate else None,
            **cfg,
        ),
        consolidate=consolidator(model, items) if items is not None else None,
    )


def test_each_namespace_is_consolidated_before_its_questions_and_the_views_show_its_items(
    tmp_path: Path,
) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    root = _release_tree(tmp_path / "beam", 2)
    with MnemonStore(
        tmp_path / "journal.sqlite", embeddings=DeterministicFakeEmbedding(size=32)
    ) as store:
        summary = _run(root, tmp_path / "out", store, consolidate=True, keep_namespaces=True)
        builds = [
            json.loads(x) for x in (tmp_path / "out" / "builds.jsonl").read_text().splitlines()
        ]
        assert len(builds) == 2
        for b in builds:
            assert b["consolidation_batches"] >= 1 and b["consolidation_failed_batches"] == 0
            assert b["consolidation_items"] > 0 and b["consolidation_stop"] == "caught_up"
        rows = [
            json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()
        ]
        with_items = [r for r in rows if r["view_index_items"] > 0]
        assert with_items, "no View showed an index item"
        idx = summary["index"]
        assert idx["builds"] == 2 and idx["items"] == sum(b["consolidation_items"] for b in builds)
        assert idx["views_with_items"] == len(with_items) and idx["questions"] == len(rows)
        assert "## The consolidated index" in (tmp_path / "out" / "summary.md").read_text()
        assert summary["counts"]["questions_with_model_errors"] == 0
        # every item the index holds links back to records of its own namespace
        items = store.item_store()
        for ns in (("beam", "100K", "1"), ("beam", "100K", "2")):
            held = items.all_items(ns)
            ids = {r.id for r in store.records(ns)}
            assert held and all(set(i.record_ids) <= ids for i in held)


def test_without_a_consolidation_model_the_run_has_no_index(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    root = _release_tree(tmp_path / "beam", 1)
    with MnemonStore(
        tmp_path / "journal.sqlite", embeddings=DeterministicFakeEmbedding(size=32)
    ) as store:
        summary = _run(root, tmp_path / "out", store, consolidate=False)
    assert summary["index"] is None
    rows = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert rows and all(r["view_index_items"] == 0 for r in rows)
    assert "consolidated index" not in (tmp_path / "out" / "summary.md").read_text()


def test_cli_refuses_a_consolidation_model_it_cannot_build_before_any_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemon_langgraph.cli import main

    root = _release_tree(tmp_path / "beam", 1)
    out = tmp_path / "out"
    code = main(
        [
            "eval",
            "beam",
            str(root),
            "--out",
            str(out),
            "--embeddings",
            "fake",
            "--no-embedding-cache",
            "--baseline-k",
            "3",
            "--no-progress",
            "--no-plots",
            "--consolidation-model",
            "no-such-provider:model",
        ]
    )
    assert code == 2
    assert "--consolidation-model: cannot build the chat model" in capsys.readouterr().err
    assert not (out / "results.jsonl").exists()


def test_runs_written_before_the_index_option_still_resume(tmp_path: Path) -> None:
    """A run without a consolidation model records no such setting (so ``--resume`` of a
    run from before the option matches); one with it records the model."""
    from mnemon_langgraph.eval.beam_eval import _run_settings

    assert "consolidation_model" not in _run_settings(BeamEvalConfig(), tmp_path)
    with_model = _run_settings(BeamEvalConfig(consolidation_model="openai:x"), tmp_path)
    assert with_model["consolidation_model"] == "openai:x"


@pytest.mark.skipif(not BEAM_DEV.is_dir(), reason="BEAM dev data not available")
def test_a_dev_conversation_consolidated_and_read_with_its_index(tmp_path: Path) -> None:
    """A real BEAM 100K conversation: every batch folded, items in the Views."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    with MnemonStore(
        tmp_path / "journal.sqlite", embeddings=DeterministicFakeEmbedding(size=32)
    ) as store:
        summary = _run(
            BEAM_DEV,
            tmp_path / "out",
            store,
            consolidate=True,
            conversations=["100K/1"],
            per_ability=1,
        )
    idx = summary["index"]
    assert idx["builds"] == 1 and idx["failed_batches"] == 0
    assert idx["batches"] >= 10  # a 100K conversation is many 10,000-character batches
    assert idx["items"] > idx["batches"]
    assert idx["views_with_items"] >= idx["questions"] // 2
    assert summary["counts"]["questions_with_model_errors"] == 0
