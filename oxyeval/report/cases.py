"""The history as the Testing API shapes it: camelCase JSON for ``oxy cases`` and
``oxy history`` (and, later, the GraphQL server).

The store speaks snake_case typed rows; this is the one place that knows the API's field
names (``passRate`` in percent, ``lastRun``, ``trendData``...), so the two can change
independently. ``oxy test`` keeps snake_case JSON: it follows oxy's own output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..providers import stopped_at_token_limit  # the one truncation rule; no httpx behind it
from .streaming import listed

if TYPE_CHECKING:
    from ..evaluation import Decision, Result
    from ..store import (
        CaseStats,
        Execution,
        ExecutionSummary,
        Prompt,
        PromptVersion,
        TestCase,
    )
    from ..suites.cases.results import CaseResult, CaseRun

__all__ = [
    "case_json",
    "case_result_json",
    "case_run_json",
    "execution_json",
    "prompt_json",
    "stats_json",
    "version_json",
]


def prompt_json(p: Prompt) -> dict[str, Any]:
    return {"id": p.id, "name": p.name, "source": p.source, "createdAt": p.created_at}


def version_json(v: PromptVersion) -> dict[str, Any]:
    return {
        "version": v.version,
        "contentHash": v.content_hash,
        "createdAt": v.created_at,
        "promptId": v.prompt_id,
    }


def case_json(c: TestCase) -> dict[str, Any]:
    return {
        "id": c.id,
        "promptId": c.prompt_id,
        "name": c.name,
        "description": c.description,
        "input": c.input,
        "expectedOutput": c.expected_output,
        "threshold": c.threshold,
        "sourceFile": c.source_file,
        "totalRuns": c.total_runs,
        "passRate": c.pass_rate,
        "avgScore": c.avg_score,
        "avgLength": c.avg_length,
        "lastRun": c.last_run,
        "lastPassed": c.last_passed,
        "createdAt": c.created_at,
        "updatedAt": c.updated_at,
        "deletedAt": c.deleted_at,
    }


def execution_json(e: Execution, live: CaseResult | None = None) -> dict[str, Any]:
    """One test-case execution, the Testing API's TestCaseExecution: the one shape for a stored
    row (the history read back) and a live result (``oxy cases run --format json``, which
    passes ``live.as_execution(run_id)`` and ``live``), so every key means the same in
    both.

    - ``id``: this execution's record id (the Testing API's ``TestCaseExecution.id``);
      ``testCaseExecutionId``: the same id, the key the Testing API's ``runTestCase`` answers with.
    - ``executionId``: the prompt execution it checked (the Testing API's reference); an
      execution recorded by ``oxy cases run`` is its own, so it equals ``id``.
    - ``testCaseId``, ``runId`` (the run of its prompt version), ``status`` (passed,
      failed, pending, error), ``passed`` (null while pending: neither a pass nor a
      failure), ``pending``, ``score`` (0..1),
      ``actualOutput``, ``expectedOutput``, ``outputDiff``, ``exactMatch``,
      ``semanticScore``, ``similarityMethod``, ``lengthDiff``, ``tokenDiff``,
      ``tokenMethod``, ``isRegression``, ``regressionType`` (the most severe),
      ``regressionTypes``, ``promptVersion``, ``runDuration`` and ``latencyMs`` (ms),
      ``inputTokens``, ``outputTokens``, ``finishReason``, ``truncated`` (stopped at the
      token limit), ``error``, ``createdAt``.
    - Known to the run only, null when read back from the history: ``name`` and
      ``promptId`` (of the case), ``threshold`` (the score that passes it),
      ``regressionReasons``, ``cached`` (the answer was replayed by ``--cache``).
      ``costUsd`` is null when the model has no known price.
    """
    return {
        "id": e.id or None,
        "testCaseExecutionId": e.id or None,
        "testCaseId": e.test_case_id,
        "name": None if live is None else live.name,
        "promptId": None if live is None else live.prompt_id,
        "runId": e.run_id,
        "executionId": e.execution_id or None,
        "status": e.status,
        "passed": None if e.pending else e.passed,  # pending: neither, not a failure
        "pending": e.pending,
        "score": e.score,
        "threshold": None if live is None else live.threshold,
        "actualOutput": e.actual_output,
        "expectedOutput": e.expected_output,
        "outputDiff": e.output_diff,
        "exactMatch": e.exact_match,
        "semanticScore": e.semantic_score,
        "similarityMethod": e.similarity_method,
        "lengthDiff": e.length_diff,
        "tokenDiff": e.token_diff,
        "tokenMethod": e.token_method,
        "isRegression": e.is_regression,
        "regressionType": e.regression_type,
        "regressionTypes": list(e.regression_types),
        "regressionReasons": None if live is None else list(live.regression_reasons),
        "promptVersion": e.prompt_version,
        "runDuration": e.run_duration_ms,
        "latencyMs": e.latency_ms,
        "costUsd": e.cost_usd,
        "inputTokens": e.input_tokens,
        "outputTokens": e.output_tokens,
        "finishReason": e.finish_reason,
        "truncated": stopped_at_token_limit(e.finish_reason),
        "cached": None if live is None else live.cached,
        "error": e.error,
        "createdAt": e.created_at or None,
    }


def case_result_json(r: CaseResult, *, run_id: str | None = None) -> dict[str, Any]:
    """One execution of a live cases run: :func:`execution_json` of the row it was
    recorded as (``run_id``: its run, see :attr:`CaseRun.runs`), with what only the run
    knows."""
    return execution_json(r.as_execution(run_id), r)


def _summary(s: ExecutionSummary, *, regression: bool = False) -> dict[str, Any]:
    passed = None if s.status == "pending" else s.passed
    out: dict[str, Any] = {"id": s.id, "passed": passed, "score": s.score}
    if regression:
        out["regressionType"] = s.regression_type
        out["regressionTypes"] = list(s.regression_types)
    out.update(promptVersion=s.prompt_version, createdAt=s.created_at, status=s.status)
    return out


def stats_json(s: CaseStats) -> dict[str, Any]:
    return {
        "testCaseId": s.test_case_id,
        "totalRuns": s.total_runs,
        "passRate": s.pass_rate,
        "avgScore": s.avg_score,
        "recentRuns": [_summary(r) for r in s.recent_runs],
        "regressions": [_summary(r, regression=True) for r in s.regressions],
        "regressionCount": s.regression_count,
        "trendData": [
            {
                "date": t.date,
                "totalRuns": t.total_runs,
                "passRate": t.pass_rate,
                "avgScore": t.avg_score,
            }
            for t in s.trend
        ],
    }


def empty_stats(case_id: str) -> CaseStats:
    """The statistics of a case that has never run (declared in a file, not yet stored)."""
    from ..store import CaseStats

    return CaseStats(case_id, 0, None, None, (), (), 0, ())


#: Executions past which a run's document streams its lists (see :mod:`.streaming`).
STREAM_PAST = 2_000


def case_run_json(run: CaseRun, decision: Decision | None = None) -> dict[str, Any]:
    """``oxy cases run --format json``: the run document (:mod:`.documents`) with every
    execution in the Testing API's shape and how many cases were planned, regressed, and
    which version of each prompt ran in which run; ``decision``: the one the run ends
    with (by default the ungated one)."""
    from ..evaluation import decide_run
    from .documents import run_document

    if decision is None:
        decision = decide_run(run)

    def executions() -> Iterator[dict[str, Any]]:
        for r in run.results:
            yield case_result_json(r, run_id=run.runs.get(r.prompt_id) or None)

    def results() -> Iterator[Result]:
        return (r.as_result() for r in run.results)

    # A large run is written as its results are read back (from disk, once it keeps them
    # there), each on a line of its own, rather than built as one document first; what
    # is counted over them is counted in one pass (each pass of 100,000 read them back).
    count = len(run.results)
    streamed = count > STREAM_PAST or getattr(run.results, "spilled", False)
    run_ids: list[str | None] = []
    regressions = 0
    for r in run.results:
        run_ids.append(run.runs.get(r.prompt_id) or None)
        regressions += r.is_regression
    body = {
        "executions": listed(executions, count, stream=streamed),
        "planned": run.planned,
        "regressions": regressions,
        "promptVersions": dict(run.versions),
        "runIds": dict(run.runs),
    }
    return run_document(
        "cases",
        body,
        listed(results, count, stream=streamed),
        decision,
        interrupted=run.interrupted,
        history=run.history,
        warnings=run.warnings,
        cached_calls=run.cached_calls,
        run_ids=run_ids,
    )
