"""Ollama through its OpenAI-compatible endpoint.

Ollama's native ``/api/chat`` and ``/api/embed`` differ in every field name; its
``/v1`` endpoint speaks Chat Completions and ``/embeddings``, so the only
differences from OpenAI are the default URL and that no key is needed.
"""

from __future__ import annotations

from typing import ClassVar

from .openai import OpenAIAPI, OpenAIEmbeddingAPI

__all__ = ["OllamaAPI", "OllamaEmbeddingAPI"]


class OllamaAPI(OpenAIAPI):
    vendor: ClassVar[str] = "ollama"
    requires_key: ClassVar[bool] = False
    default_api_url: ClassVar[str | None] = "http://localhost:11434/v1"


class OllamaEmbeddingAPI(OpenAIEmbeddingAPI):
    vendor: ClassVar[str] = "ollama"
    requires_key: ClassVar[bool] = False
    default_api_url: ClassVar[str | None] = "http://localhost:11434/v1"
