"""Through a real ``langgraph dev`` with ``langgraph.auth.json``: the login decides whose memory.

One server for the module (graphs/auth.py, two bearer tokens: ada and bob), driven with the
official SDK client. Ada's secret is in her memory (a record and a store item) before the
server starts; with bob's token every run variant that names ada — on all three graphs — is
refused, the store API returns nothing of hers, and a Studio-scheme request without a token is
turned away. Ada's own token reads her secret (so an empty answer cannot pass as a refusal).
The server also has a tempting default, ``MNEMON_NAMESPACE=["users", "ada"]``, that an
authenticated run must never fall back to. Every graph also reads a shared team namespace
(``MNEMON_SOURCES``: ``("teams", "{team_id}")``) whose ``team_id`` comes from the login
(ada: blue, bob: green); bob naming ada's team in his run is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
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
SECRET = "heliotrope-4711"
BOB_FACT = "marigold"
ADA, BOB = ("users", "ada"), ("users", "bob")
# each login carries its team (a field of the user the auth handler returns)
TOKENS = {
    "tok-ada-3f9c": {"identity": "ada", "team_id": "blue"},
    "tok-bob-81d2": {"identity": "bob", "team_id": "green"},
}
TEAM_CODES = {"blue": "cobalt-9214", "green": "jade-5530"}
# every graph of the server also reads the login's team namespace, read-only
SOURCES = {"team": {"shared": ["teams", "{team_id}"]}}
GRAPHS = ("mnemon_read", "mnemon_agent", "mnemon_consolidation")
QUESTION = "What is my secret word?"

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _seed(db: Path) -> None:
    from mnemon_langgraph import MnemonBaseStore, MnemonStore
    from mnemon_langgraph.types import Message

    with MnemonStore(db) as store:
        for ns, text in ((ADA, f"My secret word is {SECRET}."), (BOB, f"My word is {BOB_FACT}.")):
            store.ingest(
                ns,
                [Message(text, ns[-1], id=f"{ns[-1]}-1", session=1,
                         timestamp=datetime(2024, 3, 2, 9, 0))],
                origin="seed",
            )  # fmt: skip
        for team, code in TEAM_CODES.items():
            store.ingest(
                ("teams", team),
                [Message(f"The {team} team's launch code is {code}.", "lead", id=f"{team}-1",
                         session=1, timestamp=datetime(2024, 3, 1, 9, 0))],
                origin="seed",
            )  # fmt: skip
        with MnemonBaseStore(store) as items:
            items.put(ADA, "secret", {"text": f"Ada's secret word: {SECRET}"})


def _absolute(config_path: Path) -> dict[str, Any]:
    """The config at ``config_path`` with every ``./`` path made absolute."""
    config = json.loads(config_path.read_text())

    def fix(spec: str) -> str:
        return str(config_path.parent / spec[2:]) if spec.startswith("./") else spec

    config["dependencies"] = [
        str(config_path.parent) if d == "." else d for d in config["dependencies"]
    ]
    config["graphs"] = {name: fix(spec) for name, spec in config["graphs"].items()}
    config["auth"] = {**config["auth"], "path": fix(config["auth"]["path"])}
    return config


def test_the_auth_config_is_langgraph_json_plus_auth() -> None:
    plain = json.loads((REPO / "langgraph.json").read_text())
    secured = json.loads((REPO / "langgraph.auth.json").read_text())
    assert {k: v for k, v in secured.items() if k != "auth"} == plain
    assert secured["auth"] == {"path": "./graphs/auth.py:auth", "disable_studio_auth": True}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    exe = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which(
        "langgraph"
    )
    if exe is None:
        pytest.skip("langgraph-cli[inmem] is not installed")
    tmp = tmp_path_factory.mktemp("authdev")
    db = tmp / "journal.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNEMON_EMBEDDINGS", "fake")
        _seed(db)
    port = _free_port()
    env = {
        **os.environ,
        "MNEMON_EMBEDDINGS": "fake",
        "MNEMON_DB": str(db),
        "MNEMON_NAMESPACE": '["users", "ada"]',  # a default an authenticated run must ignore
        "MNEMON_AUTH_TOKENS": json.dumps(TOKENS),
        "MNEMON_SOURCES": json.dumps(SOURCES),
        "MNEMON_JUDGE": "test_integration_studio:make_judge",
        "MNEMON_AGENT_MODEL": "",
        "MNEMON_CONSOLIDATION_MODEL": "",
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p
        ),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp / "server.log"
    log = log_path.open("w")
    # the shipped langgraph.auth.json with its paths made absolute, served from a folder of
    # its own: the server's state (.langgraph_api/, e.g. the assistants created below) never
    # reaches the repository's, which the other dev-server tests use
    app = tmp / "app"
    app.mkdir()
    (app / "langgraph.json").write_text(json.dumps(_absolute(REPO / "langgraph.auth.json")))
    proc = subprocess.Popen(
        [exe, "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload",
         "--allow-blocking"],
        cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail("langgraph dev exited:\n" + log_path.read_text()[-4000:])
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ok", timeout=2.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail("langgraph dev did not start:\n" + log_path.read_text()[-4000:])
            time.sleep(0.5)
        yield {"url": url, "db": db, "log": log_path}
    finally:
        stop_group(proc)
        log.close()


def _client(server: dict[str, Any], user: str | None, **headers: str) -> Any:
    from langgraph_sdk import get_sync_client

    token = next((t for t, u in TOKENS.items() if u["identity"] == user), None)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return get_sync_client(url=server["url"], timeout=RUN_TIMEOUT_S, headers=headers)


PROBE = "(asked with bob's token)"


def _input(graph: str, note: str = "") -> dict[str, Any]:
    if graph == "mnemon_consolidation":
        return {}
    return {"messages": [{"role": "user", "content": f"{QUESTION} {note}".strip()}]}


def _run(client: Any, graph: str, assistant: str | None = None, **kwargs: Any) -> Any:
    """The run's output, or the exception / ``__error__`` that refused it (as ``Refused``)."""
    thread = client.threads.create()
    try:
        out = client.runs.wait(
            thread["thread_id"], assistant or graph, input=kwargs.pop("input", _input(graph)),
            raise_error=False, **kwargs,
        )  # fmt: skip
    except Exception as exc:  # an HTTP refusal (4xx) of the SDK
        return Refused(repr(exc))
    if isinstance(out, dict) and "__error__" in out:
        return Refused(json.dumps(out["__error__"]))
    return out


class Refused(str):
    """A run the server refused, with the reason."""


def _text(out: Any) -> str:
    return json.dumps(out, default=str)


def _names_ada(out: Any) -> bool:
    """Whether ``out`` names ada as a word: a record id's hex (``...fada95...``) is no match."""
    return re.search(r"\bada\b", _text(out)) is not None


# the run variants of issue 43 §1 that name ada, as bob could send them
VARIANTS: dict[str, dict[str, Any]] = {
    "context user_id": {"context": {"user_id": "ada"}},
    "configurable user_id": {"config": {"configurable": {"user_id": "ada"}}},
    "context namespace users/ada tuple": {"context": {"namespace": ["users", "ada"]}},
    "configurable namespace users/ada tuple": {
        "config": {"configurable": {"namespace": ["users", "ada"]}}
    },
    "context namespace one part": {"context": {"namespace": ["ada"]}},
    "configurable namespace one part": {"config": {"configurable": {"namespace": ["ada"]}}},
    "context namespace string": {"context": {"namespace": "ada"}},
    "configurable namespace string": {"config": {"configurable": {"namespace": "ada"}}},
    "context namespace slash string": {"context": {"namespace": "users/ada"}},
    "configurable namespace slash string": {"config": {"configurable": {"namespace": "users/ada"}}},
    "context own user, ada's namespace": {
        "context": {"user_id": "bob", "namespace": ["users", "ada"]}
    },
    "configurable own user, ada's namespace": {
        "config": {"configurable": {"user_id": "bob", "namespace": ["users", "ada"]}}
    },
    "assistant created with ada's context": {"assistant_context": {"user_id": "ada"}},
    "assistant created with ada's config": {
        "assistant_config": {"configurable": {"user_id": "ada"}}
    },
}


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_bob_never_reaches_adas_memory(server: dict[str, Any], graph: str, variant: str) -> None:
    bob = _client(server, "bob")
    kwargs = dict(VARIANTS[variant])
    assistant = None
    if "assistant_context" in kwargs or "assistant_config" in kwargs:
        created = bob.assistants.create(
            graph,
            context=kwargs.pop("assistant_context", None),
            config=kwargs.pop("assistant_config", None),
        )
        assistant = created["assistant_id"]
    out = _run(bob, graph, assistant, input=_input(graph, PROBE), **kwargs)
    assert SECRET not in _text(out)
    assert isinstance(out, Refused), out  # every variant names ada: refused, never obeyed
    assert "NamespaceAccessError" in out or "422" in out or "403" in out, out


def test_consolidation_input_naming_ada_is_refused(server: dict[str, Any]) -> None:
    out = _run(_client(server, "bob"), "mnemon_consolidation", input={"namespace": list(ADA)})
    assert isinstance(out, Refused) and "NamespaceAccessError" in out, out


def test_a_client_cannot_send_the_auth_identity(server: dict[str, Any]) -> None:
    """The server drops (or rejects) a client's own langgraph_auth_user_id."""
    config = {"configurable": {"langgraph_auth_user_id": "ada", "langgraph_auth_user": "ada"}}
    out = _run(_client(server, "bob"), "mnemon_read", config=config)
    assert SECRET not in _text(out)
    if not isinstance(out, Refused):
        assert BOB_FACT in _text(out)  # answered from bob's memory


def test_each_user_reads_their_own_memory(server: dict[str, Any]) -> None:
    ada, bob = _client(server, "ada"), _client(server, "bob")
    for client, own, other in ((ada, SECRET, BOB_FACT), (bob, BOB_FACT, SECRET)):
        for graph in ("mnemon_read", "mnemon_agent"):
            out = _run(client, graph)
            assert not isinstance(out, Refused), out
            assert own in _text(out) and other not in _text(out), (graph, out)
    # naming oneself is allowed
    out = _run(ada, "mnemon_read", context={"user_id": "ada"})
    assert SECRET in _text(out)
    report = _run(bob, "mnemon_consolidation")  # no model configured: refused by that, not auth
    assert "NamespaceAccessError" not in _text(report)
    assert "users" in _text(report) and "bob" in _text(report) and not _names_ada(report)


def test_each_user_reads_their_own_team_from_the_login(server: dict[str, Any]) -> None:
    """The shared ``("teams", "{team_id}")`` source is filled from the login's ``team_id``."""
    for user, own, other in (("ada", "blue", "green"), ("bob", "green", "blue")):
        out = _run(_client(server, user), "mnemon_read")
        assert not isinstance(out, Refused), out
        assert TEAM_CODES[own] in _text(out), (user, out)
        assert TEAM_CODES[other] not in _text(out), (user, out)


@pytest.mark.parametrize(
    "variant",
    [{"context": {"team_id": "blue"}}, {"config": {"configurable": {"team_id": "blue"}}}],
    ids=["context team_id", "configurable team_id"],
)
def test_bob_naming_adas_team_is_refused(server: dict[str, Any], variant: dict[str, Any]) -> None:
    out = _run(_client(server, "bob"), "mnemon_read", input=_input("mnemon_read", PROBE), **variant)
    assert TEAM_CODES["blue"] not in _text(out) and SECRET not in _text(out)
    assert isinstance(out, Refused) and "NamespaceAccessError" in out, out


def test_bobs_agent_runs_never_wrote_into_adas_memory(server: dict[str, Any]) -> None:
    """After every variant above (and bob's own agent runs), ada's journal holds her seed."""
    from mnemon_langgraph import MnemonStore

    bob = _client(server, "bob")
    _run(bob, "mnemon_agent", input=_input("mnemon_agent", PROBE), context={"user_id": "ada"})
    assert not isinstance(_run(bob, "mnemon_agent", input=_input("mnemon_agent", PROBE)), Refused)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNEMON_EMBEDDINGS", "fake")  # the server's embedder
        with MnemonStore(server["db"]) as store:
            texts = [r.text for r in store.journal.records(ADA)]
            bobs = [r.text for r in store.journal.records(BOB)]
    assert SECRET in texts[0] and not [t for t in texts if PROBE in t], texts
    assert any(PROBE in t for t in bobs), bobs  # bob's own run did write, into his memory


def test_store_api_is_confined_to_the_callers_namespace(server: dict[str, Any]) -> None:
    from langgraph_sdk.errors import APIStatusError

    ada, bob = _client(server, "ada"), _client(server, "bob")
    # ada's own token sees her item and record (the negative checks below are not vacuous)
    assert SECRET in _text(ada.store.get_item(list(ADA), "secret"))
    own = ada.store.search_items(list(ADA), query="secret word")
    assert SECRET in _text(own) and _names_ada(own)
    # bob: ada's namespace, the root, ("users",), a listing and a direct get
    for call in (
        lambda: bob.store.search_items(list(ADA), query="secret word"),
        lambda: bob.store.search_items([], query="secret word"),
        lambda: bob.store.search_items(["users"], query="secret word"),
        lambda: bob.store.search_items([]),
        lambda: bob.store.list_namespaces(),
        lambda: bob.store.get_item(list(ADA), "secret"),
    ):
        try:
            found = call()
        except APIStatusError as exc:
            assert exc.status_code in (403, 404), exc
            continue
        assert SECRET not in _text(found) and not _names_ada(found), found
    with pytest.raises(APIStatusError) as refused:
        bob.store.put_item(list(ADA), "planted", {"text": "from bob"})
    assert refused.value.status_code == 403


@pytest.mark.parametrize("headers", [{"x-auth-scheme": "langsmith"}, {}])
def test_a_request_without_a_token_reads_nothing(
    server: dict[str, Any], headers: dict[str, str]
) -> None:
    """Under ``langgraph dev`` a Studio-scheme request would be the Studio user; not here."""
    import httpx

    with httpx.Client(base_url=server["url"], headers=headers, timeout=RUN_TIMEOUT_S) as http:
        body = {"assistant_id": "mnemon_read", "input": _input("mnemon_read"),
                "context": {"user_id": "ada"}}  # fmt: skip
        run = http.post("/runs/wait", json=body)
        search = http.post("/store/items/search", json={"namespace_prefix": list(ADA)})
        item = http.get("/store/items", params={"namespace": "users.ada", "key": "secret"})
    for response in (run, search, item):
        assert response.status_code in (401, 403), response.text
        assert SECRET not in response.text
