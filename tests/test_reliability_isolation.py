"""Namespace isolation: no search, View, index item or erase ever crosses namespaces.

Hypothesis drives random sequences of ingests, searches, Views (read graph with a scripted
System 1), consolidations (scripted fold model) and deletions over namespaces chosen to
collide: prefixes of each other (``("a",)`` vs ``("a", "b")``), ``("a/b",)``, e-mail
addresses that differ by one letter, unicode, and a part that looks like the JSON key of
another namespace. Every message text carries a word unique to its namespace, so any leak
shows up as a foreign word in a result.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model
from _reliability_common import NAMESPACES, fake_embeddings, tagged_messages, yes_judge

from mnemon_langgraph.consolidation import (
    ConsolidationSettings,
    EmbeddedItemStore,
    create_consolidation_graph,
)
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore

TAG = re.compile(r"nstag(\d+)x")


def tag(i: int) -> str:
    return f"nstag{i}x"


def foreign_tags(text: str, own: int) -> set[int]:
    return {int(m) for m in TAG.findall(text)} - {own}


OPS = st.lists(
    st.tuples(
        st.sampled_from(["ingest", "ingest", "search", "view", "consolidate", "delete", "erase"]),
        st.integers(0, len(NAMESPACES) - 1),
        st.integers(1, 5),
    ),
    min_size=4,
    max_size=10,
)


class _World:
    def __init__(self, root: Path) -> None:
        self.store = MnemonStore(root / "iso.db", fake_embeddings())
        self.items = EmbeddedItemStore(self.store.journal, self.store.embeddings)
        self.judge = yes_judge()
        self.reader = create_read_graph(source=self.store, judge=self.judge, items=self.items)
        self.folder = create_consolidation_graph(
            model=deriving_model(),
            store=self.items,
            settings=ConsolidationSettings(batch_chars=700),
        )
        self.expected: dict[int, set[str]] = {i: set() for i in range(len(NAMESPACES))}
        self.batch = 0

    def own_ids(self, i: int) -> set[str]:
        return {r.id for r in self.store.journal.records(NAMESPACES[i])}

    def check_records(self, i: int) -> None:
        ns = NAMESPACES[i]
        records = list(self.store.journal.records(ns))
        assert all(tuple(r.namespace) == ns for r in records)
        assert all(not foreign_tags(r.text, i) for r in records)
        got = {m for r in records for m in r.message_ids}
        assert got == self.expected[i], (ns, got ^ self.expected[i])

    def search(self, i: int) -> None:
        ns = NAMESPACES[i]
        own = self.own_ids(i)
        for other in range(len(NAMESPACES)):
            hits = self.store.search(f"shared apple {tag(other)}", namespace=ns, k=20)
            assert {h.record.id for h in hits} <= own
            assert all(tuple(h.record.namespace) == ns for h in hits)
            assert all(not foreign_tags(h.record.text, i) for h in hits)
            assert len(hits) == min(20, len(own))  # every own record is reachable

    def view(self, i: int) -> None:
        ns = NAMESPACES[i]
        own = self.own_ids(i)
        before = len(self.judge.requests)
        other = (i + 1) % len(NAMESPACES)
        out = self.reader.invoke(
            {"messages": [HumanMessage(f"what about the shared apple {tag(other)} {tag(i)}?")]},
            context=ReadContext(namespace=ns),
        )
        view = out["view"]
        assert set(view.record_ids) <= own
        if own:
            assert view.records, view.empty_reason  # the negative checks are not vacuous
        assert not foreign_tags(view.text.replace(tag(other), ""), i)
        for item in view.items:
            assert set(item.get("record_ids", [])) <= own
        for request in self.judge.requests[before:]:
            state = request["state"]
            for row in [*state.get("records", []), *state.get("items", [])]:
                assert not foreign_tags(row["text"], i)

    def consolidate(self, i: int) -> None:
        ns = NAMESPACES[i]
        others = {j: self.items.state(NAMESPACES[j]) for j in range(len(NAMESPACES)) if j != i}
        self.folder.invoke({"namespace": ns})
        own = self.own_ids(i)
        mine = self.items.all_items(ns)
        if own:
            assert mine  # the fold wrote something, so the checks below bite
        for item in mine:
            assert tuple(item.namespace) == ns
            assert set(item.record_ids) <= own
            assert not foreign_tags(item.text, i)
        for j, state in others.items():
            assert self.items.state(NAMESPACES[j]) == state  # no other watermark moved
            other_items = self.items.all_items(NAMESPACES[j])
            assert not self.items.linked_items(ns, [r for it in other_items for r in it.record_ids])
            for it in other_items[:2]:
                assert all(tuple(g.namespace) == ns for g in self.items.group(ns, it))
        near = self.items.nearest_items(f"shared apple {tag((i + 1) % 9)}", namespace=ns, k=50)
        assert {it.id for it in near} <= {it.id for it in mine}
        assert all(not foreign_tags(t, i) for t in self.items.topics(ns))

    def run(self, op: str, i: int, n: int) -> None:
        ns = NAMESPACES[i]
        if op == "ingest":
            # the same message ids in every namespace: dedup must be per namespace
            msgs = tagged_messages(tag(i), n, prefix=f"b{self.batch % 2}-")
            self.batch += 1
            self.store.ingest(ns, msgs, origin="iso")
            self.expected[i] |= {m.id for m in msgs if m.id}
        elif op == "search":
            self.search(i)
        elif op == "view":
            self.view(i)
        elif op == "consolidate":
            self.consolidate(i)
        elif op == "delete":
            records = list(self.store.journal.records(ns))[:n]
            foreign = [
                r.id
                for j in range(len(NAMESPACES))
                if j != i
                for r in self.store.journal.records(NAMESPACES[j])
            ]
            deleted = self.store.delete_records(ns, [r.id for r in records] + foreign)
            assert set(deleted) == {r.id for r in records}  # foreign ids are ignored
            self.expected[i] -= {m for r in records for m in r.message_ids}
        elif op == "erase":
            self.store.erase_namespace(ns)
            self.expected[i] = set()
            assert self.store.journal.count(ns) == 0
            assert self.items.count(ns) == 0
            assert self.store.search("shared apple", namespace=ns) == []
        for j in range(len(NAMESPACES)):
            self.check_records(j)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(OPS)
def test_random_operations_never_cross_namespaces(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = _World(Path(tmp))
        try:
            # two namespaces that prefix each other always hold data
            world.run("ingest", 0, 3)
            world.run("ingest", 1, 3)
            for op, i, n in ops:
                world.run(op, i, n)
            world.run("view", 0, 1)
            world.run("search", 1, 1)
        finally:
            world.store.close()


def test_prefix_namespaces_fixed_example(tmp_path: Path) -> None:
    """``("a",)`` and ``("a", "b")`` and ``("a/b",)``: each sees exactly its own records."""
    world = _World(tmp_path)
    try:
        for i in (0, 1, 2):
            world.run("ingest", i, 4)
        for i in (0, 1, 2):
            world.run("search", i, 1)
            world.run("view", i, 1)
            world.run("consolidate", i, 1)
        world.run("erase", 1, 1)
        for i in (0, 2):
            assert len(world.own_ids(i)) > 0
            world.run("search", i, 1)
            world.run("view", i, 1)
    finally:
        world.store.close()
