"""oxyeval: test LLM prompts, agents and workflows.

The public API is imported lazily, so ``import oxyeval`` (and the ``oxy``
command's start-up) does not pay for httpx, jsonschema or jinja2 until used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "ABRun",
    "Agent",
    "CaseRun",
    "ConfigError",
    "ConsistencyRun",
    "ConsistencyTestResult",
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
    "run_ab_test",
    "run_ab_test_async",
    "run_ab_tests",
    "run_ab_tests_async",
    "run_cases",
    "run_cases_async",
    "run_tests",
    "run_tests_async",
    "run_workflow",
    "validate_paths",
]

_LAZY = {
    "Agent": "oxyeval.project.agents",
    "Project": "oxyeval.project.config",
    "load_agent": "oxyeval.project.agents",
    "load_project": "oxyeval.project.config",
    "ConfigError": "oxyeval.errors",
    "LoadError": "oxyeval.errors",
    "OxyError": "oxyeval.errors",
    "ProviderError": "oxyeval.errors",
    "CaseRun": "oxyeval.suites.cases.results",
    "ConsistencyTestResult": "oxyeval.suites.consistency.results",
    "TestResult": "oxyeval.suites.consistency.results",
    "TestRun": "oxyeval.suites.consistency.results",
    "ConsistencyRun": "oxyeval.suites.consistency.results",
    "check_threshold": "oxyeval.evaluation",
    "open_store": "oxyeval.store",
    "parse_verdict": "oxyeval.judge.judge",
    "ABRun": "oxyeval.suites",
    "run_ab_test": "oxyeval.suites",
    "run_ab_test_async": "oxyeval.suites",
    "run_ab_tests": "oxyeval.suites",
    "run_ab_tests_async": "oxyeval.suites",
    "run_cases": "oxyeval.suites.cases.run",
    "run_cases_async": "oxyeval.suites.cases.run",
    "run_tests": "oxyeval.suites.consistency",
    "run_tests_async": "oxyeval.suites.consistency",
    "run_workflow": "oxyeval.suites.workflows",  # the engine's, stored in the history
    "validate_paths": "oxyeval.suites.validate",
}

if TYPE_CHECKING:
    from .errors import ConfigError, LoadError, OxyError, ProviderError
    from .evaluation import check_threshold
    from .judge.judge import parse_verdict
    from .project.agents import Agent, load_agent
    from .project.config import Project, load_project
    from .store import open_store
    from .suites import ABRun, run_ab_test, run_ab_test_async, run_ab_tests, run_ab_tests_async
    from .suites.cases.results import CaseRun
    from .suites.cases.run import run_cases, run_cases_async
    from .suites.consistency import run_tests, run_tests_async
    from .suites.consistency.results import ConsistencyRun, ConsistencyTestResult
    from .suites.validate import validate_paths
    from .suites.workflows import run_workflow


#: The stage packages: ``oxyeval.suites.run_cases`` works after a bare ``import oxyeval``,
#: each imported the first time it is named.
_STAGES = frozenset(
    {
        "providers",
        "project",
        "judge",
        "evaluation",
        "workflow",
        "store",
        "suites",
        "report",
        "testing",
        "server",
        "cli",
    }
)


def __getattr__(name: str) -> Any:
    if name in _STAGES:
        return importlib.import_module(f"oxyeval.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxyeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
