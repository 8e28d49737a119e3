"""The filler history builder (eval/filler.py) on tiny invented fixtures."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.filler import (
    build_history,
    content_hash,
    load_filler_pool,
    parse_token_count,
)
from mnemon_langgraph.eval.report import TokenCounter
from mnemon_langgraph.types import Message

ANSWER = "zanzibar-answer-phrase"
QUESTION = "Which quokka-question did I ask?"

# the evaluated conversation (BEAM-shaped): three sessions in March–April 2024
OWN_TEXTS = [
    ["I repaint my rowing boat every spring.", "Marine varnish lasts longer."],
    ["The boat is called Heron and is blue.", "A fine name for a blue boat."],
    ["I sold Heron and bought a kayak.", "Kayaks are lighter to carry."],
]
OWN_DATES = [datetime(2024, 3, 1), datetime(2024, 3, 20), datetime(2024, 4, 10)]


def _own() -> list[Message]:
    out = []
    n = 0
    for s, (texts, date) in enumerate(zip(OWN_TEXTS, OWN_DATES, strict=True), start=1):
        for i, text in enumerate(texts):
            role = "user" if i % 2 == 0 else "assistant"
            out.append(Message(text, role, role, id=str(n), timestamp=date, session=s))
            n += 1
    return out


def _lme_session(k: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Topic {k}: tell me about subject number {k} in depth."},
        {"role": "assistant", "content": f"Subject {k} has a long history " + "word " * (k % 7)},
    ]


def _lme_file(path: Path, sessions: int = 40) -> Path:
    """A LongMemEval-shaped file: two questions whose haystacks share sessions, one session
    copying the evaluated conversation's text (other ids, other spacing)."""
    copy = [
        {"role": "user", "content": "I  repaint my rowing boat\nevery spring."},
        {"role": "assistant", "content": "Something else entirely, said once."},
    ]
    all_sessions = [_lme_session(k) for k in range(sessions)]
    half = sessions // 2

    def question(qid: str, idx: list[int], extra: list[Any]) -> dict[str, Any]:
        hay = [all_sessions[i] for i in idx] + extra
        return {
            "question_id": qid,
            "question_type": "single-session-user",
            "question": QUESTION,
            "answer": ANSWER,
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": [f"{qid}_s{i}" for i in range(len(hay))],
            "haystack_dates": ["2023/05/20 (Sat) 02:21"] * len(hay),
            "haystack_sessions": hay,
            "answer_session_ids": [f"{qid}_s0"],
        }

    data = [
        question("q1", list(range(0, half + 5)), [copy]),
        question("q2", list(range(half - 5, sessions)), []),  # ten sessions recur
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _beam_chat(folder: Path) -> Path:
    """A BEAM chat of three batches: one thread whose sessions must keep their order."""
    batches = [
        {
            "batch_number": b,
            "time_anchor": None,
            "turns": [
                [
                    {
                        "role": "user",
                        "id": 2 * b,
                        "time_anchor": f"January-{b + 1}-2020",
                        "content": f"Garden batch {b}: the tomatoes grew {b} centimetres.",
                    },
                    {"role": "assistant", "id": 2 * b + 1, "content": f"Noted, batch {b}."},
                ]
            ],
        }
        for b in range(1, 4)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chat.json").write_text(json.dumps(batches), encoding="utf-8")
    return folder


@pytest.fixture
def sources(tmp_path: Path) -> list[Path]:
    return [_lme_file(tmp_path / "lme.json"), _beam_chat(tmp_path / "beam" / "100K" / "7")]


def test_parse_token_count() -> None:
    assert parse_token_count("10M") == 10_000_000
    assert parse_token_count("1.5m") == 1_500_000
    assert parse_token_count("100K") == 100_000
    assert parse_token_count("2500") == 2500
    for bad in ("", "ten", "-1M", "0"):
        with pytest.raises(InputError):
            parse_token_count(bad)


def test_pool_holds_no_text_twice_and_no_labels(sources: list[Path]) -> None:
    pool = load_filler_pool(sources)
    texts = [m.text for s in pool.sessions() for m in s.messages]
    hashes = [content_hash(t) for t in texts]
    assert len(hashes) == len(set(hashes))
    # the ten recurring sessions appear once: 40 LongMemEval sessions + the copy, 3 BEAM
    assert Counter(s.source for s in pool.sessions()) == {"longmemeval": 41, "beam": 3}
    assert pool.dropped_repeats == 20
    joined = "\n".join(texts)
    assert ANSWER not in joined and QUESTION not in joined
    assert pool.token_method == "wordpiece"
    assert pool.tokens_by_source()["beam"] == sum(
        s.tokens for s in pool.sessions() if s.source == "beam"
    )


def test_unknown_filler_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps({"something": 1}))
    with pytest.raises(InputError, match="not a BEAM chat"):
        load_filler_pool([bad])
    with pytest.raises(InputError, match="not found"):
        load_filler_pool([tmp_path / "missing"])


def test_history_is_deterministic_and_seeded(sources: list[Path]) -> None:
    pool = load_filler_pool(sources)
    a = build_history(_own(), pool, 600, seed=3)
    b = build_history(_own(), load_filler_pool(sources), 600, seed=3)
    c = build_history(_own(), pool, 600, seed=4)
    assert a.filler_sessions > 3
    assert [(m.id, m.text, m.timestamp, m.session) for m in a.messages] == [
        (m.id, m.text, m.timestamp, m.session) for m in b.messages
    ]
    assert [m.text for m in a.messages] != [m.text for m in c.messages]


def test_evaluated_text_is_left_out_by_content_not_id(sources: list[Path]) -> None:
    pool = load_filler_pool(sources)
    history = build_history(_own(), pool, 100_000, seed=0)  # room for the whole pool
    own_hashes = {content_hash(m.text) for m in _own()}
    filler = [m for m in history.messages if str(m.id).startswith("filler:")]
    assert filler and not own_hashes & {content_hash(m.text) for m in filler}
    # the copy's other message went with it: its session is left out whole
    assert "Something else entirely, said once." not in {m.text for m in filler}
    assert history.excluded_sessions == 1
    # the conversation itself is all there, ids kept
    assert [m.id for m in history.messages if not str(m.id).startswith("filler:")] == [
        str(i) for i in range(6)
    ]
    texts = [content_hash(m.text) for m in history.messages]
    assert len(texts) == len(set(texts))  # no text repeated in the namespace


@pytest.mark.parametrize("budget", [150, 400, 900])
def test_token_budget_as_the_bundled_tokenizer_counts(sources: list[Path], budget: int) -> None:
    counter = TokenCounter()
    assert counter.method == "wordpiece"
    history = build_history(_own(), load_filler_pool(sources), budget, seed=1)
    counted = sum(counter.count(m.text) for m in history.messages)
    assert counted == history.tokens <= budget
    assert history.filler_tokens > 0
    # nothing left in the pool would still have fitted: the budget is used, not wasted
    assert budget - counted < 60


def test_a_budget_below_the_conversation_gives_it_alone(sources: list[Path]) -> None:
    history = build_history(_own(), load_filler_pool(sources), 10, seed=0)
    assert history.filler_sessions == 0 and [m.text for m in history.messages] == [
        m.text for m in _own()
    ]


def test_dates_before_and_among_the_conversation(sources: list[Path]) -> None:
    pool = load_filler_pool(sources)
    # a slow life: 20 tokens a day spreads the filler over months before and during
    history = build_history(_own(), pool, 100_000, seed=2, tokens_per_day=20)
    start, end = min(OWN_DATES), max(OWN_DATES)
    filler = [m for m in history.messages if str(m.id).startswith("filler:")]
    dates = [m.timestamp for m in filler]
    assert all(d is not None and d <= end for d in dates)
    assert any(d < start for d in dates if d)
    assert any(start < d < end for d in dates if d)
    assert history.first_date == min(d for d in dates if d)
    # sessions renumbered in date order
    pairs = [(m.session, m.timestamp) for m in history.messages]
    assert [s for s, _ in pairs] == sorted(s for s, _ in pairs)
    assert [d for _, d in pairs] == sorted(d for _, d in pairs if d)
    # the BEAM thread keeps its batches' order
    beam = [m for m in filler if m.text.startswith("Garden batch")]
    assert len(beam) == 3
    assert [m.text[13] for m in sorted(beam, key=lambda m: (m.timestamp, m.session))] == [
        "1",
        "2",
        "3",
    ]


def test_locomo_filler_holds_turns_only(tmp_path: Path) -> None:
    conv = {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "I planted quinces today."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Quinces need a sunny wall."},
        ],
        "session_1_summary": "summary-marker-abc",
        "session_1_observation": {"Ada": [["observation-marker-def", "D1:1"]]},
        "events_session_1": {"Ada": ["event-marker-ghi"]},
        "qa": [
            {"question": "What did Ada plant?", "answer": "qa-answer-jkl", "evidence": ["D1:1"]}
        ],
    }
    path = tmp_path / "conv-1.json"
    path.write_text(json.dumps(conv), encoding="utf-8")
    pool = load_filler_pool([path])
    texts = [m.text for s in pool.sessions() for m in s.messages]
    assert texts == ["I planted quinces today.", "Quinces need a sunny wall."]
    assert [s.source for s in pool.sessions()] == ["locomo"]
    joined = json.dumps([(m.text, m.speaker) for s in pool.sessions() for m in s.messages])
    for marker in ("summary-marker", "observation-marker", "event-marker", "qa-answer", "D1:"):
        assert marker not in joined
