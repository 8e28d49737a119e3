"""The public API is explicit and pinned: adding or removing a name is a conscious change."""

from __future__ import annotations

import subprocess
import sys

import mnemon_langgraph

EXPECTED = {
    "__version__",
    # storage and search
    "Journal", "MnemonStore", "IngestResult", "MiniLMEmbeddings", "MnemonRetriever",
    "Message", "Namespace", "Record", "SearchFilters", "SearchHit", "SearchSource",
    # read path
    "create_read_graph", "ReadContext", "ReadSettings", "View", "explain",
    "RulePlanner", "ChatPlanner",
    # System 1
    "LocalDecisionModel", "ChatDecisionModel", "JevDecisionModel", "ScriptedDecisionModel",
    # consolidation
    "create_consolidation_graph", "ConsolidationSettings", "ConsolidationReport",
    "SQLiteItemStore", "IndexItem", "ItemSource",
    # integrations
    "add_memory", "memory_nodes", "MnemonMiddleware", "MnemonMemory",
    "MnemonChatMessageHistory",
    # errors
    "MnemonError", "SetupError", "ConfigurationError", "MissingDependencyError",
    "EmbeddingMismatchError", "SchemaVersionError", "JournalError", "JournalLockedError",
    "JournalReadOnlyError", "InputError", "NamespaceError", "RuntimeMnemonError",
    "ModelCallError",
}  # fmt: skip


def test_all_is_pinned() -> None:
    assert set(mnemon_langgraph.__all__) == EXPECTED
    assert len(mnemon_langgraph.__all__) == len(EXPECTED), "duplicate names in __all__"


def test_every_public_name_resolves() -> None:
    for name in mnemon_langgraph.__all__:
        assert getattr(mnemon_langgraph, name) is not None, name


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
