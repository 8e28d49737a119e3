"""Tests of the BEAM chat.json loader on a small synthetic file."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.beam import load_beam_chat, messages_from_beam, parse_time_anchor

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
