"""The results spine: one ``results`` row per result of any kind, its named ``scores``, and
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

from ._cache import Sql, Transaction
from ._errors import NotFoundError
from ._result_rows import MAX_STORED_CHARS, NewWorkflowRun
from ._util import canonical_json, loads, new_id, redact_json, redact_text, utc_timestamp
from .kinds import RUN_KINDS

if TYPE_CHECKING:
    from ..evaluation import Result

__all__ = [
    "DailyTotals",
    "ResultRow",
    "Results",
    "StoredResult",
    "StoredScore",
    "check_run_kind",
    "consistency_result",
    "execution_result",
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


def _insert(table: str, columns: Sequence[str]) -> str:
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"
    )


_INSERT_RESULT = _insert("results", _RESULT_COLUMNS)
_INSERT_SCORE = _insert("scores", _SCORE_COLUMNS)
_UPSERT_DAILY = (
    _insert("result_daily", ("kind", "subject", "day", *_DAILY_SUMS))
    + " ON CONFLICT (kind, subject, day) DO UPDATE SET "
    + ", ".join(f"{c} = result_daily.{c} + excluded.{c}" for c in _DAILY_SUMS)
)


@dataclass(frozen=True)
class ResultRow:
    """One result's ``results`` row and its ``scores`` rows, checked and redacted."""

    values: dict[str, Any]
    scores: tuple[dict[str, Any], ...] = ()


def _bounded(text: str | None) -> str | None:
    text = redact_text(text)
    if text is None or len(text) <= MAX_STORED_CHARS:
        return text
    return text[:MAX_STORED_CHARS] + f"\n[... cut: {len(text):,} characters in all]"


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"a result's {name} must be a number or None, not {value!r}")
    return float(value)


def _score_values(result_id: str, score: Any) -> dict[str, Any]:
    if not isinstance(score.metric, str) or not score.metric or len(score.metric) > 100:
        raise ValueError(f"a score needs a metric name of 1-100 characters, not {score.metric!r}")
    return {
        "result_id": result_id,
        "metric": score.metric,
        "value": _number(f"score {score.metric!r}", score.value),
        "label": None if score.label is None else str(score.label)[:200],
        "passed": score.passed,
        "threshold": _number(f"threshold of {score.metric!r}", score.threshold),
        "reason": _bounded(score.reason),
    }


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
    }
    return ResultRow(values, tuple(_score_values(result_id, s) for s in result.scores))


def _row(values: dict[str, Any], scores: Iterable[tuple[str, Any, str | None]] = ()) -> ResultRow:
    """A row built from a kind's detail row (already redacted there)."""
    full = {c: values.get(c) for c in _RESULT_COLUMNS}
    full["repeat"] = values.get("repeat", 0)
    full["details"] = canonical_json(values.get("details", {}))
    return ResultRow(
        full,
        tuple(
            {
                "result_id": values["id"],
                "metric": metric,
                "value": value,
                "label": label,
                "passed": None,
                "threshold": None,
                "reason": None,
            }
            for metric, value, label in scores
        ),
    )


def consistency_result(v: Mapping[str, Any]) -> ResultRow:
    """The result of a ``test_results`` row (kind consistency), under the same id. The
    subject is ``file::name``: stable, whatever else ran with it."""
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
            },
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
    scores: list[tuple[str, Any, str | None]] = []
    if judged:
        scores.append(("score", v["score"], None))
        scores.append(("exact_match", 1.0 if v["exact_match"] else 0.0, None))
        if v["semantic_score"] is not None:
            scores.append(("similarity", v["semantic_score"], v["similarity_method"] or None))
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
        scores,
    )


def workflow_status(result: NewWorkflowRun) -> str:
    """How a recorded workflow run ended, as its result's status."""
    if any(t.status in ("interrupted", "running") for t in result.tasks):
        return "interrupted"
    return "failed" if result.error is not None else "completed"


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


@dataclass(frozen=True)
class StoredScore:
    metric: str
    value: float | None
    label: str | None
    passed: bool | None
    threshold: float | None
    reason: str | None


@dataclass(frozen=True)
class StoredResult:
    """A ``results`` row read back, with its scores; ``to_result()`` gives the
    evaluation core's :class:`~oxyeval.evaluation.Result` again."""

    id: str
    run_id: str
    kind: str
    subject: str
    case_id: str | None
    branch: str | None
    repeat: int
    status: str
    passed: bool | None
    score: float | None
    latency_ms: float | None
    ttft_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    output: str | None
    error: str | None
    details: dict[str, Any]
    created_at: str
    scores: tuple[StoredScore, ...]

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Result.to_dict <oxyeval.evaluation.Result.to_dict>` with where it is
        stored: the same shape as a live result, plus ``id``, ``runId``, ``createdAt``."""
        return {
            "id": self.id,
            "runId": self.run_id,
            **self.to_result().to_dict(),
            "createdAt": self.created_at,
        }

    def to_result(self) -> Result:
        from ..evaluation import Result, Score

        return Result(
            kind=self.kind,
            subject=self.subject,
            status=self.status,
            passed=self.passed,
            score=self.score,
            case=self.case_id,
            branch=self.branch,
            repeat=self.repeat,
            latency_ms=self.latency_ms,
            ttft_ms=self.ttft_ms,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            output=self.output,
            error=self.error,
            details=dict(self.details),
            scores=[
                Score(s.metric, s.value, s.label, s.passed, s.threshold, s.reason)
                for s in self.scores
            ],
        )


@dataclass(frozen=True)
class DailyTotals:
    """One (kind, subject, day) of the rollup: what a trend chart plots."""

    kind: str
    subject: str
    day: str  # YYYY-MM-DD, UTC
    results: int
    passes: int
    failures: int
    errors: int
    scored: int
    score_sum: float
    latency_n: int
    latency_sum: float
    cost_n: int
    cost_sum: float
    input_tokens: int
    output_tokens: int

    @property
    def avg_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    @property
    def pass_rate(self) -> float | None:
        """Passes among results that passed or failed (0..1); None when none did."""
        judged = self.passes + self.failures
        return self.passes / judged if judged else None

    @property
    def avg_latency_ms(self) -> float | None:
        return self.latency_sum / self.latency_n if self.latency_n else None


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


_SELECT = f"SELECT {', '.join('r.' + c for c in _RESULT_COLUMNS)} FROM results r"


class Results:
    """``store.results``: every kind's results, on either store (``read`` and ``write``
    are its transactions, as for the cache)."""

    def __init__(self, read: Transaction, write: Transaction, path: str = "") -> None:
        self._read = read
        self._write = write
        self._path = path

    def add(self, run_id: str, results: Sequence[Result]) -> list[str]:
        """Store ``results`` under a run and count them done; returns their ids. The kind
        must be registered (:func:`oxyeval.evaluation.register_kind`): a typo is an error,
        not a new kind."""
        from ..evaluation import kind_names

        known = set(kind_names())
        for r in results:
            if r.kind not in known:
                raise ValueError(f"unknown result kind {r.kind!r}: register it first")
        rows = [result_row(run_id, r) for r in results]
        with self._write("recording results") as sql:
            if not sql.run(
                "UPDATE runs SET done = done + :n WHERE id = :id", {"n": len(rows), "id": run_id}
            ):
                raise NotFoundError(f"no run {run_id!r} in {self._path}", path=self._path)
            write_results(sql, rows)
        return [r.values["id"] for r in rows]

    def _read_rows(self, where: str, params: dict[str, Any], tail: str = "") -> list[StoredResult]:
        with self._read("reading results") as sql:
            rows = list(sql.rows(f"{_SELECT} WHERE {where}{tail}", params))
            ids = [r[0] for r in rows]
            scores: dict[str, list[StoredScore]] = {}
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                names = {f"i{n}": i for n, i in enumerate(chunk)}
                for s in sql.rows(
                    "SELECT result_id, metric, value, label, passed, threshold, reason FROM scores "
                    f"WHERE result_id IN ({', '.join(':' + n for n in names)}) ORDER BY seq",
                    names,
                ):
                    scores.setdefault(s[0], []).append(
                        StoredScore(s[1], s[2], s[3], _bool(s[4]), s[5], s[6])
                    )
        out = []
        for r in rows:
            v = dict(zip(_RESULT_COLUMNS, r, strict=True))
            out.append(
                StoredResult(
                    id=v["id"],
                    run_id=v["run_id"],
                    kind=v["kind"],
                    subject=v["subject"],
                    case_id=v["case_id"],
                    branch=v["branch"],
                    repeat=v["repeat"],
                    status=v["status"],
                    passed=_bool(v["passed"]),
                    score=v["score"],
                    latency_ms=v["latency_ms"],
                    ttft_ms=v["ttft_ms"],
                    input_tokens=v["input_tokens"],
                    output_tokens=v["output_tokens"],
                    cost_usd=v["cost_usd"],
                    output=v["output"],
                    error=v["error_message"],
                    details=loads(v["details"]) or {},
                    created_at=v["created_at"],
                    scores=tuple(scores.get(v["id"], ())),
                )
            )
        return out

    def for_run(self, run_id: str) -> list[StoredResult]:
        return self._read_rows("r.run_id = :run_id", {"run_id": run_id}, " ORDER BY r.seq")

    def history(self, kind: str, subject: str, limit: int = 20) -> list[StoredResult]:
        """A subject's latest results, newest first."""
        return self._read_rows(
            "r.kind = :kind AND r.subject = :subject",
            {"kind": kind, "subject": subject, "limit": max(1, min(int(limit), 10_000))},
            " ORDER BY r.created_at DESC, r.seq DESC LIMIT :limit",
        )

    def subjects(self, kind: str) -> list[str]:
        """The subjects a kind has results for, from the rollup (no scan of results)."""
        with self._read("reading result subjects") as sql:
            rows = sql.rows(
                "SELECT DISTINCT subject FROM result_daily WHERE kind = :kind ORDER BY subject",
                {"kind": kind},
            )
            return [r[0] for r in rows]

    def daily(
        self, kind: str, subject: str | None = None, *, since: str | None = None
    ) -> list[DailyTotals]:
        """The rollup of a kind (one subject, or all), oldest day first; ``since`` is a
        day (YYYY-MM-DD) or timestamp, inclusive."""
        where = ["kind = :kind"]
        params: dict[str, Any] = {"kind": kind}
        if subject is not None:
            where.append("subject = :subject")
            params["subject"] = subject
        if since is not None:
            where.append("day >= :since")
            params["since"] = since[:10]
        with self._read("reading daily results") as sql:
            rows = sql.rows(
                f"SELECT kind, subject, day, {', '.join(_DAILY_SUMS)} FROM result_daily "
                f"WHERE {' AND '.join(where)} ORDER BY day, subject",
                params,
            )
            return [DailyTotals(*r) for r in rows]
