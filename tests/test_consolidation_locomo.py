"""Consolidate a LoCoMo dev conversation (conv-30) with a model that folds from batch text."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import batch_records, deriving_model, fake_embeddings
from _paths import LOCOMO_DEV

from mnemon_langgraph.consolidation import EmbeddedItemStore, create_consolidation_graph
from mnemon_langgraph.consolidation.batching import trim_record
from mnemon_langgraph.loaders.locomo import load_locomo
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store.embedded._journal import Journal

CONV = LOCOMO_DEV / "conv-30.json"
NS = ("locomo", "conv-30")


@pytest.mark.skipif(not CONV.exists(), reason="LoCoMo dev data not present")
def test_conv30_is_folded_in_10k_batches_with_items_linked_to_their_records(
    tmp_path: Path,
) -> None:
    conv = load_locomo(CONV)[0]
    journal = Journal(tmp_path / "locomo.db")
    try:
        journal.append(NS, chunk_messages(conv.messages, namespace=NS, origin=conv.origin))
        records = {r.id: r for r in journal.records(NS)}
        total = sum(len(trim_record(r)) for r in records.values())
        store = EmbeddedItemStore(journal, fake_embeddings())
        model = deriving_model()
        report = create_consolidation_graph(model=model, store=store).invoke({"namespace": NS})[
            "report"
        ]
        assert report.stop_reason == "caught_up" and not report.failures
        # ~10,000-character batches covering every record once, in seq order
        assert len(report.batches) == pytest.approx(total / 10_000, abs=1.5)
        assert sum(b.records for b in report.batches) == len(records)
        assert all(b.chars <= 10_000 for b in report.batches)
        assert all(
            a.end_seq < b.start_seq
            for a, b in zip(report.batches, report.batches[1:], strict=False)
        )
        # the prompts carried conversation text only: never the qa annotations
        prompts = "\n".join(str(call[-1].content) for call in model.calls)
        assert "Lost my job as a banker" in prompts
        assert "evidence" not in prompts and "'category'" not in prompts
        assert all(len(batch_records(call)) > 1 for call in model.calls)
        # every item points to records that hold what it says
        items = store.all_items(NS)
        assert len(items) >= len(records)
        for item in items:
            text = " ".join(records[rid].text for rid in item.record_ids)
            if item.kind == "event":
                said = item.text.split(" said: ", 1)[1]
                assert said in text
            elif item.kind == "value":
                assert item.value and item.value in text
        jon_values = [it for it in items if it.kind == "value" and it.subject == "Jon"]
        assert any("job" in (it.value or "") for it in jon_values)  # "lost my job as a banker"
        first = next(it for it in items if it.kind == "event" and it.topic == "Jon's life")
        assert first.date is not None and first.date.year == 2023
        assert store.topics(NS) and report.model_calls == len(report.batches)
    finally:
        journal.close()
