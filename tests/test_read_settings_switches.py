"""``ReadSettings`` splits what a user tunes from what an experiment switches.

The experiment switches (:data:`~mnemon_langgraph.read.settings.EXPERIMENT_SWITCHES`) are
off by default and each keeps a link to the measurement in ``docs/results/`` that left it
off (a switch without one is dead and goes); every ``--read-setting NAME=`` the docs run
names a field that exists, so a removed setting cannot linger in a documented command.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from mnemon_langgraph.read.settings import EXPERIMENT_SWITCHES, ReadSettings

ROOT = Path(__file__).resolve().parents[1]
READ_SETTING = re.compile(r"--read-setting[ =]+([a-z_][a-z0-9_]*)=")


def attribute_docs(cls: type) -> dict[str, str]:
    """``name -> text`` of each entry of a Google-style ``Attributes:`` section."""
    doc = cls.__doc__ or ""
    section = doc.split("Attributes:", 1)[1]
    entries = re.split(r"\n {8}(?=\w+: )", "\n" + section)
    return {e.split(":", 1)[0].strip(): e.split(":", 1)[1] for e in entries if ":" in e}


def named_settings(text: str) -> set[str]:
    return set(READ_SETTING.findall(text))


def test_each_experiment_switch_is_off_by_default_with_its_measurement() -> None:
    defaults = ReadSettings()
    docs = attribute_docs(ReadSettings)
    assert set(EXPERIMENT_SWITCHES) <= {f.name for f in fields(ReadSettings)}
    assert len(EXPERIMENT_SWITCHES) >= 5
    for name, off in EXPERIMENT_SWITCHES.items():
        assert getattr(defaults, name) == off, f"{name} is not off by default"
        assert "Experiment switch" in docs[name], name
        pages = re.findall(r"docs/results/[\w-]+\.md", docs[name])
        assert pages, f"{name}: no measurement in docs/results/ keeps this switch"
        assert all((ROOT / page).is_file() for page in pages), pages
    tuned = [n for n, text in docs.items() if "Experiment switch" in text]
    assert sorted(tuned) == sorted(EXPERIMENT_SWITCHES), "mark a switch in both places"


def test_documented_read_setting_commands_name_existing_fields() -> None:
    known = {f.name for f in fields(ReadSettings)}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {name for page in pages for name in named_settings(page.read_text("utf-8"))}
    assert found, "no --read-setting command found: the scan means nothing"
    assert found <= known, f"docs run --read-setting with removed fields: {found - known}"


def test_the_scans_find_what_they_look_for() -> None:
    assert named_settings("mnemon eval beam D --read-setting opening_turns=$n --out x") == {
        "opening_turns"
    }
    assert named_settings("--read-setting=no_such_field=1") == {"no_such_field"}
    assert "fused_weight" in attribute_docs(ReadSettings)
