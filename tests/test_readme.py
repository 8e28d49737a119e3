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
