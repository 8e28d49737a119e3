"""Tests of the BEAM chat.json loader on a small synthetic file."""

from __future__ import annotations

import json
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
