"""Write the notebooks of this folder from the cell sources below (outputs left empty).

Run ``python notebooks/make_notebooks.py`` after editing a cell; the ``.ipynb`` files are
generated, so edit them here rather than in Jupyter. Every notebook runs top to bottom offline
(the bundled MiniLM embedder, the local judge, fake or scripted chat models); a cell that
would use a real model runs only when its API key is set.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

FIND_DATA = '''\
import tempfile
from pathlib import Path

import mnemon_langgraph


def find_repo(start: Path | None = None) -> Path:
    """The repository root (the folder holding langgraph.json), else the start folder."""
    start = start or Path.cwd()
    for folder in [start, *start.parents]:
        if (folder / "langgraph.json").exists():
            return folder
    return start


REPO = find_repo()
LOCOMO_DIR = REPO.parent / "shared" / "data" / "locomo-dev"  # ../shared/data/locomo-dev
# the small conversation bundled with the package
SAMPLE = Path(next(iter(mnemon_langgraph.__path__))) / "data" / "sample_conversation.jsonl"
WORKDIR = Path(tempfile.mkdtemp(prefix="mnemon-notebook-"))
print("LoCoMo dev data:", LOCOMO_DIR if LOCOMO_DIR.exists() else "absent (bundled sample)")'''


def _nb(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        new_markdown_cell(src) if kind == "md" else new_code_cell(src) for kind, src in cells
    ]
    return nb


QUICKSTART = [
    (
        "md",
        """\
# 01 · Quickstart: write a conversation down, read a View

mnemon-langgraph keeps conversations as raw, dated **records** in a journal and, for each user
message, composes a small **View** of the records the reply needs (plan → retrieve → judge →
act → compose). This notebook ingests one LoCoMo dev conversation (or the bundled sample when
the dataset is absent), looks at the Views for a few of its questions and asks why a record is
in a View. Everything runs offline: the bundled MiniLM embedder, the rule planner and the
local judge.""",
    ),
    ("code", FIND_DATA),
    (
        "code",
        """\
from mnemon_langgraph.sources import load_jsonl, load_locomo

locomo_file = LOCOMO_DIR / "conv-26.json"
if locomo_file.exists():
    conversation = load_locomo(locomo_file)[0]
    messages, source = conversation.messages, conversation.source
    # a few answerable questions (category 5 is adversarial: no answer in the conversation)
    questions = [q for q in conversation.qa if q.get("category") != 5][:2]
else:
    messages = load_jsonl(SAMPLE)
    source = "sample"
    questions = [
        {"question": "Where does Noor live?", "evidence": []},
        {"question": "How should answers be written for Noor?", "evidence": []},
    ]
print(len(messages), "messages;", messages[0])""",
    ),
    (
        "md",
        """\
## The write path: chunk, journal, index (no model call)""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.store import MnemonStore

store = MnemonStore(WORKDIR / "journal.db")
NAMESPACE = ("demo",)
result = store.ingest(NAMESPACE, messages, source=source)
print(result.records_written, "records from", result.messages_written, "messages")
print(next(iter(store.journal.records(NAMESPACE))).render())""",
    ),
    (
        "md",
        """\
## The read path: a View per question

The namespace (whose memory) is given per run, so one compiled graph serves every user.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext

read_graph = create_read_graph(source=store)
views = []
for q in questions:
    out = read_graph.invoke(
        {"messages": [("user", q["question"])]}, context=ReadContext(namespace=NAMESPACE)
    )
    view = out["view"]
    views.append(view)
    shown = set(view.message_ids)
    found = [e for e in q.get("evidence", []) if e in shown]
    print(f"Q: {q['question']}\\n   {len(view.records)} records in the View; "
          f"gold evidence shown: {found} of {q.get('evidence', [])}")""",
    ),
    (
        "code",
        """\
print(views[0].text[:2000])""",
    ),
    (
        "md",
        """\
## Why is this record in the View?

`explain(view, record_id)` reads the View's trace: the searches that found the record, every
System 1 judgment about it and the rules that placed it.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read.view import explain

view = next((v for v in views if v.records), views[0])
if view.records:
    print(explain(view, view.record_ids[0]))
else:
    print("empty View:", view.empty_reason)""",
    ),
    (
        "code",
        """\
store.close()""",
    ),
]


AGENT = [
    (
        "md",
        """\
# 02 · An agent with memory

Two ways to give an agent long-term memory, both with a fake chat model so the notebook runs
offline (swap in any LangChain chat model):

1. **as nodes of your own LangGraph graph** (`memory_nodes` / `add_memory`): `recall` puts the
   View in front of the model as one system message; `remember` writes the turn afterwards;
2. **as `create_agent` middleware** (`MnemonMiddleware`): the View is added to the model
   request only (never to the agent's state); the turn is written after the agent finishes.""",
    ),
    ("code", FIND_DATA),
    (
        "code",
        """\
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from mnemon_langgraph.sources import load_jsonl
from mnemon_langgraph.store import MnemonStore


class EchoModel(BaseChatModel):
    \"\"\"A fake chat model: remembers what it was sent, replies with a fixed sentence.\"\"\"

    seen: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        reply = AIMessage(f"(fake reply to: {messages[-1].text[:40]})")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools, **kwargs):
        return self


sample = load_jsonl(SAMPLE)
store = MnemonStore(WORKDIR / "journal.db")
store.ingest(("noor",), sample, source="sample")
print(store.journal.count(("noor",)), "records for noor")""",
    ),
    (
        "md",
        """\
## 1 · Memory as nodes of a `MessagesState` graph""",
    ),
    (
        "code",
        """\
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState, StateGraph

from mnemon_langgraph.integrations import add_memory

model = EchoModel()
builder = StateGraph(MessagesState)
builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
graph = add_memory(builder, store).compile(checkpointer=InMemorySaver())

config = {"configurable": {"thread_id": "t1", "user_id": "noor"}}
out = graph.invoke({"messages": [("user", "Where do I live these days?")]}, config)
print(model.seen[-1][0].text[:1200])""",
    ),
    (
        "code",
        """\
# the turn is in the journal now (question and reply), the View is not
print([r.text for r in store.journal.records(("noor",))][-1])""",
    ),
    (
        "md",
        """\
## 2 · Memory as `create_agent` middleware""",
    ),
    (
        "code",
        """\
from dataclasses import dataclass

from langchain.agents import create_agent

from mnemon_langgraph.integrations import MnemonMiddleware


@dataclass
class UserContext:
    user_id: str


model = EchoModel(seen=[])
agent = create_agent(
    model,
    tools=[],
    system_prompt="You are a concise assistant.",
    middleware=[MnemonMiddleware(store)],
    context_schema=UserContext,
)
out = agent.invoke(
    {"messages": [("user", "Which units do I prefer?")]}, context=UserContext(user_id="noor")
)
print(model.seen[-1][0].text[:1200])
print("View in the agent's state:", any("memory_view" in m.text for m in out["messages"]))""",
    ),
    (
        "code",
        """\
store.close()""",
    ),
]


CONSOLIDATION = [
    (
        "md",
        """\
# 03 · Consolidation: fold the journal into an index

A batch job (its own LangGraph graph) reads the journal from a watermark and asks a chat model
to fold each batch into **index items** — events on topic timelines, value histories and
standing instructions — each linked to the records it came from. Offline, a scripted fake
model does the folding; with `OPENAI_API_KEY` set, the last cell runs a real one.""",
    ),
    ("code", FIND_DATA),
    (
        "code",
        """\
import json
import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from mnemon_langgraph.sources import load_jsonl
from mnemon_langgraph.store import MnemonStore


class ScriptedFolder(BaseChatModel):
    \"\"\"A fake model that folds a batch by a rule: one event per record, instructions for
    lines that say "please". It answers through the FoldOutput tool, as a real model would.\"\"\"

    @property
    def _llm_type(self) -> str:
        return "scripted-folder"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        prompt = messages[-1].text
        records = json.loads(prompt.split("<records>\\n", 1)[1].split("\\n</records>", 1)[0])
        events, instructions = [], []
        for rec in records:
            first = rec["text"].split("\\n")[0]
            speaker, _, said = first.partition(": ")
            date = (rec.get("date") or "")[:10] or None
            events.append({"topic": f"{speaker}'s week", "date": date,
                           "text": said[:100], "record_ids": [rec["id"]]})
            for line in rec["text"].split("\\n"):
                if "please" in line.lower():
                    wish = line.partition(": ")[2]
                    instructions.append({"text": wish[:160], "record_ids": [rec["id"]]})
        call = {"name": "FoldOutput", "id": "fold", "type": "tool_call",
                "args": {"events": events, "instructions": instructions}}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


sample = load_jsonl(SAMPLE)
store = MnemonStore(WORKDIR / "journal.db")
store.ingest(("noor",), sample, source="sample")""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.consolidation import create_consolidation_graph

job = create_consolidation_graph(model=ScriptedFolder(), store=store)
report = job.invoke({"namespace": ("noor",)})["report"]
print(report.stop_reason, "— items added:", report.items_added)
print("watermark:", report.watermark)""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.consolidation import SQLiteItemStore

items = SQLiteItemStore(store.journal, embeddings=store.embeddings)
for item in items.instructions(("noor",)):
    print("instruction:", item.text, "<- records", item.record_ids)
print("topics:", items.topics(("noor",)))""",
    ),
    (
        "md",
        """\
The read graph takes the index as its `items`: the View then starts with standing instructions,
a topic directory and the timelines judged needed, before the records.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext

read_graph = create_read_graph(source=store, items=items)
view = read_graph.invoke(
    {"messages": [("user", "How should you answer me?")]}, context=ReadContext(namespace="noor")
)["view"]
print(view.text[:1500])""",
    ),
    (
        "md",
        """\
## With a real model (only when a key is set)""",
    ),
    (
        "code",
        """\
if os.environ.get("OPENAI_API_KEY"):
    from langchain.chat_models import init_chat_model

    real_job = create_consolidation_graph(model=init_chat_model("openai:gpt-4.1-mini"), store=store)
    items.drop_index(("noor",))
    print(real_job.invoke({"namespace": ("noor",)})["report"])
else:
    print("OPENAI_API_KEY is not set: skipped the real-model run")""",
    ),
    (
        "code",
        """\
items.close()
store.close()""",
    ),
]


EVAL = [
    (
        "md",
        """\
# 04 · Evaluation results

What matters first is **evidence in the View**: the share of questions whose gold evidence
turns reach the View, by LoCoMo question category. This notebook reads `results.jsonl` rows
(one per question, as `mnemon eval` writes them) when a file is given in `MNEMON_RESULTS`, and
otherwise makes a small run here on a few questions of one dev conversation (offline: rule
planner, local judge), then draws the results.""",
    ),
    ("code", FIND_DATA),
    (
        "code",
        """\
import json
import os
import re

RESULTS = os.environ.get("MNEMON_RESULTS")
N_QUESTIONS = 4  # one per category; raise it for a real look
SESSIONS = 5  # sessions of the conversation ingested by the small run
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.sources import load_jsonl, load_locomo
from mnemon_langgraph.store import MnemonStore


def small_run() -> list[dict]:
    \"\"\"Views for a few questions; each row says how much gold evidence reached the View.\"\"\"
    locomo_file = LOCOMO_DIR / "conv-26.json"
    if locomo_file.exists():
        conv = load_locomo(locomo_file)[0]
        # the first sessions only, and questions whose evidence lies in them: a quick run
        messages = [m for m in conv.messages if (m.session or 1) <= SESSIONS]
        source = conv.source

        def in_range(q: dict) -> bool:
            sessions = [int(n) for e in q["evidence"] for n in re.findall(r"D(\\d+):", e)]
            return bool(sessions) and max(sessions) <= SESSIONS

        per_category = max(1, N_QUESTIONS // len(CATEGORIES))
        qa = [q for cat in CATEGORIES
              for q in [q for q in conv.qa if q.get("category") == cat and in_range(q)][
                  :per_category]]
    else:
        messages, source = load_jsonl(SAMPLE), "sample"
        qa = [{"question": "Where does Noor live?", "evidence": ["s1-03"], "category": 4},
              {"question": "How should answers be written?", "evidence": ["s1-01"], "category": 4}]
    store = MnemonStore(WORKDIR / "journal.db")
    store.ingest(("eval",), messages, source=source)
    graph = create_read_graph(source=store)
    rows = []
    for q in qa:
        view = graph.invoke({"messages": [("user", q["question"])]},
                            context=ReadContext(namespace="eval"))["view"]
        gold, shown = list(q["evidence"]), set(view.message_ids)
        hit = [g for g in gold if g in shown]
        rows.append({
            "question": q["question"],
            "category": q["category"],
            "evidence_any": bool(hit),
            "evidence_all": bool(gold) and len(hit) == len(gold),
            "view_records": len(view.records),
        })
    store.close()
    return rows


if RESULTS and Path(RESULTS).exists():
    rows = [json.loads(line) for line in Path(RESULTS).read_text().splitlines() if line.strip()]
else:
    rows = small_run()
print(len(rows), "questions")""",
    ),
    (
        "code",
        """\
from collections import defaultdict


def share(rows: list[dict], key: str) -> dict[str, float]:
    by_cat = defaultdict(list)
    for row in rows:
        by_cat[CATEGORIES.get(row.get("category"), str(row.get("category")))].append(
            bool(row.get(key)))
    return {cat: sum(v) / len(v) for cat, v in sorted(by_cat.items())}


any_share, all_share = share(rows, "evidence_any"), share(rows, "evidence_all")
for cat in any_share:
    print(f"{cat:12s} any: {any_share[cat]:.2f}  all: {all_share[cat]:.2f}")""",
    ),
    (
        "code",
        """\
import matplotlib

matplotlib.use("Agg")  # no display needed; the figure is shown inline and saved
import matplotlib.pyplot as plt

cats = list(any_share)
xs = range(len(cats))
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar([x - 0.2 for x in xs], [any_share[c] for c in cats], width=0.4, label="any evidence")
ax.bar([x + 0.2 for x in xs], [all_share[c] for c in cats], width=0.4, label="all evidence")
ax.set_xticks(list(xs), cats)
ax.set_ylim(0, 1)
ax.set_ylabel("share of questions")
ax.set_title(f"Gold evidence in the View ({len(rows)} questions)")
ax.legend()
fig.tight_layout()
fig.savefig(WORKDIR / "evidence.png")
print("saved", WORKDIR / "evidence.png")""",
    ),
]

NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_agent_with_memory.ipynb": AGENT,
    "03_consolidation.ipynb": CONSOLIDATION,
    "04_eval_results.ipynb": EVAL,
}


def main() -> None:
    """Write every notebook next to this script."""
    for name, cells in NOTEBOOKS.items():
        nbformat.write(_nb(cells), HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
