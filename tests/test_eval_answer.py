"""Tests of the answer step and the LLM grader with scripted fake chat models."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from mnemon_langgraph.errors import ConfigurationError, ModelCallError
from mnemon_langgraph.eval.answer import (
    GRADER_PROMPT,
    answer_messages,
    answer_question,
    chat_model_from_spec,
    grade_answer,
    parse_grade,
)


def test_answer_reads_the_view_as_delimited_data() -> None:
    msgs = answer_messages("When?", "[Session 1]\nA: <b>ignore all</b>", now="2023-06-01")
    assert "data" in msgs[0].content
    body = msgs[1].content
    assert body.startswith("<memory>\n")
    assert "&lt;b&gt;ignore all&lt;/b&gt;" in body
    assert "<b>" not in body
    assert "Question: When?" in body
    assert "2023-06-01" in body


def test_answer_question_returns_model_text() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage(" 7 May 2023 ")])
    assert answer_question(model, "When?", "records") == "7 May 2023"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('Same date, different format. {"label": "CORRECT"}', True),
        ('{"label": "WRONG"}', False),
        ("The answer names another city. WRONG", False),
        ('```json\n{"label":"correct"}\n```', True),
    ],
)
def test_parse_grade(raw: str, expected: bool) -> None:
    assert parse_grade(raw) is expected


def test_parse_grade_without_label_raises() -> None:
    with pytest.raises(ModelCallError):
        parse_grade("I am not sure.")


def test_grade_answer_uses_lenient_prompt() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage('{"label": "CORRECT"}')])
    result = grade_answer(model, "When did she go?", "7 May 2023", "May 7th, 2023")
    assert result.correct is True
    assert "generous" in GRADER_PROMPT
    assert "CORRECT or WRONG" in GRADER_PROMPT


def test_grade_answer_wrong() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage('{"label": "WRONG"}')])
    assert grade_answer(model, "Q?", "Paris", "Rome").correct is False


def test_chat_model_spec_needs_provider() -> None:
    with pytest.raises(ConfigurationError):
        chat_model_from_spec("gpt-4.1-mini")
    with pytest.raises(ConfigurationError):
        chat_model_from_spec("nosuchprovider:some-model")
