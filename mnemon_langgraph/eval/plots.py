"""Plots of an evaluation run (PNG, matplotlib's headless Agg backend).

matplotlib is the optional extra ``eval``; without it :func:`plot_evidence` raises
:class:`~mnemon_langgraph.errors.MissingDependencyError` with the install hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import MissingDependencyError

__all__ = ["plot_evidence"]


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingDependencyError("evaluation plots", "matplotlib", "eval") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _family(name: str) -> str:
    return name.rsplit("@", 1)[0]


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
    """
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    series: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for name, agg in summary.get("baselines", {}).items():
        series.setdefault(_family(name), []).append((name, agg))
    view = summary.get("view")

    def point(
        agg: Mapping[str, Any], cat: str | None, chars_key: str
    ) -> tuple[float, float, float, float] | None:
        s = agg.get("overall") if cat is None else agg.get("by_category", {}).get(cat)
        if not s or s.get("all_hit") is None or not s.get(chars_key):
            return None
        lo, hi = s.get("all_hit_ci95", [s["all_hit"], s["all_hit"]])
        return float(s[chars_key]), float(s["all_hit"]), float(lo), float(hi)

    def draw(ax: Any, cat: str | None) -> None:
        for family, members in sorted(series.items()):
            pts = [p for _, agg in members if (p := point(agg, cat, "chars")) is not None]
            pts.sort()
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", ms=4, lw=1, capsize=2, label=family)
        if view is not None and (p := point(view, cat, "view_chars")) is not None:
            ax.errorbar(
                [p[0]],
                [p[1]],
                yerr=[[p[1] - p[2]], [p[3] - p[1]]],
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

    written: list[Path] = []
    fig, ax = plt.subplots(figsize=(7, 5))
    draw(ax, None)
    ax.set_title("Evidence hit rate against context (scored categories)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = out / "evidence_vs_chars.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    cats = sorted((view or {}).get("by_category", {}).keys())
    if cats:
        cols = min(3, len(cats))
        rows = (len(cats) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
        for i, cat in enumerate(cats):
            ax = axes[i // cols][i % cols]
            draw(ax, cat)
            name = (view or {}).get("by_category", {}).get(cat, {}).get("name", "")
            ax.set_title(f"category {cat} {name}")
        for j in range(len(cats), rows * cols):
            axes[j // cols][j % cols].set_visible(False)
        if axes[0][0].get_legend_handles_labels()[0]:
            axes[0][0].legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        path = out / "evidence_by_category.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
