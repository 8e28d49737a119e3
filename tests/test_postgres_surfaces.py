"""The surfaces work unchanged on a PostgreSQL URL: the CLI, the read graph, the retriever.

(Storage behaviour itself is covered for both backends by test_store_conformance.py; the
dev server by test_langgraph_dev.py.)
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings, yes_judge

from mnemon_langgraph.cli import main
from mnemon_langgraph.errors import EmbeddingMismatchError
from mnemon_langgraph.integrations.retriever import MnemonRetriever
from mnemon_langgraph.loaders import SAMPLE_PATH
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore, PostgresStore
from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION
from mnemon_langgraph.types import Message


def test_cli_ingest_search_stats_erase_on_a_url(
    postgres_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    ns = ["--namespace", "users", "--namespace", "ada"]
    assert main(["ingest", str(SAMPLE_PATH), "--db", postgres_url, *ns, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["stats", "--db", postgres_url, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["namespaces"][0]["namespace"] == ["users", "ada"]
    records = stats["namespaces"][0]["records"]
    assert records > 0 and stats["schema_version"] == SCHEMA_VERSION
    assert "***" in stats["path"] or "@" not in stats["path"]
    assert main(["search", "cat", "--db", postgres_url, *ns, "-k", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["erase", "--db", postgres_url, *ns, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records_erased"] == records


def test_read_graph_and_retriever_on_postgres(postgres_url: str) -> None:
    with PostgresStore.from_conn_string(postgres_url, fake_embeddings()) as store:
        store.ingest(
            ("ada",),
            [Message("I adopted a grey cat called Pixel", "Ada", id="c1", session=1)],
            origin="chat",
        )
        graph = create_read_graph(source=store, judge=yes_judge())
        out = graph.invoke(
            {"messages": [("user", "What is my cat called?")]},
            context=ReadContext(namespace=("ada",)),
        )
        assert "Pixel" in out["view"].text
        docs = MnemonRetriever(store=store, namespace=("ada",), k=2).invoke("cat Pixel")
        assert docs and "Pixel" in docs[0].page_content


def test_async_variant_and_model_identity(postgres_url: str) -> None:
    async def run() -> int:
        async with PostgresStore.afrom_conn_string(postgres_url, fake_embeddings()) as store:
            result = await store.aingest(("a",), [Message("hello async world", "A")], origin="s")
            hits = await store.asearch("async", namespace=("a",), k=1)
            assert hits and "async" in hits[0].record.text
            return result.records_written

    assert asyncio.run(run()) == 1
    from langchain_core.embeddings import DeterministicFakeEmbedding

    with pytest.raises(EmbeddingMismatchError):
        MnemonStore(postgres_url, DeterministicFakeEmbedding(size=8))


def test_postgres_page_snippet_runs_as_pasted(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "postgres.md").read_text(
        encoding="utf-8"
    )
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'os.environ.get("MNEMON_DB"' in code
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    monkeypatch.setenv("MNEMON_DB", postgres_url)
    exec(compile(code, "docs/postgres.md", "exec"), {})
    assert "Lyon" in capsys.readouterr().out
