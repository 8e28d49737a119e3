"""Tests of the BEAM chat.json loader on a small synthetic file."""

from __future__ import annotations

import itertools
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.beam import (
    BeamQuestion,
    load_beam_chat,
    messages_from_beam,
    parse_time_anchor,
)
from mnemon_langgraph.eval.beam_eval import render_beam_markdown

CHAT = [
    {
        "batch_number": 1,
        "time_anchor": "March-15-2024",
        "turns": [
            [
                {"role": "user", "content": "I started learning Rust.", "id": 1},
                {"role": "assistant", "content": "Great choice!", "id": 2},
            ],
            [{"role": "user", "content": "   "}],
        ],
    },
    {
        "time_anchor": "2024-04-02",
        "turns": [
            {"role": "user", "content": "My cat is called Miso."},
            {"role": "tool", "text": "lookup done", "time_anchor": "April 3, 2024"},
        ],
    },
]


def test_load_beam_chat(tmp_path: Path) -> None:
    path = tmp_path / "conv1" / "chat.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CHAT), encoding="utf-8")
    messages = load_beam_chat(path.parent)
    assert [m.text for m in messages] == [
        "I started learning Rust.",
        "Great choice!",
        "My cat is called Miso.",
        "lookup done",
    ]
    assert [m.session for m in messages] == [1, 1, 2, 2]
    assert [m.role for m in messages] == ["user", "assistant", "user", "user"]
    assert messages[0].id == "1"
    assert messages[2].id == "b2:t0"
    assert messages[0].timestamp == datetime(2024, 3, 15)
    assert messages[2].timestamp == datetime(2024, 4, 2)
    assert messages[3].timestamp == datetime(2024, 4, 3)


def test_dict_top_level_and_bare_batches() -> None:
    messages = messages_from_beam({"chat": [[{"role": "user", "content": "hi"}]]})
    assert len(messages) == 1
    assert messages[0].timestamp is None
    assert messages[0].session == 1


@pytest.mark.parametrize("bad", [{"foo": 1}, "text", [{"no_turns": []}], [3]])
def test_malformed_shapes_raise(bad: object) -> None:
    with pytest.raises(InputError):
        messages_from_beam(bad)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        load_beam_chat(tmp_path / "nope.json")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("March-15-2024", datetime(2024, 3, 15)),
        ("March 15th, 2024", datetime(2024, 3, 15)),
        ("15 March 2024", datetime(2024, 3, 15)),
        ("2024-03-15T10:30:00Z", datetime(2024, 3, 15, 10, 30)),
        ("2024/03/15", datetime(2024, 3, 15)),
        ("someday", None),
        (None, None),
    ],
)
def test_parse_time_anchor(value: object, expected: datetime | None) -> None:
    assert parse_time_anchor(value) == expected


# -- the release's shape (invented text): dates on first messages, plan markers, questions --

RELEASE_CHAT = [
    {
        "batch_number": 1,
        "time_anchor": None,
        "turns": [
            [
                {
                    "role": "user",
                    "id": 0,
                    "time_anchor": "March-15-2024",
                    "index": "1,1",
                    "question_type": "main_question",
                    "content": "I am planning a vegetable garden with raised beds. ->-> 1,1",
                },
                {"role": "assistant", "id": 1, "content": "Raised beds drain well; start small."},
            ],
            [
                {
                    "role": "user",
                    "id": 2,
                    "index": "1,2",
                    "question_type": "followup_question",
                    "content": "My beds are cedar, two metres long. ->-> 1,2",
                },
                {
                    "role": "assistant",
                    "id": 3,
                    "content": "Cedar resists rot." + " " * 500 + "Fine.",
                },
            ],
        ],
    },
    {
        "batch_number": 2,
        "time_anchor": None,
        "turns": [
            [
                {
                    "role": "user",
                    "id": 4,
                    "time_anchor": "April-20-2024",
                    "index": "2,1",
                    "content": "I replaced the cedar beds with stone ones. ->-> 2,1",
                },
                {"role": "assistant", "id": 5, "content": "/\n" * 50 + "Stone keeps heat."},
            ]
        ],
    },
]

RELEASE_QUESTIONS = {
    "abstention": [{"question": "What colour is my shed?", "ideal_response": "Not mentioned."}],
    "information_extraction": [
        {"question": "How long are my beds?", "answer": "two metres", "source_chat_ids": [2]}
    ],
    "knowledge_update": [
        {
            "question": "What are my beds made of?",
            "answer": "stone",
            "source_chat_ids": {"original_info": [2], "updated_info": [4]},
        }
    ],
    "event_ordering": [
        {
            "question": "In which order did I talk about beds?",
            "answer": "plan, cedar, stone",
            "source_chat_ids": [0, [2, 4]],
        }
    ],
    "temporal_reasoning": [
        {
            "question": "How long between planning and replacing?",
            "answer": "about five weeks",
            "source_chat_ids": {"first_event": [0], "second_event": [4]},
        }
    ],
}


def _release_tree(root: Path, chats: int = 2) -> Path:
    for n in range(1, chats + 1):
        folder = root / "chats" / "100K" / str(n)
        (folder / "probing_questions").mkdir(parents=True)
        (folder / "chat.json").write_text(json.dumps(RELEASE_CHAT), encoding="utf-8")
        (folder / "probing_questions" / "probing_questions.json").write_text(
            json.dumps(RELEASE_QUESTIONS), encoding="utf-8"
        )
    return root


def test_release_shape_dates_markers_and_degenerate_text(tmp_path: Path) -> None:
    from mnemon_langgraph.eval.beam import load_beam_conversation

    conv = load_beam_conversation(_release_tree(tmp_path, 1) / "chats" / "100K" / "1")
    assert conv.id == "100K/1" and conv.tier == "100K"
    by_id = {m.id: m for m in conv.messages}
    # the batch's anchor is null: the first message's anchor dates the whole batch
    assert [by_id[i].timestamp for i in "0123"] == [datetime(2024, 3, 15)] * 4
    assert by_id["4"].timestamp == by_id["5"].timestamp == datetime(2024, 4, 20)
    assert [by_id[i].session for i in "012345"] == [1, 1, 1, 1, 2, 2]
    assert by_id["0"].text == "I am planning a vegetable garden with raised beds."
    assert "->->" not in " ".join(m.text for m in conv.messages)
    assert by_id["3"].text == "Cedar resists rot. Fine."
    assert by_id["5"].text.count("/\n") == 3 and by_id["5"].text.endswith("Stone keeps heat.")


def test_questions_evidence_rules(tmp_path: Path) -> None:
    from mnemon_langgraph.eval.beam import load_beam_conversation

    conv = load_beam_conversation(_release_tree(tmp_path, 1) / "chats" / "100K" / "1")
    ev = {q.ability: q.evidence for q in conv.questions}
    assert ev["abstention"] == []
    assert ev["information_extraction"] == ["2"]
    assert ev["knowledge_update"] == ["4"]  # the updated statement only
    assert ev["event_ordering"] == ["0", "2", "4"]  # nested list opened
    assert ev["temporal_reasoning"] == ["0", "4"]
    answers = {q.ability: q.answer for q in conv.questions}
    assert answers["abstention"] == "Not mentioned."


def test_clean_text_bounds_a_huge_message() -> None:
    from mnemon_langgraph.eval.beam import clean_text
    from mnemon_langgraph.types import MAX_MESSAGE_CHARS

    huge = clean_text("word " * 60_000)
    assert len(huge) <= MAX_MESSAGE_CHARS and huge.endswith("over the message size limit]")


def test_bad_evidence_and_empty_folders(tmp_path: Path) -> None:
    from mnemon_langgraph.eval.beam import find_beam_conversations, load_beam_questions

    with pytest.raises(InputError, match="no <tier>"):
        find_beam_conversations(tmp_path)
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps({"x": [{"question": "q", "source_chat_ids": ["two"]}]}))
    with pytest.raises(InputError, match="message ids"):
        load_beam_questions(bad)


def test_cli_eval_beam_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnemon_langgraph.cli import main

    root = _release_tree(tmp_path / "beam", 2)
    out = tmp_path / "out"
    args = [
        "eval",
        "beam",
        str(root),
        "--out",
        str(out),
        "--embeddings",
        "fake",
        "--embedding-cache",
        str(tmp_path / "cache.sqlite"),
        "--baseline-k",
        "3",
        "--no-progress",
    ]
    assert main(args) == 0
    assert "8 scored questions (2 apart)" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["conversations"] == 2
    assert summary["by_tier"]["100K"]["n"] == 8
    assert summary["by_tier"]["100K"]["read_seconds_first_median"] is not None
    assert "turns+rrf@view" in summary["baselines"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sum(r["first_read"] for r in rows) == 2
    assert {r["category"] for r in rows if not r["scored"]} == {"abstention"}
    # the tiny conversation fits the View: the evidence is found
    assert all(r["all_hit"] for r in rows if r["scored"])
    assert [Path(p).name for p in summary["plots"]] == [
        "evidence_vs_chars.png",
        "evidence_by_category.png",
    ]
    assert main(["eval", "summarize", str(out), "--no-plots"]) == 0  # rebuilt as BEAM's
    assert json.loads((out / "summary.json").read_text())["by_tier"]["100K"]["n"] == 8
    assert main(["eval", "misses", str(out)]) == 0
    assert main([*args, "--conversations", "100K/9"]) == 2
    (root / "chats" / "100K" / "1" / "probing_questions" / "probing_questions.json").write_text(
        json.dumps({"information_extraction": [{"question": "q", "source_chat_ids": [99]}]})
    )
    assert main(args) == 2  # evidence naming no message: refused before any ingest


_REPO = Path(__file__).resolve().parents[1]
BEAM_DEV = next(
    (
        p
        for p in (
            Path(os.environ.get("MNEMON_BEAM_DEV", "/nonexistent")),
            _REPO.parent / "shared" / "data" / "beam-dev",  # a checkout beside shared/
            _REPO.parents[1] / "shared" / "data" / "beam-dev",  # a worktree under wt/
        )
        if p.is_dir()
    ),
    _REPO.parent / "shared" / "data" / "beam-dev",
)


@pytest.mark.skipif(not BEAM_DEV.is_dir(), reason="BEAM dev data not available")
def test_the_real_dev_files_load_and_every_evidence_id_resolves() -> None:
    from mnemon_langgraph.eval.beam import find_beam_conversations, load_beam_conversation

    found = find_beam_conversations(BEAM_DEV)
    assert [c.parent.name for _, c in found] == ["100K"] * 10
    for tier, folder in found:
        conv = load_beam_conversation(folder, tier)
        ids = {m.id for m in conv.messages}
        assert len(conv.questions) == 20
        assert all(set(q.evidence) <= ids for q in conv.questions)
        assert all(m.timestamp is not None for m in conv.messages)


# -- longer conversations from shorter ones (--concat) --------------------------------------


def _shifted_chat(days: int, word: str) -> list[dict[str, object]]:
    """RELEASE_CHAT with other text and its dates moved ``days`` (may be earlier)."""
    from datetime import timedelta

    chat = json.loads(json.dumps(RELEASE_CHAT).replace("bed", word))
    for batch in chat:
        for pair in batch["turns"]:
            for turn in pair:
                if turn.get("time_anchor"):
                    when = parse_time_anchor(turn["time_anchor"])
                    assert when is not None
                    turn["time_anchor"] = (when + timedelta(days=days)).strftime("%B-%d-%Y")
    return chat


def _tree_of(root: Path, chats: dict[str, list[dict[str, object]]]) -> Path:
    for n, chat in chats.items():
        folder = root / "100K" / n
        (folder / "probing_questions").mkdir(parents=True)
        (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
        (folder / "probing_questions" / "probing_questions.json").write_text(
            json.dumps(RELEASE_QUESTIONS).replace("bed", "plot" if n == "2" else "bed"),
            encoding="utf-8",
        )
    return root


def test_parse_concat_spec_ranges_and_refusals() -> None:
    from mnemon_langgraph.eval.beam import parse_concat_spec

    assert parse_concat_spec("1M-cat=100K/1-3,100K/7") == (
        "1M-cat",
        ["100K/1", "100K/2", "100K/3", "100K/7"],
    )
    for bad in ("100K/1,100K/2", "=100K/1,100K/2", "a/b=100K/1,100K/2", "x=100K/1", "x=100K/3-1"):
        with pytest.raises(InputError):
            parse_concat_spec(bad)
    with pytest.raises(InputError, match="named twice"):
        parse_concat_spec("x=100K/1-2,100K/2")


def test_concatenation_renumbers_redates_and_keeps_evidence(tmp_path: Path) -> None:
    from mnemon_langgraph.eval.beam import concatenate_conversations, load_beam_conversation

    root = _tree_of(
        tmp_path, {"1": RELEASE_CHAT, "2": _shifted_chat(-100, "plot"), "3": RELEASE_CHAT}
    )
    parts = [load_beam_conversation(root / "100K" / n) for n in "123"]
    cat = concatenate_conversations(parts, "500K-cat")
    assert cat.tier == "500K-cat" and cat.id == "500K-cat/100K-1+100K-2+100K-3"
    # one history: every part's messages in order, ids renumbered past the previous part's
    assert [m.id for m in cat.messages] == [str(i) for i in range(18)]
    assert [m.text for m in cat.messages] == [m.text for p in parts for m in p.messages]
    assert [m.session for m in cat.messages] == [1, 1, 1, 1, 2, 2] + [3] * 4 + [4] * 2 + [5] * 4 + [
        6
    ] * 2
    stamps = [m.timestamp for m in cat.messages]
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(stamps))
    # part 2 (dated 100 days before part 1) starts the day after part 1's last date, and
    # keeps its own spacing (36 days between its two batches)
    assert stamps[6] == datetime(2024, 4, 21) and stamps[10] == datetime(2024, 5, 27)
    assert stamps[12] == datetime(2024, 5, 28)
    # every question of every part, its evidence naming the same text in the whole history
    assert len(cat.questions) == 3 * len(parts[0].questions)
    by_id = {m.id: m for m in cat.messages}
    for k, part in enumerate(parts):
        own = {m.id: m for m in part.messages}
        mine = [q for q in cat.questions if q.origin == part.id]
        assert [q.question for q in mine] == [q.question for q in part.questions]
        for old, new in zip(part.questions, mine, strict=False):
            assert [by_id[e].text for e in new.evidence] == [own[e].text for e in old.evidence]
            assert all(int(e) >= 6 * k for e in new.evidence)
    ku = [q.evidence for q in cat.questions if q.ability == "knowledge_update"]
    assert ku == [["4"], ["10"], ["16"]]


def test_concatenation_prefixes_other_ids_and_refuses_bad_evidence() -> None:
    from mnemon_langgraph.eval.beam import BeamConversation, concatenate_conversations
    from mnemon_langgraph.types import Message

    a = BeamConversation("100K/a", "100K", [Message("x", "user", id="m1", session=1)])
    b = BeamConversation(
        "100K/b",
        "100K",
        [Message("y", "user", id="m1", session=1)],
        [BeamQuestion("information_extraction", 0, "q", "", ["m1"])],
    )
    cat = concatenate_conversations([a, b], "x")
    assert [m.id for m in cat.messages] == ["1:m1", "2:m1"]
    assert cat.questions[0].evidence == ["2:m1"] and cat.questions[0].origin == "100K/b"
    assert [m.timestamp for m in cat.messages] == [None, None]  # undated stays undated
    bad = BeamConversation(
        "100K/c", "100K", b.messages, [BeamQuestion("information_extraction", 0, "q", "", ["9"])]
    )
    with pytest.raises(InputError, match="does not have"):
        concatenate_conversations([a, bad], "x")
    with pytest.raises(InputError, match="at least two"):
        concatenate_conversations([a], "x")


def _work_row(tier: str, first: bool, judgments: int, tokens: int) -> dict[str, object]:
    return {
        "tier": tier,
        "conversation": f"{tier}/1",
        "category": "information_extraction",
        "scored": True,
        "gold_evidence": ["1"],
        "all_hit": True,
        "any_hit": True,
        "recall": 1.0,
        "first_read": first,
        "judgments": judgments,
        "s1_calls": 2,
        "waves": 3,
        "searches": 4,
        "pool": judgments // 2,
        "view_chars": 1000,
        "view_records": 5,
        "read_seconds": 0.01 * judgments,
        "model_seconds": 0.5,
        "judgments_by": {"screen": judgments - 20, "needed": 20},
        "c_full_tokens": tokens,
        "baselines": {"turns+rrf@view": {"all_hit": False, "any_hit": True, "chars": 900}},
        "pool_scores": [["r1", 0.9, True], ["r2", 0.1, False]],
        "gold_fates": [
            {"turn": "1", "shown": first, "record": "r1", "placement": "in the View"},
            {"turn": "2", "shown": False, "record": None, "placement": None},
            {"turn": "3", "shown": False, "record": "r3", "placement": "judged no longer current"},
        ],
    }


def test_tier_summary_reports_the_first_question_apart_and_ratios() -> None:
    from mnemon_langgraph.eval.beam_eval import summarize_beam

    rows = [
        _work_row("100K", True, 50, 100),
        _work_row("100K", False, 100, 100),
        _work_row("100K", False, 120, 100),
        _work_row("1M-cat", True, 60, 1000),
        _work_row("1M-cat", False, 110, 1000),
        _work_row("1M-cat", False, 130, 1000),
        _work_row("1M-cat", False, 150, 1000),
    ]
    summary = summarize_beam(rows)
    tiers = summary["by_tier"]
    assert list(tiers) == ["100K", "1M-cat"]  # by history size
    small, big = tiers["100K"], tiers["1M-cat"]
    assert (small["warm_questions"], small["first_questions"]) == (2, 1)
    assert small["judgments_median"] == 110 and small["judgments_first_median"] == 50
    assert big["judgments_median"] == 130 and big["judgments_first_median"] == 60
    assert big["pool_first_median"] == 30 and big["view_records_first_median"] == 5
    assert big["read_seconds_first_median"] == pytest.approx(0.6)
    assert big["judgments_by_median"] == {"needed": 20, "screen": 110}
    assert small["evidence"]["view"]["overall"]["all_hit"] == 1.0
    assert small["evidence"]["turns+rrf@view"]["overall"]["all_hit"] == 0.0
    assert small["judge_auc"]["auc"] == 1.0
    assert small["gold_turns"] == {
        "gold_turns": 9,
        "shown": 1,
        "not_pooled": 3,
        "stale": 3,
        "pooled_left_out": 2,
    }
    ratios = summary["tier_ratios"]
    assert ratios["base"] == "100K"
    assert ratios["tiers"]["1M-cat"]["judgments_median"] == pytest.approx(130 / 110)
    assert ratios["tiers"]["1M-cat"]["judgments_first_median"] == pytest.approx(60 / 50)
    assert ratios["tiers"]["1M-cat"]["c_full_tokens_mean"] == pytest.approx(10.0)
    assert summary["tier_ratios"]["paired"]["1M-cat"]["paired"] is False  # no shared question
    text = render_beam_markdown(summary)
    assert "## Ratio of each tier's medians to 100K's" in text
    assert "| 1M-cat | first, 1 unpaired | 10.00× | 1.20× |" in text


def test_tier_ratios_pair_the_same_questions() -> None:
    from mnemon_langgraph.eval.beam_eval import summarize_beam

    def row(tier: str, i: int, judgments: int, origin: str) -> dict[str, object]:
        r = _work_row(tier, i == 0, judgments, 100 if tier == "100K" else 300)
        return {**r, "origin": origin, "ability": "information_extraction", "question_index": i}

    base = [row("100K", i, 100 + 10 * i, "100K/1") for i in range(3)]
    base += [row("100K", i, 1000, "100K/2") for i in range(3)]  # not in the longer tier
    cat = [row("300K-cat", i, 200 + 20 * i, "100K/1") for i in range(3)]
    ratios = summarize_beam(base + cat)["tier_ratios"]
    assert ratios["paired"]["300K-cat"] == {"questions": 2, "questions_first": 1, "paired": True}
    # same questions: (220, 240) over (110, 120); first 200 over 100
    assert ratios["tiers"]["300K-cat"]["judgments_median"] == pytest.approx(2.0)
    assert ratios["tiers"]["300K-cat"]["judgments_first_median"] == pytest.approx(2.0)


def test_cli_eval_beam_concat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnemon_langgraph.cli import main

    root = _tree_of(tmp_path / "beam", {"1": RELEASE_CHAT, "2": _shifted_chat(30, "plot")})
    out = tmp_path / "out"
    args = [
        "eval",
        "beam",
        str(root),
        "--out",
        str(out),
        "--embeddings",
        "fake",
        "--embedding-cache",
        str(tmp_path / "cache.sqlite"),
        "--baseline-k",
        "3",
        "--no-progress",
        "--no-plots",
        "--conversations",
        "100K/1",
        "--concat",
        "200K-cat=100K/1-2",
    ]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["by_tier"]) == ["100K", "200K-cat"]
    cat = summary["by_tier"]["200K-cat"]
    assert cat["n"] == 8 and cat["first_questions"] == 1
    assert cat["judgments_first_median"] is not None and cat["pool_first_median"] is not None
    assert "--concat 200K-cat=100K/1-2" in summary["metadata"]["command"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    cat_rows = [r for r in rows if r["tier"] == "200K-cat"]
    assert {r["origin"] for r in cat_rows} == {"100K/1", "100K/2"}
    assert all(r["messages"] == 12 for r in cat_rows)
    shown = {m for r in cat_rows for m in r["view_message_ids"]}
    assert shown <= {str(i) for i in range(12)} and shown & {str(i) for i in range(6, 12)}
    assert main([*args[:-4], "--concat", "x=100K/1-2", "--per-ability", "1"]) == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 10 and {r["tier"] for r in rows} == {"x"}  # 5 abilities x 2 parts
    assert main([*args, "--concat", "200K-cat=100K/1-2"]) == 2  # labels must differ
    assert main([*args[:-2], "--concat", "y=100K/1,100K/5"]) == 2  # no such part
    capsys.readouterr()
