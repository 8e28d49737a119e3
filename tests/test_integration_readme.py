"""The README snippets of the integration surfaces run as pasted (offline, fake models).

The snippets are kept here verbatim; when the README section is present (``README.md`` after
the lead merges it, or ``../README_integrations.md`` before), each must appear in it as is.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

SUBGRAPH = """\
from langchain_core.language_models import GenericFakeChatModel
from langgraph.graph import MessagesState, StateGraph
from mnemon_langgraph.integrations import add_memory
from mnemon_langgraph.store import MnemonStore

store = MnemonStore("memory.db")
model = GenericFakeChatModel(messages=iter(["Noted!", "You live in Lisbon."]))
builder = StateGraph(MessagesState)
builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
graph = add_memory(builder, store).compile()
config = {"configurable": {"user_id": "ada"}}
graph.invoke({"messages": [("user", "I moved to Lisbon last spring.")]}, config)
print(graph.invoke({"messages": [("user", "Where do I live?")]}, config)["messages"][0].text)
"""

MIDDLEWARE = """\
from dataclasses import dataclass

from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from mnemon_langgraph.integrations import MnemonMiddleware
from mnemon_langgraph.store import MnemonStore


@dataclass
class Context:
    user_id: str


store = MnemonStore("memory.db")
model = GenericFakeChatModel(messages=iter(["Noted!"]))
agent = create_agent(model, middleware=[MnemonMiddleware(store)], context_schema=Context)
agent.invoke({"messages": [("user", "My cat is called Pixel.")]}, context=Context(user_id="ada"))
"""

MEMORY = """\
from mnemon_langgraph.integrations import MnemonMemory
from mnemon_langgraph.store import MnemonStore

store = MnemonStore("memory.db")
memory = MnemonMemory(store=store, namespace="ada")
memory.save_context({"input": "I play the oboe."}, {"output": "Lovely!"})
print(memory.load_memory_variables({"input": "Which instrument do I play?"})["history"])
memory.clear()  # erases the namespace through the audited erase_namespace
"""

HISTORY = """\
from langchain_core.messages import AIMessage, HumanMessage
from mnemon_langgraph.integrations import MnemonChatMessageHistory
from mnemon_langgraph.store import MnemonStore

history = MnemonChatMessageHistory(MnemonStore("memory.db"), "session-42")
history.add_messages([HumanMessage("I moved to Lisbon."), AIMessage("Noted!")])
print([m.text for m in history.messages])
"""

SNIPPETS = {"subgraph": SUBGRAPH, "middleware": MIDDLEWARE, "memory": MEMORY, "history": HISTORY}


def _readme_blocks() -> list[str] | None:
    for path in (REPO / "README.md", REPO.parent / "README_integrations.md"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if "MnemonMiddleware" in text:
                return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    return None


def test_snippets_are_the_readme_ones() -> None:
    blocks = _readme_blocks()
    if blocks is None:
        pytest.skip("no README with the integration section here")
    for name, snippet in SNIPPETS.items():
        assert snippet in blocks, f"README snippet {name!r} differs from the tested one"


def _run(snippet: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("readme_snippet")  # a real module, as a pasted script has
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(snippet, "<readme>", "exec"), module.__dict__)
    return module.__dict__


def test_subgraph_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    ns = _run(SUBGRAPH, tmp_path, monkeypatch)
    assert "Lisbon" in capsys.readouterr().out  # the View of the second turn
    records = "\n".join(r.text for r in ns["store"].journal.records(("ada",)))
    assert "I moved to Lisbon last spring." in records and "You live in Lisbon." in records


def test_middleware_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run(MIDDLEWARE, tmp_path, monkeypatch)
    records = "\n".join(r.text for r in ns["store"].journal.records(("ada",)))
    assert "Pixel" in records and "Noted!" in records


def test_memory_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    ns = _run(MEMORY, tmp_path, monkeypatch)
    assert "oboe" in capsys.readouterr().out
    assert ns["store"].journal.count(("ada",)) == 0
    assert [e.action for e in ns["store"].journal.audit_log(("ada",))] == ["erase_namespace"]


def test_history_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    _run(HISTORY, tmp_path, monkeypatch)
    assert capsys.readouterr().out.strip() == "['I moved to Lisbon.', 'Noted!']"
