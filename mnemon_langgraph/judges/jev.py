"""Jev, TypeSafe's hosted decision model — the paper's System 1 (needs ``TYPESAFE_API_KEY``).

Two client packages exist: ``typesafe-sdk`` (``TypeSafeClient.system_one``) and
``langchain-typesafe`` (``TypeSafeClassifier``). Both POST the same body to
``{base_url}/v1/systemone``. We use **langchain-typesafe**, because:

* its request and response shapes are LangChain's own decision types (``Noul``,
  ``ClassifierResponse``), so nothing is translated but the usage record;
* it does not retry on its own — retries belong to :mod:`mnemon_langgraph.read._judging`,
  where one setting bounds a wave's latency (``typesafe-sdk`` retries twice by default,
  with backoff, inside each call);
* it sends plain JSON (``typesafe-sdk`` zstd-compresses bodies when ``backports.zstd`` is
  installed), takes injectable ``httpx2`` clients, and needs only ``httpx2`` and
  ``langchain-core`` — it is what the ``jev`` extra installs.

The state is sent as JSON data fields (``records``, ``messages`` …), never spliced into an
instruction; every HTTP error, timeout or malformed reply surfaces as
:class:`~mnemon_langgraph.errors.ModelCallError`.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from langchain_core._api import LangChainBetaWarning
from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, Question, State
from pydantic import ConfigDict, PrivateAttr, SecretStr

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError, ModelCallError
from mnemon_langgraph.judges.propositions import without_evidence

__all__ = ["DEFAULT_JEV_MODEL", "JevDecisionModel"]

DEFAULT_JEV_MODEL = "jev-latest"
_API_KEY_ENV = "TYPESAFE_API_KEY"
_BASE_URL_ENV = "TYPESAFE_BASE_URL"
_DEFAULT_BASE_URL = "https://api.typesafe.ai"


def _import_classifier() -> Any:
    try:
        from langchain_typesafe import TypeSafeClassifier
    except ImportError as error:
        raise MissingDependencyError("The Jev judge", "langchain-typesafe", "jev") from error
    return TypeSafeClassifier


class JevDecisionModel(BaseDecisionModel):
    """Jev through ``langchain-typesafe`` (see the module docstring for why that package).

    Attributes:
        model: Jev model (``jev-latest``; pin a version for reproducible runs).
        api_key: TypeSafe API key; default ``$TYPESAFE_API_KEY``.
        base_url: API root; default ``$TYPESAFE_BASE_URL`` or ``https://api.typesafe.ai``.
        timeout: Seconds per HTTP request (clients created here only).
        client: Optional ``httpx2.Client`` (sync calls), used as is.
        async_client: Optional ``httpx2.AsyncClient`` (async calls), used as is.

    Raises:
        MissingDependencyError: ``langchain-typesafe`` is not installed.
        ConfigurationError: No API key, or a non-positive timeout.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = DEFAULT_JEV_MODEL
    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout: float = 30.0
    client: Any = None
    async_client: Any = None

    _classifier: Any = PrivateAttr(default=None)

    def __init__(self, **kwargs: Any) -> None:
        """Resolve the key and build the classifier (fails early, before any call)."""
        super().__init__(**kwargs)
        classifier_cls = _import_classifier()
        key = self.api_key.get_secret_value() if self.api_key else os.environ.get(_API_KEY_ENV, "")
        if not key.strip():
            raise ConfigurationError(
                f"the Jev judge needs a TypeSafe API key: pass api_key= or set {_API_KEY_ENV}"
            )
        if not self.timeout > 0:
            raise ConfigurationError(f"timeout must be positive, got {self.timeout}")
        base_url = self.base_url or os.environ.get(_BASE_URL_ENV, "").strip() or _DEFAULT_BASE_URL
        options: dict[str, Any] = {
            "model": self.model,
            "api_key": key.strip(),
            "base_url": base_url,
            "timeout": self.timeout,
        }
        if self.client is not None:
            options["client"] = self.client
        if self.async_client is not None:
            options["async_client"] = self.async_client
        try:
            with warnings.catch_warnings():
                # langchain-typesafe marks its classifier beta; the warning is not the user's.
                warnings.simplefilter("ignore", LangChainBetaWarning)
                self._classifier = classifier_cls(**options)
        except ValueError as error:
            raise ConfigurationError(f"Jev judge: {error}") from error

    @property
    def _provider(self) -> str:
        return "typesafe"

    def _request(self, state: State, questions: dict[str, Question]) -> dict[str, Any]:
        # Question objects go as their wire dicts; the package re-validates nothing on send.
        from langchain_typesafe import Noul as WireNoul

        wire = {}
        for qid, question in questions.items():
            dumped = question.model_dump(mode="json", exclude_none=True)
            if dumped.get("type") != "noul":
                raise ModelCallError(f"Jev judge: only Noul questions are sent, got {qid!r}")
            wire[qid] = WireNoul.model_validate(dumped)
        return {"state": without_evidence(state), "questions": wire}

    @staticmethod
    def _convert(response: Any) -> ClassifierResponse:
        usage = getattr(response, "usage", None)
        try:
            return ClassifierResponse.model_validate(
                {
                    "model": response.model,
                    "answers": {k: v.model_dump(mode="json") for k, v in response.answers.items()},
                    "usage": {
                        "input_tokens": getattr(usage, "input_tokens", None) or 0,
                        "output_tokens": getattr(usage, "output_tokens", None) or 0,
                    },
                    "request_id": response.request_id,
                }
            )
        except Exception as error:
            raise ModelCallError(f"Jev judge: unusable response: {error}") from error

    @staticmethod
    def _wrap(error: Exception) -> ModelCallError:
        return ModelCallError(f"Jev judge: {type(error).__name__}: {error}")

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        request = self._request(state, questions)
        try:
            # Public API: under tracing, the package's own run nests inside ours.
            response = self._classifier.invoke(request)
        except Exception as error:
            raise self._wrap(error) from error
        return self._convert(response)

    async def _aclassify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        request = self._request(state, questions)
        try:
            response = await self._classifier.ainvoke(request)
        except Exception as error:
            raise self._wrap(error) from error
        return self._convert(response)
