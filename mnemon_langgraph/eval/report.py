"""Token counting, run metadata and the Markdown summary of an evaluation run.

Tokens are counted offline with the WordPiece tokenizer bundled for the embedder
(``mnemon_langgraph/data/minilm-tokenizer.json``, loaded with ``tokenizers``); if it cannot
be loaded, with the documented fallback ``ceil(chars / 4)``. Both are stand-ins for the
answering model's tokenizer (``tiktoken`` downloads its tables, so it is not used); ratios
such as ECI's ``c / c_full`` are counted with the same tokenizer on both sides.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "TokenCounter",
    "first_result_row",
    "format_value",
    "header_lines",
    "markdown_table",
    "plot_lines",
    "read_results",
    "render_summary_markdown",
    "run_metadata",
]

_TOKENIZER_FILE = Path(__file__).resolve().parent.parent / "data" / "minilm-tokenizer.json"


def read_results(out_dir: str | Path) -> tuple[Path, list[dict[str, Any]]]:
    """A run's ``results.jsonl`` (its path and rows), as every ``summarize`` rebuild reads it.

    Raises:
        InputError: If ``results.jsonl`` is missing or holds no rows.
    """
    from mnemon_langgraph.errors import InputError

    out = Path(out_dir)
    path = out / "results.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise InputError(f"no results.jsonl in {out}") from exc
    rows = [json.loads(line) for line in lines if line.strip()]
    if not rows:
        raise InputError(f"{path} holds no rows")
    return path, rows


def first_result_row(out_dir: str | Path) -> dict[str, Any]:
    """The first row of ``out_dir/results.jsonl`` (``{}`` if unreadable): which harness wrote it."""
    try:
        with (Path(out_dir) / "results.jsonl").open(encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
        row = json.loads(first) if first else {}
    except (OSError, ValueError):
        return {}
    return row if isinstance(row, dict) else {}


class TokenCounter:
    """Counts tokens offline: bundled WordPiece tokenizer, else ``ceil(chars / 4)``.

    Args:
        tokenizer_file: A ``tokenizers`` JSON file (default: the bundled MiniLM tokenizer).
        use_tokenizer: ``False`` forces the chars/4 fallback.

    Attributes:
        method: ``"wordpiece"`` or ``"chars/4"``, recorded in the summary.
    """

    def __init__(self, tokenizer_file: Path | None = None, *, use_tokenizer: bool = True) -> None:
        self._tok: Any = None
        self.method = "chars/4"
        self._lock = threading.Lock()
        if not use_tokenizer:
            return
        try:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(tokenizer_file or _TOKENIZER_FILE))
            tok.no_truncation()
            tok.no_padding()
            self._tok = tok
            self.method = "wordpiece"
        except Exception:  # missing package or file: documented fallback
            self._tok = None

    def count(self, text: str) -> int:
        """Tokens in ``text`` (no special tokens)."""
        if not text:
            return 0
        if self._tok is None:
            return math.ceil(len(text) / 4)
        with self._lock:
            return len(self._tok.encode(text, add_special_tokens=False).ids)


def _version() -> str:
    try:
        return metadata.version("mnemon-langgraph")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "unknown"


def run_metadata(command: Sequence[str] | str | None = None) -> dict[str, Any]:
    """What a result file needs to be reproducible: command, machine, versions, date."""
    if command is None:
        command = sys.argv
    cmd = command if isinstance(command, str) else " ".join(str(c) for c in command)
    return {
        "command": cmd,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_version": _version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def _fmt(value: Any, pct: bool = False) -> str:
    """A figure as the reports print it: ``–`` for none, a percentage, a rounded number."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if pct:
        return f"{100 * float(value):.1f}%"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _header_lines(summary: Mapping[str, Any]) -> list[str]:
    """The run's command, machine, config, counts and budgets as a bullet list."""
    meta = summary.get("metadata", {})
    out = ["# LoCoMo evaluation", ""]
    out.append(f"- command: `{meta.get('command', '')}`")
    out.append(
        f"- date: {meta.get('date', '')}; package {meta.get('package_version', '')}; "
        f"{meta.get('platform', '')}, {meta.get('cpu_count', '')} CPUs"
    )
    for label, key in (("config", "config"), ("counts", "counts")):
        data = summary.get(key) or {}
        if data:
            out.append(f"- {label}: " + ", ".join(f"{k}={v}" for k, v in data.items()))
    repairs = summary.get("evidence_repairs")
    if repairs:
        out.append(
            "- evidence ids repaired/dropped: " + ", ".join(f"{k}={v}" for k, v in repairs.items())
        )
    rs = summary.get("read_settings") or {}
    if rs:
        keys = ("view_chars", "view_records", "pool_size", "max_rounds", "page_records")
        out.append("- read budgets: " + ", ".join(f"{k}={rs[k]}" for k in keys if k in rs))
    out.append(f"- tokens counted with: {summary.get('token_method', '')}")
    out.append("")
    return out


_VIEW_COLUMNS = (
    ("questions", "n", False),
    ("all_hit", "all_hit", True),
    ("any_hit", "any_hit", True),
    ("recall", "recall", True),
    ("chars", "view_chars", False),
    ("tokens", "view_tokens", False),
    ("searches", "searches", False),
    ("S1 calls", "s1_calls", False),
    ("waves", "waves", False),
    ("rounds", "rounds", False),
    ("read s (no models)", "read_seconds", False),
)
"""(column header, summary key, shown as a percentage) of the View's overall table."""


def _view_lines(view: Mapping[str, Any]) -> list[str]:
    overall = view.get("overall", {})
    out = ["## View (scored categories 1–4)", ""]
    row = [_fmt(overall.get(key), pct) for _, key, pct in _VIEW_COLUMNS]
    out.extend(_table([header for header, _, _ in _VIEW_COLUMNS], [row]))
    out += ["", "### By category", ""]
    rows = [
        [
            f"{cat} {s.get('name', '')}",
            _fmt(s.get("n")),
            _fmt(s.get("all_hit"), True),
            _fmt(s.get("any_hit"), True),
            _fmt(s.get("recall"), True),
            _fmt(s.get("view_chars")),
        ]
        for cat, s in view.get("by_category", {}).items()
    ]
    out.extend(_table(["category", "questions", "all_hit", "any_hit", "recall", "chars"], rows))
    out += ["", "Category 5 (adversarial) is not in the overall row.", ""]
    return out


def _baseline_lines(baselines: Mapping[str, Any]) -> list[str]:
    if not baselines:
        return []
    out = ["## Baselines (turn-level records, same questions)", ""]
    rows = []
    for name, s in baselines.items():
        o = s.get("overall", {})
        rows.append(
            [name]
            + [_fmt(o.get(k), True) for k in ("all_hit", "any_hit", "recall")]
            + [_fmt(o.get("chars")), _fmt(o.get("tokens"))]
        )
    out.extend(_table(["baseline", "all_hit", "any_hit", "recall", "chars", "tokens"], rows))
    out.append("")
    return out


def _judge_lines(judge: Mapping[str, Any] | None) -> list[str]:
    if not judge:
        return []
    return [
        "## Judge quality (paper §6.5)",
        "",
        f"ROC AUC of P(needed) for gold evidence over pooled records: "
        f"{_fmt(judge.get('auc'))} ({judge.get('records', 0)} records, "
        f"{judge.get('gold', 0)} gold; {judge.get('questions', 0)} questions).",
        "",
    ]


def _answer_lines(answers: Mapping[str, Any] | None) -> list[str]:
    if not answers:
        return []
    o = answers.get("overall", {})
    out = [
        "## Answers (LLM graded)",
        "",
        f"accuracy {_fmt(o.get('correct'), True)}, context tokens/question "
        f"{_fmt(o.get('view_tokens'))}, c_full {_fmt(answers.get('c_full_tokens'))}, "
        f"ECI {_fmt(answers.get('eci'))}",
        "",
    ]
    rows = [
        [f"{cat} {s.get('name', '')}", _fmt(s.get("n")), _fmt(s.get("correct"), True)]
        for cat, s in answers.get("by_category", {}).items()
    ]
    out.extend(_table(["category", "questions", "accuracy"], rows))
    out.append("")
    return out


def _plot_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's plots section (the PNGs, or why there are none)."""
    plots = summary.get("plots")
    if plots:
        return ["## Plots", "", *(f"![{Path(p).stem}]({Path(p).name})" for p in plots), ""]
    if summary.get("plots_error"):
        return ["## Plots", "", f"No plots: {summary['plots_error']}", ""]
    return []


def render_summary_markdown(summary: Mapping[str, Any]) -> str:
    """Render ``summary.json``'s content as Markdown (tables of the headline figures)."""
    out = _header_lines(summary)
    out += _view_lines(summary.get("view", {}))
    out += _baseline_lines(summary.get("baselines", {}))
    out += _judge_lines(summary.get("judge_auc"))
    out += _answer_lines(summary.get("answers"))
    out += _plot_lines(summary)
    return "\n".join(out)


# The report's pieces other harnesses' reports are built from (LongMemEval's summary.md).
format_value = _fmt
markdown_table = _table
header_lines = _header_lines
plot_lines = _plot_lines
