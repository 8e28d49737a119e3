"""A document-source setting chosen leave-one-conversation-out (issue 45 §4).

    python benchmarks/documents_folds.py ONE_JOURNAL_RUN LABEL=RUN[,RUN...] [LABEL=RUN ...]

Each ``LABEL=RUN`` is the ``--out`` folder of one ``mnemon eval locomo`` run with the
document flags and one value of the setting being chosen (e.g. ``100=runs/loc-split-c100``
for ``--read-setting dense_candidates=100``); ``ONE_JOURNAL_RUN`` the same questions in one
journal. For each conversation in turn, the label with the highest all-evidence rate on the
*other* conversations is chosen (ties: the label given first), and that label's figures on
the held-out conversation are the ones reported; the totals add the held-out conversations
up. Also prints every label's figures per conversation, so nothing chosen is hidden.
Several runs per label (``LABEL=SPLIT_RUN,DISTRACTOR_RUN``: one per question kind, in the
same order for every label, each against the same one-journal run) choose the label with
the most such questions over all its runs on the other conversations, and report each
kind's held-out figure. ``--within J:POINTS`` chooses only among the labels whose run J
(1-based: e.g. 2 for the distractor runs) stays within POINTS of one journal on the other
conversations, or falls no further below it there than the first label's run J (a target
the setting must keep; the first label, the setting of before, is always a candidate).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from documents_share import _rows  # a sibling script


def _by_conversation(folder: str) -> dict[str, dict[tuple[str, ...], dict[str, Any]]]:
    out: dict[str, dict[tuple[str, ...], dict[str, Any]]] = {}
    for key, row in _rows(folder).items():
        out.setdefault(str(row.get("conversation")), {})[key] = row
    return out


def _hits(rows: dict[tuple[str, ...], dict[str, Any]], keys: set[tuple[str, ...]]) -> int:
    return sum(bool(rows[k]["all_hit"]) for k in keys if k in rows)


def _rrf(row: dict[str, Any]) -> bool:
    return bool((row.get("baselines") or {}).get("turns+rrf@view", {}).get("all_hit"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("one")
    parser.add_argument("runs", nargs="+", metavar="LABEL=RUN[,RUN...]")
    parser.add_argument("--within", default=None, metavar="J:POINTS")
    args = parser.parse_args()
    one = _by_conversation(args.one)
    runs: dict[str, list[dict[str, dict[tuple[str, ...], dict[str, Any]]]]] = {}
    for item in args.runs:
        label, _, folders = item.partition("=")
        runs[label] = [_by_conversation(f) for f in folders.split(",")]
    kinds = {len(r) for r in runs.values()}
    if len(kinds) != 1:
        raise SystemExit("every label needs the same number of runs (one per question kind)")
    n_kinds = kinds.pop()
    convs = sorted(set(one).intersection(*(set(r) for rs in runs.values() for r in rs)))
    keys = [
        {c: set(one[c]).intersection(*(set(rs[j][c]) for rs in runs.values())) for c in convs}
        for j in range(n_kinds)
    ]
    for j in range(n_kinds):
        _table(one, {lb: rs[j] for lb, rs in runs.items()}, convs, keys[j], j)
    held = [[0, 0, 0, 0] for _ in range(n_kinds)]  # held-out hits, one journal, rrf, total
    for c in convs:
        rest = [o for o in convs if o != c]
        score = {
            lb: sum(_hits(rs[j][o], keys[j][o]) for j in range(n_kinds) for o in rest)
            for lb, rs in runs.items()
        }
        first = runs[next(iter(runs))]
        ok = [lb for lb in runs if _keeps(args.within, one, runs[lb], first, keys, rest)]
        chosen = max(ok, key=lambda lb: (score[lb], -list(runs).index(lb)))
        cells = []
        for j in range(n_kinds):
            n = len(keys[j][c])
            got = _hits(runs[chosen][j][c], keys[j][c])
            cells.append(f"{got}/{n} = {100 * got / n:.1f}%")
            held[j][0] += got
            held[j][1] += _hits(one[c], keys[j][c])
            held[j][2] += sum(_rrf(one[c][k]) for k in keys[j][c])
            held[j][3] += n
        print(f"held out {c}: chosen {chosen} on the others; " + "; ".join(cells))
    for j, (got, base_hits, rrf_hits, total) in enumerate(held):
        view, base, rrf = (100 * x / total for x in (got, base_hits, rrf_hits))
        print(
            f"held out, run {j + 1} of each label, all {len(convs)} conversations ({total} "
            f"questions): View {view:.1f}% (one journal {base:.1f}%, change {view - base:+.1f}); "
            f"turns+RRF@view {rrf:.1f}%; lead {view - rrf:.1f} against one journal's "
            f"{base - rrf:.1f}"
        )


def _keeps(
    within: str | None,
    one: dict[str, dict[tuple[str, ...], dict[str, Any]]],
    runs: list[dict[str, dict[tuple[str, ...], dict[str, Any]]]],
    first: list[dict[str, dict[tuple[str, ...], dict[str, Any]]]],
    keys: list[dict[str, set[tuple[str, ...]]]],
    rest: list[str],
) -> bool:
    """Whether a label's run J is within POINTS of one journal on the ``rest``, or no
    further below it than the first label's run J."""
    if within is None:
        return True
    j_text, _, points = within.partition(":")
    j = int(j_text) - 1

    def below(label_runs: list[dict[str, dict[tuple[str, ...], dict[str, Any]]]]) -> float:
        total = sum(len(keys[j][o]) for o in rest)
        got = sum(_hits(label_runs[j][o], keys[j][o]) for o in rest)
        base = sum(_hits(one[o], keys[j][o]) for o in rest)
        return 100 * (base - got) / total

    return below(runs) <= max(float(points), below(first)) + 1e-9


def _table(
    one: dict[str, dict[tuple[str, ...], dict[str, Any]]],
    runs: dict[str, dict[str, dict[tuple[str, ...], dict[str, Any]]]],
    convs: list[str],
    keys: dict[str, set[tuple[str, ...]]],
    j: int,
) -> None:
    print(f"run {j + 1} of each label")
    print(f"{'conversation':14}{'n':>5}{'one':>7}{'rrf':>7}" + "".join(f"{lb:>8}" for lb in runs))
    for c in convs:
        n = len(keys[c])
        cells = "".join(f"{100 * _hits(r[c], keys[c]) / n:8.1f}" for r in runs.values())
        rrf = 100 * sum(_rrf(one[c][k]) for k in keys[c]) / n
        print(f"{c:14}{n:5}{100 * _hits(one[c], keys[c]) / n:7.1f}{rrf:7.1f}{cells}")


if __name__ == "__main__":
    main()
