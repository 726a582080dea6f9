"""The pytest plugin (entry point ``pytest11``): ``assert_test`` and ``evaluate`` in plain
pytest, ``--oxy-repeat N`` to run each test N times (an LLM app is not deterministic:
one green run proves little), and a summary of the metric scores at the end. JUnit comes
from pytest's own ``--junitxml``.

Every ``assert_test`` of a session is measured in one SDK run per project
(:class:`~oxyeval.testing._session.LiveRun`, "pytest" in the history), started by the
first one and finished when the session's summary is written.

It is loaded wherever oxyeval is installed, so it costs nothing until used: two options,
one fixture, and a summary printed only when a metric was measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._session import LiveRun, SessionSummary

__all__ = [
    "live_run",
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "skip_missing",
]

#: Repeats beyond this are a typo, not a plan.
MAX_REPEAT = 1000
_KEY: pytest.StashKey[Any] = pytest.StashKey()


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
        "--oxy-ignore-errors",
        action="store_true",
        default=False,
        help="oxyeval: a metric that cannot score fails its assert_test (never an "
        "exception of its own), as deepeval test run -i.",
    )
    group.addoption(
        "--oxy-skip-on-missing-params",
        action="store_true",
        default=False,
        help="oxyeval: assert_test skips a metric whose test case lacks a field it reads.",
    )
    group.addoption(
        "--oxy-no-history",
        action="store_false",
        dest="oxy_history",
        default=True,
        help="oxyeval: do not keep assert_test's evaluations in the project's history.",
    )


class _Session:
    """A running pytest session's settings, and its run once an ``assert_test`` began it."""

    def __init__(self, history: bool, skip_missing: bool = False) -> None:
        self.history = history
        self.skip_missing = skip_missing
        self.run: LiveRun | None = None
        self.summary: SessionSummary | None = None

    def live(self) -> LiveRun | None:
        """The session's run (begun now if need be); None once it has finished: an
        ``assert_test`` after the summary (a late teardown) is a run of its own."""
        if self.summary is not None:
            return None
        if self.run is None:
            from ._session import LiveRun

            self.run = LiveRun("pytest", history=self.history)
        return self.run

    def close(self) -> SessionSummary | None:
        """Finish the session's run (once); what it kept, None when it never began."""
        if self.run is not None and self.summary is None:
            self.summary = self.run.close()
        return self.summary


#: The sessions running in this process, innermost last (pytester runs one inside one).
_SESSIONS: list[_Session] = []


def live_run() -> LiveRun | None:
    """The run ``assert_test`` measures in under pytest (None: no session running)."""
    return _SESSIONS[-1].live() if _SESSIONS else None


def skip_missing() -> bool:
    """Whether the session's ``assert_test`` s skip metrics lacking a field."""
    return bool(_SESSIONS) and _SESSIONS[-1].skip_missing


def pytest_configure(config: pytest.Config) -> None:
    count = config.getoption("oxy_repeat")
    if not isinstance(count, int) or not 1 <= count <= MAX_REPEAT:
        raise pytest.UsageError(f"--oxy-repeat must be between 1 and {MAX_REPEAT}, not {count}")
    session = _Session(
        bool(config.getoption("oxy_history")),
        bool(config.getoption("oxy_skip_on_missing_params")),
    )
    config.stash[_KEY] = session
    _SESSIONS.append(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Finish the session's run if the summary did not (``-p no:terminal``)."""
    session = config.stash.get(_KEY, None)
    if session is None:
        return
    try:
        session.close()
    finally:
        if session in _SESSIONS:
            _SESSIONS.remove(session)


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
    what the session's run of ``assert_test`` s kept in the project's history, with any
    score lower than the same case's previous one named as a regression."""
    import sys

    module = sys.modules.get("oxyeval.testing._evaluate")
    recorded = getattr(module, "RECORDED", None) if module is not None else None
    if recorded:
        _summary(terminalreporter, recorded)
    session = terminalreporter.config.stash.get(_KEY, None)
    summary = session.close() if session is not None else None
    if summary is None:
        return
    if summary.stored:
        terminalreporter.write_line(
            f"{summary.stored} evaluation(s) kept in the history (oxy history --kind sdk)"
        )
    for line in summary.regressions:
        terminalreporter.write_line(f"regression: {line}")


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
