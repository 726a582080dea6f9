"""Judge models for the SDK's metrics, under DeepEval's names (``deepeval.models``).

A metric's ``model=`` takes a model name (a config.yml model, or a vendor's model id
such as ``"gpt-4.1"``, read with the environment's key and base URL), or one of these:

* a :class:`DeepEvalBaseLLM` subclass the test code writes (``load_model``,
  ``generate``, ``a_generate``, ``get_model_name``): asked through its own methods, its
  text answer read as JSON the same way a model's is;
* :class:`OpenAIModel` (and its older name ``GPTModel``), :class:`AnthropicModel`,
  :class:`GeminiModel`, :class:`OllamaModel`: a vendor's model with an explicit key,
  base URL or temperature, called through oxyeval's own client for that vendor (its
  retries, concurrency limits, cost and redaction), never a vendor SDK.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..providers import ModelSpec

__all__ = [
    "AnthropicModel",
    "DeepEvalBaseLLM",
    "GPTModel",
    "GeminiModel",
    "OllamaModel",
    "OpenAIModel",
]


class DeepEvalBaseLLM(ABC):
    """A judge model written by the test code: subclass it and define ``load_model``
    (returns whatever client it uses), ``generate(prompt) -> str``, ``async
    a_generate(prompt) -> str`` and ``get_model_name() -> str``; pass an instance as a
    metric's ``model=``. The reply may also be a dict, or an object with
    ``model_dump()`` (a pydantic model), or DeepEval's ``(answer, cost)`` pair."""

    def __init__(self, model: str | None = None, *args: Any, **kwargs: Any) -> None:
        self.name = model
        self.model = self.load_model()

    @abstractmethod
    def load_model(self, *args: Any, **kwargs: Any) -> Any:
        """The client or model object ``generate`` uses."""

    @abstractmethod
    def generate(self, *args: Any, **kwargs: Any) -> Any:
        """The model's answer to a prompt, as text."""

    @abstractmethod
    async def a_generate(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`generate` for async code."""

    @abstractmethod
    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        """The model's name in reports."""
        return self.name or type(self).__name__

    def batch_generate(self, *args: Any, **kwargs: Any) -> list[str]:
        raise NotImplementedError("batch_generate is not implemented for this model")


class _VendorModel:
    """A vendor's model named in code, with what DeepEval's model classes take."""

    vendor: ClassVar[str] = "openai"
    default_model: ClassVar[str | None] = None

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float | None = None,
        **kwargs: Any,
    ) -> None:
        name = model or self.default_model
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{type(self).__name__} needs a model name (model='...')")
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, (int, float))
        ):
            raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
        self.name = name
        self.base_url = base_url.rstrip("/") if isinstance(base_url, str) else None
        self.temperature = temperature
        self._api_key = api_key  # never shown: a spec's key is kept out of reprs
        self.generation_kwargs = dict(kwargs.pop("generation_kwargs", None) or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.name!r})"

    def get_model_name(self) -> str:
        return self.name

    def model_spec(self) -> ModelSpec:
        """The spec oxyeval's client for the vendor calls: the base URL and key given
        here, else the environment's (as for a model named by a string)."""
        import dataclasses
        import hashlib
        import os

        from ..providers import (
            GenerateParams,
            endpoint_defaults,
            model_spec,
            price_for,
            vendor_model_spec,
        )
        from ..providers.endpoints import vendor_endpoint

        params = GenerateParams(
            temperature=None if self.temperature is None else float(self.temperature)
        )
        settings = repr((self.base_url, self.temperature, self._api_key is not None))
        tag = hashlib.sha256(settings.encode()).hexdigest()[:8]
        name = f"{self.vendor}:{self.name}#{tag}"
        if self._api_key is None:
            spec = vendor_model_spec(self.vendor, self.name, params=params, name=name)
            if self.base_url is not None:  # where it is decides a local server's defaults
                spec = dataclasses.replace(
                    spec,
                    api_url=self.base_url,
                    **endpoint_defaults(spec.vendor, self.base_url),
                )
            return spec
        api_url, _ = vendor_endpoint(self.vendor, None, os.environ)
        spec = model_spec(
            self.vendor,
            self.name,
            api_url=self.base_url or api_url,
            name=name,
            params=params,
            price=price_for(self.name),
        )
        return dataclasses.replace(spec, api_key=self._api_key)


class OpenAIModel(_VendorModel):
    """An OpenAI (or OpenAI-compatible) model: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
    and ``OPENAI_MODEL_NAME`` from the environment unless given here."""

    vendor = "openai"

    def __init__(self, model: str | None = None, *args: Any, **kwargs: Any) -> None:
        import os

        from ._judge import DEFAULT_JUDGE_MODEL

        model = model or os.environ.get("OPENAI_MODEL_NAME", "").strip() or DEFAULT_JUDGE_MODEL
        super().__init__(model, *args, **kwargs)


#: DeepEval's older name for :class:`OpenAIModel`.
GPTModel = OpenAIModel


class AnthropicModel(_VendorModel):
    """An Anthropic model (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``)."""

    vendor = "anthropic"


class GeminiModel(_VendorModel):
    """A Gemini model (``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``, ``GEMINI_BASE_URL``)."""

    vendor = "google"


class OllamaModel(_VendorModel):
    """A model served by Ollama (``OLLAMA_HOST``; no key)."""

    vendor = "ollama"


def _alias_base_model() -> None:
    """``from oxyeval.testing.models.base_model import DeepEvalBaseLLM``, DeepEval's
    other spelling of the import, finds this module's class."""
    import sys
    from types import ModuleType

    name = f"{__name__}.base_model"
    if name not in sys.modules:
        module = ModuleType(name, "DeepEval's ``deepeval.models.base_model``.")
        module.DeepEvalBaseLLM = DeepEvalBaseLLM  # type: ignore[attr-defined]
        module.__all__ = ["DeepEvalBaseLLM"]  # type: ignore[attr-defined]
        sys.modules[name] = module


_alias_base_model()
