"""Stage 1, model providers: vendor classes behind one async ``generate`` (chat) or
``embed`` (embeddings), one registry of vendors, and the pools a run calls them through.

Other packages import from here, never from the private modules. Names are imported
on first use (see :mod:`oxyeval._lazy`): the contract types and
:data:`TRUNCATED_REASONS` live in a module without heavy imports, and httpx is only
imported when a pool makes its HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "TRUNCATED_REASONS": "_base",
    "ChatMessage": "_base",
    "Completion": "_base",
    "EmbeddingAPI": "_base",
    "EmbeddingResult": "_base",
    "GenerateParams": "_base",
    "ModelAPI": "_base",
    "ModelSpec": "_base",
    "ResponseSchema": "_base",
    "ToolCall": "_base",
    "ToolSpec": "_base",
    "Usage": "_base",
    "json_object": "_base",
    "stopped_at_token_limit": "_base",
    "ResponseCache": "_cache",
    "Tally": "_cache",
    "answer_key": "_cache",
    "cacheable": "_cache",
    "completion_data": "_cache",
    "completion_from_data": "_cache",
    "count_served": "_cache",
    "counting": "_cache",
    "current_repeat": "_cache",
    "repeat_scope": "_cache",
    "api_url_problem": "_checks",
    "header_problem": "_checks",
    "value_problem": "_checks",
    "Model": "_model",
    "RetryPolicy": "_model",
    "ModelPool": "_pool",
    "MissingCredential": "_registry",
    "canonical_vendor": "_registry",
    "default_embedding_model": "_registry",
    "default_key_var": "_registry",
    "embedding_vendor_class": "_registry",
    "embedding_vendors": "_registry",
    "missing_credentials": "_registry",
    "register_embedding_vendor": "_registry",
    "register_vendor": "_registry",
    "resolve_api_key": "_registry",
    "vendor_class": "_registry",
    "vendors": "_registry",
    "Embedder": "embeddings",
    "EmbeddingPool": "embeddings",
    "EmbeddingSpec": "embeddings",
    "cosine": "embeddings",
}
__all__ = [
    "TRUNCATED_REASONS",
    "ChatMessage",
    "Completion",
    "Embedder",
    "EmbeddingAPI",
    "EmbeddingPool",
    "EmbeddingResult",
    "EmbeddingSpec",
    "GenerateParams",
    "MissingCredential",
    "Model",
    "ModelAPI",
    "ModelPool",
    "ModelSpec",
    "ResponseCache",
    "ResponseSchema",
    "RetryPolicy",
    "Tally",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "answer_key",
    "api_url_problem",
    "cacheable",
    "canonical_vendor",
    "completion_data",
    "completion_from_data",
    "cosine",
    "count_served",
    "counting",
    "current_repeat",
    "default_embedding_model",
    "default_key_var",
    "embedding_vendor_class",
    "embedding_vendors",
    "header_problem",
    "json_object",
    "missing_credentials",
    "register_embedding_vendor",
    "register_vendor",
    "repeat_scope",
    "resolve_api_key",
    "stopped_at_token_limit",
    "value_problem",
    "vendor_class",
    "vendors",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ._base import (
        TRUNCATED_REASONS,
        ChatMessage,
        Completion,
        EmbeddingAPI,
        EmbeddingResult,
        GenerateParams,
        ModelAPI,
        ModelSpec,
        ResponseSchema,
        ToolCall,
        ToolSpec,
        Usage,
        json_object,
        stopped_at_token_limit,
    )
    from ._cache import (
        ResponseCache,
        Tally,
        answer_key,
        cacheable,
        completion_data,
        completion_from_data,
        count_served,
        counting,
        current_repeat,
        repeat_scope,
    )
    from ._checks import api_url_problem, header_problem, value_problem
    from ._model import Model, RetryPolicy
    from ._pool import ModelPool
    from ._registry import (
        MissingCredential,
        canonical_vendor,
        default_embedding_model,
        default_key_var,
        embedding_vendor_class,
        embedding_vendors,
        missing_credentials,
        register_embedding_vendor,
        register_vendor,
        resolve_api_key,
        vendor_class,
        vendors,
    )
    from .embeddings import Embedder, EmbeddingPool, EmbeddingSpec, cosine
