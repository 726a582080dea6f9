"""Model providers: a registry of vendor classes behind one async ``generate``."""

from ._base import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelAPI,
    ModelSpec,
    ToolCall,
    ToolSpec,
    Usage,
)
from ._model import Model, RetryPolicy
from ._pool import ModelPool, resolve_api_key
from ._registry import register_vendor, vendor_class, vendors
from .embeddings import (
    Embedder,
    EmbeddingAPI,
    EmbeddingPool,
    EmbeddingResult,
    EmbeddingSpec,
    cosine,
    embedding_vendor_class,
    embedding_vendors,
    register_embedding_vendor,
)

__all__ = [
    "ChatMessage",
    "Completion",
    "Embedder",
    "EmbeddingAPI",
    "EmbeddingPool",
    "EmbeddingResult",
    "EmbeddingSpec",
    "GenerateParams",
    "Model",
    "ModelAPI",
    "ModelPool",
    "ModelSpec",
    "RetryPolicy",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "cosine",
    "embedding_vendor_class",
    "embedding_vendors",
    "register_embedding_vendor",
    "register_vendor",
    "resolve_api_key",
    "vendor_class",
    "vendors",
]
