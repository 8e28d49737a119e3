"""The public API is explicit and pinned: adding or removing a name is a conscious change."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mnemon_langgraph

EXPECTED = {
    "__version__",
    # the store (write path, hybrid search, per-user API)
    "MnemonStore",
    # read path
    "create_read_graph", "ReadContext", "ReadSettings", "View", "explain",
    # System 1
    "LocalDecisionModel", "ChatDecisionModel", "JevDecisionModel",
    # consolidation
    "create_consolidation_graph", "ConsolidationSettings", "EmbeddedItemStore",
    # agent surfaces
    "add_memory", "MnemonMiddleware", "MnemonMemory", "create_memory_tools", "MnemonRetriever",
    "MnemonBaseStore",
}  # fmt: skip


def test_all_is_pinned() -> None:
    assert set(mnemon_langgraph.__all__) == EXPECTED
    assert len(mnemon_langgraph.__all__) == len(EXPECTED), "duplicate names in __all__"


def test_every_public_name_resolves() -> None:
    for name in mnemon_langgraph.__all__:
        assert getattr(mnemon_langgraph, name) is not None, name


def test_errors_live_in_their_module_not_at_the_top() -> None:
    from mnemon_langgraph import errors

    assert not set(errors.__all__) & set(mnemon_langgraph.__all__)
    with pytest.raises(AttributeError, match=r"mnemon_langgraph\.errors"):
        mnemon_langgraph.ConfigurationError  # noqa: B018


def test_surfaces_take_one_read_graph_not_its_arguments() -> None:
    """One ``read_graph`` (or the store's default), not the read graph's own keywords."""
    import inspect

    from mnemon_langgraph.integrations import memory_nodes

    surfaces = [
        mnemon_langgraph.add_memory,
        memory_nodes,
        mnemon_langgraph.MnemonMiddleware.__init__,
        mnemon_langgraph.create_memory_tools,
    ]
    for surface in surfaces:
        params = inspect.signature(surface).parameters
        assert "read_graph" in params, surface
        assert not {"judge", "planner", "items", "settings"} & set(params), surface
        # annotations are strings (postponed evaluation): the store is typed, not Any
        assert params["store"].annotation == "MnemonStore", surface


def test_unknown_name_raises_attribute_error() -> None:
    try:
        mnemon_langgraph.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_errors_subclass_package_base_and_a_builtin() -> None:
    from mnemon_langgraph import errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.MnemonError), name
        if cls is not errors.MnemonError:
            builtins = [b for b in cls.__mro__ if b.__module__ == "builtins"]
            assert any(b not in (object, BaseException, Exception) for b in builtins) or (
                cls in (errors.SetupError,)
            ), f"{name} subclasses no specific builtin"


def test_import_is_cheap_and_side_effect_free() -> None:
    # Importing the package must not pull the heavy backends (no import-time work).
    code = (
        "import sys, mnemon_langgraph; "
        "heavy = [m for m in ('faiss', 'onnxruntime', 'bm25s', 'langgraph') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
