"""A tiny LongMemEval-format file, invented text, in the release's shape (tests only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _turn(role: str, content: str, has_answer: bool | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": role, "content": content}
    if has_answer is not None:
        turn["has_answer"] = has_answer
    return turn


# A session that recurs, unchanged, in two questions' histories (as in the release).
SHARED = [
    _turn("user", "Can you suggest a weekend hike near a lake with easy trails?"),
    _turn("assistant", "A loop around a reservoir with a flat gravel path would suit you."),
]

PET = [
    _turn("user", "I adopted a beagle named Pickle from the shelter last week.", True),
    _turn("assistant", "Congratulations on Pickle! Beagles love long sniffing walks.", False),
]

EMPTY = [
    _turn("user", ""),  # an empty turn, as a few release turns are
    _turn("assistant", "It looks like your message was empty; how can I help?"),
    _turn("user", "   ", True),  # empty and marked: skipped, counted as an empty gold turn
]


def questions() -> list[dict[str, Any]]:
    """Four questions: single-session-user, temporal (int answer), abstention, update."""
    return [
        {
            "question_id": "q_pet",
            "question_type": "single-session-user",
            "question": "What breed is the dog I adopted?",
            "question_date": "2023/05/30 (Tue) 23:40",
            "answer": "a beagle",
            # file order is not date order: the loader sorts sessions by date
            "haystack_session_ids": ["answer_pet_1", "hike_1", "empty_1"],
            "haystack_dates": [
                "2023/05/20 (Sat) 02:21",
                "2023/04/02 (Sun) 10:00",
                "2023/05/21 (Sun) 09:15",
            ],
            "haystack_sessions": [PET, SHARED, EMPTY],
            "answer_session_ids": ["answer_pet_1", "answer_missing_9"],
        },
        {
            "question_id": "q_days",
            "question_type": "temporal-reasoning",
            "question": "How many days passed between my pottery class and my kiln visit?",
            "question_date": "2023/06/10 (Sat) 12:00",
            "answer": 3,
            "haystack_session_ids": ["answer_pot_1", "answer_pot_2"],
            "haystack_dates": ["2023/06/01 (Thu) 18:00", "2023/06/04 (Sun) 18:00"],
            "haystack_sessions": [
                [
                    _turn("user", "Today I took my first pottery class downtown.", True),
                    _turn("assistant", "How fun! Did you try the wheel?"),
                ],
                [
                    _turn("user", "I visited the studio kiln today to fire my bowl.", True),
                    _turn("assistant", "Firing day is exciting; glazes change a lot."),
                ],
            ],
            "answer_session_ids": ["answer_pot_1", "answer_pot_2"],
        },
        {
            "question_id": "q_violin_abs",
            "question_type": "multi-session",
            "question": "How many violin lessons have I taken?",
            "question_date": "2023/07/01 (Sat) 08:00",
            "answer": "You did not mention violin lessons; you mentioned a guitar course.",
            "haystack_session_ids": ["answer_guitar_abs_1"],
            "haystack_dates": ["2023/06/20 (Tue) 19:30"],
            "haystack_sessions": [
                [
                    _turn("user", "I signed up for a ten-week guitar course."),
                    _turn("assistant", "Great choice; practise chords daily."),
                ]
            ],
            "answer_session_ids": ["answer_guitar_abs_1"],
        },
        {
            "question_id": "q_commute",
            "question_type": "knowledge-update",
            "question": "How do I get to work now?",
            "question_date": "2023/08/15 (Tue) 07:00",
            "answer": "by bicycle",
            "haystack_session_ids": ["hike_1", "answer_bus_1", "answer_bike_1"],
            "haystack_dates": [
                "2023/04/02 (Sun) 10:00",
                "2023/05/01 (Mon) 08:00",
                "2023/08/01 (Tue) 08:00",
            ],
            "haystack_sessions": [
                SHARED,
                [_turn("user", "I take the number 12 bus to my office every morning.", True)],
                [_turn("user", "I sold my bus pass and now ride my bicycle to work.", True)],
            ],
            "answer_session_ids": ["answer_bus_1", "answer_bike_1"],
        },
    ]


def repeated_session_question() -> dict[str, Any]:
    """A question whose history lists a filler session twice: same id, same turns, two
    dates (13 questions of the public LongMemEval-S release do; the dev file has none)."""
    return {
        "question_id": "q_repeat",
        "question_type": "single-session-user",
        "question": "What is my dog's name?",
        "question_date": "2023/06/30 (Fri) 20:00",
        "answer": "Pickle",
        "haystack_session_ids": ["hike_1", "answer_pet_1", "hike_1"],
        "haystack_dates": [
            "2023/05/25 (Thu) 10:00",
            "2023/05/20 (Sat) 02:21",
            "2023/04/02 (Sun) 10:00",
        ],
        "haystack_sessions": [SHARED, PET, SHARED],
        "answer_session_ids": ["answer_pet_1"],
    }


def write(path: Path, items: list[dict[str, Any]] | None = None) -> Path:
    """Write the questions (default :func:`questions`) as one JSON list."""
    path.write_text(json.dumps(items if items is not None else questions()), encoding="utf-8")
    return path


def eval_args(tmp_path: Path, out: str, *extra: str) -> list[str]:
    """``mnemon eval longmemeval`` of the file :func:`write` wrote to ``tmp_path/lme.json``,
    into ``tmp_path/out``, with fake embeddings and no plots or progress bar."""
    return [
        "eval",
        "longmemeval",
        str(tmp_path / "lme.json"),
        "--out",
        str(tmp_path / out),
        "--embeddings",
        "fake",
        "--no-plots",
        "--no-progress",
        *extra,
    ]
