"""Hostile input at every entry point: one validation rule, clear errors, bounded cost.

Issue 13 §1, 3, 6, 7, 10. A value no index can hold (session ≥ 2**31, a date with no UTC
equivalent …) must be refused *before* anything is committed, with the same rule whether
it came through the API, JSONL, a transcript, LoCoMo or LangChain; malformed input is an
``InputError``/``NamespaceError``, never a bare ``TypeError``/``OverflowError``/
``RecursionError`` traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings, tagged_messages

from mnemon_langgraph.cli._doctor import diagnose
from mnemon_langgraph.errors import InputError, JournalReadOnlyError, NamespaceError
from mnemon_langgraph.loaders import (
    load_any,
    load_jsonl,
    load_locomo,
    messages_from_langchain,
    parse_date,
    parse_transcript,
)
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.types import MAX_SESSION, Message, SearchFilters

NS = ("users", "hostile@example.com")
EAST = timezone(timedelta(hours=5))
WEST = timezone(timedelta(hours=-5))


def _accepted(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SESSION


# --- one session rule for every entry point ---------------------------------------------


def _via_api(value: Any, tmp: Path) -> object:
    return Message("hi", "Ada", session=value)


def _via_jsonl(value: Any, tmp: Path) -> object:
    path = tmp / "s.jsonl"
    path.write_text(json.dumps({"text": "hi", "speaker": "Ada", "session": value}) + "\n")
    return load_jsonl(path)


def _via_transcript(value: Any, tmp: Path) -> object:
    return parse_transcript(f"## Session {value}\nAda: hi\n", origin="t")


def _via_locomo(value: Any, tmp: Path) -> object:
    conv = {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        f"session_{value}": [{"speaker": "Ada", "dia_id": "D1:1", "text": "hi"}],
    }
    return load_locomo(conv)


def _via_langchain(value: Any, tmp: Path) -> object:
    return messages_from_langchain([HumanMessage("hi", additional_kwargs={"session": value})])


ENTRY_POINTS = [_via_api, _via_jsonl, _via_transcript, _via_locomo, _via_langchain]
TEXT_ONLY = {_via_transcript, _via_locomo}  # session numbers written as digits


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.one_of(
        st.sampled_from([0, 1, MAX_SESSION, MAX_SESSION + 1, 2**63, -3]),
        st.integers(min_value=-(2**40), max_value=2**40),
    )
)
def test_every_entry_point_applies_the_same_session_rule(
    entry: Any, value: int, tmp_path: Path
) -> None:
    if entry in TEXT_ONLY and value < 0:
        value = -value  # "## Session -3" is not a header at all; its magnitude is tested
    if _accepted(value):
        assert entry(value, tmp_path)
    else:
        with pytest.raises(InputError, match="session"):
            entry(value, tmp_path)


@pytest.mark.parametrize("value", [True, "3", 2.0, None])
def test_api_and_json_sessions_must_be_real_ints(value: object, tmp_path: Path) -> None:
    if value is None:  # None means "no session": allowed
        assert Message("hi", "Ada", session=None).session is None
        return
    for entry in (_via_api, _via_jsonl, _via_langchain):
        with pytest.raises(InputError, match="session"):
            entry(value, tmp_path)


def test_out_of_range_input_commits_nothing_and_the_namespace_stays_usable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"text": "apple garden", "speaker": "Ada", "session": 1}
    bad = {"text": "poison", "speaker": "Ada", "session": 2**31}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        store.ingest(NS, [Message("kept words", "Ada", session=MAX_SESSION)], origin="api")
        with pytest.raises(InputError, match="2147483648"):
            store.ingest_file(path, namespace=NS)
        assert store.journal.count(NS) == 1  # nothing of the bad file was committed
        assert store.search("kept", namespace=NS, k=1)[0].record.session == MAX_SESSION
        hits = store.search("kept", namespace=NS, k=1, filters=SearchFilters(session_from=2))
        assert hits and store.stats()["namespaces"][0]["records"] == 1


def test_a_journal_poisoned_before_validation_degrades_visibly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    with MnemonStore(db, fake_embeddings()) as store:
        store.ingest(NS, tagged_messages("Plum", 3), origin="api")
    conn = sqlite3.connect(db)  # what an older version let through
    conn.execute("UPDATE records SET session = ? WHERE position = 0", (2**31,))
    conn.commit()
    conn.close()
    for folder in (tmp_path / "m.db.indexes").iterdir():
        for f in folder.iterdir():
            f.unlink()
    with MnemonStore(db, fake_embeddings()) as store:
        assert store.search("Plum", namespace=NS, k=5)  # no OverflowError traceback
        assert store.stats()["namespaces"][0]["records"] == 3
    assert "session number outside" in caplog.text
    report = diagnose(db, repair=False)
    assert any("session outside" in p for r in report for p in r.problems)


# --- dates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [datetime(1, 1, 1, tzinfo=EAST), datetime(9999, 12, 31, 23, 0, tzinfo=WEST)]
)
def test_zoned_dates_without_a_utc_equivalent_are_input_errors(value: datetime) -> None:
    with pytest.raises(InputError, match="out of range"):
        Message("hi", "Ada", timestamp=value)
    with pytest.raises(InputError, match="out of range"):
        SearchFilters(date_from=value)
    with pytest.raises(InputError, match="out of range"):
        parse_date(value.isoformat(), where="x")
    msg = HumanMessage("hi", additional_kwargs={"timestamp": value.isoformat()})
    with pytest.raises(InputError, match="message 0"):
        messages_from_langchain([msg])


def test_dates_at_the_edges_that_exist_in_utc_are_kept() -> None:
    assert Message("a", "A", timestamp=datetime(1, 1, 1, tzinfo=WEST)).timestamp == datetime(
        1, 1, 1, 5
    )
    assert SearchFilters(date_to=datetime(9999, 12, 31, 23, 59)).date_to is not None


# --- files -------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\u001e", "\u001c", "\x0b"])
def test_jsonl_strings_with_unicode_line_breaks_load(char: str, tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    rows = [{"text": f"before{char}after", "speaker": "Ada"}, {"text": "two", "speaker": "Bo"}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    messages = load_jsonl(path)
    assert [m.text for m in messages] == [f"before{char}after", "two"]
    assert [m.text for m in load_any(path)] == [f"before{char}after", "two"]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".txt"])
def test_json_nested_100k_deep_is_an_input_error(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError):
        load_any(path)
    if suffix == ".json":
        with pytest.raises(InputError, match="nested too deeply"):
            load_locomo(path)


def _locomo(**sessions: Any) -> dict[str, Any]:
    return {"speaker_a": "Ada", "speaker_b": "Bo", **sessions}


def test_locomo_with_zero_padded_session_keys() -> None:
    turn = {"speaker": "Ada", "dia_id": "D1:1", "text": "hello"}
    conv = load_locomo(_locomo(session_01=[turn], session_01_date_time="8 May 2023"))[0]
    assert [m.session for m in conv.messages] == [1]
    assert conv.sessions == {1: datetime(2023, 5, 8)}
    with pytest.raises(InputError, match="both 'session_1' and 'session_01'"):
        load_locomo(_locomo(session_1=[turn], session_01=[dict(turn, dia_id="D1:2")]))


def test_a_file_name_that_is_not_utf8_can_be_ingested(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9-\xff.jsonl")
    path = tmp_path / name
    path.write_text(json.dumps({"text": "latin one name", "speaker": "Ada"}) + "\n")
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        result = store.ingest_file(path, namespace=NS)
        assert result.records_written == 1
        [hit] = store.search("latin", namespace=NS, k=1)
        assert hit.record.origin == "caf\\xe9-\\xff.jsonl"


# --- API arguments -------------------------------------------------------------------------


def test_api_arguments_of_the_wrong_type_are_clear_errors(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        store.ingest(NS, [Message("pear tree", "Ada")], origin="api")
        with pytest.raises(NamespaceError, match="NoneType"):
            store.search("pear", namespace=None, k=1)  # type: ignore[arg-type]
        with pytest.raises(NamespaceError):
            store.ingest(None, [Message("x", "Ada")], origin="api")  # type: ignore[arg-type]
        with pytest.raises(InputError, match="ids must be a list"):
            store.delete_records(NS, None)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="ids must be a list"):
            store.delete_messages(NS, None)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="k must be an integer"):
            store.search("pear", namespace=NS, k=2.5)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="offset"):
            store.search("pear", namespace=NS, k=2, offset=-1)
        with pytest.raises(InputError, match="lone surrogate"):
            store.search("pear \ud800", namespace=NS, k=1)
        with pytest.raises(InputError, match="role"):
            Message("x", "Ada", role="wizard")  # type: ignore[arg-type]
        assert store.journal.count(NS) == 1


# --- amplification ---------------------------------------------------------------------------


def test_one_message_cannot_amplify_into_many_times_its_size(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="speaker name has 10,000 characters"):
        Message("x", "S" * 10_000)
    speaker = "S" * 100
    text = " ".join(f"word{i}" for i in range(16_000))[:99_999]
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        store.ingest(NS, [Message(text, speaker, id="big")], origin="api")
        records = list(store.journal.records(NS))
    stored = sum(len(r.text.encode()) + sum(len(s) for s in r.speakers) for r in records)
    ratio = stored / len((speaker + text).encode())
    assert ratio < 1.5, ratio  # was ×228 with a 10k-character speaker
    assert len(records) < 250
    with pytest.raises(InputError, match="100,000"):
        Message("x" * 100_001, "Ada")


# --- wording --------------------------------------------------------------------------------


def test_read_only_errors_read_as_english(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "m.db")
    try:
        err = journal._error(
            sqlite3.OperationalError("attempt to write a readonly database"), "writing"
        )
        assert isinstance(err, JournalReadOnlyError)
        assert "cannot writing" not in str(err) and "while writing" in str(err)
        err = journal._error(sqlite3.OperationalError("readonly"), "opening it")
        assert "cannot opening" not in str(err)
    finally:
        journal.close()
