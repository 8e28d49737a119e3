"""Child process of the crash test: consolidate until batch ``k`` is committed, then hang.

Usage: ``python _consolidate_child.py DB SIGNAL_FILE K``. The child folds with the
deriving fake model; when the fold of batch ``K + 1`` starts (so batch ``K``'s items and
watermark are committed), it writes the committed watermark into ``SIGNAL_FILE`` and
blocks inside the model call until the parent kills it with SIGKILL.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import (
    NS_CRASH,
    ScriptedFoldModel,
    derive_fold,
    fake_embeddings,
    tool_answer,
)
from langchain_core.messages import AIMessage, BaseMessage

from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    EmbeddedItemStore,
    create_consolidation_graph,
)
from mnemon_langgraph.store.embedded._journal import Journal


def main() -> None:
    db, signal_file, k = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    journal = Journal(db)
    store = EmbeddedItemStore(journal, fake_embeddings())

    def script(messages: list[BaseMessage], index: int) -> AIMessage:
        if index == k:
            tmp = signal_file.with_suffix(".tmp")
            tmp.write_text(str(store.watermark(NS_CRASH)))
            tmp.rename(signal_file)
            while True:  # hang mid-call until SIGKILL
                time.sleep(0.05)
        return tool_answer(derive_fold(messages))

    graph = create_consolidation_graph(
        model=ScriptedFoldModel(script=script),
        store=store,
        settings=ConsolidationSettings(batch_chars=1500),
    )
    graph.invoke({"namespace": NS_CRASH})


if __name__ == "__main__":
    main()
