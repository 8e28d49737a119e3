"""A long evaluation run's output, appended as it goes, so a stopped run can resume.

Rows are appended to ``results.jsonl`` as each question finishes (and, for the BEAM
harness, each namespace build's measures to ``builds.jsonl``). A run started with
``resume`` keeps the rows an earlier run wrote to the same folder (a last line cut short
by a killed run is dropped) and the harness asks only the questions missing. The run's
settings are written to ``run.json``; a resume with other settings is refused, so one
folder never mixes two configurations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from mnemon_langgraph.errors import InputError

__all__ = ["RunLog", "question_key", "read_jsonl"]


def question_key(
    conversation: object, ability: object, index: object, origin: object = None
) -> tuple[str, str, str, int]:
    """A question of a run: its conversation (as run), the conversation it was written for
    (a concatenation asks several parts' questions), its ability (or type) and index."""
    return (str(conversation), str(origin or ""), str(ability), int(str(index or 0)))


def _row_key(row: Mapping[str, Any]) -> tuple[str, str, str, int]:
    return question_key(
        row.get("conversation"), row.get("ability"), row.get("question_index"), row.get("origin")
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a line cut short by a killed run is dropped."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the line a stopped run was writing
    return rows


class RunLog:
    """The output files of a (possibly resumed) run: rows and builds, appended as they come.

    Args:
        out: The output folder.
        settings: What must match for a resume to continue this run (``run.json``).
        resume: Keep what the folder holds and continue; else start afresh.

    Attributes:
        rows: Every row of the run (resumed ones first).
        builds: Every build record of the run.
        resumed_rows: How many rows came from the earlier run.

    Raises:
        InputError: A resume whose settings differ from the folder's run.
    """

    def __init__(self, out: Path, settings: Mapping[str, Any], *, resume: bool) -> None:
        self.out = out
        self.rows: list[dict[str, Any]] = []
        self.builds: list[dict[str, Any]] = []
        marker = out / "run.json"
        fresh = json.loads(json.dumps(dict(settings), default=str))
        if resume and marker.is_file():
            before = json.loads(marker.read_text(encoding="utf-8"))
            if before != fresh:
                changed = sorted(k for k in {*before, *fresh} if before.get(k) != fresh.get(k))
                raise InputError(
                    f"--resume: {out} holds a run with other settings ({changed}); "
                    "use another --out or the same settings"
                )
            self.rows = read_jsonl(out / "results.jsonl")
            self.builds = read_jsonl(out / "builds.jsonl")
        self.resumed_rows = len(self.rows)
        marker.write_text(json.dumps(fresh, indent=2), encoding="utf-8")
        self._done = {_row_key(r) for r in self.rows}
        # rewrite what is kept (a torn last line goes), then append
        self._results = self._rewrite("results.jsonl", self.rows)
        self._builds: TextIO | None = None
        if self.builds or (out / "builds.jsonl").exists():
            self._builds = self._rewrite("builds.jsonl", self.builds)

    def _rewrite(self, name: str, rows: Sequence[Mapping[str, Any]]) -> TextIO:
        fh = (self.out / name).open("w", encoding="utf-8")
        for row in rows:
            fh.write(json.dumps(row, default=str) + "\n")
        fh.flush()
        return fh

    def done(
        self, conversation: str, ability: object = None, index: object = 0, origin: object = None
    ) -> bool:
        """Whether this question already has its row."""
        return question_key(conversation, ability, index, origin) in self._done

    def add_row(self, row: dict[str, Any]) -> None:
        """Record one question's row (written at once)."""
        self.rows.append(row)
        self._done.add(_row_key(row))
        self._results.write(json.dumps(row, default=str) + "\n")
        self._results.flush()

    def add_build(self, build: dict[str, Any]) -> None:
        """Record one namespace build's measures (written at once to ``builds.jsonl``)."""
        if self._builds is None:
            self._builds = self._rewrite("builds.jsonl", [])
        self.builds.append(build)
        self._builds.write(json.dumps(build, default=str) + "\n")
        self._builds.flush()

    def close(self) -> None:
        """Close the files."""
        self._results.close()
        if self._builds is not None:
            self._builds.close()
