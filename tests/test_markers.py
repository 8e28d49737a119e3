"""Every test carries exactly one level marker (unit / integration / system), and the
classification table in tests/conftest.py names only files and tests that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from _paths import REPO
from conftest import (
    COLLECTED,
    LEVEL_MARKERS,
    LEVELS,
    POSTGRES_FIXTURES,
    XDIST_GROUPS,
    _start_is_python,
    fail_if_unit,
)

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


def _request(level: str, markexpr: str) -> Any:
    """Just what :func:`fail_if_unit` reads of a fixture request."""
    node = SimpleNamespace(
        nodeid="tests/test_x.py::test_y",
        get_closest_marker=lambda name: object() if name == level else None,
    )
    config = SimpleNamespace(getoption=lambda name, default=None: markexpr)
    return SimpleNamespace(node=node, config=config)


def test_the_guard_fails_a_unit_test_in_a_marker_run() -> None:
    with pytest.raises(pytest.fail.Exception, match="marked unit but starts a Python"):
        fail_if_unit(_request("unit", "unit"), "starts a Python process")
    fail_if_unit(_request("integration", "unit"), "uses PostgreSQL")  # not unit: fine
    fail_if_unit(_request("unit", ""), "uses PostgreSQL")  # plain run (CI): fine


def test_the_guard_knows_a_python_start() -> None:
    assert _start_is_python([sys.executable, "-c", "pass"])
    assert _start_is_python(sys.executable)
    assert not _start_is_python(["true"])
    assert not _start_is_python([])


def test_unit_tests_run_with_popen_guarded(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is not None
    assert subprocess.Popen.__init__.__name__ == "guarded"
