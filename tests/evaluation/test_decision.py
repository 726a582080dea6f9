"""The one decision: every kind of result, any gate, one precedence (3 unknown > 1 failed > 0)."""

from __future__ import annotations

import pytest

from oxyeval.errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK, ConfigError
from oxyeval.evaluation import (
    Gates,
    Previous,
    Result,
    ResultKind,
    decide,
    gate_option_error,
    kind_names,
    register_kind,
    result_kind,
)

#: A new kind of test in a few lines: its statuses, which are unknown or neutral, its words.
TOY = register_kind(
    ResultKind(
        "toy",
        ("ok", "bad", "skipped", "broken"),
        unknown=frozenset({"broken"}),
        neutral=frozenset({"skipped"}),
        metric="pass rate",
        noun="probe",
        failed_line=lambda r: f"{r.subject} failed at {r.score}",
    ),
    replace=True,
)


def toy(subject: str, status: str = "ok", score: float | None = 1.0, **kw: object) -> Result:
    passed = {"ok": True, "bad": False}.get(status)
    return Result(kind="toy", subject=subject, status=status, passed=passed, score=score, **kw)


def test_a_registered_kind_is_decided_without_any_other_change() -> None:
    assert "toy" in kind_names() and result_kind("toy") is TOY
    assert decide([toy("a"), toy("b", "skipped", None)], Gates()).code == EXIT_OK
    decision = decide([toy("a"), toy("b", "bad", 0.25)], Gates())
    assert decision.code == EXIT_FAILED
    assert decision.reasons == ["b failed at 0.25"]
    assert [(o.subject, o.state) for o in decision.outcomes] == [("a", "passed"), ("b", "failed")]
    decision = decide(
        [toy("a", "bad", 0.0), toy("b", "broken", None, error="socket closed")], Gates()
    )
    assert decision.code == EXIT_INFRA  # an unknown outcome beats a failure
    assert decision.reasons[0] == "error: b: socket closed"


def test_the_kind_s_words_are_in_the_gate_messages_even_with_no_results() -> None:
    decision = decide([], Gates(min_accuracy=0.5, allow_empty=True), kind="toy")
    assert decision.code == EXIT_OK
    assert decision.warnings == (
        "warning: --min-accuracy given but no pass rate metrics were produced; not gating",
    )
    decision = decide([toy("a", score=0.4), toy("b", score=0.5)], Gates(min_accuracy=0.5))
    assert decision.code == EXIT_FAILED
    assert decision.threshold is not None
    # The mean's interval: residuals -0.05 and +0.05, SE sqrt(0.005)/2, z 1.96.
    assert decision.threshold.message == (
        "Average pass rate 45.00% below threshold 50.00% "
        "(95% interval 38.07% to 51.93% over 2 probes)"
    )
    all_mode = decide([toy("a", score=0.4)], Gates(min_accuracy=0.3, threshold_mode="all"))
    assert all_mode.code == EXIT_OK and all_mode.threshold is not None
    assert all_mode.threshold.message == "All 1 probe(s) meet threshold 30.00%"


@pytest.mark.parametrize(
    ("results", "gates", "interrupted", "unread", "code"),
    [
        ([toy("a", score=0.9)], Gates(min_accuracy=0.8), False, (), EXIT_OK),
        ([toy("a", score=0.7)], Gates(min_accuracy=0.8), False, (), EXIT_FAILED),
        ([toy("a", score=0.9)], Gates(), True, (), EXIT_INFRA),  # interrupted
        ([toy("a", run_errors=1)], Gates(), False, (), EXIT_OK),  # errors reported only
        ([toy("a", run_errors=1)], Gates(strict=True), False, (), EXIT_INFRA),
        ([toy("a")], Gates(fail_on_drop=5), False, ("no route",), EXIT_INFRA),
        ([toy("a", regressions=("worse",))], Gates(), False, (), EXIT_OK),
        ([toy("a", regressions=("worse",))], Gates(fail_on_regression=True), False, (), 1),
        (
            [toy("a", "skipped", None, regressions=("x",))],
            Gates(fail_on_regression=True),
            False,
            (),
            0,
        ),
    ],
)
def test_precedence(
    results: list[Result], gates: Gates, interrupted: bool, unread: tuple[str, ...], code: int
) -> None:
    decision = decide(results, gates, interrupted=interrupted, history_unread=unread)
    assert decision.code == code
    assert bool(decision.reasons) == (code != EXIT_OK and not interrupted)


def test_a_drop_is_measured_in_points_and_said_once() -> None:
    before = Previous(0.9, "2026-11-20T10:00:00.000Z", "r1")
    results = [toy("a", score=0.8, previous=before), toy("b", score=0.89, previous=before)]
    decision = decide(results, Gates(fail_on_drop=5))
    assert decision.code == EXIT_FAILED
    assert decision.drop is not None and [d[0] for d in decision.drop.dropped] == ["a"]
    assert decision.failures == {
        "a": ["pass rate fell 10.0 points against its previous run (--fail-on-drop 5)"]
    }
    assert decision.reasons == [decision.drop.message]  # not again as a per-result line
    assert "a: 90.0% -> 80.0% (-10.0 pts vs 2026-11-20 10:00 UTC)" in decision.drop.message


def test_an_error_that_stopped_the_run_gives_its_own_code() -> None:
    decision = decide([toy("a")], Gates(), error=ConfigError("bad file"))
    assert decision.code == ConfigError("x").exit_code == 2
    assert decide([toy("a")], Gates(), error=RuntimeError("boom")).code == EXIT_INFRA


def test_secrets_in_a_result_s_error_are_scrubbed_in_the_reasons() -> None:
    from oxyeval.redact import register_secret

    register_secret("sk-decision-secret-123456")
    result = toy("a", "broken", None, error="401 for key sk-decision-secret-123456")
    (line,) = decide([result], Gates()).reasons
    assert "sk-decision-secret-123456" not in line and "***" in line


def test_a_kind_cannot_be_registered_twice_or_with_statuses_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_kind(ResultKind("toy", ("ok",)))
    with pytest.raises(ValueError, match="among its statuses"):
        register_kind(ResultKind("toy2", ("ok",), unknown=frozenset({"gone"})))
    with pytest.raises(KeyError, match="unknown result kind 'nope'"):
        result_kind("nope")


def test_the_built_in_kinds_are_registered_by_their_suites() -> None:
    import oxyeval.suites.cases.results
    import oxyeval.suites.consistency.results  # noqa: F401

    assert {"consistency", "cases"} <= set(kind_names())
    assert result_kind("cases").neutral == frozenset({"pending"})


def test_min_pass_rate_lets_some_results_fail_their_own_check() -> None:
    results = [toy(f"p{i}") for i in range(9)] + [toy("p9", "bad", 0.0)]
    assert decide(results, Gates()).code == EXIT_FAILED  # without it, one failure fails
    met = decide(results, Gates(min_pass_rate=0.9))
    assert met.code == EXIT_OK and met.pass_rate is not None and met.pass_rate.value == 0.9
    assert met.reasons == []
    assert all(o.state == "passed" for o in met.outcomes)  # a failure under a met rate
    below = decide(results, Gates(min_pass_rate=0.95))
    assert below.code == EXIT_FAILED and below.headline == "below_pass_rate"
    assert below.reasons == [
        "Pass rate 90.00% (9 of 10 probe(s) passed) below --min-pass-rate 95.00%; failed: p9"
    ]
    (failed,) = [o for o in below.outcomes if o.state == "failed"]
    assert failed.subject == "p9" and failed.reasons == () and failed.below is not None


def test_min_pass_rate_counts_only_results_with_a_known_outcome() -> None:
    results = [toy("a"), toy("b", "skipped", None), toy("c", "broken", None, error="down")]
    decision = decide(results, Gates(min_pass_rate=1.0))
    assert decision.pass_rate is not None and decision.pass_rate.checked == 1
    assert decision.code == EXIT_INFRA  # the unknown outcome still wins
    unscored = decide([toy("s", "skipped", None)], Gates(min_pass_rate=0.5))
    assert unscored.code == EXIT_OK and unscored.pass_rate is None
    assert unscored.warnings == (
        "warning: --min-pass-rate 0.5: no probe has a check of its own to pass; not gating",
    )
    assert decide([], Gates(min_pass_rate=0.5), kind="toy").code == EXIT_FAILED  # empty
    assert gate_option_error(Gates(min_pass_rate=1.5)) is not None
