"""Errors raised by mnemon-langgraph, split by phase.

Every error subclasses :class:`MnemonError` *and* the builtin that best describes it,
so callers can catch either. Setup errors (bad configuration, a journal that cannot be
opened, a mixed embedding model) happen before any work is done; input errors name the
offending field; runtime errors come from a backend (a model, the disk) mid-operation.
No error is ever raised after a partial write: the journal commits or rolls back whole.
"""

from __future__ import annotations

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
    "NamespaceError",
    "RuntimeMnemonError",
    "SchemaVersionError",
    "SetupError",
]


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
        hint = f"pip install 'mnemon-langgraph[{extra}]'" if extra else f"pip install {package}"
        super().__init__(f"{feature} needs the optional package {package!r}: {hint}")
        self.feature = feature
        self.package = package


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
