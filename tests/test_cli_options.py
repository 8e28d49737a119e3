"""The CLI's global options and error classes, the install hints, the optional-dependency
errors and the data-access export: what an adversarial pass found at the edges.

* ``-v`` works before or after the subcommand (and after ``bench NAME``), and shows the
  traceback of every kind of error; without it an error is one line.
* A path that cannot be read (``bench search --corpus missing.txt``) is input: exit 2.
* An id the namespace does not hold is said to be unknown (``view --explain``).
* Install hints name what works for this install (a clone: its folder).
* The agent surfaces without ``langchain`` raise the package's one-line error.
* ``export_document`` / ``mnemon export --format json`` hold the index items too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _consolidation_fakes import deriving_model
from _reliability_common import fake_embeddings

import mnemon_langgraph
from mnemon_langgraph import MnemonStore
from mnemon_langgraph.cli import build_parser, main
from mnemon_langgraph.consolidation import ConsolidationSettings, create_consolidation_graph
from mnemon_langgraph.errors import MissingDependencyError, _install_line, install_hint
from mnemon_langgraph.transfer import export_document
from mnemon_langgraph.types import Message

ROOT = Path(mnemon_langgraph.__file__).resolve().parent.parent


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "m.db"
    with MnemonStore(db) as store:
        store.ingest(
            ("ada",),
            [
                Message(f"Turn {i}: my cat Pepper likes Rotterdam.", "Ada", id=f"m{i}")
                for i in range(6)
            ],
            origin="chat",
        )
    return str(db)


# --- -v anywhere, and what it shows ---------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["-v", "stats", "--db", "x.db"],
        ["stats", "-v", "--db", "x.db"],
        ["stats", "--db", "x.db", "--verbose"],
        ["bench", "search", "-v"],
        ["view", "hi", "--db", "x.db", "--namespace", "a", "-v"],
    ],
)
def test_verbose_is_accepted_before_and_after_the_subcommand(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).verbose is True


def test_verbose_is_off_unless_given() -> None:
    assert build_parser().parse_args(["stats", "--db", "x.db"]).verbose is False
    assert build_parser().parse_args(["bench", "search"]).verbose is False


def test_a_typed_error_is_one_line_and_shows_its_traceback_with_v(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nothere.db")
    assert main(["stats", "--db", missing]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"mnemon: error: no journal at {missing}"]
    assert main(["stats", "--db", missing, "-v"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "ConfigurationError" in err
    assert err.strip().splitlines()[-1] == f"mnemon: error: no journal at {missing}"


def test_an_unexpected_error_shows_its_traceback_with_v_and_exits_1(
    journal: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mnemon_langgraph.cli._stats as stats

    def boom(args: object) -> int:
        raise RuntimeError("the disk said no")

    monkeypatch.setattr(stats, "run", boom)
    assert main(["stats", "--db", journal]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "run with -v for the traceback" in err
    assert main(["stats", "--db", journal, "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in boom" in err
    assert err.strip().splitlines()[-1] == "mnemon: error: RuntimeError: the disk said no"


def test_a_traceback_shown_with_v_redacts_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql://postgres:s3cretpw@127.0.0.1:1/nothing"
    assert main(["list", "--db", url, "-v"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "s3cretpw" not in err


# --- unreadable paths are input ------------------------------------------------------------


def test_bench_with_a_missing_corpus_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    missing = tmp_path / "missing.txt"
    assert main(["bench", "search", "--corpus", str(missing)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"mnemon: error: No such file or directory: {missing}"]
    assert main(["bench", "search", "--corpus", str(tmp_path)]) == 2  # a folder
    assert "mnemon: error: " in capsys.readouterr().err


# --- unknown ids ---------------------------------------------------------------------------


def test_view_explain_of_an_unknown_id_says_it_is_unknown(
    journal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["view", "cat?", "--db", journal, "--namespace", "ada", "--explain"]
    assert main([*argv, "r-nonexist"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown record id 'r-nonexist'" in err[0]
    with MnemonStore(journal) as store:
        real = next(iter(store.records(("ada",)))).id
    assert main([*argv, real[:9]]) in (0, 1)  # a unique prefix is the record
    assert f"record {real}:" in capsys.readouterr().out


# --- install hints -------------------------------------------------------------------------


def test_install_hints_name_what_works_for_the_install() -> None:
    # This test runs from a source tree: the hint names it, in the quoted-extras form.
    assert install_hint("agents") == f"pip install -e '{ROOT}[agents]'"
    error = MissingDependencyError("the memory tools", "langchain", "agents")
    assert str(error).endswith(f"pip install -e '{ROOT}[agents]'")
    folder = {"url": "file:///src/mnemon%20clone", "dir_info": {}}
    editable = {"url": "file:///src/clone", "dir_info": {"editable": True}}
    wheel = {"url": "https://example.org/mnemon.whl", "archive_info": {}}
    assert _install_line("eval", None, folder) == "pip install '/src/mnemon clone[eval]'"
    assert _install_line("eval", None, editable) == "pip install -e '/src/clone[eval]'"
    assert _install_line("eval", None, wheel) == "pip install 'mnemon-langgraph[eval]'"
    assert _install_line("eval", None, {}) == "pip install 'mnemon-langgraph[eval]'"


# --- a missing optional dependency ---------------------------------------------------------

_WITHOUT_LANGCHAIN = """
import sys
sys.modules["langchain"] = None  # as if the [agents] extra were not installed
from mnemon_langgraph.errors import MissingDependencyError
for name in ("create_memory_tools", "MnemonMiddleware"):
    for where in ("mnemon_langgraph.integrations", "mnemon_langgraph"):
        for cached in [m for m in sys.modules if m.startswith("mnemon_langgraph.integrations.")]:
            del sys.modules[cached]
        try:
            getattr(__import__(where, fromlist=[name]), name)
        except MissingDependencyError as exc:
            print(name, "|", exc)
        else:
            print(name, "| imported")
"""


def test_agent_surfaces_without_langchain_raise_the_one_line_error() -> None:
    out = (
        subprocess.run(
            [sys.executable, "-c", _WITHOUT_LANGCHAIN],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            check=True,
        )
        .stdout.strip()
        .splitlines()
    )
    assert len(out) == 4, out
    for line in out:
        assert "needs the optional package 'langchain'" in line, line
        assert f"'{ROOT}[agents]'" in line and "\n" not in line


# --- the data-access export holds the index items ---------------------------------------------


@pytest.fixture
def consolidated(tmp_path: Path) -> Iterator[MnemonStore]:
    with MnemonStore(tmp_path / "c.db", fake_embeddings()) as store:
        store.ingest(
            ("ada",),
            [Message(f"I live in City{i} and like item{i}.", "Ada", id=f"c{i}") for i in range(8)],
            origin="chat",
            pack=False,
        )
        graph = create_consolidation_graph(
            model=deriving_model(), store=store, settings=ConsolidationSettings(batch_chars=400)
        )
        assert graph.invoke({"namespace": ("ada",)})["report"].items_added > 0
        store.delete_records(("ada",), [next(iter(store.records(("ada",)))).id])
        yield store


def test_export_document_holds_records_items_with_links_and_audit(
    consolidated: MnemonStore,
) -> None:
    doc = export_document(consolidated, "ada")
    record_ids = {r["id"] for r in doc["records"]}
    assert doc["namespace"] == ["ada"] and len(record_ids) == 7
    assert doc["items"], "consolidation wrote items: they must be exported"
    assert all(
        item["record_ids"] and set(item["record_ids"]) <= record_ids for item in doc["items"]
    )
    assert {"kind", "text", "date", "subject", "value"} <= set(doc["items"][0])
    assert doc["consolidated_through"] in record_ids
    assert "delete_records" in [a["action"] for a in doc["audit"]]


def test_the_stores_own_export_holds_the_consolidated_items(consolidated: MnemonStore) -> None:
    import asyncio

    doc = json.loads(consolidated.export("ada"))
    record_ids = {r["id"] for r in doc["records"]}
    assert doc["items"], "store.export leaves out what consolidation wrote"
    assert all(
        item["record_ids"] and set(item["record_ids"]) <= record_ids for item in doc["items"]
    )
    assert doc["items"] == export_document(consolidated, "ada")["items"]
    assert json.loads(asyncio.run(consolidated.aexport("ada"))) == doc


def test_cli_export_format_json_is_the_document(
    consolidated: MnemonStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["export", "--db", str(consolidated.path), "--namespace", "ada", "--format", "json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out) == export_document(consolidated, "ada")
