"""The learned local judge: linear scorer, numpy logistic fit, and ``mnemon train judge``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _paths import LOCOMO_DEV
from test_judges_local import LOCOMO_LIKE, QUESTION

from mnemon_langgraph.cli import main
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.eval.crossval import Dataset, cross_validate
from mnemon_langgraph.judges._features import FEATURES
from mnemon_langgraph.judges.learned import (
    JudgeWeights,
    fit_logistic,
    fit_pairwise,
    hand_weights,
    intercept_for_rate,
)
from mnemon_langgraph.judges.local import LocalDecisionModel, score_to_p
from mnemon_langgraph.judges.propositions import NEEDED
from mnemon_langgraph.read._judging import JudgeRequest, judge_wave


def test_hand_weights_reproduce_the_hand_formula() -> None:
    row = np.zeros((1, len(FEATURES)))
    row[0, FEATURES.index("sem")] = 0.4
    row[0, FEATURES.index("lex")] = 0.2
    assert hand_weights().probabilities(row)[0] == pytest.approx(
        score_to_p(0.45 * 0.4 + 0.55 * 0.2)
    )


def test_p_is_strictly_increasing_in_the_one_score() -> None:
    weights = JudgeWeights(FEATURES, tuple(np.linspace(-1, 2, len(FEATURES))), -0.3)
    rows = np.random.default_rng(0).random((200, len(FEATURES)))
    order = np.argsort(weights.scores(rows))
    assert np.all(np.diff(weights.probabilities(rows)[order]) > 0)


def test_fit_logistic_finds_the_informative_feature() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((400, 3))
    y = x[:, 1] + 0.1 * rng.standard_normal(400) > 0.8  # rare positives, feature 1 decides
    coef, _ = fit_logistic(x, y, l2=0.1)
    assert coef[1] > 5 * max(abs(coef[0]), abs(coef[2]))
    with pytest.raises(ValueError, match="both classes"):
        fit_logistic(x, np.zeros(400, dtype=bool))


def test_weights_naming_other_features_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"features": ["sem"], "coef": [1.0], "intercept": 0.0}))
    with pytest.raises(ConfigurationError, match="retrain"):
        JudgeWeights.load(path)
    path.write_text("{not json")
    with pytest.raises(ConfigurationError, match="cannot read"):
        JudgeWeights.load(path)


def test_a_judge_with_given_weights_uses_them() -> None:
    only_lex = JudgeWeights(FEATURES, tuple(10.0 if f == "lex" else 0.0 for f in FEATURES), -2.0)
    # calibration=None: p = σ(w·x + b) exactly (the calibration: test_judge_calibration.py)
    judge = LocalDecisionModel(lexical_only=True, weights=only_lex, calibration=None)
    result = judge_wave(judge, [JudgeRequest([NEEDED], LOCOMO_LIKE, [QUESTION])])
    p = {j.target_id: j.p for j in result.judgments}
    assert p["gold"] == max(p.values()) and p["gold"] > 0.5
    assert p["camp"] == pytest.approx(1 / (1 + np.exp(2.0)))  # no shared word: lex = 0


FILES = [LOCOMO_DEV / "conv-30.json", LOCOMO_DEV / "conv-26.json"]


@pytest.mark.skipif(not all(f.exists() for f in FILES), reason="LoCoMo dev data not available")
def test_train_judge_writes_weights_with_cross_validated_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "weights.json"
    code = main(
        [
            "train",
            "judge",
            *map(str, FILES),
            "--out",
            str(out),
            "--embeddings",
            "fake",
            "--limit-questions",
            "5",
            "--features",
            str(tmp_path / "f.npz"),
            "--cv-dir",
            str(tmp_path / "cv"),
            "--budgets",
            "2000",
        ]
    )
    assert code == 0
    weights = JudgeWeights.load(out)
    prov = weights.provenance
    assert set(prov["data"]) == {"conv-30.json", "conv-26.json"}
    assert prov["positives"] > 0 and prov["rows"] > prov["positives"]
    assert 0.0 <= prov["cv"]["row_auc_learned"] <= 1.0
    assert set(prov["cv"]["per_conversation"]) == {"conv-30", "conv-26"}
    assert prov["cv"]["view_2000"]["questions"] > 0
    assert (tmp_path / "cv" / "view2000" / "conv-30" / "results.jsonl").exists()
    assert "leave-one-conversation-out judge AUC" in capsys.readouterr().out
    # The cached rows and the held-out run are reused: same fit, no second evaluation.
    results = tmp_path / "cv" / "view2000" / "results.jsonl"
    stamp = results.stat().st_mtime_ns
    again = tmp_path / "again.json"
    args = ["--out", str(again), "--embeddings", "fake", "--features", str(tmp_path / "f.npz")]
    cv = ["--cv-dir", str(tmp_path / "cv"), "--budgets", "2000"]
    assert main(["train", "judge", *map(str, FILES), *args, *cv]) == 0
    assert JudgeWeights.load(again).coef == weights.coef
    assert JudgeWeights.load(again).provenance["cv"]["view_2000"] == prov["cv"]["view_2000"]
    assert results.stat().st_mtime_ns == stamp


@pytest.mark.skipif(not all(f.exists() for f in FILES), reason="LoCoMo dev data not available")
def test_train_judge_evaluates_held_out_folds_on_their_own_question_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--eval-questions`` sets the held-out Views' size apart from the training rows'."""
    out = tmp_path / "w.json"
    common = ["--embeddings", "fake", "--features", str(tmp_path / "f.npz"), "--budgets", "2000"]
    args = ["train", "judge", *map(str, FILES), "--out", str(out), *common]
    assert (
        main(
            [
                *args,
                "--limit-questions",
                "4",
                "--eval-questions",
                "2",
                "--cv-dir",
                str(tmp_path / "cv"),
            ]
        )
        == 0
    )
    prov = JudgeWeights.load(out).provenance
    assert prov["cv"]["view_2000"]["questions"] <= 2 * len(FILES)
    assert "--eval-questions 2" in prov["command"]
    rows = (tmp_path / "cv" / "view2000" / "results.jsonl").read_text().splitlines()
    assert 0 < len(rows) <= 2 * len(FILES)


def test_fit_pairwise_learns_the_order_inside_groups_not_across_them() -> None:
    """Feature 0 orders records within a question; feature 1 only says which question."""
    rng = np.random.default_rng(1)
    rows, labels, groups = [], [], []
    for g in range(60):
        level = rng.normal() * 3  # a per-question offset that says nothing about the order
        for i in range(8):
            gold = i == 0
            rows.append([level + (1.5 if gold else 0.0) + rng.normal() * 0.5, level])
            labels.append(gold)
            groups.append(g)
    x = np.array(rows)
    coef = fit_pairwise(x, labels, groups, l2=0.1)
    assert coef[0] > 1.0 and abs(coef[1]) < 0.05 * coef[0]  # the offset says nothing inside
    b = intercept_for_rate(x @ coef, 0.25)
    assert float(((x @ coef + b) > 0).mean()) == pytest.approx(0.25, abs=0.01)
    with pytest.raises(ValueError):
        fit_pairwise(x, [False] * len(x), groups)


def test_cross_validation_reports_within_question_auc_for_pairwise_weights() -> None:
    rng = np.random.default_rng(2)

    def conv(seed: int) -> Dataset:
        r = np.random.default_rng(seed)
        x = r.random((300, len(FEATURES)))
        y = x[:, FEATURES.index("lex")] + 0.1 * r.random(300) > 0.9
        return Dataset(x, y, 30, np.repeat(np.arange(30), 10))

    data = {f"c{i}": conv(int(rng.integers(1000))) for i in range(3)}
    cv = cross_validate(data, objective="pairwise")
    for figures in cv.per_conversation.values():
        assert figures["within_auc_learned"] is not None
        assert figures["within_auc_learned"] > 0.9
    assert all(w.provenance["objective"] == "pairwise" for w in cv.weights.values())
    with pytest.raises(ValueError, match="grouped"):
        cross_validate(
            {k: Dataset(d.rows, d.labels, 1) for k, d in data.items()}, objective="pairwise"
        )
