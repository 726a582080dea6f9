"""The API's Prompt: the report layer's prompt and versions, with what a client asks of a
prompt first (its latest version and that version's content) read in the same call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report import comparison_json, daily_json, prompt_json, version_json

if TYPE_CHECKING:
    from ..store import Prompt, Store

__all__ = ["comparison_json", "daily_json", "prompt_doc"]


def prompt_doc(store: Store, prompt: Prompt) -> dict[str, Any]:
    versions = store.prompts.versions(prompt.id)
    latest = versions[-1].version if versions else None
    return {
        **prompt_json(prompt),
        "source": prompt.source or None,
        "latestVersion": latest,
        "versions": [version_json(v) for v in versions],
        "content": None if latest is None else store.prompts.get_version(prompt.id, latest),
    }
