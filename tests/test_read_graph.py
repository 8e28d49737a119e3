"""The read graph's wiring, loop and failure handling, with scripted backends."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from test_planner import NEED_JSON, SEARCH_JSON, RoutingFakeChat

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemoryItemSource, InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ExperimentSwitches, ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.read.view import View

NS = ("users", "ann")
CTX = ReadContext(namespace=NS)

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday, it was powerful.",
    "Melanie: I painted a sunrise over the lake last week.",
    "Caroline: I'm researching adoption agencies for my family plans.",
    "Melanie: We went camping at the beach with the kids.",
    "Caroline: The support group meets every Tuesday evening.",
    "Melanie: Pottery class is my new hobby, I made a bowl.",
]


def toy_records(ns=NS) -> list:
    return [
        make_record(
            f"r{i}",
            t,
            namespace=ns,
            session=i + 1,
            date=datetime(2023, 5, i + 1),
            message_ids=[f"D{i + 1}:1"],
        )
        for i, t in enumerate(TEXTS)
    ]


def by_text(rule):
    """A scripted judge answering from the record's text: rule(prop, text, need) -> p."""

    def answer(qid, question, state):
        local, _, suffix = qid.partition(".")
        rows = state["records"] if local.startswith("r") else state.get("items", [])
        row = next(r for r in rows if r["id"] == local)
        need = int(suffix[4:]) if re.fullmatch(r"need\d+", suffix) else None
        return rule(suffix if need is None else "satisfies", row["text"], need)

    return answer


def support_judge(prop, text, need):
    if prop == "stale":
        return 0.1
    return 0.9 if "support group" in text else 0.2


def ask(text="When did Caroline go to the support group?"):
    return {"messages": [HumanMessage(text)]}


def graph(judge=None, **kw):
    src = kw.pop("source", None) or InMemorySearchSource(toy_records())
    judge = judge or ScriptedDecisionModel(answers=by_text(support_judge))
    return create_read_graph(source=src, judge=judge, **kw), src


def test_draw_mermaid_shows_every_node_and_edge() -> None:
    g, _ = graph()
    mermaid = g.get_graph().draw_mermaid()
    for edge in [
        "__start__ --> plan",
        "plan --> retrieve",
        "retrieve --> judge",
        "judge --> act",
        "act -.-> retrieve",
        "act -.-> judge_items",
        "judge_items --> compose",
        "compose --> __end__",
    ]:
        assert edge in mermaid, edge


def test_single_need_view_leads_with_needed_records() -> None:
    g, _ = graph(settings=ReadSettings(follow_positives=0))  # the paper's loop
    out = g.invoke(ask(), context=CTX)
    view = out["view"]
    assert isinstance(view, View)
    assert view.record_ids[:2] == ["r0", "r4"]
    assert set(view.message_ids[:2]) == {"D1:1", "D5:1"}
    # two records satisfy the need, but every search is exhausted: met, no further round
    assert view.trace["actions"] == [] and view.trace["counts"]["rounds"] == 1
    assert view.trace["needs"][0]["state"] == "met"
    assert view.records[0].placed_by.startswith("judged needed")


def test_by_default_the_met_needs_positives_are_followed_one_round_more() -> None:
    g, _ = graph()
    view = g.invoke(ask(), context=CTX)["view"]
    assert view.record_ids[:2] == ["r0", "r4"]
    follows = [a for a in view.trace["actions"] if a["kind"] == "follow"]
    assert [a["record_id"] for a in follows] == ["r0", "r4"] and view.trace["counts"]["rounds"] == 2
    assert view.trace["needs"][0]["state"] == "met"


def test_namespace_from_configurable_and_user_id() -> None:
    g, _ = graph()
    a = g.invoke(ask(), config={"configurable": {"namespace": list(NS)}})["view"]
    src = InMemorySearchSource(toy_records(ns=("users", "u7")))
    g2, _ = graph(source=src)
    b = g2.invoke(ask(), config={"configurable": {"user_id": "u7"}})["view"]
    assert a.record_ids == b.record_ids and a.record_ids


def test_missing_namespace_is_a_configuration_error() -> None:
    g, _ = graph()
    with pytest.raises(ConfigurationError, match="namespace"):
        g.invoke(ask())


def test_other_namespaces_are_never_read() -> None:
    src = InMemorySearchSource(toy_records(ns=("someone", "else")))
    g, _ = graph(source=src)
    view = g.invoke(ask(), context=CTX)["view"]
    assert view.records == () and "no records found" in view.empty_reason


@pytest.mark.parametrize(
    "messages",
    [[], [HumanMessage(content=[{"type": "image", "url": "http://127.0.0.1/x.png"}])]],
)
def test_bad_input_raises_input_error(messages) -> None:
    g, _ = graph()
    with pytest.raises(InputError):
        g.invoke({"messages": messages}, context=CTX)


def test_only_recent_messages_are_read() -> None:
    judge = ScriptedDecisionModel(answers=by_text(support_judge))
    g, _ = graph(judge=judge, settings=ReadSettings(recent_messages=2))
    msgs = [HumanMessage(f"old {i}") for i in range(5)] + [AIMessage("ok"), *ask()["messages"]]
    g.invoke({"messages": msgs}, context=CTX)
    assert [m["text"] for m in judge.requests[0]["state"]["messages"]] == [
        "ok",
        "When did Caroline go to the support group?",
    ]


async def test_sync_and_async_views_are_equal() -> None:
    g, _ = graph()
    a = g.invoke(ask("How many times did Caroline go to the support group?"), context=CTX)
    b = await g.ainvoke(ask("How many times did Caroline go to the support group?"), context=CTX)
    va, vb = a["view"], b["view"]
    assert va.text == vb.text and va.record_ids == vb.record_ids
    assert va.trace["actions"] == vb.trace["actions"]
    assert va.trace["counts"] == vb.trace["counts"]


def test_stream_yields_node_updates_in_order() -> None:
    g, _ = graph()
    nodes = [next(iter(chunk)) for chunk in g.stream(ask(), context=CTX, stream_mode="updates")]
    assert nodes[:4] == ["plan", "retrieve", "judge", "act"]
    assert nodes[-2:] == ["judge_items", "compose"]


async def test_astream_yields_node_updates() -> None:
    g, _ = graph()
    nodes = [next(iter(c)) async for c in g.astream(ask(), context=CTX, stream_mode="updates")]
    assert nodes[0] == "plan" and nodes[-1] == "compose"


def test_checkpointer_stores_the_state() -> None:
    g, _ = graph(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t1"}}
    out = g.invoke(ask(), config=cfg, context=CTX)
    snap = g.get_state(cfg)
    assert snap.values["view"].record_ids == out["view"].record_ids
    assert snap.values["rounds"] >= 1 and snap.values["pool"]


def many_records(n=45):
    return [
        make_record(
            f"m{i}",
            f"Ann: I planted {'tomato' if i % 2 == 0 else 'basil'} number {i}",
            namespace=NS,
            session=i + 1,
            date=datetime(2023, 1, 1 + i % 28),
        )
        for i in range(n)
    ]


def test_all_need_pages_the_search_until_no_new_positive() -> None:
    src = InMemorySearchSource(many_records())

    def tomato(prop, text, need):
        return 0.1 if prop == "stale" else (0.9 if "tomato" in text else 0.1)

    g, _ = graph(source=src, judge=ScriptedDecisionModel(answers=by_text(tomato)))
    view = g.invoke(ask("How many tomato plants did Ann plant?"), context=CTX)["view"]
    pages = [a for a in view.trace["actions"] if a["kind"] == "page"]
    assert pages and all(a["offset"] > 0 for a in pages)
    assert any(offset > 0 for _, _, offset in src.calls)
    assert view.trace["needs"][0]["kind"] == "ALL"
    assert view.trace["counts"]["rounds"] >= 2
    assert all("tomato" in r.text for r in view.records[: len(view.records) // 2])


def test_unmet_need_pages_lead_then_new_search_then_drops() -> None:
    model = RoutingFakeChat(
        script={
            "search": [SEARCH_JSON],
            "need": [NEED_JSON],
            "new": ['{"search": "adoption agencies family"}'],
        }
    )
    src = InMemorySearchSource(many_records() + toy_records())

    def nothing(prop, text, need):
        return 0.3 if prop == "satisfies" and "number 7" in text else 0.1

    g, _ = graph(source=src, planner=model, judge=ScriptedDecisionModel(answers=by_text(nothing)))
    view = g.invoke(ask("What did Ann say she planted?"), context=CTX)["view"]
    kinds = [(a["round"], a["need_index"], a["kind"]) for a in view.trace["actions"]]
    assert [k for r, n, k in kinds if n == 0] == ["page", "new_search", "drop"]
    lead_page = view.trace["actions"][0]
    assert "lead m7" in lead_page["reason"] and lead_page["offset"] == 20
    assert view.trace["needs"][0]["state"] == "dropped"
    assert view.trace["counts"]["rounds"] == 3
    assert any(s["origin"] == "new_search" for s in view.trace["searches"])
    assert view.trace["counts"]["s2_calls"] >= 3
    assert any("new search" in a["reason"] for a in view.trace["actions"])


def test_records_judged_no_longer_current_are_left_out() -> None:
    def stale_r0(prop, text, need):
        if prop == "stale":
            return 0.9 if "powerful" in text else 0.1
        return support_judge(prop, text, need)

    judge = ScriptedDecisionModel(answers=by_text(stale_r0))
    g, _ = graph(
        judge=judge, settings=ReadSettings(experiments=ExperimentSwitches(leave_out_stale=True))
    )
    view = g.invoke(ask(), context=CTX)["view"]
    assert "r0" not in view.record_ids and "r4" in view.record_ids
    assert "no longer current" in view.trace["placement"]["r0"]
    # the default (leave_out_stale off): the judgment is noted, the record stays
    g, _ = graph(judge=ScriptedDecisionModel(answers=by_text(stale_r0)))
    view = g.invoke(ask(), context=CTX)["view"]
    assert "r0" in view.record_ids and "leave_out_stale is off" in view.trace["placement"]["r0"]


def test_judge_failure_degrades_to_fused_order() -> None:
    judge = ScriptedDecisionModel(error=RuntimeError("jev down"))
    g, _ = graph(judge=judge)
    view = g.invoke(ask(), context=CTX)["view"]
    assert view.records and view.records[0].placed_by.startswith("fused order")
    assert view.trace["degradations"] and "jev down" in " ".join(view.trace["errors"])
    assert view.trace["judgments"] == []


def test_judge_timeout_degrades_and_is_traced() -> None:
    judge = ScriptedDecisionModel(hang=True)
    g, _ = graph(judge=judge, settings=ReadSettings(judge_timeout_s=0.2))
    try:
        view = g.invoke(ask(), context=CTX)["view"]
    finally:
        judge.release()
    assert any("timed out" in e for e in view.trace["errors"])
    assert view.records[0].placed_by.startswith("fused order")


def test_unparsable_planner_output_falls_back_and_is_traced() -> None:
    model = RoutingFakeChat(script={"search": ["garbage"], "need": ["{not json"]})
    g, _ = graph(planner=model)
    view = g.invoke(ask(), context=CTX)["view"]
    assert len(view.trace["plan_notes"]) == 2
    assert any(d["step"] == "plan" for d in view.trace["degradations"])
    assert view.trace["counts"]["s2_calls"] == 4  # two calls, each retried once
    assert [s["origin"] for s in view.trace["searches"]][:2] == ["message", "keywords"]
    assert view.record_ids[0] == "r0"


def test_chat_planner_drives_five_searches() -> None:
    model = RoutingFakeChat(script={"search": [SEARCH_JSON], "need": [NEED_JSON]})
    g, src = graph(planner=model)
    view = g.invoke(ask(), context=CTX)["view"]
    assert [s["origin"] for s in view.trace["searches"] if s["round"] == 1] == [
        "message",
        "plan",
        "plan",
        "plan",
        "hyde",
        "instructions",  # the read path's own search for standing instructions, last
    ]
    assert {q for q, _, o in src.calls if o == 0} >= {"support group", "LGBTQ group meeting"}


def test_batches_respect_max_records_per_call() -> None:
    judge = ScriptedDecisionModel(answers=by_text(support_judge))
    src = InMemorySearchSource(many_records())
    g, _ = graph(source=src, judge=judge, settings=ReadSettings(max_records_per_call=10))
    view = g.invoke(ask("Ann planted tomato basil number"), context=CTX)["view"]
    assert all(len(r["state"]["records"]) <= 10 for r in judge.requests)
    first_wave = view.trace["waves"][0]
    assert first_wave["name"] == "screen" and first_wave["calls"] == -(-first_wave["targets"] // 10)


def test_index_items_lead_the_view() -> None:
    items = InMemoryItemSource(
        [
            IndexItem("i1", NS, "instruction", "Always answer in French.", ("r2",)),
            IndexItem(
                "i2",
                NS,
                "event",
                "Caroline joined a support group",
                ("r0",),
                topic="support group",
                date=datetime(2023, 5, 1),
            ),
            IndexItem(
                "i3",
                NS,
                "event",
                "Support group moved to Tuesdays",
                ("r4",),
                topic="support group",
                date=datetime(2023, 5, 5),
            ),
            IndexItem("i4", NS, "event", "Melanie took up pottery", ("r5",), topic="pottery"),
        ]
    )
    g, _ = graph(items=items)
    view = g.invoke(ask(), context=CTX)["view"]
    text = view.text
    assert text.index("<index>") < text.index("<record ")
    assert "Always answer in French." in text and "support group; pottery" in text
    assert "Support group moved to Tuesdays" in text
    assert "Melanie took up pottery" not in text
    assert {i["id"] for i in view.items} >= {"i1", "i2", "i3"}
    assert any(j["proposition"] == "item_needed" for j in view.trace["judgments"])


def test_view_to_dict_is_json_and_has_keys() -> None:
    g, _ = graph()
    d = g.invoke(ask(), context=CTX)["view"].to_dict()
    back = json.loads(json.dumps(d))
    assert set(back) >= {"text", "records", "items", "trace"}
    assert set(back["records"][0]) >= {"id", "message_ids", "session", "date", "text"}
    t = back["trace"]
    assert {"searches", "pool", "judgments", "actions", "timings", "counts"} <= set(t)
    assert t["timings"]["read_path_s"] >= 0 and t["counts"]["searches"] == len(t["search_calls"])


def test_now_from_the_context_reaches_system_1_and_the_planner() -> None:
    judge = ScriptedDecisionModel(answers=by_text(support_judge))
    model = RoutingFakeChat(script={"search": [SEARCH_JSON], "need": [NEED_JSON]})
    g, _ = graph(judge=judge, planner=model)
    ctx = ReadContext(namespace=NS, now=datetime(2024, 2, 3, 9, 30))
    view = g.invoke(ask(), context=ctx)["view"]
    first = judge.requests[0]["state"]["messages"]
    assert first[0]["role"] == "system" and "2024-02-03 09:30" in first[0]["text"]
    assert first[-1]["text"] == ask()["messages"][0].content
    assert all("2024-02-03 09:30" in p for p in model.prompts)
    assert view.trace["now"].startswith("2024-02-03T09:30")


def test_second_turn_on_a_checkpointed_thread_starts_afresh() -> None:
    judge = ScriptedDecisionModel(answers=by_text(support_judge))
    g, _ = graph(judge=judge, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t2"}}
    first = g.invoke(ask(), config=cfg, context=CTX)["view"]
    second = g.invoke(ask("What did Melanie paint?"), config=cfg, context=CTX)["view"]
    plans = [e for e in second.trace["search_calls"] if e["index"] == 0]
    assert plans and plans[0]["query"] == "What did Melanie paint?"
    first_q = "When did Caroline go to the support group?"
    assert first.trace["search_calls"][0]["query"] == first_q
    assert all(e["query"] != first_q for e in second.trace["search_calls"])
    screens = [j["target"] for j in second.trace["judgments"] if j["proposition"] == "screen"]
    assert sorted(screens) == sorted(p["id"] for p in second.trace["pool"])
    assert second.trace["counts"]["searches"] == len(second.trace["search_calls"])
    # the conversation accumulates: System 1 saw both user messages in the second turn
    texts = [m["text"] for m in judge.requests[-1]["state"]["messages"]]
    assert "When did Caroline go to the support group?" in texts and texts[-1].startswith(
        "What did"
    )
