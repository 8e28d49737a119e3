"""Every test carries exactly one level marker (unit / integration / system), and the
classification table in tests/conftest.py names only files and tests that exist."""

from __future__ import annotations

import re

import pytest
from _paths import REPO
from conftest import COLLECTED, LEVEL_MARKERS, LEVELS, POSTGRES_FIXTURES, XDIST_GROUPS

TESTS = REPO / "tests"


def _levels(item: pytest.Item) -> list[str]:
    return sorted({m.name for m in item.iter_markers() if m.name in LEVEL_MARKERS})


def test_every_collected_test_has_exactly_one_level(request: pytest.FixtureRequest) -> None:
    """All collected tests, also those ``-m unit`` or ``-k`` deselected from this run."""
    assert request.node in COLLECTED
    wrong = [(item.nodeid, _levels(item)) for item in COLLECTED if len(_levels(item)) != 1]
    assert not wrong, wrong


def test_postgres_and_slow_tests_are_never_unit(request: pytest.FixtureRequest) -> None:
    assert request.node in COLLECTED
    for item in COLLECTED:
        uses_pg = bool(POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())))
        if uses_pg or item.get_closest_marker("slow") is not None:
            assert _levels(item) != ["unit"], item.nodeid


def test_the_table_names_existing_files_and_tests() -> None:
    assert LEVELS
    for key, level in LEVELS.items():
        assert level in LEVEL_MARKERS, key
        file, _, name = key.partition("::")
        path = TESTS / file
        assert path.is_file(), f"LEVELS names a missing file: {key}"
        if name:
            defined = re.search(rf"^(async )?def {re.escape(name)}\(", path.read_text(), re.M)
            assert defined, f"LEVELS names a missing test: {key}"


def test_xdist_groups_name_existing_files() -> None:
    assert XDIST_GROUPS
    for file in XDIST_GROUPS:
        assert (TESTS / file).is_file(), f"XDIST_GROUPS names a missing file: {file}"


def test_levels_are_registered_markers(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(LEVEL_MARKERS) <= registered
    assert "--strict-markers" in pytestconfig.getini("addopts")
