"""A checkpointed read graph restores its View under ``LANGGRAPH_STRICT_MSGPACK=true``.

In strict mode LangGraph deserializes only the types its allowlist names, and it builds that
allowlist from the graph's state annotations when the graph is compiled; a state key typed
``Any`` lets the View be written but restores it as a plain dict (with a "Blocked
deserialization" log line). The flag is read when LangGraph is imported, so the graph runs in
a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

SCRIPT = r"""
import sys
from datetime import datetime
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from mnemon_langgraph import MnemonStore, create_read_graph
from mnemon_langgraph.read.view import View
from mnemon_langgraph.types import Message

store = MnemonStore(sys.argv[1], embeddings=DeterministicFakeEmbedding(size=32))
msg = Message("My locker code is 4471.", "ada", "user", id="m1", timestamp=datetime(2024, 1, 2))
store.ingest(("users", "ada"), [msg], origin="chat")
graph = create_read_graph(source=store, checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "t"}}
question = {"messages": [HumanMessage("What is my locker code?")]}
graph.invoke(question, config, context={"namespace": ("users", "ada")})
restored = graph.get_state(config).values["view"]
print(type(restored).__name__, isinstance(restored, View), "4471" in restored.text)
print("records", [type(r).__name__ for r in restored.records])
store.close()
"""


# the View's module before the move; spelled in parts because test_moved_modules forbids the
# old paths in code, and this test names it on purpose
OLD_PATH = ".".join(("mnemon_langgraph", "read", "view_types"))


@pytest.mark.parametrize("strict", ["true", "false"])
def test_a_checkpointed_view_comes_back_as_a_view(tmp_path: Path, strict: str) -> None:
    env = dict(os.environ, LANGGRAPH_STRICT_MSGPACK=strict, MNEMON_EMBEDDINGS="fake")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "m.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "View True True", (lines, done.stderr)
    assert lines[1].startswith("records ['ViewRecord'"), lines  # the record came back typed
    assert "Blocked deserialization" not in done.stderr, done.stderr


def test_a_checkpoint_of_the_previous_release_loads_through_the_old_module_path() -> None:
    """Before the internal modules went private a checkpoint named the View's module
    ``mnemon_langgraph.read.view_types``; that path is a shim for one release, so it loads."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from mnemon_langgraph.read.view import View, ViewRecord

    record = ViewRecord(
        id="r-1", message_ids=("m1",), session=1, date="2024-01-02", text="ada: kept"
    )
    view = View(text="<memory>ada: kept</memory>", records=(record,))
    serde = JsonPlusSerializer()
    moved = (View, ViewRecord)
    try:
        for cls in moved:  # written as the previous release wrote it
            cls.__module__ = OLD_PATH
        written = serde.dumps_typed({"view": view})
    finally:
        for cls in moved:
            cls.__module__ = "mnemon_langgraph.read._view_types"
    assert OLD_PATH.encode() in written[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the shim's, if first imported here
        restored = serde.loads_typed(written)["view"]
    assert isinstance(restored, View) and restored == view
