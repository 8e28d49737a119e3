"""What a new user trips over on the first day (issue 43 §4), each fixed and checked here."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from _paths import REPO

from mnemon_langgraph.cli import main
from mnemon_langgraph.errors import JournalError

SAMPLE = REPO / "notebooks" / "data" / "allotment_year.json"


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")


# -- a mistyped folder never starts a new memory ------------------------------------------


def test_a_store_in_a_missing_folder_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    from mnemon_langgraph import MnemonStore

    typo = tmp_path / "memroy" / "sub" / "m.db"
    with pytest.raises(JournalError, match=r"does not exist.*memroy"):
        MnemonStore(typo)
    assert list(tmp_path.iterdir()) == []  # no folder, no journal, no index folder


def test_a_store_in_an_existing_folder_is_still_created(tmp_path: Path) -> None:
    from mnemon_langgraph import MnemonStore

    with MnemonStore(tmp_path / "m.db") as store:
        store.add_messages(("users", "ada"), [("user", "hello")])
    assert (tmp_path / "m.db").is_file()


def test_writing_commands_make_the_folder_they_are_told_to_write_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "memory.db"
    assert main(["ingest", str(SAMPLE), "--db", str(db), "--namespace", "mira"]) == 0
    assert db.is_file()
    demo = tmp_path / "tour" / "demo.db"
    assert main(["demo", "-k", "1", "--db", str(demo)]) == 0
    assert demo.is_file()
    # a reading command never creates anything
    typo = tmp_path / "neww" / "memory.db"
    assert main(["search", "beans", "--db", str(typo), "--namespace", "mira"]) == 2
    assert "no journal at" in capsys.readouterr().err
    assert not typo.parent.exists()


# -- every snippet names the install it needs ----------------------------------------------

# Names of this package whose optional package is imported inside it, so that a snippet's
# own imports do not show the extra it needs.
PACKAGE_NEEDS = {"MnemonMiddleware": "agents", "create_mcp_server": "mcp"}


def _pyproject() -> dict[str, Any]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def _core_closure() -> frozenset[str]:
    """The distributions ``pip install .`` brings: the core dependencies and theirs."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    todo = [Requirement(r).name for r in _pyproject()["project"]["dependencies"]]
    seen: set[str] = set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(name) or []
        except PackageNotFoundError:
            continue
        for req in map(Requirement, reqs):
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return frozenset(seen)


@functools.cache
def _extras_of() -> dict[str, set[str]]:
    """Distribution name → the extras that install it (``all`` and ``dev`` aside)."""
    from packaging.requirements import Requirement

    found: dict[str, set[str]] = {}
    for extra, reqs in _pyproject()["project"]["optional-dependencies"].items():
        for req in map(Requirement, reqs):
            if extra not in ("all", "dev") and _norm(req.name) != "mnemon-langgraph":
                found.setdefault(_norm(req.name), set()).add(extra)
    return found


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    from importlib.metadata import packages_distributions

    return packages_distributions()


def snippet_needs(code: str) -> list[set[str]]:
    """What a Python snippet needs beyond ``pip install .``: per need, the set of extras
    (or, for a package no extra has, its distribution name) any one of which provides it."""
    core, extras, dists = _core_closure(), _extras_of(), _distributions()
    needs: list[set[str]] = []
    for module in sorted(set(re.findall(r"^\s*(?:from|import)\s+(\w+)", code, re.M))):
        if module in sys.stdlib_module_names or module == "mnemon_langgraph":
            continue
        names = {_norm(d) for d in dists.get(module, [module])}
        if not names & core:
            needs.append({e for n in names for e in extras.get(n, {n})})
    for name, extra in PACKAGE_NEEDS.items():
        if re.search(rf"^from mnemon_langgraph[.\w]* import .*\b{name}\b", code, re.M):
            needs.append({extra})
    return [need for i, need in enumerate(needs) if need not in needs[:i]]


def _install_lines_before(page: Path, line: int) -> str:
    """The prose of the section a block is in, up to the block (its heading on)."""
    lines = page.read_text(encoding="utf-8").split("\n")[: line - 1]
    start, fenced = 0, False
    for i, text in enumerate(lines):
        fenced ^= text.lstrip().startswith("```")
        if text.startswith("#") and not fenced:
            start = i
    return "\n".join(lines[start:])


def _names_install(prose: str, need: set[str]) -> bool:
    for command in re.findall(r"pip install [^`\n]+", prose):
        listed = {x.strip() for x in re.findall(r"\[([\w,\s-]+)\]", command) for x in x.split(",")}
        words = {_norm(w.strip("'\"")) for w in command.split()[2:]}
        if need & listed or {_norm(n) for n in need} & words:
            return True
    return False


def test_every_snippet_that_needs_an_extra_names_its_install() -> None:
    from test_docs import all_blocks

    missing = []
    for block in all_blocks():
        if block.language not in ("python", "py"):
            continue
        prose = _install_lines_before(REPO / block.page, block.line)
        for need in snippet_needs(block.code):
            if not _names_install(prose, need):
                missing.append(f"{block.where}: say `pip install '.[{'|'.join(sorted(need))}]'`")
    assert not missing, missing


def test_the_snippet_check_sees_what_a_snippet_needs() -> None:
    agent = "from langchain.agents import create_agent\nfrom mnemon_langgraph import MnemonStore\n"
    assert snippet_needs(agent) == [{"agents"}]
    assert snippet_needs("from mnemon_langgraph import MnemonMiddleware\n") == [{"agents"}]
    core = "import json\nfrom langgraph.graph import StateGraph\nfrom langchain_core import x\n"
    assert snippet_needs(core) == []
    assert _names_install("Needs `pip install '.[agents]'`.", {"agents"})
    assert not _names_install("Needs `pip install '.[classic]'`.", {"agents"})
    assert not _names_install("Uses `create_agent`.", {"agents"})


def test_every_extra_is_described_and_all_is_what_the_docs_say() -> None:
    text = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `\[([\w-]+)\]` \|.*\| (yes|no) \|$", text, re.M))
    extras = _pyproject()["project"]["optional-dependencies"]
    assert set(rows) == set(extras) - {"all"}, "docs/index.md's extras table vs pyproject.toml"
    (line,) = extras["all"]
    listed = re.fullmatch(r"mnemon-langgraph\[([\w,]+)\]", line)
    assert listed, line
    in_all = set(listed.group(1).split(","))
    assert in_all == {extra for extra, yes in rows.items() if yes == "yes"}


def test_what_the_readme_commands_write_is_ignored_by_git() -> None:
    """Every ``--db`` / ``--out`` path of the shell blocks of the README and the command-line
    page (a journal with its index folder and WAL), run from the root, is ignored by git."""
    import subprocess

    from test_docs import blocks

    written = set()
    for page in (REPO / "README.md", REPO / "docs" / "cli.md"):
        for block in blocks(page):
            if block.language in ("bash", "sh", "shell"):
                written |= set(re.findall(r"--(?:db|out) ([^\s`]+)", block.code))
    paths: set[str] = set()
    for path in written:
        if "://" in path or "…" in path:
            continue  # a database URL, or a placeholder
        if path.endswith(".db"):
            paths |= {path, f"{path}-wal", f"{path}.indexes/x/bm25.json"}
        else:  # a file (mira.jsonl), or a folder (eval-out) with files in it
            paths.add(path if "." in Path(path).name else f"{path}/summary.md")
    assert {"memory.db", "mira.jsonl", "moved.db", "eval-out/summary.md"} <= paths
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *sorted(paths)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode in (0, 1), out.stderr
    lines = out.stdout.splitlines()
    not_ignored = [line.split("\t")[-1] for line in lines if line.startswith("::")]
    assert not not_ignored, f"add to .gitignore: {not_ignored}"


# -- the command line and the MCP server say what is wrong --------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import mnemon_langgraph

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"mnemon {mnemon_langgraph.__version__}"


def test_search_in_a_namespace_that_does_not_exist_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "memory.db")
    assert main(["ingest", str(SAMPLE), "--db", db, "--namespace", "mira"]) == 0
    capsys.readouterr()
    assert main(["search", "zzzqqq", "--db", db, "--namespace", "nobody"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "no records found"
    assert "namespace ['nobody'] does not exist" in err and f"mnemon list --db {db}" in err
    # a namespace that exists says nothing more, even when nothing matches
    assert main(["search", "beans", "--db", db, "--namespace", "mira", "--offset", "9999"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "no records found" and err == ""
    # the View of a namespace that does not exist says so too
    assert main(["view", "where do I work?", "--db", db, "--namespace", "nobody"]) == 0
    out, err = capsys.readouterr()
    assert "empty View" in out and "namespace ['nobody'] does not exist" in err


def test_an_upgraded_users_old_one_part_memory_is_named_with_the_command_that_moves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory written by an earlier version at ``("ada",)``: ``--user ada`` (``("users",
    "ada")``) reads nothing, and search, view and ``mnemon mcp`` say where it is and how to
    move it; the command they name works, and afterwards nothing more is said."""
    db = str(tmp_path / "memory.db")
    assert main(["ingest", str(SAMPLE), "--db", db, "--namespace", "ada"]) == 0
    capsys.readouterr()
    move = f"`mnemon rename-namespace --db {db} --namespace ada --to-user ada`"
    assert main(["search", "beans", "--db", db, "--user", "ada"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "no records found"
    assert "namespace ['users', 'ada'] does not exist" in err
    assert "one-part namespace ['ada'] of earlier versions holds records" in err and move in err
    assert main(["view", "what do I grow?", "--db", db, "--user", "ada"]) == 0
    out, err = capsys.readouterr()
    assert "empty View" in out and move in err
    # a user with no old memory either is told where to look, not to move anything
    assert main(["search", "beans", "--db", db, "--user", "bob"]) == 0
    err = capsys.readouterr().err
    assert "['users', 'bob'] does not exist" in err and "rename-namespace" not in err

    pytest.importorskip("mcp")
    import mnemon_langgraph.integrations.mcp as mcp_module

    served: list[tuple[str, ...]] = []

    class _Server:  # stands in for the MCP server: the test checks startup, not the protocol
        def run(self, transport: str) -> None:
            served.append(transport)

    def fake_server(store: Any, namespace: Any, **kwargs: Any) -> _Server:
        served.append(tuple(namespace))
        return _Server()

    monkeypatch.setattr(mcp_module, "create_mcp_server", fake_server)
    assert main(["mcp", "--db", db, "--user", "ada"]) == 0
    out, err = capsys.readouterr()
    assert served == [("users", "ada"), "stdio"] and out == ""
    assert len(err.strip().splitlines()) == 1 and move in err, err

    # the named command moves the memory; then --user ada finds it and nothing is said
    assert main(["rename-namespace", "--db", db, "--namespace", "ada", "--to-user", "ada"]) == 0
    capsys.readouterr()
    assert main(["search", "beans", "--db", db, "--user", "ada"]) == 0
    out, err = capsys.readouterr()
    assert "no records found" not in out and err == ""
    assert main(["mcp", "--db", db, "--user", "ada"]) == 0
    assert capsys.readouterr().err == ""


async def test_mcp_argument_errors_are_one_line(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp.server.fastmcp.exceptions import ToolError

    from mnemon_langgraph import MnemonStore
    from mnemon_langgraph.integrations.mcp import create_mcp_server

    with MnemonStore(tmp_path / "m.db") as store:
        server = create_mcp_server(store, namespace=("users", "ada"))
        expected = {
            "k: Input should be less than or equal to 50 (got 500)": {"query": "x", "k": 500},
            "k: Input should be a valid integer": {"query": "x", "k": "many"},
            "query: Field required": {"k": 3},
        }
        for said, arguments in expected.items():
            with pytest.raises(ToolError) as error:
                await server.call_tool("search_memory", arguments)
            text = str(error.value)
            assert text.startswith(f"search_memory: {said}") and "\n" not in text, text


def test_misses_table_has_as_many_cells_in_every_row() -> None:
    from mnemon_langgraph.eval.misses import BUCKETS, render_misses

    zero = dict.fromkeys(BUCKETS, 0)
    for convs in ([], ["conv-1", "conv-2"]):
        table = {
            "questions": 4,
            "missed": 1,
            "by_question": {**zero, BUCKETS[0]: 1},
            "by_turn": {**zero, BUCKETS[0]: 2},
            "by_conversation": {c: {**zero, BUCKETS[0]: 1} for c in convs},
        }
        rows = [ln for ln in render_misses(table).splitlines() if ln.startswith("|")]
        assert len(rows) == 2 + len(BUCKETS)
        assert {ln.count("|") for ln in rows} == {5 + len(convs)}, rows
        assert all("|  |" not in ln for ln in rows)


def test_faiss_loader_lines_are_not_printed_at_info_level() -> None:
    """A program logging at INFO (``mnemon -v``, ``langgraph dev``) does not get faiss's
    loader lines; an application that set the loader's level itself keeps its choice."""
    import subprocess

    code = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
if sys.argv[1] == "app-wants-them":
    logging.getLogger("faiss.loader").setLevel(logging.INFO)
from mnemon_langgraph.search._vectors import VectorIndex
VectorIndex(8)
print("ok")
"""
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    runs = {}
    for mode in ("default", "app-wants-them"):
        done = subprocess.run(
            [sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.stdout.strip() == "ok", done.stderr
        runs[mode] = done.stderr
    assert "faiss.loader" not in runs["default"], runs["default"]
    assert "faiss.loader" in runs["app-wants-them"]  # the lines exist: the check can fail


# -- one memory, one speaker convention ------------------------------------------------------


def test_classic_memory_writes_user_and_assistant_like_every_other_surface(tmp_path: Path) -> None:
    from mnemon_langgraph import MnemonMemory, MnemonStore, ReadContext, create_read_graph

    ada = ("users", "ada")
    with MnemonStore(tmp_path / "m.db") as store:
        memory = MnemonMemory(store=store, namespace=ada)
        memory.save_context({"input": "I play the oboe."}, {"output": "Lovely!"})
        store.add_messages(ada, [("user", "I live in Lisbon."), ("assistant", "Noted.")])
        (hit,) = store.search("oboe", namespace=ada, k=1)
        assert hit.record.text.splitlines() == ["user: I play the oboe.", "assistant: Lovely!"]
        out = create_read_graph(source=store).invoke(
            {"messages": [("user", "Which instrument do I play?")]},
            context=ReadContext(namespace=ada),
        )
        assert "user: I play the oboe." in out["view"].text
        assert "Human:" not in out["view"].text and "AI:" not in out["view"].text
        speakers = {ln.split(":")[0] for r in store.records(ada) for ln in r.text.splitlines()}
        assert speakers == {"user", "assistant"}


# -- the user's own name does not decide the ranking ----------------------------------------


def test_the_users_name_is_left_out_of_the_ranking_query() -> None:
    from mnemon_langgraph.integrations.basestore_rank import ranking_query

    ada = ("users", "ada")
    assert ranking_query("what pet does Ada have?", ada) == "what pet does have"
    assert ranking_query("Is Ada's cat grey?", ada) == "Is cat grey"
    assert ranking_query("Ada", ada) == "Ada"  # nothing else to search for: kept
    assert ranking_query("what pet does Ada have?", ("users",)) == "what pet does Ada have?"
    assert ranking_query("what pet does Adam have?", ada) == "what pet does Adam have?"


def test_a_question_naming_the_user_finds_the_record_that_answers_it(tmp_path: Path) -> None:
    """With the real embedder: the name in both the query and a key-value item made the item
    win over the record that answers (records never name their own speaker)."""
    from mnemon_langgraph import MnemonBaseStore, MnemonStore
    from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

    ada = ("users", "ada")
    with MnemonStore(tmp_path / "m.db", embeddings=MiniLMEmbeddings()) as store:
        store.add_messages(ada, [("user", "I adopted a grey cat called Pixel.")])
        memory = MnemonBaseStore(store)
        memory.put(ada, "tea", {"text": "Ada drinks sencha tea."})
        (first, second) = memory.search(ada, query="what pet does Ada have?", limit=2)
        assert first.key != "tea" and second.key == "tea", (first.value, second.value)
        assert "Pixel" in first.value["content"]
        # the name still counts where it tells items apart: the tea question finds the tea
        (tea, _) = memory.search(ada, query="what tea does Ada drink?", limit=2)
        assert tea.key == "tea"
