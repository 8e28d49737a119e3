"""Hostile and malformed input: every failure is a typed ``MnemonError``, never a crash.

Hypothesis feeds the ingest formats (JSONL lines, transcripts, JSON lists, LoCoMo dicts,
LangChain messages, random bytes including invalid UTF-8) and the read graph's input
(random message lists and content types). Whatever happens, the only exception allowed is a
:class:`~mnemon_langgraph.errors.MnemonError`, and a failed ingest leaves the journal's
record count exactly as it was.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings, tagged_messages, yes_judge

from mnemon_langgraph.errors import InputError, MnemonError
from mnemon_langgraph.loaders import load_locomo, messages_from_langchain
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore

NS = ("fuzz", "user@example.com")
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def store() -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        s = MnemonStore(Path(tmp) / "fuzz.db", fake_embeddings())
        s.ingest(NS, tagged_messages("base", 5), origin="base")
        yield s
        s.close()


def _ingest_checked(store: MnemonStore, action: Any) -> None:
    """Run ``action``; only a MnemonError may escape, and a failure writes nothing."""
    before = store.journal.count(NS)
    seq_before = store.journal.last_seq()
    try:
        action()
    except MnemonError:
        assert store.journal.count(NS) == before
        assert store.journal.last_seq() == seq_before
    # anything else propagates and fails the test


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "text",
                    "content",
                    "speaker",
                    "role",
                    "id",
                    "timestamp",
                    "session",
                    "name",
                    "date",
                    "type",
                    "x",
                ]
            )
            | st.text(max_size=8),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
message_objects = st.fixed_dictionaries(
    {},
    optional={
        "text": st.one_of(st.text(max_size=60), json_values),
        "content": json_values,
        "speaker": st.one_of(st.text(max_size=12), json_values),
        "role": st.sampled_from(["user", "assistant", "system", "tool", "bogus", ""]) | json_values,
        "id": st.one_of(st.text(max_size=12), st.integers(), json_values),
        "timestamp": st.one_of(
            st.text(max_size=25), st.integers(-(10**15), 10**15), st.floats(), json_values
        ),
        "session": st.one_of(st.integers(-3, 10**12), st.text(max_size=5), json_values),
    },
)


def _line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=True)


@FUZZ
@given(
    lines=st.lists(
        st.one_of(
            message_objects.map(_line),
            json_values.map(_line),
            st.text(max_size=40),
        ),
        max_size=6,
    ),
    suffix=st.sampled_from([".jsonl", ".json", ".txt", ".log", ""]),
)
def test_fuzzed_text_files_fail_only_with_mnemon_errors(
    store: MnemonStore, lines: list[str], suffix: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_text("\n".join(lines), encoding="utf-8")
        _ingest_checked(store, lambda: store.ingest_file(path, namespace=NS))


@FUZZ
@given(
    data=st.binary(max_size=300)
    | st.sampled_from(
        [
            b"\xff\xfe\x00bad",
            b'{"text": "caf\xe9", "speaker": "A"}\n{"text": "ok", "speaker": "B"}',
            b"Ada: hello\nBo: \xc3\x28 broken",
            b"\xef\xbb\xbfAda: bom then text",
            b'[{"text": "a\x00b", "speaker": "A"}]',
        ]
    ),
    suffix=st.sampled_from([".jsonl", ".json", ".txt", ".md", ".bin"]),
    fmt=st.sampled_from(["auto", "jsonl", "transcript", "locomo"]),
)
def test_fuzzed_bytes_fail_only_with_mnemon_errors(
    store: MnemonStore, data: bytes, suffix: str, fmt: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_bytes(data)
        _ingest_checked(store, lambda: store.ingest_file(path, namespace=NS, format=fmt))


def _locomo_base() -> dict[str, Any]:
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Lyon."},
            {
                "speaker": "Bob",
                "dia_id": "D1:2",
                "text": "Nice!",
                "img_url": ["x"],
                "blip_caption": "a photo",
            },
        ],
        "session_2_date_time": "9:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Hello again."}],
        "qa": [{"question": "q", "answer": "a", "evidence": ["D1:1"]}],
    }


_PATHS = [
    ("speaker_a",),
    ("speaker_b",),
    ("session_1_date_time",),
    ("session_1",),
    ("session_1", 0),
    ("session_1", 0, "text"),
    ("session_1", 0, "dia_id"),
    ("session_1", 0, "speaker"),
    ("session_1", 1, "blip_caption"),
    ("session_2",),
    ("session_2", 0, "dia_id"),
    ("qa",),
    ("session_9",),
    ("session_x_date_time",),
]


@FUZZ
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(_PATHS), st.one_of(json_values, st.just("__delete__"))),
        min_size=1,
        max_size=4,
    ),
    wrap=st.sampled_from(["plain", "entry", "list"]),
)
def test_fuzzed_locomo_dicts_fail_only_with_mnemon_errors(
    store: MnemonStore, edits: list[tuple[tuple[Any, ...], Any]], wrap: str
) -> None:
    data: Any = _locomo_base()
    for path, value in edits:
        node = data
        try:
            for key in path[:-1]:
                node = node[key]
            if value == "__delete__":
                del node[path[-1]]
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    if wrap == "entry":
        data = {"sample_id": "s", "conversation": data, "qa": []}
    elif wrap == "list":
        data = [{"sample_id": "s", "conversation": data, "qa": []}]

    def action() -> None:
        for conv in load_locomo(data):
            store.ingest(NS, conv.messages, origin=conv.origin or "locomo")

    _ingest_checked(store, action)


_content = st.one_of(
    st.text(max_size=40),
    st.lists(
        st.one_of(
            st.text(max_size=10),
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
            st.fixed_dictionaries(
                {"type": st.just("image_url"), "image_url": st.just({"url": "data:x"})}
            ),
            st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
        ),
        max_size=3,
    ),
)


@st.composite
def lc_messages(draw: Any) -> Any:
    kind = draw(st.sampled_from(["human", "ai", "system", "tool"]))
    content = draw(_content)
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["additional_kwargs"] = {
            draw(st.sampled_from(["timestamp", "created_at", "session", "time"])): draw(json_values)
        }
    if draw(st.booleans()):
        kwargs["name"] = draw(st.text(max_size=8))
    if draw(st.booleans()):
        kwargs["id"] = draw(st.text(min_size=1, max_size=8))
    if kind == "human":
        return HumanMessage(content=content, **kwargs)
    if kind == "ai":
        return AIMessage(content=content, **kwargs)
    if kind == "system":
        return SystemMessage(content=content, **kwargs)
    return ToolMessage(content=content, tool_call_id="t1", **kwargs)


@FUZZ
@given(msgs=st.lists(lc_messages(), max_size=5), skip_empty=st.booleans())
def test_fuzzed_langchain_messages_fail_only_with_mnemon_errors(
    store: MnemonStore, msgs: list[Any], skip_empty: bool
) -> None:
    def action() -> None:
        converted = messages_from_langchain(msgs, origin="lc", skip_empty=skip_empty)
        store.ingest(NS, converted, origin="lc")

    _ingest_checked(store, action)


@pytest.fixture(scope="module")
def reader(store: MnemonStore) -> Any:
    return create_read_graph(source=store, judge=yes_judge())


@FUZZ
@given(msgs=st.lists(lc_messages(), max_size=8), ns=st.sampled_from([NS, ("other",), "x@y.z"]))
def test_fuzzed_read_graph_input_gives_a_view_or_a_mnemon_error(
    reader: Any, msgs: list[Any], ns: Any
) -> None:
    try:
        out = reader.invoke({"messages": msgs}, context=ReadContext(namespace=ns))
    except MnemonError as exc:
        assert isinstance(exc, InputError)  # the only thing wrong here is the input
        return
    view = out["view"]
    assert isinstance(view.text, str) and view.text
    assert all(r.id for r in view.records)


def test_failed_ingest_midway_through_a_file_writes_nothing(
    store: MnemonStore, tmp_path: Path
) -> None:
    good = [_line({"text": f"line {i}", "speaker": "A", "id": f"ok{i}"}) for i in range(5)]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*good, "{not json", *good[:1]]), encoding="utf-8")
    before = store.journal.count(NS)
    with pytest.raises(InputError, match=r"bad\.jsonl:6"):
        store.ingest_file(path, namespace=NS)
    assert store.journal.count(NS) == before
    assert not store.journal.known_message_ids(NS, [f"ok{i}" for i in range(5)])


# --- lone surrogates (what json.loads makes of "\ud800") -------------------------------------

_ANY_TEXT = st.text(
    alphabet=st.characters(exclude_categories=()) | st.sampled_from(["\ud800", "\udc80", "\x00"]),
    max_size=20,
)


@FUZZ
@given(text=_ANY_TEXT, speaker=_ANY_TEXT, mid=st.none() | _ANY_TEXT)
def test_any_unicode_including_lone_surrogates_is_stored_or_refused_typed(
    store: MnemonStore, text: str, speaker: str, mid: str | None
) -> None:
    from mnemon_langgraph.types import Message

    _ingest_checked(store, lambda: store.ingest(NS, [Message(text, speaker, id=mid)], origin="u"))


@pytest.mark.parametrize(
    "payload",
    [
        '{"text": "bad \\ud800 x", "speaker": "A"}',
        '{"text": "ok", "speaker": "\\udc80"}',
        '{"text": "ok", "speaker": "A", "id": "\\ud83d"}',
    ],
)
def test_jsonl_with_lone_surrogate_escapes_is_an_input_error(
    store: MnemonStore, tmp_path: Path, payload: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(payload + "\n" + '{"text": "fine", "speaker": "B"}\n', encoding="utf-8")
    before = store.journal.count(NS)
    with pytest.raises(InputError, match="surrogate"):
        store.ingest_file(path, namespace=NS)
    assert store.journal.count(NS) == before


def test_namespace_with_lone_surrogate_is_a_namespace_error(store: MnemonStore) -> None:
    from mnemon_langgraph.errors import NamespaceError

    with pytest.raises(NamespaceError):
        store.search("hello", namespace=("users", "\ud800"))
