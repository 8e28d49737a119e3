"""README.md's read-graph quickstart runs as pasted, and its two set-up commands exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from _paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _block_after(heading: str) -> str:
    start = README.index(heading)
    match = re.search(r"```python\n(.*?)```", README[start:], re.S)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


# The README blocks this module runs (tests/test_docs.py checks every block is run somewhere).
TESTED_BLOCKS = (_block_after("## Quickstart: the read graph"),)


def test_setup_commands_are_marked_for_ci() -> None:
    for marker in ("ci:install", "ci:test"):
        match = re.search(rf"<!-- {marker} -->\s*```bash\n(.+?)\n```", README, re.S)
        assert match, marker
        assert "\n" not in match.group(1).strip(), "each set-up command is one line"
    assert "mnemon demo" in README and "python -m pytest" in README


def test_read_graph_quickstart_runs_as_pasted(tmp_path: Path) -> None:
    code = _block_after("## Quickstart: the read graph")
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # The View names the record with the move, delimited as data, and explain() says why.
    assert "Rotterdam" in out.stdout
    assert "<record" in out.stdout
    assert "found by" in out.stdout
    assert (tmp_path / "memory.db").exists()


def test_studio_section_installs_from_a_clone_and_keeps_the_db_out_of_git() -> None:
    studio = README[README.index("### LangGraph Studio") :]
    assert "pip install '.[studio]'" in studio and "mnemon-langgraph[" not in README
    assert "MNEMON_DB=memory.db langgraph dev" in studio and "refused" in studio
    # the journal and its index folder the README's command writes are ignored by git
    paths = ["memory.db", "memory.db-wal", "memory.db.indexes/x/bm25.json"]
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True, text=True
    )
    assert out.stdout.split() == paths, out.stderr


def test_quickstart_imports_only_the_top_level() -> None:
    code = _block_after("## Quickstart: the read graph")
    imports = re.findall(r"^from (mnemon_langgraph[.\w]*) import", code, re.M)
    assert imports == ["mnemon_langgraph"]
