"""LongMemEval: the loader (release shape), the metrics, the prompts and the harness/CLI.

Runs on a tiny invented file in the release's shape (tests/_longmemeval_fixture.py) with
LangChain's deterministic fake embeddings and the offline local judge.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from _longmemeval_fixture import PET, SHARED, eval_args, questions, repeated_session_question, write
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from mnemon_langgraph.cli import main
from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval import longmemeval_answer as lma
from mnemon_langgraph.eval.longmemeval import (
    LongMemEvalConfig,
    run_longmemeval_eval,
    summarize_longmemeval,
)
from mnemon_langgraph.loaders import longmemeval as src
from mnemon_langgraph.loaders.longmemeval import load_longmemeval, parse_question

# -- loader ----------------------------------------------------------------------------------


def test_loader_dates_sessions_and_keeps_labels_apart(tmp_path: Path) -> None:
    qs = list(load_longmemeval(write(tmp_path / "lme.json")))
    assert [q.question_id for q in qs] == ["q_pet", "q_days", "q_violin_abs", "q_commute"]
    pet = qs[0]
    assert pet.question_date == datetime(2023, 5, 30, 23, 40)
    # sessions numbered in date order (the file lists them out of order)
    order = [(m.id, m.session, m.timestamp) for m in pet.messages]
    assert order[0] == ("hike_1_1", 1, datetime(2023, 4, 2, 10, 0))
    assert [m.id for m in pet.messages][2:4] == ["answer_pet_1_1", "answer_pet_1_2"]
    assert all(m.session == 2 for m in pet.messages[2:4])
    assert pet.messages[2].role == "user" and pet.messages[3].role == "assistant"
    assert pet.gold_turns == ["answer_pet_1_1"]
    assert pet.answer_sessions == ["answer_pet_1"]
    assert pet.unresolved_sessions == ["answer_missing_9"]
    # the labels never reach a message's text
    assert all("has_answer" not in m.text and "beagle" not in m.id for m in pet.messages)


def test_loader_skips_and_counts_empty_turns(tmp_path: Path) -> None:
    pet = next(iter(load_longmemeval(write(tmp_path / "lme.json"))))
    assert pet.empty_turns == 2 and pet.empty_gold_turns == 1
    ids = {m.id for m in pet.messages}
    assert "empty_1_2" in ids and "empty_1_1" not in ids and "empty_1_3" not in ids
    assert all(m.text.strip() for m in pet.messages)


def test_loader_abstention_and_int_answers(tmp_path: Path) -> None:
    qs = {q.question_id: q for q in load_longmemeval(write(tmp_path / "lme.json"))}
    assert qs["q_violin_abs"].is_abstention and not qs["q_pet"].is_abstention
    assert qs["q_violin_abs"].gold_turns == []
    assert qs["q_days"].answer == "3"


def test_loader_selection_by_type_and_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "lme.json")
    picked = load_longmemeval(path, question_types=["multi-session", "knowledge-update"])
    assert [q.question_id for q in picked] == ["q_violin_abs", "q_commute"]
    assert [q.question_id for q in load_longmemeval(path, limit=2)] == ["q_pet", "q_days"]
    with pytest.raises(InputError, match="unknown question type"):
        list(load_longmemeval(path, question_types=["single-hop"]))


def test_streaming_reads_across_small_chunks(tmp_path: Path, monkeypatch: Any) -> None:
    path = write(tmp_path / "lme.json")
    text = path.read_text(encoding="utf-8").replace(", {", ",\n  {")  # whitespace between
    path.write_text("\ufeff" + text, encoding="utf-8")  # and a BOM
    monkeypatch.setattr(src, "_CHUNK", 7)
    raws = [raw for _, raw in src.iter_longmemeval(path)]
    assert raws == questions()


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"question_id": "x"}', "JSON list"),
        ("[", "not closed"),
        ('[{"question_id": "a"} {"b": 1}]', "invalid JSON"),
        ("[1, 2]", "not an object"),
        ('[{"a": 1},]', "invalid JSON"),
    ],
)
def test_malformed_files_are_input_errors(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        list(src.iter_longmemeval(path))  # the list's structure, before any question's fields


def test_invalid_utf8_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'[{"question": "\xff"}]')
    with pytest.raises(InputError, match="UTF-8"):
        list(load_longmemeval(bad))
    with pytest.raises(InputError, match="cannot read"):
        list(load_longmemeval(tmp_path / "absent.json"))


def _broken(**changes: Any) -> dict[str, Any]:
    q = questions()[1]
    q.update(changes)
    return q


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (_broken(question_type="single-hop"), "unknown question_type"),
        (_broken(haystack_dates=["2023/06/01 (Thu) 18:00"]), "same length"),
        (_broken(question_date="yesterday-ish"), "question_date"),
        (_broken(haystack_session_ids=["s", "s"]), "twice .* with different turns"),
        (_broken(haystack_sessions=[[{"role": "user", "content": 5}], []]), "'content'"),
        (_broken(haystack_sessions=[[{"role": "narrator", "content": "x"}], []]), "role"),
        ({"question_id": "z"}, "missing"),
    ],
)
def test_malformed_questions_name_the_question(raw: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        parse_question(raw)


def test_a_session_listed_twice_is_a_session_told_twice(tmp_path: Path) -> None:
    path = write(tmp_path / "rep.json", [repeated_session_question(), *questions()])
    q = next(iter(load_longmemeval(path)))  # the file loads; the question is kept
    assert q.repeated_sessions == 1
    # both tellings, each at its own date and session number, in date order
    order = [(m.id, m.session, m.timestamp) for m in q.messages]
    assert order == [
        ("hike_1_1", 1, datetime(2023, 4, 2, 10, 0)),
        ("hike_1_2", 1, datetime(2023, 4, 2, 10, 0)),
        ("answer_pet_1_1", 2, datetime(2023, 5, 20, 2, 21)),
        ("answer_pet_1_2", 2, datetime(2023, 5, 20, 2, 21)),
        ("hike_1_1@2", 3, datetime(2023, 5, 25, 10, 0)),
        ("hike_1_2@2", 3, datetime(2023, 5, 25, 10, 0)),
    ]
    assert q.messages[4].text == q.messages[0].text
    assert {src.session_of(m.id) for m in q.messages} == {"hike_1", "answer_pet_1"}
    assert src.first_telling("hike_1_2@2") == "hike_1_2" == src.first_telling("hike_1_2")
    assert q.gold_turns == ["answer_pet_1_1"] and q.answer_sessions == ["answer_pet_1"]
    assert q.session_dates["hike_1"] == datetime(2023, 4, 2, 10, 0)  # the first telling
    # the same id with different turns is still refused: the file contradicts itself
    other = repeated_session_question()
    other["haystack_sessions"] = [SHARED, PET, PET]
    with pytest.raises(InputError, match=r"'hike_1' appears twice .* different turns"):
        parse_question(other)


def test_the_summary_counts_sessions_told_twice(tmp_path: Path) -> None:
    graph, store, emb = _graph_and_store(tmp_path)
    out = tmp_path / "out"
    try:
        summary = run_longmemeval_eval(
            write(tmp_path / "lme.json", [repeated_session_question(), questions()[1]]),
            out,
            graph=graph(12_000),
            store=store,
            embeddings=emb,
            config=LongMemEvalConfig(budget_curve=(12_000,), baseline_ks=(3,), plots=False),
            curve_graphs={12_000: graph(12_000)},
        )
    finally:
        store.close()
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["repeated_sessions"] for r in rows] == [1, 0]
    assert rows[0]["messages"] == 6 and rows[0]["all_hit"] is True
    assert summary["ingest"]["sessions_told_twice"] == 1
    assert "sessions_told_twice=1" in (out / "summary.md").read_text()


def test_a_question_id_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "dup.json", [questions()[1], questions()[1]])
    with pytest.raises(InputError, match="appears twice"):
        list(load_longmemeval(path))


# -- prompts ---------------------------------------------------------------------------------


def test_grading_prompts_by_type() -> None:
    temporal = lma.grading_prompt("temporal-reasoning", "Q?", "18 days", "19 days")
    assert "off-by-one" in temporal and "Correct Answer: 18 days" in temporal
    update = lma.grading_prompt("knowledge-update", "Q?", "A", "R")
    assert "updated answer" in update and "off-by-one" not in update
    pref = lma.grading_prompt("single-session-preference", "Q?", "rubric text", "R")
    assert "Rubric: rubric text" in pref
    plain = lma.grading_prompt("multi-session", "Q?", "A", "R")
    assert "subset of the information" in plain
    abstain = lma.grading_prompt("multi-session", "Q?", "why", "R", abstention=True)
    assert "unanswerable" in abstain and "Explanation: why" in abstain
    with pytest.raises(ValueError, match="no LongMemEval grading prompt"):
        lma.grading_prompt("adversarial", "Q?", "A", "R")


def test_answer_prompt_and_grade_parsing() -> None:
    when = datetime(2023, 5, 30, 23, 40)
    assert lma.format_question_date(when) == "2023/05/30 (Tue) 23:40"
    model = FakeMessagesListChatModel(responses=[AIMessage("a beagle")])
    assert lma.answer_longmemeval(model, "Breed?", "view text", asked_at=when) == "a beagle"
    yes = FakeMessagesListChatModel(responses=[AIMessage("Yes.")])
    no = FakeMessagesListChatModel(responses=[AIMessage("no")])
    assert lma.grade_longmemeval(yes, "multi-session", "Q", "A", "R").correct is True
    assert lma.grade_longmemeval(no, "multi-session", "Q", "A", "R").correct is False


# -- metrics ---------------------------------------------------------------------------------


def _row(cat: str, all_hit: Any, s_all: Any, **extra: Any) -> dict[str, Any]:
    gold = ["g"] if all_hit is not None else []
    return {
        "category": cat,
        "scored": cat != "abstention",
        "abstention": cat == "abstention",
        "gold_evidence": gold,
        "gold_sessions": ["s"] if s_all is not None else [],
        "all_hit": all_hit,
        "any_hit": all_hit,
        "session_all_hit": s_all,
        "session_any_hit": s_all,
        "view_chars": 100,
        "pool_scores": extra.pop("pool", []),
        **extra,
    }


def test_summary_scores_turns_and_sessions_with_abstention_apart() -> None:
    rows = [
        _row("multi-session", True, True, pool=[["r1", 0.9, True], ["r2", 0.1, False]]),
        _row("multi-session", False, True, pool=[["r3", 0.2, True], ["r4", 0.8, False]]),
        _row("knowledge-update", None, False),  # no has_answer turn: sessions only
        _row("abstention", True, True, pool=[["r5", 0.0, True]]),
    ]
    s = summarize_longmemeval(rows, names=[])
    assert s["view"]["overall"]["n"] == 2 and s["view"]["overall"]["all_hit"] == 0.5
    assert s["view"]["by_category"]["abstention"]["n"] == 1
    assert s["view_sessions"]["overall"]["n"] == 3
    assert s["view_sessions"]["overall"]["session_all_hit"] == pytest.approx(2 / 3)
    assert s["judge_auc"]["records"] == 4 and s["judge_auc"]["auc"] == 0.75  # 3 of 4 pairs
    assert s["counts"]["abstention_questions"] == 1
    assert s["counts"]["questions_without_gold_turns"] == 1


# -- harness and CLI -------------------------------------------------------------------------


def _graph_and_store(tmp_path: Path) -> tuple[Any, Any, Any]:
    from mnemon_langgraph.judges.local import LocalDecisionModel
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.settings import ReadSettings
    from mnemon_langgraph.store import MnemonStore

    emb = DeterministicFakeEmbedding(size=384)
    store = MnemonStore(tmp_path / "journal.sqlite", embeddings=emb)
    judge = LocalDecisionModel(embeddings=emb)

    def graph(budget: int) -> Any:
        return create_read_graph(
            source=store, judge=judge, settings=ReadSettings(view_chars=budget)
        )

    return graph, store, emb


def test_harness_end_to_end_with_answers(tmp_path: Path) -> None:
    graph, store, emb = _graph_and_store(tmp_path)
    answers = FakeMessagesListChatModel(responses=[AIMessage(f"answer {i}") for i in range(4)])
    grades = FakeMessagesListChatModel(
        responses=[AIMessage("yes"), AIMessage("no"), AIMessage("Yes"), AIMessage("no")]
    )
    out = tmp_path / "out"
    try:
        summary = run_longmemeval_eval(
            write(tmp_path / "lme.json"),
            out,
            graph=graph(12_000),
            store=store,
            embeddings=emb,
            config=LongMemEvalConfig(budget_curve=(1_000, 12_000), baseline_ks=(3,), plots=False),
            curve_graphs={1_000: graph(1_000), 12_000: graph(12_000)},
            answer_model=answers,
            grader_model=grades,
        )
        remaining = [ns for ns in store.namespaces() if ns and ns[0] == "longmemeval"]
    finally:
        store.close()
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ["q_pet", "q_days", "q_violin_abs", "q_commute"]
    by_id = {r["question_id"]: r for r in rows}
    assert by_id["q_violin_abs"]["category"] == "abstention"
    assert by_id["q_pet"]["asked_at"] == "2023-05-30T23:40:00"
    assert by_id["q_pet"]["empty_turns"] == 2
    assert [r["correct"] for r in rows] == [True, False, True, False]
    for r in rows:
        assert set(r["budget_curve"]) == {"1000", "12000"}
        assert r["budget_curve"]["12000"]["reused_main_view"] is True
        assert r["budget_curve"]["1000"]["chars"] <= 1_000
        assert {"turns+rrf@view", "turns+bm25@view", "turns+cosine@view"} <= set(r["baselines"])
        assert r["view_sessions"] == sorted({m.rsplit("_", 1)[0] for m in r["view_message_ids"]})
    # a tiny history fits the View whole: every has_answer turn is in it
    assert by_id["q_days"]["all_hit"] is True and by_id["q_days"]["session_all_hit"] is True
    assert summary["ingest"]["empty_turns_skipped"] == 2
    assert summary["ingest"]["empty_gold_turns_skipped"] == 1
    assert summary["counts"] == {
        "questions": 4,
        "scored_questions": 3,  # the abstention question is reported apart
        "abstention_questions": 1,
        "questions_without_gold_turns": 0,
        "questions_with_model_errors": 0,
    }
    assert summary["answers"]["overall"]["n"] == 3  # abstention graded apart
    assert summary["answers"]["by_category"]["abstention"]["correct"] == 1.0
    assert set(summary["budget_curve"]) == {"1000", "12000"}
    assert remaining == []  # each namespace erased after its question
    md = (out / "summary.md").read_text()
    assert "# LongMemEval evaluation" in md and "Budget curve" in md and "abstention" in md


def _cli(tmp_path: Path, out: str, *extra: str) -> list[str]:
    cache = str(tmp_path / "cache.sqlite")
    return eval_args(
        tmp_path,
        out,
        "--embedding-cache",
        cache,
        "--budget-curve",
        "2000,12000",
        "--baseline-k",
        "3,6",
        *extra,
    )


def test_cli_end_to_end_and_the_cache_on_a_second_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "lme.json")
    assert main(_cli(tmp_path, "run1")) == 0
    printed = capsys.readouterr().out
    assert "abstention apart" in printed and "2 empty turns skipped" in printed
    first = json.loads((tmp_path / "run1" / "summary.json").read_text())
    cache1 = first["ingest"]["embedding_cache"]
    assert cache1["misses"] > 0
    assert cache1["hits"] > 0  # the recurring session and turns shared with the journal
    assert main(_cli(tmp_path, "run2")) == 0
    second = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert second["ingest"]["embedding_cache"]["misses"] == 0  # nothing embedded afresh
    for key in ("n", "all_hit", "any_hit", "recall", "view_chars"):  # same Views from the cache
        assert second["view"]["overall"][key] == first["view"]["overall"][key]
    # the summarize command rebuilds a LongMemEval summary from its rows
    assert main(["eval", "summarize", str(tmp_path / "run2"), "--no-plots"]) == 0
    rebuilt = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert rebuilt["budget_curve"].keys() == {"2000", "12000"}
    assert main(["eval", "misses", str(tmp_path / "run2")]) == 0


def test_cli_selection_and_bad_options(tmp_path: Path) -> None:
    write(tmp_path / "lme.json")
    args = _cli(tmp_path, "sel", "--question-types", "temporal-reasoning", "--limit-questions", "1")
    assert main([*args, "--no-embedding-cache"]) == 0
    rows = (tmp_path / "sel" / "results.jsonl").read_text().splitlines()
    assert [json.loads(r)["question_id"] for r in rows] == ["q_days"]
    assert main(_cli(tmp_path, "x", "--question-types", "single-hop")) == 2
    assert main(_cli(tmp_path, "x", "--limit-questions", "0")) == 2
    assert main(_cli(tmp_path, "x", "--budget-curve", "2000,x")) == 2
    write(tmp_path / "lme.json", [questions()[0], {"question_id": "broken"}])
    assert main(_cli(tmp_path, "bad")) == 2
    assert not (tmp_path / "bad" / "results.jsonl").exists()  # refused before any work
