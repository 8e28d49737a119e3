"""A PostgreSQL store's pool and loop thread close cleanly however the store ends.

Closed explicitly, as a context manager, garbage collected, or never closed at all (the
interpreter exits with it open): no asyncio noise on stderr, exit status 0.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

import mnemon_langgraph
from mnemon_langgraph.store import MnemonStore, PostgresStore
from mnemon_langgraph.types import Message

_NEVER_CLOSED = """
import sys
sys.path.insert(0, {tests!r})
from _reliability_common import fake_embeddings
from mnemon_langgraph import MnemonStore
from mnemon_langgraph.types import Message

store = MnemonStore({url!r}, fake_embeddings())
store.ingest(("ada",), [Message("I adopted a grey cat called Pixel", "Ada", id="m1")],
             source="chat")
hits = store.search("cat", namespace=("ada",), k=3)
print(len(hits))
{ending}
"""

# How the script ends: with the store still referenced (torn down by interpreter exit, in an
# order that varies from run to run), or dropped and collected first (deterministic: the
# pool's worker tasks die with it unless the engine closed it).
_ENDINGS = {"exit": "", "dropped": "del store, hits\nimport gc\ngc.collect()"}


def _run_child(script: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # the child imports this checkout's package, not whatever is installed
    root = str(Path(mnemon_langgraph.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    env["XDG_RUNTIME_DIR"] = env.get("XDG_RUNTIME_DIR") or str(tmp_path)  # platformdirs' warning
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.mark.parametrize("ending", ["exit", "exit", "exit", "dropped"])
def test_a_store_never_closed_exits_silently(
    postgres_url: str, tmp_path: Path, ending: str
) -> None:
    script = tmp_path / "never_closed.py"
    tests = str(Path(__file__).parent)
    code = _NEVER_CLOSED.format(tests=tests, url=postgres_url, ending=_ENDINGS[ending])
    script.write_text(textwrap.dedent(code))
    done = _run_child(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert done.stderr == ""


_BASESTORE_NEVER_CLOSED = """
import sys
sys.path.insert(0, {tests!r})
from _reliability_common import fake_embeddings
from mnemon_langgraph import MnemonStore
from mnemon_langgraph.integrations.basestore import MnemonBaseStore

items = MnemonBaseStore(MnemonStore({url!r}, fake_embeddings()))
items.put(("users", "ada"), "k1", {{"content": "likes tea"}})
print(items.get(("users", "ada"), "k1") is not None)
"""


def test_a_basestore_never_closed_exits_silently(postgres_url: str, tmp_path: Path) -> None:
    # its item tables have a pool of their own, on the BaseStore's loop thread
    script = tmp_path / "basestore_never_closed.py"
    tests = str(Path(__file__).parent)
    script.write_text(_BASESTORE_NEVER_CLOSED.format(tests=tests, url=postgres_url))
    done = _run_child(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert done.stderr == ""


def test_a_context_manager_closes_the_pool(postgres_url: str) -> None:
    with MnemonStore(postgres_url, fake_embeddings()) as store:
        assert isinstance(store, PostgresStore)
        store.ingest(("ada",), [Message("hello there", "Ada", id="m1")], origin="chat")
        engine = store.engine
        thread = engine._loop.thread
        assert not engine.closed and thread.is_alive()
    assert engine.closed and engine.pool is None
    assert not thread.is_alive()
    store.close()  # closing again is harmless
    assert engine.closed


def test_a_store_dropped_unclosed_is_closed_by_the_collector(postgres_url: str) -> None:
    store = MnemonStore(postgres_url, fake_embeddings())
    assert isinstance(store, PostgresStore)
    thread = store.engine._loop.thread
    pool = store.engine.pool
    assert thread.is_alive() and not pool.closed
    del store
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert pool.closed


def test_a_sibling_leaves_the_pool_to_its_store(postgres_url: str) -> None:
    with MnemonStore(postgres_url, fake_embeddings()) as store:
        assert isinstance(store, PostgresStore)
        sibling = store.with_settings(bm25_prune=False)
        sibling.close()
        assert not store.engine.closed
        store.ingest(("ada",), [Message("still open", "Ada", id="m1")], origin="chat")
        assert store.count(("ada",)) == 1
    assert store.engine.closed
