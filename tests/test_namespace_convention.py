"""One namespace convention: user "ada" is ("users", "ada") in every surface (issue 43 §2).

Memory written by the README's own Python snippet is found by ``mnemon search --user ada``,
``mnemon mcp --user ada`` (in-process), ``ReadContext(user_id="ada")`` and a Studio graph run
with ``user_id="ada"``; ``mnemon rename-namespace`` moves memory of the old one-part
convention, audited and without residue.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph import MnemonBaseStore, MnemonStore, ReadContext, create_read_graph
from mnemon_langgraph.cli import build_parser, main
from mnemon_langgraph.cli._common import namespace_of
from mnemon_langgraph.errors import InputError
from mnemon_langgraph.types import Message

REPO = Path(__file__).resolve().parents[1]
ADA = ("users", "ada")
PET = "Pixel"  # what the README's per-user snippet stores for Ada


def _readme_block(marker: str) -> str:
    """The README's Python block that contains ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    (block,) = [b for b in blocks if marker in b]
    return block


@pytest.fixture
def readme_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``memory.db`` as the README's "Plain per-user API" snippet leaves it."""
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    for key in ("MNEMON_NAMESPACE", "MNEMON_PLANNER_MODEL", "MNEMON_JUDGE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    exec(compile(_readme_block('ada = ("users", "ada")'), "README.md", "exec"), {})
    return tmp_path / "memory.db"


def test_every_cli_command_with_namespace_takes_user() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command" or a.choices)
    commands = sub.choices
    with_namespace = [
        name
        for name, p in commands.items()
        if any("--namespace" in a.option_strings for a in p._actions)
    ]
    assert {"search", "view", "ingest", "export", "erase", "mcp", "consolidate"} <= set(
        with_namespace
    )
    for name in with_namespace:
        options = {o for a in commands[name]._actions for o in a.option_strings}
        assert "--user" in options, name
    args = parser.parse_args(["search", "q", "--db", "m.db", "--user", "ada"])
    assert namespace_of(args) == ADA
    args = parser.parse_args(["search", "q", "--db", "m.db", "--namespace", "ada"])
    assert namespace_of(args) == ("ada",)


def test_readme_memory_is_found_by_cli_search(readme_db: Path, capsys: Any) -> None:
    assert main(["search", "name of my pet", "--db", str(readme_db), "--user", "ada"]) == 0
    assert PET in capsys.readouterr().out


async def test_readme_memory_is_found_by_mcp_user(readme_db: Path) -> None:
    from mcp.shared.memory import create_connected_server_and_client_session

    from mnemon_langgraph.integrations.mcp import create_mcp_server

    args = build_parser().parse_args(["mcp", "--db", str(readme_db), "--user", "ada"])
    namespace = namespace_of(args)  # what `mnemon mcp --user ada` serves
    assert namespace == ADA
    store = MnemonStore(readme_db)
    try:
        server = create_mcp_server(store, namespace)
        async with create_connected_server_and_client_session(server) as session:
            result = await session.call_tool("search_memory", {"query": "name of my pet"})
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        assert not result.isError and PET in text, text
    finally:
        store.close()


def test_readme_memory_is_found_by_read_context_and_studio(readme_db: Path) -> None:
    from mnemon_langgraph.integrations import studio

    question = {"messages": [HumanMessage("What is the name of my pet?")]}
    with MnemonStore(readme_db) as store:
        graph = create_read_graph(source=store)
        out = graph.invoke(question, context=ReadContext(user_id="ada"))
        assert PET in out["view"].text
    env = {"MNEMON_DB": str(readme_db)}
    read = studio.read_graph_from_env(env)
    assert PET in read.invoke(question, context={"user_id": "ada"})["view"].text
    agent = studio.agent_graph_from_env(env)
    reply = agent.invoke({"messages": [("user", "What is my pet called?")]}, {"configurable": {
        "user_id": "ada"}})["messages"][-1].text  # fmt: skip
    assert PET in reply


def _old_convention_store(path: Path) -> MnemonStore:
    store = MnemonStore(path)
    store.ingest(
        ("ada",),
        [
            Message("My cat is called Pixel.", "ada", id="a1", timestamp=datetime(2024, 5, 1)),
            Message("Cute!", "assistant", role="assistant", id="a2",
                    timestamp=datetime(2024, 5, 1, 0, 1)),
        ],
        origin="chat",
    )  # fmt: skip
    with MnemonBaseStore(store) as items:
        items.put(("ada",), "profile", {"text": "Ada prefers green tea."})
    return store


def test_rename_namespace_moves_old_convention_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The migration one-liner of docs/transfer.md: everything moves, nothing stays."""
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "memory.db"
    store = _old_convention_store(db)
    old_folders = set((tmp_path / "memory.db.indexes").iterdir())
    store.close()
    assert (
        main(["rename-namespace", "--db", str(db), "--namespace", "ada", "--to-user", "ada"]) == 0
    )
    assert "moved 2 messages" in capsys.readouterr().out
    with MnemonStore(db) as store:
        assert store.namespaces() == [ADA]
        assert [m.text for m in store.list_messages(ADA)] == ["My cat is called Pixel.", "Cute!"]
        assert store.search("pet", namespace=ADA, k=1)[0].record.text.count(PET) == 1
        assert store.list_messages(("ada",)) == []
        (erase,) = [a for a in store.audit_log(("ada",)) if a.action == "erase_namespace"]
        assert erase.actor == "cli:rename-namespace"
        with MnemonBaseStore(store) as items:
            assert items.get(ADA, "profile").value == {"text": "Ada prefers green tea."}
            assert items.get(("ada",), "profile") is None
    assert not old_folders & set((tmp_path / "memory.db.indexes").iterdir())  # index files gone
    # moving again: nothing left to move; a non-empty target is never merged into
    assert (
        main(["rename-namespace", "--db", str(db), "--namespace", "ada", "--to-user", "ada"]) == 2
    )
    with MnemonStore(db) as store:
        _old_convention_store(db).close()
        from mnemon_langgraph.cli._rename import rename_namespace

        with pytest.raises(InputError, match="not empty"):
            rename_namespace(store, ("ada",), ADA)
