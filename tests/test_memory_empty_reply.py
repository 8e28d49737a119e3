"""An empty reply does not lose the user's input (issue 29, item 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemon_langgraph import MnemonMemory, MnemonStore
from mnemon_langgraph.errors import InputError


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    with MnemonStore(tmp_path / "m.db") as s:
        yield s


def test_empty_output_keeps_the_input(store: MnemonStore) -> None:
    memory = MnemonMemory(store=store, namespace=("users", "ada"))
    memory.save_context({"input": "My cat is called Pixel."}, {"output": ""})
    records = list(store.records(("users", "ada")))
    assert len(records) == 1
    assert "My cat is called Pixel." in records[0].text
    assert records[0].roles == ("user",)


def test_empty_input_keeps_the_output(store: MnemonStore) -> None:
    memory = MnemonMemory(store=store, namespace=("users", "ada"))
    memory.save_context({"input": "   "}, {"output": "Your reminder is set."})
    texts = [r.text for r in list(store.records(("users", "ada")))]
    assert len(texts) == 1 and "Your reminder is set." in texts[0]


def test_nothing_to_save_is_refused_and_writes_nothing(store: MnemonStore) -> None:
    memory = MnemonMemory(store=store, namespace=("users", "ada"))
    memory.save_context({"input": "I play the oboe."}, {"output": "Lovely!"})
    with pytest.raises(InputError, match="empty"):
        memory.save_context({"input": ""}, {"output": " "})
    assert [r.text.count("\n") for r in list(store.records(("users", "ada")))] == [1]
