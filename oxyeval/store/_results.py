"""The results table: one ``results`` row per result of any kind, its named ``scores``, and
the ``result_daily`` rollup per (kind, subject, day) that trend charts read.

Why one table for every kind: a new kind of test (A/B branches, judged pass/fail tests, an
SDK metric) registers itself in :mod:`oxyeval.evaluation` and stores its results here as
they are, with what only it has in ``details`` (JSON); no migration, no CHECK constraint
to widen, no second writer. The older kinds keep their detail tables (``executions``,
``test_results``, ``workflow_runs``: what their commands' reports and regression
detection read), and every write to those also writes the result here, in the same
transaction, through :func:`consistency_result`, :func:`execution_result` and
:func:`workflow_result`.

Plain SQL text with named parameters, like the cache (``_cache``): the same statements
run on a SQLAlchemy connection and on the lean sqlite3 store, so a row means the same
whichever path wrote it, and importing this module costs no SQLAlchemy. The rollup is
kept with ``INSERT ... ON CONFLICT DO UPDATE`` increments, so two writers adding to the
same day both count (SQLite and PostgreSQL alike).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._cache import Sql
from ._result_rows import NewWorkflowRun, bounded_text
from ._util import (
    canonical_json,
    insert_sql,
    loads,
    new_id,
    redact_json,
    redact_text,
    utc_timestamp,
)
from .kinds import BRANCH_STATUSES, RUN_KINDS, WORKFLOW_STATUSES

if TYPE_CHECKING:
    from ..evaluation import Result
    from ._branch_rows import NewBranchExecution

__all__ = [
    "BRANCH_DETAIL_KEYS",
    "ResultRow",
    "branch_result",
    "check_run_kind",
    "consistency_result",
    "execution_result",
    "execution_scores",
    "outcome",
    "result_row",
    "workflow_result",
    "workflow_status",
    "write_results",
]

#: A kind's name as stored: what ``register_kind`` accepts, short enough to index.
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_MAX_SCORES = 100  # named scores per result: a metric list, not a data dump

_RESULT_COLUMNS = (
    "id",
    "run_id",
    "kind",
    "subject",
    "case_id",
    "branch",
    "repeat",
    "status",
    "passed",
    "score",
    "latency_ms",
    "ttft_ms",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "output",
    "error_message",
    "details",
    "created_at",
    "outcome",
)
_SCORE_COLUMNS = ("result_id", "metric", "value", "label", "passed", "threshold", "reason")
_DAILY_SUMS = (
    "results",
    "passes",
    "failures",
    "errors",
    "scored",
    "score_sum",
    "latency_n",
    "latency_sum",
    "cost_n",
    "cost_sum",
    "input_tokens",
    "output_tokens",
)


def check_run_kind(kind: str, refused: Sequence[str] = ()) -> None:
    """A run's kind: one of the built-in commands' (:data:`~.kinds.RUN_KINDS`) or a kind
    registered with the evaluation core; ``refused`` are kinds this writer cannot record."""
    from ..evaluation import kind_names

    known = [k for k in dict.fromkeys((*RUN_KINDS, *kind_names())) if k not in refused]
    if kind not in known:
        raise ValueError(f"run kind must be one of {', '.join(known)}, not {kind!r}")


def outcome(kind: str, status: str, passed: bool | None) -> str:
    """What a result counts as in its run (:data:`~.kinds.RESULT_OUTCOMES`), by its kind's
    own statuses and the ``passed`` its writer decided: the kind's unknown statuses first
    (an error is never a pass, whatever else was set), then its neutral ones, then
    ``passed``. Kept with the row, so a reader counts any kind without knowing it.

    The kind is registered wherever its results are written (its own code registers it;
    :meth:`Results.add <oxyeval.store.Results.add>` refuses one that is not); a store used
    bare, without the suites (a script, the store's own tests), writing one of its detail
    tables' kinds, gets the core's default statuses."""
    from ..evaluation import ResultKind, kind_names, result_kind

    rules = result_kind(kind) if kind in kind_names() else ResultKind(kind, (status,))
    if status in rules.unknown:
        return "unknown"
    if status in rules.neutral:
        return "neutral"
    if passed is None:
        return "unjudged"
    return "passed" if passed else "failed"


_INSERT_RESULT = insert_sql("results", _RESULT_COLUMNS)
_INSERT_SCORE = insert_sql("scores", _SCORE_COLUMNS)
_UPSERT_DAILY = (
    insert_sql("result_daily", ("kind", "subject", "day", *_DAILY_SUMS))
    + " ON CONFLICT (kind, subject, day) DO UPDATE SET "
    + ", ".join(f"{c} = result_daily.{c} + excluded.{c}" for c in _DAILY_SUMS)
)
_RUN_SUMS = ("results", "scored", "score_sum", "regressions")
_UPSERT_RUN = (
    insert_sql("run_totals", ("run_id", "outcome", "status", *_RUN_SUMS))
    + " ON CONFLICT (run_id, outcome, status) DO UPDATE SET "
    + ", ".join(f"{c} = run_totals.{c} + excluded.{c}" for c in _RUN_SUMS)
)


@dataclass(frozen=True)
class ResultRow:
    """One result's ``results`` row and its ``scores`` rows, checked and redacted;
    ``regressed``: its writer found it regressed against its history (counted in its
    run's totals; why is in the kind's own record)."""

    values: dict[str, Any]
    scores: tuple[dict[str, Any], ...] = ()
    regressed: bool = False


def _bounded(text: str | None) -> str | None:
    return bounded_text(redact_text(text))


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"a result's {name} must be a number or None, not {value!r}")
    return float(value)


def _score_row(
    result_id: str,
    metric: str,
    value: float | None,
    label: str | None = None,
    passed: bool | None = None,
    threshold: float | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    return {
        "result_id": result_id,
        "metric": metric,
        "value": value,
        "label": label,
        "passed": passed,
        "threshold": threshold,
        "reason": reason,
    }


def _score_values(result_id: str, score: Any) -> dict[str, Any]:
    if not isinstance(score.metric, str) or not score.metric or len(score.metric) > 100:
        raise ValueError(f"a score needs a metric name of 1-100 characters, not {score.metric!r}")
    return _score_row(
        result_id,
        score.metric,
        _number(f"score {score.metric!r}", score.value),
        None if score.label is None else str(score.label)[:200],
        score.passed,
        _number(f"threshold of {score.metric!r}", score.threshold),
        _bounded(score.reason),
    )


def result_row(
    run_id: str, result: Result, *, id: str | None = None, created_at: str | None = None
) -> ResultRow:
    """The rows of one :class:`~oxyeval.evaluation.Result`, what every writer inserts: the
    kind's name and the headline score checked, texts redacted (a model may echo a secret)
    and bounded."""
    if not isinstance(result.kind, str) or not _KIND.fullmatch(result.kind):
        raise ValueError(
            f"a result kind is 1-40 lowercase letters, digits, '_' or '-', not {result.kind!r}"
        )
    if not result.subject or not result.status:
        raise ValueError("a result needs its subject and status")
    score = _number("score", result.score)
    if score is not None and not 0.0 <= score <= 1.0:
        raise ValueError(f"a result's score must be between 0 and 1 (or None), got {score!r}")
    if len(result.scores) > _MAX_SCORES:
        raise ValueError(f"a result holds at most {_MAX_SCORES} scores, not {len(result.scores)}")
    result_id = id or new_id()
    values = {
        "id": result_id,
        "run_id": run_id,
        "kind": result.kind,
        "subject": str(result.subject)[:1000],
        "case_id": result.case,
        "branch": result.branch,
        "repeat": int(result.repeat),
        "status": str(result.status)[:40],
        "passed": result.passed,
        "score": score,
        "latency_ms": _number("latency", result.latency_ms),
        "ttft_ms": _number("time to first token", result.ttft_ms),
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost_usd": _number("cost", result.cost_usd),
        "output": _bounded(result.output),
        "error_message": _bounded(result.error),
        "details": canonical_json(redact_json(dict(result.details))),
        "created_at": utc_timestamp(created_at),
        "outcome": outcome(result.kind, str(result.status)[:40], result.passed),
    }
    scores = tuple(_score_values(result_id, s) for s in result.scores)
    return ResultRow(values, scores, regressed=bool(result.regressions))


def _row(
    values: dict[str, Any],
    scores: Iterable[tuple[str, Any, str | None]] = (),
    *,
    regressed: bool = False,
) -> ResultRow:
    """A row built from a kind's detail row (already redacted there)."""
    full = {c: values.get(c) for c in _RESULT_COLUMNS}
    full["repeat"] = values.get("repeat", 0)
    full["details"] = canonical_json(values.get("details", {}))
    full["outcome"] = outcome(full["kind"], full["status"], full["passed"])
    scored = tuple(_score_row(values["id"], *score) for score in scores)
    return ResultRow(full, scored, regressed=regressed)


def consistency_result(v: Mapping[str, Any], *, tally: tuple[int, int] | None = None) -> ResultRow:
    """The result of a ``test_results`` row (kind consistency), under the same id. The
    subject is ``file::name``: stable, whatever else ran with it. ``tally``: the answers
    in the largest answer cluster over the answers, what ``--fail-on-regression`` pairs
    with a later run's (kept in ``details`` only: no column of ``test_results``)."""
    extra = {} if tally is None else {"tally": [int(tally[0]), int(tally[1])]}
    return _row(
        {
            "id": v["id"],
            "run_id": v["run_id"],
            "kind": "consistency",
            "subject": f"{v['file']}::{v['name']}",
            "repeat": 0,
            "status": v["status"],
            "score": v["accuracy"],
            "latency_ms": v["duration_ms"],
            "output": v["selected_output"],
            "error_message": v["error_message"],
            "created_at": v["created_at"],
            "details": {
                k: v[k]
                for k in (
                    "file",
                    "name",
                    "test_index",
                    "n",
                    "runs_ok",
                    "pairing",
                    "model",
                    "judge_model",
                    "pairs_total",
                    "pairs_judged",
                    "identical_pairs",
                    "judge_calls",
                    "selected_run",
                )
            }
            | extra,
        },
        [] if v["accuracy"] is None else [("accuracy", v["accuracy"], None)],
    )


def execution_result(
    v: Mapping[str, Any], *, cost_usd: float | None = None, ttft_ms: float | None = None
) -> ResultRow:
    """The result of an ``executions`` row (kind cases), under the same id: passed is
    known only for a judged execution (pending and errors are neither). Cost and time to
    first token live only here."""
    judged = v["status"] in ("passed", "failed")
    return _row(
        {
            "id": v["id"],
            "run_id": v["run_id"],
            "kind": "cases",
            "subject": v["test_case_id"],
            "case_id": v["test_case_id"],
            "status": v["status"],
            "passed": (v["status"] == "passed") if judged else None,
            "score": v["score"],
            "latency_ms": v["latency_ms"],
            "input_tokens": v["input_tokens"],
            "output_tokens": v["output_tokens"],
            "cost_usd": _number("cost", cost_usd),
            "ttft_ms": _number("time to first token", ttft_ms),
            "output": v["actual_output"],
            "error_message": v["error_message"],
            "created_at": v["created_at"],
            "details": {
                "executionId": v["execution_id"],
                "promptVersion": v["prompt_version"],
                "isRegression": bool(v["is_regression"]),
                "regressionTypes": loads(v["regression_types"]) or [],
                "finishReason": v["finish_reason"],
            },
        },
        regressed=bool(v["is_regression"]),
    )


def execution_scores(
    status: str,
    score: float | None,
    exact_match: Any,
    semantic_score: float | None,
    similarity_method: str | None,
) -> list[tuple[str, Any, str | None]]:
    """The named scores (metric, value, label) of a cases result, read from its
    ``executions`` row: they are that row's columns, so they are not stored a second
    time as ``scores`` rows (three rows per execution were a third of a large run's
    writes). Histories written before keep theirs, and those are read as they are."""
    if status not in ("passed", "failed"):
        return []
    scores: list[tuple[str, Any, str | None]] = [
        ("score", score, None),
        ("exact_match", 1.0 if exact_match else 0.0, None),
    ]
    if semantic_score is not None:
        scores.append(("similarity", semantic_score, similarity_method or None))
    return scores


#: What an A/B execution keeps in ``details`` beside the engine's own (``details`` given).
BRANCH_DETAIL_KEYS = (
    "tokensPerSecond",
    "validJson",
    "consistencyHash",
    "promptVersion",
    "judgeCostUsd",
    "cached",
)


def _share(name: str, value: Any) -> float | None:
    number = _number(name, value)
    if number is not None and not 0.0 <= number <= 1.0:
        raise ValueError(f"an A/B execution's {name} must be between 0 and 1, got {number!r}")
    return number


def _measure(name: str, value: Any) -> float | None:
    number = _number(name, value)
    if number is not None and number < 0:
        raise ValueError(f"an A/B execution's {name} cannot be negative, got {number!r}")
    return number


def _tokens(name: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"an A/B execution's {name} must be a count or None, not {value!r}")
    return value


def branch_result(
    e: NewBranchExecution,
    *,
    run_id: str | None,
    id: str | None = None,
    created_at: str | None = None,
) -> ResultRow:
    """The result of one A/B branch execution (kind ``ab``): subject and branch are the
    branch id, repeat its iteration; passed as the writer decided it (an error never
    passes or fails); quality, similarity and clarity as named scores; what only A/B has in
    ``details`` (:data:`BRANCH_DETAIL_KEYS`, over the engine's own ``details``). Checked
    and redacted here, whatever the caller did: a model may echo a secret."""
    if e.status not in BRANCH_STATUSES:
        raise ValueError(
            f"an A/B execution's status must be one of {', '.join(BRANCH_STATUSES)}, "
            f"not {e.status!r}"
        )
    if not e.branch_id or not e.test_case_id:
        raise ValueError("an A/B execution needs its branch_id and test_case_id")
    if isinstance(e.iteration, bool) or not isinstance(e.iteration, int) or e.iteration < 0:
        raise ValueError(f"an A/B execution's iteration is a count from 0, not {e.iteration!r}")
    if e.status == "error" and not e.error:
        raise ValueError(f"an errored A/B execution of {e.branch_id!r} needs its error text")
    if e.passed is not None and (not isinstance(e.passed, bool) or e.status != "success"):
        raise ValueError(
            f"an A/B execution's passed is true, false or None (None unless it succeeded), "
            f"not {e.passed!r} for status {e.status!r}"
        )
    if not isinstance(e.details, Mapping):
        raise TypeError(f"an A/B execution's details must be a mapping, not {e.details!r}")
    quality = _share("quality score", e.quality_score)
    similarity = _share("similarity score", e.similarity_score)
    clarity = _share("clarity score", e.clarity_score)
    result_id = id or new_id()
    details = {
        **redact_json(dict(e.details)),
        "tokensPerSecond": _measure("tokens per second", e.tokens_per_second),
        "validJson": bool(e.valid_json),
        "consistencyHash": None if e.consistency_hash is None else str(e.consistency_hash),
        "promptVersion": int(e.prompt_version),
        "judgeCostUsd": _measure("judge cost", e.judge_cost),
        "cached": bool(e.cached),
    }
    scores = [
        _score_row(result_id, metric, value)
        for metric, value in (
            ("quality", quality),
            ("similarity", similarity),
            ("clarity", clarity),
        )
        if value is not None
    ]
    values = {
        "id": result_id,
        "run_id": run_id,
        "kind": "ab",
        "subject": e.branch_id,
        "case_id": e.test_case_id,
        "branch": e.branch_id,
        "repeat": e.iteration,
        "status": e.status,
        "passed": e.passed,
        "score": quality,
        "latency_ms": _measure("latency", e.latency_ms),
        "ttft_ms": _measure("time to first token", e.time_to_first_token),
        "input_tokens": _tokens("input tokens", e.input_tokens),
        "output_tokens": _tokens("output tokens", e.output_tokens),
        "cost_usd": _measure("estimated cost", e.estimated_cost),
        "output": _bounded(e.output if e.output is not None else ""),
        "error_message": _bounded(e.error),
        "details": canonical_json(details),
        "created_at": utc_timestamp(created_at),
        "outcome": outcome("ab", e.status, e.passed),
    }
    return ResultRow(values, tuple(scores))


def workflow_status(result: NewWorkflowRun) -> str:
    """How a recorded workflow run ended, as its result's status: the suite's word for it
    (its final status rule), checked; the store does not work one out of the tasks."""
    if result.status not in WORKFLOW_STATUSES:
        raise ValueError(
            f"a workflow run's status is how its suite said it ended, one of "
            f"{', '.join(WORKFLOW_STATUSES)}, not {result.status!r}"
        )
    return result.status


def workflow_result(
    v: Mapping[str, Any], *, status: str, created_at: str | None = None
) -> ResultRow:
    """The result of a ``workflow_runs`` row (kind workflow), under the run's id: one per
    run, ``completed``, ``failed`` or ``interrupted`` as the run ended."""
    return _row(
        {
            "id": v["run_id"],
            "run_id": v["run_id"],
            "kind": "workflow",
            "subject": v["workflow"],
            "status": status,
            "latency_ms": v["duration_ms"],
            "output": v["output"],
            "error_message": v["error_message"],
            "created_at": utc_timestamp(created_at),
            "details": {"variables": loads(v["variables"]) or {}},
        }
    )


def _daily(rows: Sequence[ResultRow]) -> list[dict[str, Any]]:
    totals: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        v = row.values
        key = (v["kind"], v["subject"], v["created_at"][:10])
        t = totals.setdefault(key, dict.fromkeys(_DAILY_SUMS, 0))
        t["results"] += 1
        t["passes"] += v["passed"] is True
        t["failures"] += v["passed"] is False
        t["errors"] += v["error_message"] is not None
        if v["score"] is not None:
            t["scored"] += 1
            t["score_sum"] += v["score"]
        if v["latency_ms"] is not None:
            t["latency_n"] += 1
            t["latency_sum"] += v["latency_ms"]
        if v["cost_usd"] is not None:
            t["cost_n"] += 1
            t["cost_sum"] += v["cost_usd"]
        t["input_tokens"] += v["input_tokens"] or 0
        t["output_tokens"] += v["output_tokens"] or 0
    return [{"kind": k, "subject": s, "day": d, **t} for (k, s, d), t in sorted(totals.items())]


def write_results(sql: Sql, rows: Sequence[ResultRow]) -> None:
    """Insert results, their scores and their daily rollup; the caller owns the
    transaction (so a kind's detail rows and its results commit together)."""
    if not rows:
        return
    sql.run(_INSERT_RESULT, [r.values for r in rows])
    scores = [s for r in rows for s in r.scores]
    if scores:
        sql.run(_INSERT_SCORE, scores)
    sql.run(_UPSERT_DAILY, _daily(rows))
    totals = _run_totals(rows)
    if totals:
        sql.run(_UPSERT_RUN, totals)


def _run_totals(rows: Sequence[ResultRow]) -> list[dict[str, Any]]:
    """What each run's results add to its ``run_totals`` (results outside a run add none)."""
    totals: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        v = row.values
        if v["run_id"] is None:
            continue
        key = (v["run_id"], v["outcome"], v["status"])
        t = totals.setdefault(key, {"results": 0, "scored": 0, "score_sum": 0.0, "regressions": 0})
        t["results"] += 1
        if v["score"] is not None:
            t["scored"] += 1
            t["score_sum"] += v["score"]
        t["regressions"] += row.regressed
    return [
        {"run_id": r, "outcome": o, "status": s, **t} for (r, o, s), t in sorted(totals.items())
    ]
