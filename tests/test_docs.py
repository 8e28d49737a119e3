"""The documentation runs: README.md and the mkdocs site under docs/.

Every Python and shell block of README.md and docs/ is either run here, page by page, or
marked by the line before it:

- ``<!-- not-run: why -->``: shown only (it needs a key, a data set, a long run or installs);
- ``<!-- tested-by: tests/test_x.py -->``: that test module runs it with its own assertions
  and lists it in its ``TESTED_BLOCKS``;
- ``<!-- ci:install -->`` / ``<!-- ci:test -->``: ``.ci/run`` extracts and runs it;
- ``<!-- needs: postgres -->``: run here too, with ``MNEMON_DB`` set to a throwaway server.

Blocks in another language (``text``, ``console``, ``json``…) are shown, not run. The site
builds with ``mkdocs build --strict``, its API page covers ``mnemon_langgraph.__all__``, the
design page's layers are the layering test's, and every ``mnemon`` subcommand is documented.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _paths import REPO

RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
MARKER = re.compile(r"^<!--\s*(not-run|tested-by|ci|needs)\s*(?::\s*(.*?))?\s*-->$")
BLOCK_TIMEOUT_S = 300
README_MAX_BYTES = 15_000


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository
    line: int  # line of the opening fence, 1-based
    language: str
    code: str
    marker: str | None  # "not-run", "tested-by", "ci", "needs" or None
    argument: str  # the marker's text after the colon ("" if none)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, with the marker line before each."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not opening:
            i += 1
            continue
        indent, language = opening.groups()
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        assert end < len(lines), f"{path}:{i + 1}: fence never closed"
        previous = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
        mark = MARKER.match(previous)
        code = "\n".join(ln.removeprefix(indent) for ln in lines[i + 1 : end]) + "\n"
        found.append(
            Block(
                page=str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path),
                line=i + 1,
                language=language,
                code=code,
                marker=mark.group(1) if mark else None,
                argument=(mark.group(2) or "") if mark else "",
            )
        )
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for path in pages() for b in blocks(path)]


def _runs_here(block: Block) -> bool:
    return block.language in RUNNABLE and block.marker in (None, "needs")


def test_block_parser_sees_markers_and_languages(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n<!-- not-run: needs a key -->\n```bash\nmnemon consolidate\n```\n\n"
        "```python\nprint(1)\n```\n\n```text\nshown\n```\n",
        encoding="utf-8",
    )
    found = [(b.language, b.marker, b.argument, b.code) for b in blocks(page)]
    assert found == [
        ("bash", "not-run", "needs a key", "mnemon consolidate\n"),
        ("python", None, "", "print(1)\n"),
        ("text", None, "", "shown\n"),
    ]


def test_every_fence_names_its_language() -> None:
    unnamed = [b.where for b in all_blocks() if not b.language]
    assert not unnamed, f"say ```text (shown) or ```python / ```bash (run): {unnamed}"


def marker_problem(b: Block) -> str | None:
    """Why ``b``'s marker does not hold (None when it does, or when it has none)."""
    if b.marker is None:
        return None
    if b.language not in RUNNABLE:
        return f"{b.where}: only python/bash blocks take a marker"
    if b.marker == "not-run":
        return None if len(b.argument) >= 10 else f"{b.where}: say why it is not run"
    if b.marker == "ci":
        ok = b.page == "README.md" and b.argument in ("install", "test")
        return None if ok else f"{b.where}: only the README's install and test commands"
    if b.marker == "needs":
        return None if b.argument == "postgres" else f"{b.where}: unknown need {b.argument!r}"
    module_path = REPO / b.argument  # tested-by: that module runs it and says so
    if not (module_path.is_file() and module_path.parent.name == "tests"):
        return f"{b.where}: no test module {b.argument!r}"
    module = importlib.import_module(module_path.stem)
    if b.code not in getattr(module, "TESTED_BLOCKS", ()):
        return f"{b.where}: not in {b.argument}'s TESTED_BLOCKS"
    return None


def test_every_marked_block_says_why_or_who_runs_it() -> None:
    problems = [p for b in all_blocks() if (p := marker_problem(b))]
    assert not problems, problems


def test_a_marker_that_does_not_hold_is_found() -> None:
    quickstart = next(b for b in blocks(REPO / "README.md") if b.marker == "tested-by")
    bad = [
        Block("x.md", 1, "python", "print(2)\n", "tested-by", quickstart.argument),
        Block("x.md", 1, "python", quickstart.code, "tested-by", "tests/test_nothing.py"),
        Block("x.md", 1, "bash", "ls\n", "not-run", ""),
        Block("x.md", 1, "bash", "ls\n", "ci", "install"),
        Block("x.md", 1, "bash", "ls\n", "needs", "redis"),
    ]
    assert all(marker_problem(b) for b in bad)
    assert marker_problem(quickstart) is None


def test_the_ci_blocks_are_what_ci_runs() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    marked = {b.argument: b for b in blocks(REPO / "README.md") if b.marker == "ci"}
    assert set(marked) == {"install", "test"}
    for name, block in marked.items():
        assert f"readme_command {name})" in ci
        assert block.language == "bash" and block.code.count("\n") == 1, block.where
    assert "mkdocs build --strict" in ci


def test_readme_is_a_front_door() -> None:
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/"


def test_readme_names_the_extra_of_each_command_that_needs_one() -> None:
    """``pip install .`` has neither the MCP SDK nor the web stack: the README paragraph that
    introduces ``mnemon mcp`` / ``mnemon ui`` says which extra to install."""
    paragraphs = (REPO / "README.md").read_text(encoding="utf-8").split("\n\n")
    for command, extra in (("mcp", "mcp"), ("ui", "ui")):
        intro = [p for p in paragraphs if f"`mnemon {command} --db" in p]
        assert intro, f"the README introduces `mnemon {command}` nowhere"
        assert all(f"pip install '.[{extra}]'" in p for p in intro), (command, intro)


def _page_params() -> list[str]:
    return sorted({b.page for b in all_blocks() if _runs_here(b)})


def _environment(tmp_path: Path) -> dict[str, str]:
    """A pasting user's shell: ``mnemon`` on PATH, this worktree's package, no model keys."""
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "mnemon"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mnemon_langgraph.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("MNEMON_DB", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["MNEMON_EMBEDDINGS"] = "fake"  # fast and deterministic; the real model is tested elsewhere
    return env


def _run_block(block: Block, folder: Path, env: dict[str, str]) -> str:
    if RUNNABLE[block.language] == "python":
        command = [sys.executable, "-c", block.code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    out = subprocess.run(
        command,
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, f"{block.where} failed:\n{out.stdout[-1500:]}\n{out.stderr[-3000:]}"
    return out.stdout


def test_a_failing_block_fails_its_page(tmp_path: Path) -> None:
    """The runner sees a command's exit code (a reading command refuses a missing journal)."""
    block = Block("x.md", 1, "bash", "mnemon stats --db missing.db\n", None, "")
    with pytest.raises(AssertionError, match=re.escape("x.md:1 failed")):
        _run_block(block, tmp_path, _environment(tmp_path))
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.slow
@pytest.mark.parametrize("page", _page_params())
def test_page_blocks_run_as_pasted(
    page: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A page's blocks run in order in one empty folder, as a reader pastes them."""
    env = _environment(tmp_path)
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notebooks").symlink_to(REPO / "notebooks")  # the sample, as in a clone
    runnable = [b for b in blocks(REPO / page) if _runs_here(b)]
    assert runnable
    outputs = []
    for block in runnable:
        block_env = dict(env)
        if block.marker == "needs":
            block_env["MNEMON_DB"] = request.getfixturevalue("postgres_url")
        outputs.append(_run_block(block, folder, block_env))
    assert any(o.strip() for o in outputs), f"{page}: its blocks ran but printed nothing"
    if page == "README.md":  # the command-line tour: ingested, found, composed, erased
        text = "\n".join(outputs)
        assert "broad beans" in text.lower() and "<record" in text, text[-2000:]
        assert (folder / "eval-out" / "summary.md").is_file()
    if page == "docs/postgres.md":
        assert "I moved to Lyon" in outputs[0]


@pytest.mark.slow
def test_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert out.returncode == 0, out.stderr[-4000:]
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # the reference is generated from the docstrings, not only the headings
    assert "Write a user&#39;s messages (no model call)" in api or (
        "Write a user's messages (no model call)" in api
    )
    for page in ("concepts", "integrations", "cli", "postgres", "security", "design"):
        assert (site / page / "index.html").is_file(), page
    assert (site / "results" / "postgres-history" / "index.html").is_file()


def test_api_reference_covers_the_public_names() -> None:
    import mnemon_langgraph

    api = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^::: mnemon_langgraph\.(\w+)$", api, re.M)
    public = [name for name in mnemon_langgraph.__all__ if name != "__version__"]
    assert sorted(documented) == sorted(public)


def test_design_page_lists_the_layering_tests_layers() -> None:
    layering = importlib.import_module("test_layering")
    design = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", design, re.M)
    layers = [set(re.findall(r"`(\w+)`", units)) for _, units in rows]
    assert [int(n) for n, _ in rows] == list(range(len(rows)))
    assert layers == layering.LAYERS
    assert "docs/design.md" in (REPO / "tests" / "test_layering.py").read_text(encoding="utf-8")


def test_every_cli_subcommand_is_documented() -> None:
    from mnemon_langgraph.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # argparse has no public API
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").rglob("*.md"))
    missing = [name for name in sub.choices if f"`mnemon {name}" not in docs]
    assert not missing, f"document these in docs/cli.md (or a docs/ page): {missing}"
