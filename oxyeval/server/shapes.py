"""The API's Prompt: the report layer's prompt and versions, with what a client asks of a
prompt first (its latest version and that version's content) read in the same call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..evaluation import wilson_interval
from ..report import prompt_json, version_json

if TYPE_CHECKING:
    from ..store import Prompt, Store

__all__ = ["consistency_interval", "prompt_doc"]


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


def consistency_interval(doc: dict[str, Any]) -> None:
    """An approximate 95% interval for a consistency test's accuracy, for its chart.

    Accuracy is the share of consistent pairs among n runs' n(n-1)/2 pairs, and pairs
    share runs, so they are not independent: counting pairs as trials would claim far more
    certainty than n answers carry. The Wilson interval of the same share over the n
    successful runs is the honest width (what n independent answers would give)."""
    details = doc.get("details") or {}
    runs = details.get("runs_ok")
    score = doc.get("score")
    if "interval" in details or not isinstance(runs, int) or runs < 2 or score is None:
        return
    found = wilson_interval(round(score * runs), runs)
    if found is not None:
        details["interval"] = {"low": found.low, "high": found.high, "method": "wilson over runs"}
