"""Pydantic-validated surfaces raise the package's errors, not pydantic's.

``MnemonMemory`` and ``MnemonRetriever`` are pydantic models (LangChain's ``BaseMemory`` and
``BaseRetriever`` are), so a bad constructor argument would surface as pydantic's
``ValidationError``, a multi-line dump, where every other surface raises a typed error of
:mod:`mnemon_langgraph.errors`.
"""

from __future__ import annotations

from pydantic import ValidationError

from mnemon_langgraph.errors import ConfigurationError, MnemonError, NamespaceError

__all__ = ["package_error"]


def package_error(exc: ValidationError, owner: str) -> MnemonError:
    """The package error for ``exc``: the typed error a validator raised (a bad namespace
    is a :class:`~mnemon_langgraph.errors.NamespaceError`, and so is a namespace of the
    wrong type), else a one-line
    :class:`~mnemon_langgraph.errors.ConfigurationError` naming the argument."""
    errors = exc.errors()
    for error in errors:
        original = (error.get("ctx") or {}).get("error")
        if isinstance(original, MnemonError):
            return original
    first = errors[0] if errors else {"loc": (), "msg": str(exc), "input": None}
    loc = tuple(first.get("loc") or ())
    where = ".".join(str(part) for part in loc) or "arguments"
    got = repr(first.get("input"))[:80]
    message = str(first["msg"]).removeprefix("Value error, ")
    missing = first.get("type") == "missing"
    if loc[:1] == ("namespace",):
        if missing:
            return NamespaceError(f"{owner}: namespace is required (one object per user)")
        return NamespaceError(
            f"{owner}: namespace must be a string or a tuple of strings, got {got}"
        )
    if missing:
        return ConfigurationError(f"{owner}: {where} is required")
    return ConfigurationError(f"{owner}: {where}: {message} (got {got})")
