"""The command's one decision: the run's own when the run was decided under the command's
gates and nothing stopped it since, made again otherwise (never a stale one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from oxyeval.cli.driver import _decided
from oxyeval.errors import ProviderError
from oxyeval.evaluation import Decision, Gates, Result, decide_run
from oxyeval.suites.cases.results import CaseRun  # noqa: F401  (the cases kind, registered)


@dataclass
class _Run:
    kind: str = "cases"
    interrupted: bool = False
    results: list[Result] = field(default_factory=list)
    decision: Decision | None = None

    def as_results(self) -> list[Result]:
        return list(self.results)


def _run(*passed: bool) -> _Run:
    results = [
        Result(
            kind="cases",
            subject=f"p::c{n}",
            status="passed" if ok else "failed",
            passed=ok,
            score=1.0 if ok else 0.2,
            details={"threshold": 0.8},
        )
        for n, ok in enumerate(passed)
    ]
    return _Run(results=results)


def test_the_run_decision_is_used_when_made_under_the_same_gates() -> None:
    run = _run(True, False)
    gates = Gates(min_pass_rate=0.5)
    run.decision = decide_run(run, gates)
    assert _decided(run, gates, None) is run.decision
    assert run.decision.code == 0


def test_other_gates_decide_again() -> None:
    run = _run(True, False)
    run.decision = decide_run(run, Gates())  # the failed case fails the run
    again = _decided(run, Gates(min_pass_rate=0.5), None)
    assert again is not run.decision
    assert (run.decision.code, again.code) == (1, 0)
    assert again.gates == Gates(min_pass_rate=0.5)


def test_an_error_or_an_interruption_since_decides_again() -> None:
    run = _run(True)
    run.decision = decide_run(run, Gates())
    assert run.decision.code == 0
    failed = _decided(run, Gates(), ProviderError("the server went away"))
    assert failed is not run.decision and failed.code == 3
    run.interrupted = True
    stopped = _decided(run, Gates(), None)
    assert stopped is not run.decision and stopped.interrupted


def test_a_run_without_a_decision_is_decided() -> None:
    run = _run(False)
    assert _decided(run, Gates(), None).code == 1
