"""Vendor name -> ModelAPI class, imported only when a model of that vendor is used."""

from __future__ import annotations

import importlib

from ._base import ModelAPI

__all__ = ["register_vendor", "vendor_class", "vendors"]

_LAZY: dict[str, str] = {
    "openai": "oxyeval.providers.openai:OpenAIAPI",
    "ollama": "oxyeval.providers.ollama:OllamaAPI",
    "anthropic": "oxyeval.providers.anthropic:AnthropicAPI",
    "google": "oxyeval.providers.google:GoogleAPI",
    "gemini": "oxyeval.providers.google:GoogleAPI",
    "mock": "oxyeval.providers.mock:MockAPI",
}
_LOADED: dict[str, type[ModelAPI]] = {}


def register_vendor(name: str, cls: type[ModelAPI]) -> None:
    """Add (or replace) a vendor; plugins call this to bring their own API class."""
    _LOADED[name] = cls


def vendors() -> list[str]:
    return sorted(set(_LAZY) | set(_LOADED))


def vendor_class(name: str) -> type[ModelAPI]:
    if name in _LOADED:
        return _LOADED[name]
    target = _LAZY.get(name)
    if target is None:
        raise KeyError(name)
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    _LOADED[name] = cls
    return cls
