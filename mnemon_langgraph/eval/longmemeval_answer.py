"""LongMemEval's own answer and grading prompts (Wu et al., ICLR 2025; MIT licence).

The prompt texts follow the benchmark's release (``src/generation/run_generation.py``, the
non-chain-of-thought reading prompt; ``src/evaluation/evaluate_qa.py``, one grading prompt per
question type and one for abstention questions), so graded accuracies are comparable with
published LongMemEval figures. The grader's reply counts as correct when it contains
``yes`` (case-insensitive), as the release's script decides.

Here the "history chats" are the View: the memory's selection, quoted as data (the View
escapes every bracket that could open or close a block), never instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import ModelCallError

__all__ = [
    "ANSWER_PROMPT",
    "LongMemEvalGrade",
    "answer_longmemeval",
    "format_question_date",
    "grade_longmemeval",
    "grading_prompt",
]

ANSWER_PROMPT = (
    "I will give you several history chats between you and a user. Please answer the "
    "question based on the relevant chat history.\n\n\nHistory Chats:\n\n{history}\n\n"
    "Current Date: {date}\nQuestion: {question}\nAnswer:"
)

_LEAD = (
    "I will give you a question, a correct answer, and a response from a model. Please answer "
    "yes if the response contains the correct answer. Otherwise, answer no. "
)
_STEPS = (
    "If the response is equivalent to the correct answer or contains all the intermediate "
    "steps to get the correct answer, you should also answer yes. If the response only "
    "contains a subset of the information required by the answer, answer no. "
)
_TAIL = (
    "\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n"
    "Is the model response correct? Answer yes or no only."
)
_PLAIN = _LEAD + _STEPS + _TAIL
_TEMPORAL = (
    _LEAD
    + _STEPS
    + "In addition, do not penalize off-by-one errors for the number of days. If the question "
    "asks for the number of days/weeks/months, etc., and the model makes off-by-one errors "
    "(e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
    + _TAIL
)
_UPDATE = (
    _LEAD + "If the response contains some previous information along with an updated answer, the "
    "response should be considered as correct as long as the updated answer is the required "
    "answer." + _TAIL
)
_PREFERENCE = (
    "I will give you a question, a rubric for desired personalized response, and a response "
    "from a model. Please answer yes if the response satisfies the desired response. "
    "Otherwise, answer no. The model does not need to reflect all the points in the rubric. "
    "The response is correct as long as it recalls and utilizes the user's personal "
    "information correctly.\n\nQuestion: {question}\n\nRubric: {answer}\n\nModel Response: "
    "{response}\n\nIs the model response correct? Answer yes or no only."
)
_ABSTENTION = (
    "I will give you an unanswerable question, an explanation, and a response from a model. "
    "Please answer yes if the model correctly identifies the question as unanswerable. The "
    "model could say that the information is incomplete, or some other information is given "
    "but the asked information is not.\n\nQuestion: {question}\n\nExplanation: {answer}\n\n"
    "Model Response: {response}\n\nDoes the model correctly identify the question as "
    "unanswerable? Answer yes or no only."
)
_BY_TYPE = {
    "single-session-user": _PLAIN,
    "single-session-assistant": _PLAIN,
    "multi-session": _PLAIN,
    "temporal-reasoning": _TEMPORAL,
    "knowledge-update": _UPDATE,
    "single-session-preference": _PREFERENCE,
}


def format_question_date(when: datetime) -> str:
    """A date as the release writes it: ``2023/05/30 (Tue) 23:40`` (locale-free)."""
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[when.weekday()]
    return f"{when:%Y/%m/%d} ({day}) {when:%H:%M}"


def grading_prompt(
    question_type: str, question: str, answer: str, response: str, *, abstention: bool = False
) -> str:
    """The release's grading prompt for this question type (or for abstention).

    Raises:
        ValueError: An unknown question type.
    """
    if abstention:
        template = _ABSTENTION
    else:
        try:
            template = _BY_TYPE[question_type]
        except KeyError:
            raise ValueError(f"no LongMemEval grading prompt for {question_type!r}") from None
    return template.format(question=question, answer=answer, response=response)


def answer_longmemeval(
    model: BaseChatModel, question: str, view_text: str, *, asked_at: datetime
) -> str:
    """Answer ``question`` from the View with LongMemEval's reading prompt.

    Raises:
        ModelCallError: If the model call fails.
    """
    prompt = ANSWER_PROMPT.format(
        history=view_text, date=format_question_date(asked_at), question=question
    )
    try:
        reply = model.invoke([HumanMessage(prompt)])
    except Exception as exc:  # a provider error of any kind
        raise ModelCallError(f"answer model failed: {exc}") from exc
    return reply.text.strip()


@dataclass(frozen=True, slots=True)
class LongMemEvalGrade:
    """The grader's verdict: ``correct`` when its reply contains ``yes``; ``raw`` reply."""

    correct: bool
    raw: str


def grade_longmemeval(
    model: BaseChatModel,
    question_type: str,
    question: str,
    answer: str,
    response: str,
    *,
    abstention: bool = False,
) -> LongMemEvalGrade:
    """Grade ``response`` with the release's prompt for the question's type.

    Raises:
        ModelCallError: If the call fails or the reply is empty.
    """
    prompt = grading_prompt(question_type, question, answer, response, abstention=abstention)
    try:
        reply = model.invoke([HumanMessage(prompt)])
    except Exception as exc:
        raise ModelCallError(f"grader model failed: {exc}") from exc
    raw = reply.text.strip()
    if not raw:
        raise ModelCallError("grader model returned an empty reply")
    return LongMemEvalGrade(correct="yes" in raw.lower(), raw=raw)
