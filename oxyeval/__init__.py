"""oxyeval: test LLM prompts, agents and workflows.

The public API is imported lazily, so ``import oxyeval`` (and the ``oxy``
command's start-up) does not pay for httpx, jsonschema or jinja2 until used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "ConfigError",
    "LoadError",
    "OxyError",
    "Project",
    "ProviderError",
    "TestResult",
    "TestRun",
    "__version__",
    "check_threshold",
    "load_agent",
    "load_project",
    "open_store",
    "parse_verdict",
    "run_tests",
    "run_tests_async",
    "run_workflow",
    "validate_paths",
]

_LAZY = {
    "Agent": "oxyeval.project",
    "Project": "oxyeval.project",
    "load_agent": "oxyeval.project",
    "load_project": "oxyeval.project",
    "ConfigError": "oxyeval.errors",
    "LoadError": "oxyeval.errors",
    "OxyError": "oxyeval.errors",
    "ProviderError": "oxyeval.errors",
    "TestResult": "oxyeval.results",
    "TestRun": "oxyeval.results",
    "check_threshold": "oxyeval.report",
    "open_store": "oxyeval.store",
    "parse_verdict": "oxyeval.judge",
    "run_tests": "oxyeval.runner",
    "run_tests_async": "oxyeval.runner",
    "run_workflow": "oxyeval.engine",
    "validate_paths": "oxyeval.check",
}

if TYPE_CHECKING:
    from .check import validate_paths
    from .engine import run_workflow
    from .errors import ConfigError, LoadError, OxyError, ProviderError
    from .judge import parse_verdict
    from .project import Agent, Project, load_agent, load_project
    from .report import check_threshold
    from .results import TestResult, TestRun
    from .runner import run_tests, run_tests_async
    from .store import open_store


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxyeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
