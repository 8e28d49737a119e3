"""BEAM with the consolidated index, the consolidation model a scripted stand-in (issue 48 §5).

The paper's route to BEAM's event-ordering and summarization questions is the consolidated
index (topic timelines, value histories), and building it needs a chat model, which this
machine does not have. This script shows the route is wired end to end on the BEAM dev
conversations: each namespace is consolidated before its questions (``eval beam
--consolidation-model`` does the same with a real model), and the View is read with the
offline defaults (the local System 1, the rule planner, the bundled MiniLM) and the index.

The consolidation model is the test suite's scripted one (``tests/_consolidation_fakes.py``,
``deriving_model``): it folds every batch into one event per record, "<speaker> said: <the
start of its first line>", with no topic but the speaker. That is a mechanical index, not
what a model would write, so the evidence figures say nothing about the index's quality: what
they show is that the job runs per namespace, that its items are judged and reach the Views,
and what they cost in the View's budget.

    python benchmarks/beam_index_wired.py ../shared/data/beam-dev --out runs/beam-index-wired \
        --embedding-cache runs/emb.sqlite [--conversations 100K/1,100K/2]

Writes the usual ``eval beam`` output (``summary.md`` has a "consolidated index" section).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _consolidation_fakes import deriving_model  # the suite's scripted fold model

from mnemon_langgraph.eval.beam_eval import BeamEvalConfig, consolidator, run_beam_eval
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.search.embeddings import CachedEmbeddings, default_embeddings
from mnemon_langgraph.store import MnemonStore


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", help="a BEAM folder (chats/, one tier, or one chat)")
    p.add_argument("--out", required=True)
    p.add_argument("--embedding-cache", required=True, help="embedding cache file")
    p.add_argument("--conversations", default=None, help="e.g. 100K/1,100K/2 (default: all)")
    p.add_argument("--journal", default=None, help="journal file (default: under --out)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    embeddings = CachedEmbeddings(default_embeddings(), args.embedding_cache)
    journal = Path(args.journal) if args.journal else out / "journal.sqlite"
    with MnemonStore(journal, embeddings=embeddings) as store:
        items = store.item_store()
        summary = run_beam_eval(
            args.root,
            out,
            graph=create_read_graph(source=store, items=items),
            store=store,
            embeddings=embeddings,
            config=BeamEvalConfig(
                conversations=args.conversations.split(",") if args.conversations else None,
                baseline_ks=(3,),
                plots=False,
                consolidation_model="scripted (tests/_consolidation_fakes.deriving_model)",
            ),
            command=" ".join(["python", *sys.argv]),
            consolidate=consolidator(deriving_model(), items),
        )
    idx = summary["index"] or {}
    o = summary["view"]["overall"]
    print(
        f"{summary['counts']['scored_questions']} scored questions: all_hit {o.get('all_hit')}; "
        f"{idx.get('items')} items in {idx.get('batches')} batches; "
        f"{idx.get('views_with_items')} of {idx.get('questions')} Views showed index items"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
