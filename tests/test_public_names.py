"""Each stage package's ``__all__`` is what other stages and Python callers import, so every
name in it must resolve, and the lazy map must list exactly those names (see _lazy.py)."""

from __future__ import annotations

import importlib

import pytest

from tests.test_architecture import ORDER


@pytest.mark.parametrize("package", ORDER)
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(f"oxyeval.{package}")
    missing = [n for n in module.__all__ if getattr(module, n, None) is None]
    assert missing == []


@pytest.mark.parametrize("package", ORDER)
def test_lazy_exports_are_the_public_names(package: str) -> None:
    module = importlib.import_module(f"oxyeval.{package}")
    exports = set(getattr(module, "_EXPORTS", {}))
    assert exports <= set(module.__all__)
    # what __all__ lists beyond the lazy map is defined or imported eagerly in __init__
    eager = set(module.__all__) - exports
    assert all(n in vars(module) for n in eager), sorted(n for n in eager if n not in vars(module))


@pytest.mark.parametrize(
    ("package", "name", "home"),
    [
        ("suites", "Target", "oxyeval.suites.targets"),
        ("suites", "AgentTarget", "oxyeval.suites.targets"),
        ("suites", "PromptTarget", "oxyeval.suites.targets"),
        ("suites", "WorkflowTarget", "oxyeval.suites.targets"),
        ("workflow", "RunContext", "oxyeval.workflow.context"),
        ("workflow", "RunContexts", "oxyeval.workflow.context"),
        ("judge", "assess", "oxyeval.judge.consistency"),
        ("judge", "Assessment", "oxyeval.judge.consistency"),
    ],
)
def test_the_seams_for_a_new_test_type_are_public(package: str, name: str, home: str) -> None:
    """README's "a new test type runs Targets inside a RunContext, judges with assess"."""
    module = importlib.import_module(f"oxyeval.{package}")
    assert name in module.__all__
    assert getattr(module, name) is getattr(importlib.import_module(home), name)
