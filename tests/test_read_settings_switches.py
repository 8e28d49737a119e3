"""``ReadSettings`` splits what a user tunes from what an experiment switches.

The experiment switches are a part of their own, ``ReadSettings.experiments``
(:class:`~mnemon_langgraph.read.settings.ExperimentSwitches`): each is off by default and
keeps a link to the measurement in ``docs/results/`` that left it off (a switch without one
is dead and goes); the old flat spellings work for one release with a warning; every
``--read-setting NAME=`` the docs run names a field or switch that exists, so a removed
setting cannot linger in a documented command.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import fields
from pathlib import Path

import pytest

from mnemon_langgraph.read.settings import EXPERIMENT_SWITCHES, ExperimentSwitches, ReadSettings

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
    defaults = ReadSettings().experiments
    docs = attribute_docs(ExperimentSwitches)
    assert set(EXPERIMENT_SWITCHES) == {f.name for f in fields(ExperimentSwitches)}
    assert not set(EXPERIMENT_SWITCHES) & {f.name for f in fields(ReadSettings)}
    assert len(EXPERIMENT_SWITCHES) >= 5
    for name, off in EXPERIMENT_SWITCHES.items():
        assert getattr(defaults, name) == off, f"{name} is not off by default"
        assert "Experiment switch" in docs[name], name
        pages = re.findall(r"docs/results/[\w-]+\.md", docs[name])
        assert pages, f"{name}: no measurement in docs/results/ keeps this switch"
        assert all((ROOT / page).is_file() for page in pages), pages
    tuned = [n for n, text in attribute_docs(ReadSettings).items() if "Experiment switch" in text]
    assert tuned == [], "a switch documented among the user's fields"
    assert sorted(docs) == sorted(EXPERIMENT_SWITCHES), "document every switch"


def test_the_old_flat_spellings_work_for_one_release_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="ExperimentSwitches"):
        old = ReadSettings(view_chars=3000, fused_weight=0.5, leave_out_stale=True)
    assert old == ReadSettings(
        view_chars=3000, experiments=ExperimentSwitches(fused_weight=0.5, leave_out_stale=True)
    )
    with pytest.warns(DeprecationWarning, match="experiments.part_searches"):
        assert ReadSettings().part_searches == 0
    with pytest.warns(DeprecationWarning):  # dataclasses.replace goes through __init__
        moved = dataclasses.replace(old, spread_sessions=True)
    assert moved.experiments == ExperimentSwitches(0.5, False, 0, True, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the user's fields and the new spelling: no warning
        assert ReadSettings(view_chars=3000).view_chars == 3000
        assert dataclasses.replace(old, view_chars=2000).experiments.fused_weight == 0.5
    # the trace keeps one level: the same keys as before the split
    flat = ReadSettings().to_dict()
    assert set(EXPERIMENT_SWITCHES) <= flat.keys() and "experiments" not in flat
    assert flat["fused_weight"] == 0.0 and flat["view_chars"] == 12_000


def test_documented_read_setting_commands_name_existing_fields() -> None:
    known = {f.name for f in fields(ReadSettings)} | set(EXPERIMENT_SWITCHES)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {name for page in pages for name in named_settings(page.read_text("utf-8"))}
    assert found, "no --read-setting command found: the scan means nothing"
    assert found <= known, f"docs run --read-setting with removed fields: {found - known}"


def test_the_scans_find_what_they_look_for() -> None:
    assert named_settings("mnemon eval beam D --read-setting opening_turns=$n --out x") == {
        "opening_turns"
    }
    assert named_settings("--read-setting=no_such_field=1") == {"no_such_field"}
    assert "fused_weight" in attribute_docs(ExperimentSwitches)
    assert "view_chars" in attribute_docs(ReadSettings)


OLD_SPELLING = re.compile(r"\bsettings\.(" + "|".join(EXPERIMENT_SWITCHES) + r")\b")


def test_the_package_reads_the_switches_from_their_part() -> None:
    """No module of the package reads a switch by its old flat name (the deprecated
    property would warn on every turn): ``settings.experiments.NAME``."""
    package = ROOT / "mnemon_langgraph"
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "settings.py" or path.parent.name != "read"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if OLD_SPELLING.search(line.split("#", 1)[0])
    ]
    assert found == [], "read the switch from ReadSettings.experiments:\n" + "\n".join(found)
    assert OLD_SPELLING.search("if settings.leave_out_stale:")  # the scan sees the old one
    assert not OLD_SPELLING.search("if settings.experiments.leave_out_stale:")
