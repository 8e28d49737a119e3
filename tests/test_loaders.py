"""Tests for mnemon_langgraph.loaders: LoCoMo, JSONL, transcripts, LangChain, load_any."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _paths import LOCOMO_DEV
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders import (
    detect_format,
    load_any,
    load_jsonl,
    load_locomo,
    load_transcript,
    messages_from_langchain,
)
from mnemon_langgraph.records._chunking import chunk_messages

DEV = LOCOMO_DEV
DEV_FILES = sorted(DEV.glob("conv-*.json"))
needs_dev = pytest.mark.skipif(not DEV_FILES, reason="LoCoMo dev files not present")
SESSION = re.compile(r"session_(\d+)")


def _leak_texts(raw: dict[str, Any]) -> list[str]:
    """Every summary, observation, event and question string of a LoCoMo conversation."""
    out: list[str] = []
    for key, value in raw.items():
        if key.endswith("_summary"):
            out.append(value)
        elif key.endswith("_observation"):
            out.extend(obs[0] for items in value.values() for obs in items)
        elif key.startswith("events_"):
            out.extend(e for k, v in value.items() if k != "date" for e in v)
    out.extend(q["question"] for q in raw["qa"])
    return [t for t in out if isinstance(t, str) and len(t) > 30]


# --- LoCoMo --------------------------------------------------------------------------


@needs_dev
@pytest.mark.parametrize("path", DEV_FILES, ids=[p.stem for p in DEV_FILES])
def test_locomo_dev_files(path: Path) -> None:
    raw = json.loads(path.read_text())
    (conv,) = load_locomo(path)
    sessions = sorted(int(m.group(1)) for k in raw if (m := SESSION.fullmatch(k)) and raw[k])
    turns = [t for n in sessions for t in raw[f"session_{n}"]]
    assert conv.id == path.stem
    assert conv.speakers == (raw["speaker_a"], raw["speaker_b"])
    assert len(conv.messages) == len(turns)
    assert [m.id for m in conv.messages] == [t["dia_id"] for t in turns]
    assert sorted(conv.sessions) == sessions
    assert conv.qa == raw["qa"] and conv.qa
    assert all(m.role == "user" for m in conv.messages)
    assert {m.speaker for m in conv.messages} == set(conv.speakers)
    # dates: session_N_date_time
    first = conv.messages[0]
    assert first.session == sessions[0]
    assert first.timestamp == datetime.strptime(
        raw[f"session_{sessions[0]}_date_time"], "%I:%M %p on %d %B, %Y"
    )
    # image captions kept
    captioned = [t for t in turns if t.get("blip_caption")]
    assert captioned
    by_id = {m.id: m for m in conv.messages}
    for t in captioned:
        assert f"[shares a photo: {t['blip_caption']}]" in by_id[t["dia_id"]].text
    # nothing of summaries / observations / events / questions reaches a message
    corpus = "\n".join(m.text for m in conv.messages)
    leaks = _leak_texts(raw)
    assert len(leaks) > 20
    for leak in leaks:
        assert leak not in corpus
    records = chunk_messages(conv.messages, namespace=("locomo", conv.id), origin=conv.origin)
    assert all(len(r.text) <= 600 for r in records)
    assert [m for r in records for m in r.message_ids] == [t["dia_id"] for t in turns]


@needs_dev
def test_locomo_known_summary_sentence_absent() -> None:
    (conv,) = load_locomo(DEV / "conv-26.json")
    corpus = " ".join(m.text for m in conv.messages)
    assert "Caroline and Melanie had a conversation on 8 May 2023 at 1:56 pm." not in corpus
    assert "Caroline attends an LGBTQ support group for the first time." not in corpus
    assert "I went to a LGBTQ support group yesterday and it was so powerful." in corpus
    assert conv.messages[0].timestamp == datetime(2023, 5, 8, 13, 56)
    # sessions 20..35 have dates but no turns: skipped
    assert max(conv.sessions) == 19


@needs_dev
def test_locomo_release_list_format(tmp_path: Path) -> None:
    entries = []
    for path in DEV_FILES[:2]:
        raw = json.loads(path.read_text())
        qa = raw.pop("qa")
        entries.append({"sample_id": f"sample-{path.stem}", "conversation": raw, "qa": qa})
    release = tmp_path / "locomo10.json"
    release.write_text(json.dumps(entries))
    convs = load_locomo(release)
    assert [c.id for c in convs] == [f"sample-{p.stem}" for p in DEV_FILES[:2]]
    assert all(c.qa and c.messages for c in convs)
    assert convs[0].origin == f"locomo:sample-{DEV_FILES[0].stem}"
    assert load_locomo(entries)[1].id == convs[1].id
    with pytest.raises(InputError, match="2 LoCoMo conversations"):
        load_any(release)


def _mini(**over: Any) -> dict[str, Any]:
    conv: dict[str, Any] = {
        "speaker_a": "Ann",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {
                "speaker": "Ann",
                "dia_id": "D1:1",
                "text": "Look!",
                "blip_caption": "a photo of a cat",
            },
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Cute."},
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_1_summary": "SUMMARY TEXT",
        "qa": [{"question": "q", "answer": "a"}],
    }
    conv.update(over)
    return conv


def test_locomo_dict_and_caption() -> None:
    (conv,) = load_locomo(_mini())
    assert [m.text for m in conv.messages] == ["Look! [shares a photo: a photo of a cat]", "Cute."]
    assert list(conv.sessions) == [1]
    assert conv.qa == [{"question": "q", "answer": "a"}]


@pytest.mark.parametrize(
    ("over", "pattern"),
    [
        ({"session_1_date_time": "yesterday-ish"}, "session_1_date_time"),
        ({"session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "  "}]}, "D1:1.*empty"),
        ({"session_1": [{"speaker": "Ann", "text": "hi"}]}, "turn 0.*dia_id"),
        ({"session_1": [{"dia_id": "D1:9", "text": "hi"}]}, "D1:9.*speaker"),
        ({"speaker_b": ""}, "speaker_b"),
        (
            {
                "session_1": [
                    {"speaker": "A", "dia_id": "x", "text": "a"},
                    {"speaker": "A", "dia_id": "x", "text": "b"},
                ]
            },
            "duplicate",
        ),
    ],
)
def test_locomo_errors(over: dict[str, Any], pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        load_locomo(_mini(**over))


def test_locomo_invalid_utf8_names_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"speaker_a": "A\xff"}')
    with pytest.raises(InputError, match=r"bad\.json.*UTF-8"):
        load_locomo(path)


# --- JSONL ---------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_jsonl_fields_and_aliases(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {
                "text": "hello",
                "speaker": "Ada",
                "id": "a1",
                "timestamp": "2024-01-02T03:04:05Z",
                "session": 2,
            },
            {"content": "hi Ada", "role": "assistant"},
            "",
            {
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image_url", "image_url": "x"},
                ],
                "name": "Bob",
                "time": 1700000000,
            },
            {"text": "ms epoch", "role": "human", "created_at": 1700000000123},
        ],
    )
    msgs = load_jsonl(path)
    assert [m.text for m in msgs] == ["hello", "hi Ada", "see", "ms epoch"]
    assert [m.speaker for m in msgs] == ["Ada", "assistant", "Bob", "user"]
    assert [m.role for m in msgs] == ["user", "assistant", "user", "user"]
    assert msgs[0].id == "a1" and msgs[0].session == 2
    # Aware timestamps are stored as naive UTC (types.as_naive_utc).
    assert msgs[0].timestamp == datetime(2024, 1, 2, 3, 4, 5)
    assert msgs[2].timestamp == datetime.fromtimestamp(1700000000, UTC).replace(tzinfo=None)
    assert msgs[3].timestamp == datetime.fromtimestamp(1700000000.123, UTC).replace(tzinfo=None)
    assert msgs[1].id and msgs[1].id.startswith("m-")
    again = load_jsonl(path)
    assert [m.id for m in again] == [m.id for m in msgs]  # derived ids are deterministic


@pytest.mark.parametrize(
    ("row", "pattern"),
    [
        ('{"text": "ok"', "invalid JSON"),
        ({"speaker": "A"}, "missing 'text'"),
        ({"text": "   "}, "empty"),
        ({"content": [{"type": "image_url", "image_url": "x"}]}, "non-text"),
        ({"text": "x", "timestamp": "not a date"}, "cannot parse date"),
        ({"text": "x", "role": "wizard"}, "unknown role"),
        ({"text": "x", "session": 0}, "session"),
        ({"text": "x", "session": "3"}, "session"),
        ([1, 2], "JSON object"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path: Path, row: Any, pattern: str) -> None:
    path = _write_jsonl(tmp_path / "bad.jsonl", [{"text": "fine"}, row])
    with pytest.raises(InputError, match=rf"bad\.jsonl:2: .*{pattern}"):
        load_jsonl(path)


def test_jsonl_duplicate_ids_and_invalid_utf8(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "dup.jsonl", [{"text": "a", "id": "x"}, {"text": "b", "id": "x"}]
    )
    with pytest.raises(InputError, match="duplicate id 'x'"):
        load_jsonl(path)
    bad = tmp_path / "enc.jsonl"
    bad.write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"enc\.jsonl: line 2: invalid UTF-8"):
        load_jsonl(bad)


# --- transcripts ---------------------------------------------------------------------


TRANSCRIPT = """\
## Session 1 — 2023-05-08 13:56
Caroline: Hey Mel! How have you been?
Melanie: Swamped with the kids.
  Work is busy too.

Caroline: Meeting at 10:30 tomorrow.
--- 2023-05-25 13:14 ---
Melanie: Back again!
Assistant: Noted.
"""


def test_transcript_sessions_and_continuations(tmp_path: Path) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(TRANSCRIPT)
    msgs = load_transcript(path)
    assert [(m.speaker, m.session) for m in msgs] == [
        ("Caroline", 1),
        ("Melanie", 1),
        ("Caroline", 1),
        ("Melanie", 2),
        ("Assistant", 2),
    ]
    assert msgs[1].text == "Swamped with the kids.\nWork is busy too."
    assert msgs[2].text == "Meeting at 10:30 tomorrow."
    assert msgs[0].timestamp == datetime(2023, 5, 8, 13, 56)
    assert msgs[3].timestamp == datetime(2023, 5, 25, 13, 14)
    assert msgs[4].role == "assistant" and msgs[0].role == "user"
    assert [m.id for m in load_transcript(path)] == [m.id for m in msgs]
    assert len({m.id for m in msgs}) == 5


def test_transcript_known_speakers_keep_colon_lines_in_turn(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("Ada: Shopping list\nNote: buy milk\nBob: ok\n")
    assert len(load_transcript(path)) == 3
    msgs = load_transcript(path, speakers=["Ada", "Bob"])
    assert [m.text for m in msgs] == ["Shopping list\nNote: buy milk", "ok"]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("just some text\nAda: hi\n", r"t\.txt:1: text before"),
        ("## Session 2 — someday soon\nAda: hi\n", r"t\.txt:1: cannot parse date"),
        ("Ada: hi\n# Random heading\n", r"t\.txt:2: unrecognised heading"),
        ("Ada:\nBob: hi\n", r"t\.txt:1: empty turn"),
        ("\n\n", "no 'Speaker: text'"),
    ],
)
def test_transcript_errors(tmp_path: Path, text: str, pattern: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=pattern):
        load_transcript(path)


# --- LangChain messages --------------------------------------------------------------


def test_langchain_messages_roles_ids_and_sessions() -> None:
    t0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    msgs = [
        SystemMessage("be nice", id="s"),
        HumanMessage("hi", id="h1", name="Ada", additional_kwargs={"timestamp": t0.isoformat()}),
        AIMessage(
            [
                {"type": "text", "text": "hello"},
                {"type": "tool_use", "id": "t", "name": "x", "input": {}},
            ],
            id="a1",
            response_metadata={"created_at": (t0 + timedelta(minutes=1)).timestamp()},
        ),
        HumanMessage(
            "later", additional_kwargs={"timestamp": (t0 + timedelta(hours=5)).isoformat()}
        ),
        ToolMessage("result", tool_call_id="t"),
    ]
    out = messages_from_langchain(msgs)
    assert [m.role for m in out] == ["system", "user", "assistant", "user", "tool"]
    assert [m.speaker for m in out] == ["system", "Ada", "assistant", "user", "tool"]
    assert out[2].text == "hello"
    assert [m.session for m in out] == [1, 1, 1, 2, 2]  # 5 h gap > 4 h
    naive = t0.replace(tzinfo=None)  # stored as naive UTC
    assert out[1].timestamp == naive and out[2].timestamp == naive + timedelta(minutes=1)
    assert out[0].id == "s" and out[3].id and out[3].id.startswith("m-")
    assert [m.id for m in messages_from_langchain(msgs)] == [m.id for m in out]
    assert [m.session for m in messages_from_langchain(msgs, session=7)] == [7] * 5
    shorter = messages_from_langchain(msgs, gap=timedelta(seconds=30), first_session=3)
    assert [m.session for m in shorter] == [3, 3, 4, 5, 5]


def test_langchain_message_without_text() -> None:
    msgs = [HumanMessage("hi", id="ok"), AIMessage("", id="toolcall-only")]
    with pytest.raises(InputError, match="toolcall-only"):
        messages_from_langchain(msgs)
    assert [m.id for m in messages_from_langchain(msgs, skip_empty=True)] == ["ok"]
    with pytest.raises(InputError, match="cannot parse date"):
        messages_from_langchain([HumanMessage("x", additional_kwargs={"timestamp": "soon"})])


# --- load_any ------------------------------------------------------------------------


@needs_dev
def test_load_any_detects_formats(tmp_path: Path) -> None:
    assert detect_format(DEV_FILES[0]) == "locomo"
    assert len(load_any(DEV_FILES[0])) > 300
    jl = _write_jsonl(tmp_path / "x.data", [{"text": "a"}, {"text": "b"}])
    assert detect_format(jl) == "jsonl" and len(load_any(jl)) == 2
    lst = tmp_path / "list.json"
    lst.write_text(json.dumps([{"text": "a", "speaker": "A"}, {"content": "b", "role": "ai"}]))
    assert detect_format(lst) == "json"
    assert [m.role for m in load_any(lst)] == ["user", "assistant"]
    tr = tmp_path / "chat.md"
    tr.write_text(TRANSCRIPT)
    assert detect_format(tr) == "transcript" and len(load_any(tr)) == 5
    noext = tmp_path / "chat"
    noext.write_text(TRANSCRIPT)
    assert detect_format(noext) == "transcript"
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(InputError, match=r"broken\.json: line 1"):
        load_any(broken)
    with pytest.raises(InputError, match="cannot read"):
        load_any(tmp_path / "missing.jsonl")


def test_transcript_session_header_without_date_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"## Session 3\r\nAda: hi\r\n## Session 4: 8 May 2023\r\nBob: yo\r\n")
    msgs = load_transcript(path)
    assert [(m.session, m.timestamp) for m in msgs] == [(3, None), (4, datetime(2023, 5, 8))]
    assert [m.text for m in msgs] == ["hi", "yo"]


def test_langchain_chunks_and_chat_messages() -> None:
    from langchain_core.messages import AIMessageChunk, ChatMessage

    out = messages_from_langchain(
        [ChatMessage(content="x", role="assistant", id="c"), AIMessageChunk(content="y", id="k")]
    )
    assert [m.role for m in out] == ["assistant", "assistant"]
    with pytest.raises(InputError, match="unknown role"):
        messages_from_langchain([ChatMessage(content="x", role="wizard")])


def test_load_any_single_objects(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text('{"text": "solo", "speaker": "A"}')
    assert [m.text for m in load_any(one)] == ["solo"]
    pretty = tmp_path / "pretty.json"
    pretty.write_text('{\n  "something": "else"\n}\n')
    with pytest.raises(InputError, match="neither a LoCoMo conversation"):
        load_any(pretty)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
        ("12:30 pm on 1 Jan 2024", datetime(2024, 1, 1, 12, 30)),
        ("8 May 2023", datetime(2023, 5, 8)),
        ("May 8, 2023", datetime(2023, 5, 8)),
        ("2023-05-08 13:56", datetime(2023, 5, 8, 13, 56)),
        ("1700000000", datetime.fromtimestamp(1700000000, UTC)),
    ],
)
def test_parse_date_forms(text: str, expected: datetime) -> None:
    from mnemon_langgraph.loaders import parse_date

    assert parse_date(text, where="x") == expected


@pytest.mark.parametrize("text", ["31 February 2023", "13:00 pm on 8 May, 2023", "someday", ""])
def test_parse_date_rejects(text: str) -> None:
    from mnemon_langgraph.loaders import parse_date

    with pytest.raises(InputError, match="where-it-was"):
        parse_date(text, where="where-it-was")


def test_old_module_paths_warn_and_are_the_same_modules() -> None:
    """``mnemon_langgraph.sources`` and ``store.files`` (the loaders' old homes) still import
    for one release, warn, and give the very modules and functions of ``loaders``."""
    import importlib
    import sys

    import mnemon_langgraph.loaders as loaders
    import mnemon_langgraph.loaders.files as files
    import mnemon_langgraph.loaders.longmemeval as longmemeval

    for old in ("mnemon_langgraph.sources", "mnemon_langgraph.store.files"):
        sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match="mnemon_langgraph.loaders"):
        old_sources = importlib.import_module("mnemon_langgraph.sources")
    with pytest.warns(DeprecationWarning, match="mnemon_langgraph.loaders.files"):
        old_files = importlib.import_module("mnemon_langgraph.store.files")
    assert old_sources.load_locomo is loaders.load_locomo
    assert old_sources.SAMPLE_PATH == loaders.SAMPLE_PATH
    assert set(old_sources.__all__) == set(loaders.__all__)
    assert importlib.import_module("mnemon_langgraph.sources.longmemeval") is longmemeval
    assert old_files.load_messages is files.load_messages
