"""Build backends from the short names the CLI, Studio and the eval harness accept.

``"openai:gpt-4.1-mini"`` is a chat model (through LangChain's ``init_chat_model``);
``"rules"`` is the offline rule planner; ``"local"``, ``"jev"``, ``"llm:PROVIDER:MODEL"`` or
``"package.module:attribute"`` name a System 1 backend. Every surface that takes such a name
calls these functions, so a name means the same thing everywhere and a missing provider
package always fails with the same install hint.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError

if TYPE_CHECKING:
    from langchain_core.decisions import BaseDecisionModel
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel

__all__ = ["chat_model_from_spec", "judge_from_spec", "planner_from_spec", "resolve_judge"]


def chat_model_from_spec(spec: str, **kwargs: Any) -> BaseChatModel:
    """Build a chat model from ``"PROVIDER:MODEL"`` (e.g. ``"openai:gpt-4.1-mini"``).

    The provider is everything before the first colon, so model names that contain colons
    (``"ollama:llama3:8b"``) work.

    Args:
        spec: ``PROVIDER:MODEL``.
        **kwargs: Passed to ``init_chat_model`` (e.g. ``temperature=0``).

    Raises:
        ConfigurationError: If the spec is not ``PROVIDER:MODEL``, or the provider rejects it
            (unknown provider, missing API key …).
        MissingDependencyError: If ``langchain`` or the provider's package is missing.
    """
    provider, sep, model = spec.strip().partition(":")
    if not sep or not provider or not model:
        raise ConfigurationError(f"chat model must be PROVIDER:MODEL, got {spec!r}")
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "a chat model from PROVIDER:MODEL", "langchain", "agents"
        ) from exc
    try:
        return init_chat_model(model, model_provider=provider, **kwargs)
    except ImportError as exc:
        raise MissingDependencyError(
            f"the chat model {spec!r}", f"langchain-{provider.replace('_', '-')}"
        ) from exc
    except ValueError as exc:
        raise ConfigurationError(f"cannot build the chat model {spec!r}: {exc}") from exc


def planner_from_spec(spec: str) -> BaseChatModel | None:
    """``"rules"`` → ``None`` (the read graph's offline rule planner); else a chat model."""
    if spec.strip() == "rules":
        return None
    return chat_model_from_spec(spec)


def judge_from_spec(spec: str, *, embeddings: Embeddings | None = None) -> Any:
    """The System 1 backend (a ``BaseDecisionModel``) named by ``spec``.

    Args:
        spec: ``local`` (offline, the default), ``jev`` (TypeSafe's Jev; needs
            ``TYPESAFE_API_KEY``), ``llm:PROVIDER:MODEL`` (a chat model asked the
            propositions) or ``package.module:attribute`` (a decision model class or
            factory called with no arguments, or an instance).
        embeddings: Embeddings the local judge shares (e.g. the store's, so the model is
            loaded once); ignored by the other backends.

    Raises:
        ConfigurationError: For a name that is none of these, or an object that cannot
            be imported.
    """
    spec = spec.strip()
    if spec == "local":
        from mnemon_langgraph.judges.local import LocalDecisionModel

        return LocalDecisionModel(embeddings=embeddings)
    if spec == "jev":
        from mnemon_langgraph.judges.jev import JevDecisionModel

        return JevDecisionModel()
    if spec.startswith("llm:"):
        from mnemon_langgraph.judges.chat import ChatDecisionModel

        return ChatDecisionModel(llm=chat_model_from_spec(spec[4:]))
    module_name, sep, attribute = spec.partition(":")
    if sep and module_name and attribute.isidentifier():
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(f"judge {spec!r}: cannot import it ({exc})") from exc
        return found() if isinstance(found, type) or not hasattr(found, "invoke") else found
    raise ConfigurationError(
        f"judge must be local, jev, llm:PROVIDER:MODEL or package.module:attribute, got {spec!r}"
    )


def resolve_judge(
    judge: BaseDecisionModel | str | None, *, embeddings: Embeddings | None = None
) -> BaseDecisionModel:
    """The System 1 backend ``create_read_graph(judge=...)`` was given.

    Args:
        judge: ``None`` (the offline local judge), a name :func:`judge_from_spec` accepts
            (``"local"``, ``"jev"``, ``"llm:PROVIDER:MODEL"`` …) or a decision model.
        embeddings: Embeddings the local judge shares (e.g. the store's).

    Raises:
        ConfigurationError: For a name that names no backend, or an object that is not a
            decision model.
    """
    from langchain_core.decisions import BaseDecisionModel

    if judge is None:
        judge = "local"
    found = judge_from_spec(judge, embeddings=embeddings) if isinstance(judge, str) else judge
    if not isinstance(found, BaseDecisionModel):
        raise ConfigurationError(
            "judge must be None, 'local', 'jev', 'llm:PROVIDER:MODEL', "
            f"'package.module:attribute' or a BaseDecisionModel, got {type(found).__name__}"
        )
    return found
