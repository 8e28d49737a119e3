"""No lab material in the product: measurements and issue numbers stay out of the package's
docstrings and comments (issue tracker numbers rot; figures belong in docs/results/, where
they have a date and a method — the code keeps a one-line reason and a link).

Docstrings are every bare string statement (module, class, function and attribute
docstrings), found with :mod:`ast`; comments are found with :mod:`tokenize`. String literals
the program uses (format strings, dates a parser expects, SQL) are code and are not scanned.
``bench/`` and ``eval/`` measure things by design and are left out.

What counts as a figure: issue numbers, percentages with a decimal, "measured", percentile
latencies, commit hashes, ratios written with × (``1.09×``, ``×1.4``), timings (any ms/µs,
seconds with a decimal or a "~"), rates per second, ``recall@k``, "N of M" counts and byte
sizes. The measurement scripts themselves live in ``benchmarks/``, never in ``docs/``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mnemon_langgraph"
EXCLUDED = ("bench", "eval")

PATTERNS: dict[str, re.Pattern[str]] = {
    "issue number": re.compile(r"\bissues?\s+#?\d+\b|(?<![\w&/])#\d{2,}\b", re.IGNORECASE),
    "percent with a decimal": re.compile(r"\d+\.\d+\s?%"),
    "'measured'": re.compile(r"\bmeasured\b", re.IGNORECASE),
    "percentile latency": re.compile(r"\bp(?:50|90|95|99)\b", re.IGNORECASE),
    "commit hash": re.compile(r"\bcommit\s+`{0,2}[0-9a-f]{7,40}\b", re.IGNORECASE),
    # 1.09×, ×1.42, 4×, ~10x; not a shape or a formula with spaces ("50k × 384", "4 × k")
    "ratio": re.compile(
        r"(?<![\w.])\d+(?:\.\d+)?×|×\d+(?:\.\d+)?|×\s\d+\.\d+|(?<![\w.])\d+\.\d+\s×"
        r"|(?<![\w.])\d+(?:\.\d+)?x\b"
    ),
    # every ms/µs/ns figure; seconds and minutes only with a decimal or a "~" (a timeout
    # of "30 s" is a setting, "0.14 s" or "~15 s" a measurement)
    "timing": re.compile(
        r"\b\d+(?:[.,]\d+)?\s?(?:ms|µs|μs|ns)\b"
        r"|\b\d+\.\d+\s?(?:s|min)\b|~\s?\d+\s?(?:s|min|minutes|seconds)\b"
    ),
    "rate": re.compile(r"(?<![\d.,])\d[\d,.]*\s+\w+\s+per\s+(?:CPU-)?second\b", re.IGNORECASE),
    "recall@": re.compile(r"\brecall\s?@\s?\d+", re.IGNORECASE),
    "'N of M' count": re.compile(r"\b\d[\d,]*\s+(?:of|out of)\s+(?:an?\s+|the\s+)?\d[\d,]*\b"),
    "bytes measured": re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B)\b"),
}

# (path relative to the repository, the matched text lower-cased) -> why it is not lab
# material. Keep it small: a figure belongs in docs/results/, not here.
ALLOWLIST: dict[tuple[str, str], str] = {
    ("mnemon_langgraph/store/postgres/_impact.py", "48 kb"): (
        "a size computed from PACK_PART (4,096 postings of an 8-byte seq and a 4-byte impact), "
        "not a measurement"
    ),
}


def _docstring_lines(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            for offset, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, line


def _comment_lines(source: str) -> Iterator[tuple[int, str]]:
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string.lstrip("#")


def hits_in_source(source: str) -> list[tuple[int, str, str]]:
    """``(line, pattern name, matched text)`` for every hit in the docstrings and comments."""
    lines = [*_docstring_lines(ast.parse(source)), *_comment_lines(source)]
    found = []
    for lineno, text in lines:
        for name, pattern in PATTERNS.items():
            for match in pattern.finditer(text):
                found.append((lineno, name, match.group(0)))
    return sorted(found)


def _package_files() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in EXCLUDED
    )


def test_detector_finds_each_pattern_and_ignores_code() -> None:
    planted = '''"""Module.

Fixed in issue 15; p50 4.2 ms, 80.5% recall, measured at commit 3bea423.
"""
# 1.09× against ×1.42 for 3 of 359 questions; recall@48 0.98; a save took 0.14 s
# 88 MB against 194 MB; ~160 texts per CPU-second
FMT = "%d records, 12.5%% of them"  # see #123
WHEN = "2023-05-08"


def f():
    """Measured on LoCoMo dev."""
    return FMT % 3
'''
    names = {name for _, name, _ in hits_in_source(planted)}
    assert names == set(PATTERNS), names
    by_line = {(line, text.lower()) for line, _, text in hits_in_source(planted)}
    assert (3, "issue 15") in by_line
    assert (7, "#123") in by_line
    assert (12, "measured") in by_line
    assert (5, "1.09×") in by_line
    assert (5, "×1.42") in by_line
    assert (5, "3 of 359") in by_line
    assert (5, "recall@48") in by_line
    assert (5, "0.14 s") in by_line
    assert (6, "88 mb") in by_line
    clean = 'FMT = "%d is 12.5%% measured in issue 15"\nx = FMT % 1  # a reason, no figure\n'
    assert hits_in_source(clean) == []
    settings = (
        "# n × 384 floats, a sample of 40 × cells; a timeout of 30 s; 0x1f; one of the 3;\n"
        "# at least 4 × k neighbours; the 2 / 3 rule; 1 / 60 at the top\n"
    )
    assert hits_in_source(settings) == [], hits_in_source(settings)


def test_no_measurements_or_issue_numbers_in_docstrings_and_comments() -> None:
    files = _package_files()
    assert len(files) > 50, "the scan found too few package files to mean anything"
    assert any(p.relative_to(PACKAGE).parts[0] == "read" for p in files)
    offending = []
    used = set()
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        for lineno, name, text in hits_in_source(path.read_text(encoding="utf-8")):
            key = (rel, text.lower())
            if key in ALLOWLIST:
                used.add(key)
                continue
            offending.append(f"{rel}:{lineno}: {name}: {text!r}")
    assert not offending, (
        "lab material in docstrings/comments (move the figure to docs/results/ and leave a "
        "one-line reason with a link; drop issue numbers):\n" + "\n".join(offending)
    )
    assert all(reason.strip() for reason in ALLOWLIST.values()), "every entry needs a reason"
    stale = sorted(set(ALLOWLIST) - used)
    assert not stale, f"allowlist entries that no longer match anything, remove them: {stale}"


def test_measurement_scripts_live_in_benchmarks_not_in_docs() -> None:
    """docs/ holds pages and figures; the scripts that make them live in benchmarks/, and
    its README names each one (a script nobody can find the page of is lost work)."""
    in_docs = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.py"))
    assert not in_docs, f"measurement scripts belong in benchmarks/, not docs/: {in_docs}"
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    assert scripts, "benchmarks/ holds no script: the scan found nothing to check"
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    unnamed = [name for name in scripts if f"`{name}`" not in readme]
    assert not unnamed, f"benchmarks/README.md does not say what these reproduce: {unnamed}"
