"""``langgraph dev`` serves the graphs of langgraph.json; the read and agent graphs run over HTTP.

One server is started per backend for the whole module (each boot takes seconds).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from _processes import stop_group

REPO = Path(__file__).resolve().parents[1]
BOOT_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 90.0


def test_langgraph_json_names_the_graphs() -> None:
    config = json.loads((REPO / "langgraph.json").read_text())
    graphs = config["graphs"]
    assert graphs == {
        "mnemon_agent": "./graphs/agent_graph.py:graph",
        "mnemon_read": "./graphs/read_graph.py:graph",
        "mnemon_consolidation": "./graphs/consolidation_graph.py:graph",
    }
    for spec in graphs.values():
        path = spec.split(":")[0]
        assert (REPO / path).is_file(), path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prefill(db: Path | str) -> None:
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    store = MnemonStore(db)  # the default embedder (MNEMON_EMBEDDINGS), as the server's
    store.ingest(
        ("users", "ada"),
        [
            Message(
                text="I adopted a grey cat called Pixel last week.",
                speaker="Ada",
                role="user",
                id="d1",
                session=1,
                timestamp=datetime(2024, 3, 2, 9, 0),
            ),
            Message(
                text="Pixel is a lovely name!",
                speaker="assistant",
                role="assistant",
                id="d2",
                session=1,
                timestamp=datetime(2024, 3, 2, 9, 1),
            ),
        ],
        origin="seed",
    )
    close = getattr(store, "close", None)
    if close:
        close()


@pytest.fixture(scope="module")
def module_postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh database on the test server for this module's dev server; dropped afterwards."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = "mnemon_dev_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(postgres_server)
    yield urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def dev_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _serve(request, tmp_path_factory.mktemp("dev"), monkeypatch)


def _serve(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    exe = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which(
        "langgraph"
    )
    if exe is None:
        pytest.skip("langgraph-cli[inmem] is not installed")
    # small deterministic backends: this test is about serving the graphs, not about quality
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    # MNEMON_DB is a file path, or the URL of the test PostgreSQL server (tests/conftest.py)
    db: Path | str = tmp_path / "journal.db"
    if request.param == "postgres":
        db = str(request.getfixturevalue("module_postgres_url"))
    _prefill(db)
    port = _free_port()
    env = {
        **os.environ,
        "MNEMON_DB": str(db),
        "MNEMON_NAMESPACE": '["users", "ada"]',
        "MNEMON_JUDGE": "test_integration_studio:make_judge",
        "MNEMON_AGENT_MODEL": "",  # the offline stand-in, whatever the caller's environment
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p
        ),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [
            exe,
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-browser",
            "--no-reload",
            "--allow-blocking",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    "langgraph dev exited:\n" + (tmp_path / "server.log").read_text()[-4000:]
                )
            try:
                if httpx.get(f"{url}/ok", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    "langgraph dev did not start:\n" + (tmp_path / "server.log").read_text()[-4000:]
                )
            time.sleep(0.5)
        yield url
    finally:
        stop_group(proc)
        log.close()


@pytest.mark.slow
def test_dev_server_runs_read_graph(dev_server: str) -> None:
    import httpx

    with httpx.Client(base_url=dev_server, timeout=RUN_TIMEOUT_S) as client:
        assistants = client.post("/assistants/search", json={"limit": 10}).json()
        assert {a["graph_id"] for a in assistants} >= {
            "mnemon_agent",
            "mnemon_read",
            "mnemon_consolidation",
        }

        thread = client.post("/threads", json={}).json()
        body: dict[str, Any] = {
            "assistant_id": "mnemon_read",
            "input": {"messages": [{"role": "user", "content": "What is my cat called?"}]},
        }
        response = client.post(f"/threads/{thread['thread_id']}/runs/wait", json=body)
        assert response.status_code == 200, response.text
        output = response.json()
        assert "view" in output, output
        assert "Pixel" in output["view"]["text"], output  # the default namespace (ada)

        # another user, named in the run's config, sees nothing of ada's
        body["config"] = {"configurable": {"user_id": "bob"}}
        other = client.post("/runs/wait", json=body)
        assert other.status_code == 200, other.text
        assert "Pixel" not in other.json()["view"]["text"]


@pytest.mark.slow
def test_dev_server_agent_remembers_per_user(dev_server: str) -> None:
    """User A tells a fact in one thread and asks in a new one; user B never sees it."""
    from langgraph_sdk import get_sync_client

    from mnemon_langgraph.integrations.studio import OFFLINE_LABEL

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT_S)
    (agent,) = client.assistants.search(graph_id="mnemon_agent")
    schemas = client.assistants.get_schemas(agent["assistant_id"])
    assert {"user_id", "namespace"} <= set(schemas["context_schema"]["properties"])

    def say(user: str, text: str) -> str:
        thread = client.threads.create()
        out = client.runs.wait(
            thread["thread_id"],
            "mnemon_agent",
            input={"messages": [{"role": "user", "content": text}]},
            context={"user_id": user},
        )
        assert isinstance(out, dict) and "messages" in out, out
        reply = out["messages"][-1]
        assert reply["type"] == "ai", reply
        return str(reply["content"])

    told = say("carol", "My locker code is 4711 and my locker is by the gym.")
    assert told.startswith(OFFLINE_LABEL)
    asked = say("carol", "What is my locker code?")
    assert asked.startswith(OFFLINE_LABEL) and "4711" in asked
    other = say("dave", "What is my locker code?")
    assert other.startswith(OFFLINE_LABEL) and "4711" not in other
