"""The notebooks run top to bottom offline, and are committed without outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = [
    "01_quickstart.ipynb",
    "02_agent_with_memory.ipynb",
    "03_consolidation.ipynb",
    "04_eval_results.ipynb",
]
CELL_TIMEOUT_S = 300
EXPECTED = {  # something each notebook must print when it worked
    "01_quickstart.ipynb": ["records from", "records in the View", "record "],
    "02_agent_with_memory.ipynb": ["<memory_view>", "View in the agent's state: False"],
    "03_consolidation.ipynb": ["items added:", "skipped the real-model run"],
    "04_eval_results.ipynb": ["questions", "any:", "saved"],
}


def test_notebooks_exist_and_have_no_outputs() -> None:
    nbformat = pytest.importorskip("nbformat")
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, name
        assert all(not c.outputs and c.execution_count is None for c in code), name


def test_notebooks_match_their_generator() -> None:
    """The .ipynb files are what notebooks/make_notebooks.py writes (edit the generator)."""
    nbformat = pytest.importorskip("nbformat")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOKS / "make_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, cells in module.NOTEBOOKS.items():
        on_disk = nbformat.read(NOTEBOOKS / name, as_version=4)
        assert [c.source for c in on_disk.cells] == [src for _, src in cells], name


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_offline(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    for key in ("OPENAI_API_KEY", "TYPESAFE_API_KEY", "MNEMON_RESULTS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.get("output_type") == "error"
    ]
    assert not errors
    text = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    assert text.strip(), f"{name} printed nothing"
    for expected in EXPECTED[name]:
        assert expected in text, (name, expected)
