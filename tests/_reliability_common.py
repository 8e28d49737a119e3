"""Shared fixtures of the reliability tests: fast embedder, scripted judge, scanners."""

from __future__ import annotations

import os
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.types import Message

EMB_DIM = 32

# Namespaces that stress the key encoding: prefixes of each other, e-mail addresses,
# slashes, dots, quotes, unicode, JSON-looking text.
NAMESPACES: list[tuple[str, ...]] = [
    ("a",),
    ("a", "b"),
    ("a/b",),
    ("ada@example.com",),
    ("users", "ada@example.com"),
    ("users", "ada@example.co"),
    ("ünï/cødé", "名前"),
    ('["a","b"]',),
    ("A",),
]


def fake_embeddings() -> DeterministicFakeEmbedding:
    """Hash-seeded vectors: fast, deterministic, meaningless (fine for plumbing tests)."""
    return DeterministicFakeEmbedding(size=EMB_DIM)


def _judge_answer(qid: str, question: Any, state: Any) -> float:
    suffix = qid.partition(".")[2]
    if suffix == "stale":
        return 0.05
    return 0.8


def yes_judge(**kwargs: Any) -> ScriptedDecisionModel:
    """A scripted System 1 that says yes to everything but *no longer current*."""
    return ScriptedDecisionModel(answers=_judge_answer, **kwargs)


def tagged_messages(tag: str, n: int, *, prefix: str = "m", extra: str = "") -> list[Message]:
    """``n`` messages whose text carries ``tag`` (a word unique to their namespace)."""
    return [
        Message(
            text=f"{tag} shared apple garden story number {i} {extra}".strip(),
            speaker="Ada" if i % 2 == 0 else "Bo",
            role="user",
            id=f"{prefix}{i}",
            timestamp=datetime(2024, 1, 1 + i % 3, 10, 0),
            session=1 + i % 3,
        )
        for i in range(n)
    ]


# --- scanning files for leftover text ---------------------------------------------------


def sqlite_cells(db: Path) -> Iterable[tuple[str, str, bytes]]:
    """Every cell of every table as ``(table, column, bytes)`` (text and blobs alike)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            q = '"' + table.replace('"', '""') + '"'
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({q})")]
            for row in conn.execute(f"SELECT * FROM {q}"):
                for col, value in zip(cols, row, strict=True):
                    if value is None:
                        continue
                    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
                    yield table, col, raw
    finally:
        conn.close()


def files_containing(paths: Iterable[Path], needles: Iterable[bytes]) -> list[str]:
    """``"path: needle"`` for every file among ``paths`` holding any needle (raw bytes)."""
    wanted = [n for n in needles if n]
    hits = []
    for path in paths:
        if not path.is_file():
            continue
        data = path.read_bytes()
        low = data.lower()
        for needle in wanted:
            if needle in data or needle.lower() in low:
                hits.append(f"{path}: {needle!r}")
    return hits


def all_files(root: Path) -> list[Path]:
    """Every file under ``root`` (recursively), or ``[]`` when it does not exist."""
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def utf16(text: str) -> bytes:
    """``text`` as UTF-16-LE bytes (SQLite may store text this way)."""
    return text.encode("utf-16-le")


WORD = re.compile(r"\w+")


def start_child(script: Path, *args: str) -> subprocess.Popen[bytes]:
    """Start a crash-test child script and wait (≤ 120 s) until it prints ``ready``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, str(script), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], 120)
    line = child.stdout.readline() if ready else b""
    if line.strip() != b"ready":
        child.kill()
        _, err = child.communicate()
        pytest.fail(f"child not ready: {line!r} {err.decode()[-2000:]}")
    return child


def kill_after(child: subprocess.Popen[bytes], delay: float) -> None:
    """SIGKILL ``child`` after ``delay`` seconds; fail if it died of anything else."""
    time.sleep(delay)
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    if child.returncode not in (-signal.SIGKILL, 0):  # 0: it finished first (still checked)
        err = child.stderr.read().decode() if child.stderr else ""
        pytest.fail(f"child ended before the kill ({child.returncode}): {err[-2000:]}")
