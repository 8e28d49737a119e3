"""Errors raised by mnemon-langgraph, split by phase.

Every error subclasses :class:`MnemonError` *and* the builtin that best describes it,
so callers can catch either. Setup errors (bad configuration, a journal that cannot be
opened, a mixed embedding model) happen before any work is done; input errors name the
offending field; runtime errors come from a backend (a model, the disk) mid-operation.
No error is ever raised after a partial write: the journal commits or rolls back whole.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = [
    "ConfigurationError",
    "EmbeddingMismatchError",
    "EraseError",
    "InputError",
    "JournalError",
    "JournalLockedError",
    "JournalReadOnlyError",
    "MissingDependencyError",
    "MnemonError",
    "ModelCallError",
    "NamespaceAccessError",
    "NamespaceError",
    "RuntimeMnemonError",
    "SchemaVersionError",
    "SetupError",
]  # only error classes (tests/test_public_api.py); install_hint and the deprecation helpers
# beside them


class MnemonError(Exception):
    """Base class of every error raised by mnemon-langgraph."""


# --- setup phase -------------------------------------------------------------------


class SetupError(MnemonError):
    """Raised while configuring or opening something, before any work is done."""


class ConfigurationError(SetupError, ValueError):
    """A setting, budget or argument has a value that cannot work."""


class MissingDependencyError(SetupError, ImportError):
    """An optional backend was requested but its package is not installed.

    The message always carries the ``pip install`` line that fixes it.
    """

    def __init__(self, feature: str, package: str, extra: str | None = None) -> None:
        hint = install_hint(extra) if extra else f"pip install {package}"
        super().__init__(f"{feature} needs the optional package {package!r}: {hint}")
        self.feature = feature
        self.package = package


def install_hint(extra: str) -> str:
    """The ``pip install`` line that adds ``extra`` to the package *as it is installed*.

    Run from a source tree (a clone, installed with ``pip install -e .`` or not at all):
    ``pip install -e '/path/to/clone[agents]'``. Installed from a folder into
    site-packages (``pip install /path/to/clone``, recorded in the distribution's
    ``direct_url.json``, PEP 610): ``pip install '/path/to/clone[agents]'``. Otherwise,
    installed from an index: ``pip install 'mnemon-langgraph[agents]'``.
    """
    import json
    from importlib import metadata
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    try:
        direct = metadata.distribution("mnemon-langgraph").read_text("direct_url.json")
        info = json.loads(direct) if direct else {}
    except (metadata.PackageNotFoundError, ValueError):
        info = {}
    return _install_line(extra, root if (root / "pyproject.toml").is_file() else None, info)


def _install_line(extra: str, source_tree: object, direct_url: dict[str, object]) -> str:
    """:func:`install_hint`'s rule, given the source tree (or ``None``) and direct_url.json."""
    from urllib.parse import unquote, urlsplit

    if source_tree is not None:
        return f"pip install -e '{source_tree}[{extra}]'"
    url, dir_info = str(direct_url.get("url", "")), direct_url.get("dir_info")
    if url.startswith("file://") and isinstance(dir_info, dict):
        editable = "-e " if dir_info.get("editable") else ""
        return f"pip install {editable}'{unquote(urlsplit(url).path)}[{extra}]'"
    return f"pip install 'mnemon-langgraph[{extra}]'"


class EmbeddingMismatchError(SetupError, ValueError):
    """The journal was written with another embedding model or dimension."""


class SchemaVersionError(SetupError, RuntimeError):
    """The journal's schema is newer than this version of the package understands."""


class JournalError(MnemonError, OSError):
    """The journal file cannot be opened, read or written."""


class JournalLockedError(JournalError):
    """Another process holds the journal's write lock past the busy timeout."""


class JournalReadOnlyError(JournalError):
    """The journal file (or its folder) is read-only, so nothing can be written."""


# --- input -------------------------------------------------------------------------


class InputError(MnemonError, ValueError):
    """Input data is malformed: the message names the source, the field and the problem."""


class NamespaceError(InputError):
    """A namespace is not a non-empty tuple of non-empty strings."""


class NamespaceAccessError(MnemonError, PermissionError):
    """A run named memory that is not its authenticated user's, and was refused.

    Raised on a LangGraph server with authentication when the run's context, config or input
    names a user or namespace other than the one the server's authenticated identity decides
    (``docs/security.md``). Nothing is read or written.
    """


# --- runtime -----------------------------------------------------------------------


class RuntimeMnemonError(MnemonError, RuntimeError):
    """Something failed mid-operation; nothing half-written was kept."""


class ModelCallError(RuntimeMnemonError):
    """A chat model, decision model or embedder failed, timed out or returned garbage."""


class EraseError(RuntimeMnemonError):
    """An erase could not remove something (an index file, a folder); it says what.

    Index files are removed before the journal's rows, so when this is raised the
    namespace's records are still there and the erase can simply be run again.
    """


# --- deprecated names ------------------------------------------------------------------


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``; it goes after one release
    (``docs/migration.md`` lists every such name)."""
    import warnings

    warnings.warn(
        f"{old} is deprecated and goes in the next release: use {new} (docs/migration.md)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def deprecated_names(module: str, renamed: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving the old names of ``renamed`` (old → new name in the
    same module) with a :func:`warn_deprecated` warning."""
    import sys

    def __getattr__(name: str) -> Any:
        new = renamed.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_deprecated(f"{module}.{name}", f"{module}.{new}")
        return getattr(sys.modules[module], new)

    return __getattr__


def moved_module(old: str, new: str) -> ModuleType:
    """Serve the module ``new`` at its old path ``old`` for one release, with a warning.

    Called by the file left at the old path (``moved_module(__name__, "…")``): it imports
    ``new``, warns, and puts the very module object of ``new`` in ``sys.modules`` under the
    old name, so ``import old`` and ``from old import x`` give ``new``'s objects (patching
    one patches both) and nothing is loaded twice. The import system hands back what
    ``sys.modules`` holds once the old file has run.
    """
    import importlib
    import sys

    module = importlib.import_module(new)
    # 4: past this function, warn_deprecated's caller and the old file, to the importer
    # (the import system's own frames are skipped by the warnings module)
    warn_deprecated(f"module {old}", new, stacklevel=4)
    sys.modules[old] = module
    return module
