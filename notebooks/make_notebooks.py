"""Write the notebooks of this folder from the cell sources below, executed.

Run ``python notebooks/make_notebooks.py --execute`` after editing a cell (the notebooks are
committed with their outputs, so a reader on GitHub sees the Views and figures); the
``.ipynb`` files are generated, so edit them here rather than in Jupyter. Every notebook runs
top to bottom offline (the bundled MiniLM embedder, the local judge, fake or scripted chat
models); a cell that would use a real model runs only when its API key is set.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

FIND_DATA = '''\
import tempfile
from pathlib import Path


def find_repo(start: Path | None = None) -> Path:
    """The repository root (the folder holding langgraph.json), else the start folder."""
    start = start or Path.cwd()
    for folder in [start, *start.parents]:
        if (folder / "langgraph.json").exists():
            return folder
    return start


REPO = find_repo()
# an invented year-long conversation (LoCoMo layout) shipped with the notebooks
LONG_SAMPLE = REPO / "notebooks" / "data" / "allotment_year.json"
WORKDIR = Path(tempfile.mkdtemp(prefix="mnemon-notebook-"))  # scratch: journals, figures
print("sample:", LONG_SAMPLE.relative_to(REPO))'''


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
act → compose). This notebook ingests a year of chat between two friends (an invented
conversation shipped in `notebooks/data/`, ten sessions, 600 turns — far more than a View
holds), looks at the Views for a few questions and asks why a record is in a View. Everything
runs offline: the bundled MiniLM embedder, the rule planner and the local judge.""",
    ),
    ("code", FIND_DATA),
    (
        "code",
        """\
from mnemon_langgraph.loaders import load_locomo

conversation = load_locomo(LONG_SAMPLE)[0]
messages, origin = conversation.messages, conversation.origin
# questions written with the sample, with the turns that answer them (category 5 has none)
questions = [q for q in conversation.qa if q.get("category") != 5][:4]
print(len(messages), "messages in", len({m.session for m in messages}), "sessions")
print(messages[0])""",
    ),
    (
        "md",
        """\
## The write path: chunk, journal, index (no model call)""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import MnemonStore

store = MnemonStore(WORKDIR / "journal.db")
NAMESPACE = ("demo",)
result = store.ingest(NAMESPACE, messages, origin=origin)
print(result.records_written, "records from", result.messages_written, "messages")
print(next(store.records(NAMESPACE, limit=1)).render())""",
    ),
    (
        "md",
        """\
## The read path: a View per question

The namespace (whose memory) is given per run, so one compiled graph serves every user. Each
View holds a few of the journal's records: is the turn that answers the question among them?""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import ReadContext, create_read_graph

read_graph = create_read_graph(source=store)
total = store.count(NAMESPACE)
views = []
for q in questions:
    out = read_graph.invoke(
        {"messages": [("user", q["question"])]}, context=ReadContext(namespace=NAMESPACE)
    )
    view = out["view"]
    views.append(view)
    shown = set(view.message_ids)
    found = [e for e in q["evidence"] if e in shown]
    print(
        f"Q: {q['question']}\\n   {len(view.records)} of {total} records in the View; "
        f"answering turns shown: {len(found)} of {len(q['evidence'])} {q['evidence']}"
    )""",
    ),
    (
        "code",
        """\
print(views[0].text[:2000])""",
    ),
    (
        "md",
        """\
`print` shows the View as the agent reads it; as a cell's last expression Jupyter shows it as
a page: the records in the blocks the agent sees, each with System 1's judgments
(proposition, p, round) and the need it serves, the need table, the budget used against the
budget, and the pooled records left out with why.""",
    ),
    (
        "code",
        """\
views[0]""",
    ),
    (
        "md",
        """\
## Why is this record in the View?

`explain(view, record_id)` reads the View's trace: the searches that found the record, every
System 1 judgment about it (the judge's probability that the record is worth a look, needed,
or replaced by a later one) and the rule that placed it.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import explain

view = next((v for v in views if v.records), views[0])
if view.records:
    print(explain(view, view.record_ids[0]))
else:
    print("empty View:", view.empty_reason)""",
    ),
    (
        "md",
        """\
`explain` returns a string (print it, compare it); Jupyter shows it as a table. The trace
(`show_trace`) holds the whole turn: the needs, every search, the actions and counts.""",
    ),
    (
        "code",
        """\
explain(view, view.record_ids[0]) if view.records else view.empty_reason""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read import show_trace

show_trace(view)""",
    ),
    (
        "md",
        """\
## The memory itself

`show_memory` shows a namespace's records as a timeline — sessions by date — with the records
a View used marked (`print` gives one line per record, `*` for those in the View).""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read import show_memory

show_memory(store, NAMESPACE, view=view, limit=40)""",
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

1. **as nodes of your own LangGraph graph** (`add_memory`, or `memory_nodes` for your own
   wiring): `with_view` wraps your model node so the model sees the View as its first
   message (a system message), and a `remember` node writes the turn afterwards;
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

from mnemon_langgraph import MnemonStore
from mnemon_langgraph.loaders import load_jsonl


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


from mnemon_langgraph.loaders import SAMPLE_PATH

sample = load_jsonl(SAMPLE_PATH)  # the 40-message conversation bundled with the package
store = MnemonStore(WORKDIR / "journal.db")
store.ingest(("users", "noor"), sample, origin="sample")
print(store.count(("users", "noor")), "records for noor")""",
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

from mnemon_langgraph import add_memory

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
print(list(store.records(("users", "noor")))[-1].text)""",
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

from mnemon_langgraph import MnemonMiddleware


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

from mnemon_langgraph import MnemonStore
from mnemon_langgraph.loaders import load_jsonl


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


from mnemon_langgraph.loaders import SAMPLE_PATH

sample = load_jsonl(SAMPLE_PATH)  # the 40-message conversation bundled with the package
store = MnemonStore(WORKDIR / "journal.db")
result = store.ingest(("noor",), sample, origin="sample")
print(result.records_written, "records from", result.messages_written, "messages")""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import create_consolidation_graph

job = create_consolidation_graph(store=store, model=ScriptedFolder())
report = job.invoke({"namespace": ("noor",)})["report"]
print(report.stop_reason, "— items added:", report.items_added)
print("watermark:", report.watermark)""",
    ),
    (
        "code",
        """\
items = store.item_store()  # the index beside the records, on either backend
for item in items.instructions(("noor",)):
    print("instruction:", item.text, "<- records", item.record_ids)
print("topics:", items.topics(("noor",)))""",
    ),
    (
        "md",
        """\
The records and what the consolidation made of them, together: each item links to the records
it came from.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph.read import show_memory

show_memory(store, ("noor",), items=items, limit=12)""",
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
from mnemon_langgraph import ReadContext, create_read_graph

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

    real_job = create_consolidation_graph(store=store, model=init_chat_model("openai:gpt-4.1-mini"))
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
turns reach the View, by question category. This notebook reads the `results.jsonl` of a
`mnemon eval locomo` run when one is given in `MNEMON_RESULTS`; otherwise it makes a small run
here with the same harness (`run_locomo_eval`, offline: rule planner, local judge) on the first
questions of the invented conversation shipped in `notebooks/data/` (LoCoMo's layout, so
`mnemon eval locomo` reads it too; the stored outputs below come from it). Category 5
(adversarial: the answer is not in the conversation) has no evidence to find and is left out,
as in the harness's scores.""",
    ),
    ("code", FIND_DATA),
    (
        "code",
        """\
import json
import os

RESULTS = os.environ.get("MNEMON_RESULTS")
N_QUESTIONS = 12  # questions of the small run; raise it for a real look
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DATA = LONG_SAMPLE
print("results of:", RESULTS and Path(RESULTS).name or f"a small run on {DATA.name}")""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import MnemonStore, create_read_graph
from mnemon_langgraph.eval.locomo import EvalConfig, run_locomo_eval


def small_run(out_dir: Path) -> Path:
    \"\"\"Run the evaluation harness on a few questions; returns its results.jsonl.\"\"\"
    with MnemonStore(WORKDIR / "journal.db") as store:
        run_locomo_eval(
            [DATA],
            out_dir,
            graph=create_read_graph(source=store),
            store=store,
            config=EvalConfig(limit_questions=N_QUESTIONS, baseline_ks=(6, 20), plots=False),
        )
    return out_dir / "results.jsonl"


path = Path(RESULTS) if RESULTS else small_run(WORKDIR / "eval")
rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
# the fields `mnemon eval locomo` writes: any_hit / all_hit per question (None: no gold)
scored = [r for r in rows if r.get("category") in CATEGORIES and r.get("all_hit") is not None]
print(len(rows), "questions,", len(scored), "scored (categories 1-4 with gold evidence)")""",
    ),
    (
        "code",
        """\
from collections import defaultdict


def share(rows: list[dict], key: str) -> dict[str, tuple[float, int]]:
    \"\"\"Per category: the share of questions where ``key`` is true, and how many.\"\"\"
    by_cat = defaultdict(list)
    for row in rows:
        by_cat[CATEGORIES[row["category"]]].append(bool(row[key]))
    return {cat: (sum(v) / len(v), len(v)) for cat, v in sorted(by_cat.items())}


any_share, all_share = share(scored, "any_hit"), share(scored, "all_hit")
for cat, (value, n) in any_share.items():
    print(f"{cat:12s} n={n:3d}  any: {value:.2f}  all: {all_share[cat][0]:.2f}")""",
    ),
    (
        "code",
        """\
import matplotlib.pyplot as plt

cats = list(any_share)
xs = range(len(cats))
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar([x - 0.2 for x in xs], [any_share[c][0] for c in cats], width=0.4, label="any evidence")
ax.bar([x + 0.2 for x in xs], [all_share[c][0] for c in cats], width=0.4, label="all evidence")
ax.set_xticks(list(xs), [f"{c}\\n(n={any_share[c][1]})" for c in cats])
ax.set_ylim(0, 1)
ax.set_ylabel("share of questions")
ax.set_title(f"Gold evidence in the View ({len(scored)} scored questions)")
ax.legend()
fig.tight_layout()
fig.savefig(WORKDIR / "evidence.png")
print("saved evidence.png in the notebook's scratch folder")
plt.show()  # shown inline, below""",
    ),
]

DOCUMENTS = [
    (
        "md",
        """\
# 05 · Memory and documents in one View

The read path reads **any store that returns dated records**, so one View can draw on the
user's conversation, a team's shared memory and a LangChain vector store of documents at once,
within one budget. This notebook builds the three, reads them through one read graph
(`create_read_graph(sources=...)`), looks at which source each record of the View came from,
and asks why a document is in it. Everything runs offline: the bundled MiniLM embedder (as a
LangChain `Embeddings`), the rule planner and the local judge.""",
    ),
    (
        "code",
        """\
import tempfile
from pathlib import Path

from mnemon_langgraph.search.embeddings import default_embeddings

WORKDIR = Path(tempfile.mkdtemp(prefix="mnemon-notebook-"))  # scratch: the journal
embeddings = default_embeddings()  # the bundled MiniLM, a LangChain Embeddings
print(type(embeddings).__name__, len(embeddings.embed_query("hello")), "dimensions")""",
    ),
    (
        "md",
        """\
## Documents: any LangChain vector store

A company handbook in LangChain's `InMemoryVectorStore` (FAISS, Chroma, PGVector … work the
same way through `as_retriever()`). `RetrieverSource` turns each document into dated records:
the date from `metadata["date"]` (a document without one is undated), the title as the
speaker and as the session that groups one title's documents, a long document cut the way
the journal cuts a long message.""",
    ),
    (
        "code",
        """\
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from mnemon_langgraph.read.sources import RetrieverSource

handbook = InMemoryVectorStore(embeddings)
handbook.add_documents(
    [
        Document(
            "Every employee has 25 days of paid vacation a year. Unused days carry over "
            "until the end of March of the next year.",
            metadata={"title": "Handbook: leave", "date": "2024-01-15"},
        ),
        Document(
            "Vacation requests longer than one week need the team lead's approval two "
            "weeks in advance.",
            metadata={"title": "Handbook: leave", "date": "2024-01-15"},
        ),
        Document("The office is closed on Fridays in August.", metadata={"title": "Facilities"}),
        Document(
            "Expense reports are due by the fifth working day of the month.",
            metadata={"title": "Handbook: money", "date": "2023-11-02"},
        ),
    ],
    ids=["leave-1", "leave-2", "facilities-1", "money-1"],  # stable record ids across runs
)
docs = RetrieverSource(handbook.as_retriever())
for hit in docs.search("vacation in August", k=3):
    print(hit.record.render(), "\\n")""",
    ),
    (
        "md",
        """\
## The user's memory and the team's, in one store

Ada's conversation is in her own namespace; her team's decisions are in a namespace of the
same `MnemonStore` that `SharedNamespace` reads (read-only: nothing of the package writes
there through it). Its template `("teams", "{team_id}")` is filled from each run.""",
    ),
    (
        "code",
        """\
from datetime import datetime

from langchain_core.messages import AIMessage, HumanMessage

from mnemon_langgraph import MnemonStore
from mnemon_langgraph.read.sources import SharedNamespace

store = MnemonStore(WORKDIR / "journal.db")
ada = ("users", "ada")
store.add_messages(
    ada,
    [
        HumanMessage("My sister gets married in Porto on 16 August.",
                     additional_kwargs={"timestamp": "2024-05-02T09:00:00"}),
        AIMessage("Congratulations! Do you want to plan the trip?",
                  additional_kwargs={"timestamp": "2024-05-02T09:00:05"}),
        HumanMessage("Yes, I'd like to stay in Portugal for two weeks after it.",
                     additional_kwargs={"timestamp": "2024-05-02T09:01:00"}),
    ],
)
store.add_messages(
    ("teams", "infra"),
    [
        HumanMessage("Decision: infra freezes deploys from 12 to 23 August for the migration.",
                     additional_kwargs={"timestamp": "2024-04-20T15:00:00"}),
        HumanMessage("Whoever is on call in August cannot take more than a week off.",
                     additional_kwargs={"timestamp": "2024-04-20T15:02:00"}),
    ],
)
team = SharedNamespace(store, ("teams", "{team_id}"))
print(store.count(ada), "records of Ada;", store.count(("teams", "infra")), "of the team")""",
    ),
    (
        "md",
        """\
## One read graph, one View

`sources=` names each source. The planner's searches go to every source, the pool keeps a
share for each, and one budget holds the View; each quoted record says its source.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import ReadContext, create_read_graph

read_graph = create_read_graph(sources={"memory": store, "team": team, "docs": docs})
out = read_graph.invoke(
    {"messages": [HumanMessage("Can I take two weeks off for my sister's wedding?")]},
    context=ReadContext(user_id="ada", now=datetime(2024, 6, 1)),
    config={"configurable": {"team_id": "infra"}},
)
view = out["view"]
print(view.text)""",
    ),
    (
        "code",
        """\
from collections import Counter

chars = Counter()
for rec in view.records:
    chars[rec.source] += len(rec.text)
print("records in the View by source:", dict(Counter(rec.source for rec in view.records)))
print("characters by source:", dict(chars))""",
    ),
    (
        "md",
        """\
`explain` says where a record came from and why it won its place.""",
    ),
    (
        "code",
        """\
from mnemon_langgraph import explain

document = next(rec for rec in view.records if rec.source == "docs")
print(explain(view, document.id))""",
    ),
    (
        "md",
        """\
## A retriever shared by all users, filtered per user

A retriever names no namespace: every user reads the same documents. Where the vector store
filters by metadata, `search_kwargs` can depend on the run (here a function of its fields,
as `InMemoryVectorStore` filters with a function); the read graph binds it per run, and an
unbound source refuses to search.""",
    ),
    (
        "code",
        """\
payslips = InMemoryVectorStore(embeddings)
payslips.add_documents(
    [
        Document("Payslip May 2024: 12 vacation days left.", metadata={"user_id": "ada"}),
        Document("Payslip May 2024: 3 vacation days left.", metadata={"user_id": "bob"}),
    ],
    ids=["payslip-ada-2024-05", "payslip-bob-2024-05"],
)
mine = RetrieverSource(
    payslips.as_retriever(),
    search_kwargs=lambda f: {"filter": lambda d: d.metadata["user_id"] == f["user_id"]},
)
for user in ("ada", "bob"):
    hits = mine.for_run({"user_id": user}).search("vacation days left")
    print(user, "->", [h.record.text for h in hits])
try:
    mine.search("vacation days left")
except Exception as exc:  # ConfigurationError: never an unfiltered search
    print(type(exc).__name__, "-", str(exc)[:80], "…")
store.close()""",
    ),
]

NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_agent_with_memory.ipynb": AGENT,
    "03_consolidation.ipynb": CONSOLIDATION,
    "04_eval_results.ipynb": EVAL,
    "05_memory_and_documents.ipynb": DOCUMENTS,
}


# Texts whose vectors identify the embedder's arithmetic on the executing machine.
_PROBES = (
    "I moved from Leeds to Rotterdam in May, for the new job.",
    "Mira planted broad beans on the allotment in March.",
    "What does Tomás's sister do in Lisbon?",
)


def embedder_fingerprint() -> str:
    """sha256 of the default embedder's float32 vectors for a few fixed texts.

    The int8 embedder's vectors depend on the CPU's integer kernels (an AVX-512 VNNI machine
    and an AVX2 one round differently), and a last-bit change can swap two records' ranks.
    The notebooks store the fingerprint of the machine that executed them, so the rerun test
    knows whether exact outputs are to be expected on the machine it runs on.
    """
    import hashlib

    import numpy as np

    from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

    vectors = np.asarray(MiniLMEmbeddings().embed_documents(list(_PROBES)), dtype=np.float32)
    return hashlib.sha256(vectors.tobytes()).hexdigest()[:16]


def execute(nb: nbformat.NotebookNode, *, timeout: int = 600) -> nbformat.NotebookNode:
    """Run ``nb`` top to bottom in a fresh kernel (from this folder) and return it, with the
    executing machine's :func:`embedder_fingerprint` in its metadata."""
    from nbclient import NotebookClient

    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
    ).execute()
    nb.metadata["mnemon"] = {"embedder_fingerprint": embedder_fingerprint()}
    return nb


def main(argv: list[str] | None = None) -> None:
    """Write every notebook next to this script; ``--execute`` stores them with outputs.

    The notebooks are committed executed (figures and Views visible on GitHub): run
    ``python notebooks/make_notebooks.py --execute`` after editing a cell.
    """
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--execute", action="store_true", help="run each notebook and keep outputs")
    parser.add_argument("names", nargs="*", help="only these notebooks (default: all)")
    args = parser.parse_args(argv)
    for name, cells in NOTEBOOKS.items():
        if args.names and name not in args.names:
            continue
        nb = _nb(cells)
        if args.execute:
            nb = execute(nb)
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
