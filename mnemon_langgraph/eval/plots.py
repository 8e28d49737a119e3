"""Plots of an evaluation run (PNG, matplotlib's headless Agg backend).

matplotlib is the optional extra ``eval``; without it :func:`plot_evidence` raises
:class:`~mnemon_langgraph.errors.MissingDependencyError` with the install hint, and
:func:`plotting_available` lets a caller find that out *before* a long run (plots are a bonus:
the harness warns and still writes its summary).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import MissingDependencyError

__all__ = ["error_bars", "plot_evidence", "plotting_available"]

# (context chars, hit rate, interval low, interval high) of one plotted point.
Point = tuple[float, float, float, float]


def plotting_available() -> bool:
    """Whether matplotlib can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a None entry in sys.modules (blocked import)
        return False


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingDependencyError("evaluation plots", "matplotlib", "eval") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def error_bars(points: Sequence[Point]) -> list[list[float]]:
    """``yerr`` rows (below, above) for ``points``, never negative.

    A Wilson interval is computed in floating point, so for a 100% rate its upper bound can
    come out as 0.9999999999999999 — just *below* the point — and matplotlib refuses a
    negative error. The interval is clipped to [0, 1] and to the point before subtracting.
    """
    below = [max(0.0, y - min(max(lo, 0.0), y)) for _, y, lo, _ in points]
    above = [max(0.0, max(min(hi, 1.0), y) - y) for _, y, _, hi in points]
    return [below, above]


def _family(name: str) -> str:
    return name.rsplit("@", 1)[0]


def _point(agg: Mapping[str, Any], cat: str | None, chars_key: str) -> Point | None:
    s = agg.get("overall") if cat is None else agg.get("by_category", {}).get(cat)
    if not s or s.get("all_hit") is None or not s.get(chars_key):
        return None
    lo, hi = s.get("all_hit_ci95", [s["all_hit"], s["all_hit"]])
    return float(s[chars_key]), float(s["all_hit"]), float(lo), float(hi)


def _series(summary: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Baseline aggregates grouped by family (``turns+cosine@3`` → ``turns+cosine``)."""
    series: dict[str, list[Mapping[str, Any]]] = {}
    for name, agg in summary.get("baselines", {}).items():
        series.setdefault(_family(name), []).append(agg)
    return series


def _draw(ax: Any, summary: Mapping[str, Any], cat: str | None) -> None:
    """One panel: every baseline family as a line, the View as a star."""
    for family, members in sorted(_series(summary).items()):
        pts = sorted(p for agg in members if (p := _point(agg, cat, "chars")) is not None)
        if pts:
            ax.errorbar(
                [p[0] for p in pts],
                [p[1] for p in pts],
                yerr=error_bars(pts),
                marker="o",
                ms=4,
                lw=1,
                capsize=2,
                label=family,
            )
    view = summary.get("view")
    if view is not None and (p := _point(view, cat, "view_chars")) is not None:
        ax.errorbar(
            [p[0]],
            [p[1]],
            yerr=error_bars([p]),
            marker="*",
            ms=14,
            color="black",
            capsize=3,
            label="View",
            linestyle="none",
        )
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("context characters per question")
    ax.set_ylabel("all gold evidence in context")
    ax.grid(True, alpha=0.3)


def _plot_overall(plt: Any, summary: Mapping[str, Any], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 5))
    _draw(ax, summary, None)
    ax.set_title("Evidence hit rate against context (scored categories)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = out / "evidence_vs_chars.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_categories(plt: Any, summary: Mapping[str, Any], out: Path) -> Path | None:
    by_category = (summary.get("view") or {}).get("by_category", {})
    cats = sorted(by_category)
    if not cats:
        return None
    cols = min(3, len(cats))
    rows = (len(cats) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    for i, cat in enumerate(cats):
        ax = axes[i // cols][i % cols]
        _draw(ax, summary, cat)
        ax.set_title(f"category {cat} {by_category[cat].get('name', '')}")
    for j in range(len(cats), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out / "evidence_by_category.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_evidence(summary: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Plot evidence hit rate (all_hit) against context characters.

    Draws ``evidence_vs_chars.png`` (the View and every baseline at each k, like Figure 6 of
    seeds/003 with Wilson 95% bars, log-scaled x) and ``evidence_by_category.png`` (one
    panel per category, same axes).

    Args:
        summary: The run summary (``view``, ``baselines`` as :func:`aggregate` returns them).
        out_dir: Folder for the PNG files.

    Returns:
        The files written.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [_plot_overall(plt, summary, out)]
    by_category = _plot_categories(plt, summary, out)
    if by_category is not None:
        written.append(by_category)
    return written
