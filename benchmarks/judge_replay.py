"""Replay captured System 1 calls with candidate local judges, leave-one-conversation-out.

Input: the pickle of ``judge_capture.py``. For a candidate judge every captured call is
answered again (its *screen*, *needed* and *satisfies* p; *no longer current* is the
capture's), its p put in place of the shipped judge's, and the View composed again by the
package's own ``compose_view`` at 2,000 and 12,000 characters. Scored per question: all
evidence in the View, and the pooled ROC AUC of P(needed) (the eval's: last *needed* p,
else the *screen* p; gold = the record holds a gold turn). Pools are the capture run's, so
a candidate that would change the read loop's later rounds is approximated; the chosen one
is measured by a real run.

Candidates: the hand formula plus one weight on a shipped or a candidate feature
(``judge_candidates.py``), and ``mnemon train judge``'s fits (pointwise logistic regression;
pairwise, the order inside each question) over the 14 shipped or all 22 features, each
conversation scored by the weights fitted on the other four. The grid is also chosen by
leave-one-conversation-out: each fold takes the candidate with the most all-evidence hits at
both budgets on the other conversations. The gold labels score and train; nothing reaches
the memory.

Usage::

    python benchmarks/judge_replay.py CAPTURE.pkl OUT.json [ROWS_CACHE.pkl]
    # the fits on all five LoCoMo conversations, scored on LongMemEval by question fold
    python benchmarks/judge_replay.py transfer CAPTURE.pkl ROWS.pkl LME.pkl LME_ROWS.pkl OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import mnemon_langgraph.read.view as view_module
from mnemon_langgraph.eval.metrics import roc_auc
from mnemon_langgraph.judges._features import FEATURES
from mnemon_langgraph.judges.learned import (
    fit_logistic,
    fit_pairwise,
    hand_weights,
    intercept_for_rate,
)
from mnemon_langgraph.read._rules import Judgment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_candidates import EXTRA, CandidateJudge

BUDGETS = (2_000, 12_000)
JUDGED = ("screen", "needed", "satisfies")


def gold_records(q: Mapping[str, Any]) -> set[str]:
    """Pooled records that hold a gold turn of the question (scoring only)."""
    return {p["id"] for p in q["pool"] if q["gold"] & set(p.get("message_ids") or ())}


def replay(
    q: Mapping[str, Any], p: Mapping[tuple[Any, ...], float]
) -> tuple[dict[int, bool], list[tuple[float, bool]]]:
    """All-evidence per budget, and (P(needed), gold) per pooled record."""
    judged = [
        Judgment(
            j.target_id,
            j.proposition,
            p.get((j.target_id, j.proposition, j.need_index, j.round), j.p),
            j.need_index,
            j.round,
        )
        for j in q["judgments"]
    ]
    hits = {}
    for budget in BUDGETS:
        kw = dict(q["kw"])
        kw["settings"] = dataclasses.replace(kw["settings"], view_chars=budget)
        shown = set(view_module.compose_view(q["pool"], judged, **kw).message_ids)
        hits[budget] = q["gold"] <= shown
    needed: dict[str, float] = {}
    screen: dict[str, float] = {}
    for j in judged:
        if j.proposition == "needed":
            needed[j.target_id] = j.p
        elif j.proposition == "screen":
            screen[j.target_id] = j.p
    best = {**screen, **needed}
    gold = gold_records(q)
    return hits, [(best[r["id"]], r["id"] in gold) for r in q["pool"] if r["id"] in best]


def show(name: str, res: Mapping[str, Any]) -> None:
    folds = " ".join(
        f"{c}:{v['auc']:.3f}/{v['all@2000']:.3f}/{v['all@12000']:.3f}"
        for c, v in res["folds"].items()
    )
    print(
        f"{name:28s} AUC {res['auc']:.4f} (fold mean {res['auc_fold_mean']:.4f}) "
        f"2k {res['all@2000']:.4f} 12k {res['all@12000']:.4f} | {folds}",
        flush=True,
    )


def load(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        return pickle.load(fh)


# -- fast replay: the feature rows of every captured group, computed once ----------------


def precompute(qs: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
    """Per question, every scored group of its calls: rows, targets, and what the judge's
    scoring reads besides the weights (replacements, word count, ALL need), as
    ``LocalDecisionModel._classify`` computes them."""
    from mnemon_langgraph.judges._features import terms
    from mnemon_langgraph.judges._staleness import replacements
    from mnemon_langgraph.judges.propositions import parse_question_id

    judge = CandidateJudge(weights=hand_weights())
    out = []
    for q in qs:
        groups_of_q = []
        for c in q["calls"]:
            call = judge._parse(c["state"])
            groups: dict[tuple[Any, Any], list[tuple[str, Any, Any]]] = {}
            for qid, (_, prop, _) in c["keys"].items():
                if prop not in JUDGED:
                    continue
                key = parse_question_id(qid)
                doc = call.by_id.get(key.local_id)
                if doc is not None:
                    groups.setdefault((key.proposition, key.need_index), []).append((qid, key, doc))
            replaced = replacements(call.records) if groups else {}
            n_terms = len(set(terms(call.query.latest)))
            for (prop, need), members in groups.items():
                rows = judge.features(call, [(k, d) for _, k, d in members])
                ids = [d.id for _, _, d in members]
                index = {rid: i for i, rid in enumerate(ids)}
                pairs = [
                    (index[o], index[n]) for o, n in replaced.items() if o in index and n in index
                ]
                groups_of_q.append(
                    dict(
                        prop=prop.value,
                        targets=[c["keys"][qid][0] for qid, _, _ in members],
                        need=need,
                        round=c["round"],
                        rows=rows,
                        pairs=pairs,
                        n_terms=n_terms,
                        every=call.query.every_instance,
                    )
                )
        out.append(groups_of_q)
    return out


def fast_answer(
    groups: Sequence[Mapping[str, Any]],
    score_rows: Callable[[np.ndarray], np.ndarray],
    calibration: Any = "default",
) -> dict[tuple[Any, ...], float]:
    from mnemon_langgraph.judges.learned import Calibration

    cal = Calibration() if calibration == "default" else calibration
    out: dict[tuple[Any, ...], float] = {}
    for g in groups:
        raw = score_rows(g["rows"])
        s = raw.copy()
        for o, n in g["pairs"]:
            s[n] = max(s[n], raw[o])
        if cal is not None:
            s = cal.apply(
                s, n_terms=g["n_terms"], screen=g["prop"] == "screen", every_instance=g["every"]
            )
        p = 1.0 / (1.0 + np.exp(-np.clip(s, -60, 60)))
        for t, pv in zip(g["targets"], p, strict=True):
            out[(t, g["prop"], g["need"], g["round"])] = float(pv)
    return out


def fast_score(
    qs: Sequence[Mapping[str, Any]],
    pre: Sequence[Sequence[Mapping[str, Any]]],
    scorer_of: Callable[[str], Callable[[np.ndarray], np.ndarray]],
    calibration: Any = "default",
) -> dict[str, Any]:
    per: dict[str, dict[str, Any]] = {}
    for q, groups in zip(qs, pre, strict=True):
        f = per.setdefault(q["conv"], {"hits": {b: [] for b in BUDGETS}, "auc": []})
        hits, pooled = replay(q, fast_answer(groups, scorer_of(q["conv"]), calibration))
        for b in BUDGETS:
            f["hits"][b].append(hits[b])
        f["auc"] += pooled
    return summarise(per)


def summarise(per: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"folds": {}}
    everything: list[tuple[float, bool]] = []
    for conv, f in sorted(per.items()):
        out["folds"][conv] = {
            **{f"all@{b}": float(np.mean(f["hits"][b])) for b in BUDGETS},
            "auc": roc_auc([s for s, _ in f["auc"]], [g for _, g in f["auc"]]),
            "n": len(f["hits"][BUDGETS[0]]),
        }
        everything += f["auc"]
    for b in BUDGETS:
        hits = [h for f in per.values() for h in f["hits"][b]]
        out[f"all@{b}"] = float(np.mean(hits))
        out[f"all@{b}_fold_mean"] = float(np.mean([v[f"all@{b}"] for v in out["folds"].values()]))
    out["auc"] = roc_auc([s for s, _ in everything], [g for _, g in everything])
    out["auc_fold_mean"] = float(np.mean([v["auc"] for v in out["folds"].values()]))
    return out


def loco_choice(
    results: Mapping[str, Mapping[str, Any]], sizes: Mapping[str, int]
) -> dict[str, Any]:
    """Each fold chooses the candidate with the most all-evidence hits at 2,000 + 12,000
    characters on the *other* conversations (ties to the earlier candidate); its figures on
    the held-out conversation are reported, as the mean over folds."""
    names = list(results)
    held: dict[str, Any] = {"choices": {}, "folds": {}}
    for fold in sizes:

        def train(name: str, fold: str = fold) -> float:
            f = results[name]["folds"]
            return sum(f[c][f"all@{b}"] * sizes[c] for c in sizes if c != fold for b in BUDGETS)

        best = max(names, key=lambda n: (round(train(n), 9), -names.index(n)))
        held["choices"][fold] = best
        held["folds"][fold] = results[best]["folds"][fold]
    for b in BUDGETS:
        held[f"all@{b}_fold_mean"] = float(np.mean([v[f"all@{b}"] for v in held["folds"].values()]))
    held["auc_fold_mean"] = float(np.mean([v["auc"] for v in held["folds"].values()]))
    return held


# -- the experiments -------------------------------------------------------------------------

NAMES = (*FEATURES, *EXTRA)
HAND_SCALE = 0.06
"""The hand formula's scale: a weight ``v`` in its units is ``v / 0.06`` in the score's."""
GRID = {
    **{f: (0.05, 0.1, -0.05) for f in ("neighbour", "rrf", "bm25_rank", "dense_rank", *EXTRA)},
    "line_lex/lex": (0.1, 0.2, 0.3),
}
"""Hand formula + one weight (hand-formula units); ``a/b``: ``a`` gains what ``b`` loses."""


def hand_vector() -> tuple[np.ndarray, float]:
    hw = hand_weights()
    return np.r_[np.asarray(hw.coef), np.zeros(len(EXTRA))], hw.intercept


def linear(w: np.ndarray, b: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda rows: rows @ w + b


def grid_candidates() -> dict[str, tuple[np.ndarray, float]]:
    w0, b0 = hand_vector()
    out = {"hand (shipped)": (w0, b0)}
    for name, values in GRID.items():
        for v in values:
            w = w0.copy()
            if "/" in name:
                up, down = name.split("/")
                w[NAMES.index(up)] += v / HAND_SCALE
                w[NAMES.index(down)] -= v / HAND_SCALE
                out[f"{up} +{v}, {down} -{v}"] = (w, b0)
            else:
                w[NAMES.index(name)] += v / HAND_SCALE
                out[f"{name} {v:+}"] = (w, b0)
    return out


def training_rows(
    qs: Sequence[Mapping[str, Any]],
    pre: Sequence[Sequence[Mapping[str, Any]]],
    props: Sequence[str],
) -> dict[str, list[tuple[np.ndarray, np.ndarray, int]]]:
    """Fold → (rows, labels, group id) of its questions' groups of ``props``."""
    out: dict[str, list[tuple[np.ndarray, np.ndarray, int]]] = {}
    gid = 0
    for q, groups in zip(qs, pre, strict=True):
        gold = gold_records(q)
        for g in groups:
            gid += 1
            if g["prop"] in props:
                labels = np.array([t in gold for t in g["targets"]])
                out.setdefault(q["conv"], []).append((g["rows"], labels, gid))
    return out


def learned_fold(
    data: Mapping[str, Sequence[tuple[np.ndarray, np.ndarray, int]]],
    held: str,
    cols: Sequence[int],
    objective: str,
) -> tuple[np.ndarray, float]:
    """Weights fitted on every fold but ``held`` (``mnemon train judge``'s fits)."""
    parts = [p for c, ps in data.items() if c != held for p in ps]
    x = np.vstack([p[0] for p in parts])[:, cols]
    y = np.concatenate([p[1] for p in parts])
    w = np.zeros(len(NAMES))
    if objective == "pointwise":
        coef, b = fit_logistic(x, y, l2=1.0)
    else:  # the order inside each group; the intercept at the hand formula's share of yes
        groups = np.concatenate([np.full(len(p[1]), p[2]) for p in parts])
        coef = fit_pairwise(x, y, groups, l2=1.0)
        w0, b0 = hand_vector()
        rate = float((np.vstack([p[0] for p in parts]) @ w0 + b0 > 0).mean())
        b = intercept_for_rate(x @ coef, rate)
    w[list(cols)] = coef
    return w, b


def run(
    qs: Sequence[Mapping[str, Any]], pre: Sequence[Sequence[Mapping[str, Any]]], out: str
) -> None:
    results: dict[str, Any] = {}
    for name, (w, b) in grid_candidates().items():
        results[name] = fast_score(qs, pre, lambda _, w=w, b=b: linear(w, b))
        show(name, results[name])
    data = training_rows(qs, pre, ("screen", "needed"))
    needed = training_rows(qs, pre, ("needed",))
    for fs, cols in (("14 shipped features", range(14)), ("all 24", range(len(NAMES)))):
        for objective, rows in (("pointwise", data), ("pairwise", needed)):
            fold = {c: learned_fold(rows, c, list(cols), objective) for c in rows}
            name = f"learned {objective}, {fs} (held-out folds)"
            results[name] = fast_score(qs, pre, lambda c, f=fold: linear(*f[c]))
            show(name, results[name])
    sizes = Counter(q["conv"] for q in qs)
    grid = {k: v for k, v in results.items() if not k.startswith("learned")}
    results["loco choice over the grid"] = loco_choice(grid, sizes)
    print(
        json.dumps({k: v for k, v in results["loco choice over the grid"].items() if k != "folds"})
    )
    Path(out).write_text(json.dumps(results, indent=1), encoding="utf-8")


def question_folds(qs: Sequence[dict[str, Any]]) -> None:
    """LongMemEval: a question's fold is its rank among its type's questions mod 5."""
    rank: Counter[str] = Counter()
    for q in qs:
        q["conv"] = f"fold {rank[q['category']] % 5}"
        rank[q["category"]] += 1


def cached_rows(qs: Sequence[Mapping[str, Any]], path: Path) -> list[list[dict[str, Any]]]:
    if path.is_file():
        return pickle.loads(path.read_bytes())
    pre = precompute(qs)
    path.write_bytes(pickle.dumps(pre))
    return pre


def transfer(argv: Sequence[str]) -> None:
    """``transfer LOCOMO.pkl LOCOMO_ROWS.pkl OTHER.pkl OTHER_ROWS.pkl OUT.json``: the fits on
    every LoCoMo conversation, scored on another capture (LongMemEval: unseen by the fits),
    by question fold."""
    train_qs = load(argv[0])
    other = [q for q in load(argv[2]) if q["pool"]]  # questions whose history was ingested
    train_pre, other_pre = cached_rows(train_qs, Path(argv[1])), cached_rows(other, Path(argv[3]))
    question_folds(other)
    results: dict[str, Any] = {}
    w0, b0 = hand_vector()
    results["hand (shipped)"] = fast_score(other, other_pre, lambda _: linear(w0, b0))
    show("hand (shipped)", results["hand (shipped)"])
    data = training_rows(train_qs, train_pre, ("screen", "needed"))
    needed = training_rows(train_qs, train_pre, ("needed",))
    for fs, cols in (("14 shipped features", range(14)), ("all 24", range(len(NAMES)))):
        for objective, rows in (("pointwise", data), ("pairwise", needed)):
            w, b = learned_fold(rows, "", list(cols), objective)
            name = f"learned {objective}, {fs} (fitted on LoCoMo dev)"
            results[name] = fast_score(other, other_pre, lambda _, w=w, b=b: linear(w, b))
            show(name, results[name])
    Path(argv[4]).write_text(json.dumps(results, indent=1), encoding="utf-8")


def _view_ids(q: Mapping[str, Any], judged: Sequence[Judgment], budget: int) -> Any:
    kw = dict(q["kw"])
    kw["settings"] = dataclasses.replace(kw["settings"], view_chars=budget)
    return view_module.compose_view(q["pool"], judged, **kw)


def oracle(argv: Sequence[str]) -> None:
    """``oracle CAPTURE.pkl``: records per 2,000-character View, where its misses are lost,
    and the View when the gold records are ranked first among the needed-judged records
    (``needed``) or also lifted from a screen-only judgment (``judged``)."""
    qs = load(argv[0])
    sizes: Counter[int] = Counter()
    fates: Counter[str] = Counter()
    hits: dict[str, list[bool]] = {"shipped": [], "needed": [], "judged": []}
    chars = []
    for q in qs:
        gold = gold_records(q)
        chars += [len(r["text"]) for r in q["pool"]]
        view = _view_ids(q, q["judgments"], 2_000)
        sizes[len(view.records)] += 1
        shown = set(view.message_ids)
        pooled = {m for r in q["pool"] for m in r.get("message_ids") or ()}
        if q["gold"] <= shown:
            fates["hit"] += 1
        elif not q["gold"] <= pooled:
            fates["a gold turn not pooled"] += 1
        elif q["gold"] <= set(_view_ids(q, q["judgments"], 12_000).message_ids):
            fates["in the 12,000-character View, not in the first records"] += 1
        else:
            fates["pooled, not in the 12,000-character View either"] += 1
        deep = {j.target_id for j in q["judgments"] if j.proposition == "needed"}

        def lifted(j: Judgment, props: tuple[str, ...], gold: set[str] = gold) -> Judgment:
            if j.proposition not in props:
                return j
            p = 0.99 if j.target_id in gold else min(j.p, 0.98)
            return Judgment(j.target_id, j.proposition, p, j.need_index, j.round)

        variants = {
            "shipped": list(q["judgments"]),
            "needed": [lifted(j, ("needed",)) for j in q["judgments"]],
            "judged": [lifted(j, ("needed", "screen")) for j in q["judgments"]]
            + [Judgment(g, "needed", 0.99, None, 1) for g in gold - deep],
        }
        for name, judged in variants.items():
            hits[name].append(q["gold"] <= set(_view_ids(q, judged, 2_000).message_ids))
    n = len(qs)
    print(
        f"records per 2,000-character View: {sorted(sizes.items())}, mean "
        f"{sum(k * v for k, v in sizes.items()) / n:.2f}; median pooled record "
        f"{float(np.median(chars)):.0f} chars"
    )
    print(dict(fates))
    for name, xs in hits.items():
        print(f"all evidence at 2,000 chars, {name}: {np.mean(xs):.2%}")


def stale(argv: Sequence[str]) -> None:
    """``stale CAPTURE.pkl``: the Views without the *no longer current* judgments (p = 0),
    and how many records the shipped rule leaves out at 12,000 characters, gold among them."""
    qs = [q for q in load(argv[0]) if q["pool"]]
    hits: dict[str, dict[int, list[bool]]] = {"shipped": {}, "no stale removal": {}}
    left_out = gold_left_out = 0
    for q in qs:
        off = [
            Judgment(j.target_id, j.proposition, 0.0, j.need_index, j.round)
            if j.proposition == "stale"
            else j
            for j in q["judgments"]
        ]
        for name, judged in (("shipped", q["judgments"]), ("no stale removal", off)):
            for budget in BUDGETS:
                view = _view_ids(q, judged, budget)
                hits[name].setdefault(budget, []).append(q["gold"] <= set(view.message_ids))
                if name == "shipped" and budget == 12_000:
                    out = {
                        rid
                        for rid, why in view.trace["placement"].items()
                        if why == view_module._STALE
                    }
                    left_out += len(out)
                    gold_left_out += len(out & gold_records(q))
    for name, by_budget in hits.items():
        print(name, {b: f"{np.mean(x):.2%}" for b, x in by_budget.items()})
    print(f"left out as no longer current at 12,000 chars: {left_out} (gold: {gold_left_out})")


def main(argv: Sequence[str]) -> None:
    """``CAPTURE.pkl OUT.json [PRE.pkl]``: every candidate; the rows are cached in PRE.pkl."""
    if argv[0] in ("transfer", "oracle", "stale"):
        {"transfer": transfer, "oracle": oracle, "stale": stale}[argv[0]](argv[1:])
        return
    qs = load(argv[0])
    cache = Path(argv[2]) if len(argv) > 2 else None
    if cache is not None and cache.is_file():
        pre = pickle.loads(cache.read_bytes())
    else:
        pre = precompute(qs)
        if cache is not None:
            cache.write_bytes(pickle.dumps(pre))
    run(qs, pre, argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
