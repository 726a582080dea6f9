"""The pytest plugin (entry point ``pytest11``): ``assert_test`` and ``evaluate`` in plain
pytest, ``--oxy-repeat N`` to run each test N times (an LLM app is not deterministic:
one green run proves little), and a summary of the metric scores at the end. JUnit comes
from pytest's own ``--junitxml``.

It is loaded wherever oxyeval is installed, so it costs nothing until used: one option,
one fixture, and a summary printed only when a metric was measured.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_terminal_summary",
]

#: Repeats beyond this are a typo, not a plan.
MAX_REPEAT = 1000


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("oxyeval")
    group.addoption(
        "--oxy-repeat",
        action="store",
        type=int,
        default=1,
        metavar="N",
        help="oxyeval: run each test N times (each a test of its own: run1..runN).",
    )
    group.addoption(
        "--oxy-no-history",
        action="store_false",
        dest="oxy_history",
        default=True,
        help="oxyeval: do not keep assert_test's evaluations in the project's history.",
    )


def pytest_configure(config: pytest.Config) -> None:
    count = config.getoption("oxy_repeat")
    if not isinstance(count, int) or not 1 <= count <= MAX_REPEAT:
        raise pytest.UsageError(f"--oxy-repeat must be between 1 and {MAX_REPEAT}, not {count}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    count = metafunc.config.getoption("oxy_repeat")
    if count > 1:
        metafunc.fixturenames.append("_oxy_run")
        metafunc.parametrize("_oxy_run", range(1, count + 1), ids=lambda n: f"run{n}")


@pytest.fixture
def _oxy_run(request: pytest.FixtureRequest) -> Any:
    """Which repetition of the test this is (1..N) under ``--oxy-repeat``."""
    return getattr(request, "param", 1)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Per metric: how often measured, passed, failed, errored, and its mean score; then
    ``assert_test``'s evaluations kept in the project's history as one run ("pytest"),
    with any score lower than the same case's previous one named as a regression."""
    import sys

    module = sys.modules.get("oxyeval.testing._evaluate")
    recorded = getattr(module, "RECORDED", None) if module is not None else None
    if not recorded:
        return
    _summary(terminalreporter, recorded)
    asserted = getattr(module, "ASSERTED", None)
    if asserted and terminalreporter.config.getoption("oxy_history"):
        from ._history import Evaluated, store_evaluations

        rows = [
            Evaluated(
                case=case,
                metric=d.name,
                score=d.score,
                passed=None if d.error else d.success,
                reason=d.reason,
                error=d.error,
                threshold=d.threshold,
            )
            for case, d in asserted
        ]
        if store_evaluations("pytest", rows) is not None:
            terminalreporter.write_line(
                f"{len(rows)} evaluation(s) kept in the history (oxy history --kind sdk)"
            )
        for row in rows:
            for why in row.regressions:
                terminalreporter.write_line(f"regression: {row.case} / {row.metric}: {why}")


def _summary(terminalreporter: Any, recorded: Any) -> None:
    rows: dict[str, list[Any]] = {}
    for data in recorded:
        rows.setdefault(data.name, []).append(data)
    terminalreporter.section("oxyeval metrics")
    for name, found in sorted(rows.items()):
        scores = [d.score for d in found if d.score is not None and not d.error]
        passed = sum(1 for d in found if d.success and not d.error)
        errors = sum(1 for d in found if d.error)
        mean = f"{sum(scores) / len(scores):.3f}" if scores else "-"
        terminalreporter.write_line(
            f"{name}: {len(found)} measured, {passed} passed, {len(found) - passed - errors} "
            f"failed, {errors} error(s), mean score {mean}"
        )
