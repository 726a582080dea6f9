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

__all__ = [
    "ChatMessage",
    "Completion",
    "GenerateParams",
    "Model",
    "ModelAPI",
    "ModelPool",
    "ModelSpec",
    "RetryPolicy",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "register_vendor",
    "resolve_api_key",
    "vendor_class",
    "vendors",
]
