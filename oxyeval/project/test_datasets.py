"""oxy's custom-test datasets: ``*.test.yml`` files that are a list of questions.

oxy names an agent's ``tests: - type: custom, dataset: data/x.test.yml`` dataset with the
same suffix as its pass/fail test files, but the dataset is a YAML list of
``{query, response, relevant_contexts}`` items, not a ``target:``/``cases:`` mapping. A
project that ships one is valid (oxy accepts it): validate checks its items, and the
commands that run every test file of a folder pass over it instead of stopping on it.
oxyeval does not run custom tests yet; the agent's file says so where it names one.
"""

from __future__ import annotations

from typing import Any

from ..errors import Diagnostic
from .document import Document

__all__ = ["DATASET_KEYS", "dataset_problems", "is_dataset"]

#: The keys of one item, as oxy's custom test reads them.
DATASET_KEYS = ("query", "response", "relevant_contexts")


def is_dataset(doc: Document) -> bool:
    """A ``*.test.yml`` whose top level is a list is a dataset, never a test file."""
    return isinstance(doc.data, list)


def dataset_problems(doc: Document) -> list[Diagnostic]:
    """Each item a mapping with a text ``query``; ``response`` text; ``relevant_contexts``
    a list of texts; other keys are warnings (oxy would ignore them too)."""
    problems: list[Diagnostic] = []
    items: list[Any] = doc.data if isinstance(doc.data, list) else []
    if not items:
        problems.append(doc.diagnostic((), "an empty custom-test dataset: add query items"))
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(
                doc.diagnostic((i,), "a dataset item is a mapping with query: and response:")
            )
            continue
        if not isinstance(item.get("query"), str) or not item["query"].strip():
            problems.append(doc.diagnostic((i,), "a dataset item needs a text query:"))
        if "response" in item and not isinstance(item["response"], str):
            problems.append(doc.diagnostic((i, "response"), "must be text"))
        contexts = item.get("relevant_contexts")
        if contexts is not None and (
            not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts)
        ):
            problems.append(doc.diagnostic((i, "relevant_contexts"), "must be a list of texts"))
        for key in item:
            if key not in DATASET_KEYS:
                problems.append(
                    doc.diagnostic(
                        (i, key),
                        f"unknown key '{key}' in a dataset item (oxy reads "
                        f"{', '.join(DATASET_KEYS)}) is ignored",
                        severity="warning",
                        at_key=True,
                    )
                )
    return problems
