"""Reading the results table back: ``store.results`` (:class:`Results`), the rows it
returns (:class:`StoredResult`, with its scores) and the daily rollup (:class:`DailyTotals`).

Apart from the writer (:mod:`._results`): the lean store of ``oxy test`` writes results
on every run, and reads none.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._cache import Transaction
from ._errors import NotFoundError
from ._results import _DAILY_SUMS, _RESULT_COLUMNS, execution_scores, result_row, write_results
from ._util import LATEST_CHUNK, chunks, in_list, loads, newest_of_each, rows_in

if TYPE_CHECKING:
    from ..evaluation import Result

__all__ = ["DailyTotals", "Results", "StoredResult", "StoredScore"]


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
    #: What it counts as in its run (:data:`~oxyeval.store.RESULT_OUTCOMES`), as stored.
    outcome: str = "unjudged"

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Result.to_dict <oxyeval.evaluation.Result.to_dict>` with where it is
        stored: the same shape as a live result, plus ``id``, ``runId``, ``createdAt`` and
        ``outcome``."""
        return {
            "id": self.id,
            "runId": self.run_id,
            **self.to_result().to_dict(),
            "createdAt": self.created_at,
            "outcome": self.outcome,
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


_KIND = _RESULT_COLUMNS.index("kind")
_SCORES = (
    "SELECT result_id, metric, value, label, passed, threshold, reason FROM scores "
    "WHERE result_id IN ({marks}) ORDER BY seq"
)
#: What a cases result's named scores are made of (see ``_results.execution_scores``).
_EXECUTION_SCORES = (
    "SELECT id, status, score, exact_match, semantic_score, similarity_method "
    "FROM executions WHERE id IN ({marks})"
)


_SELECT = f"SELECT {', '.join('r.' + c for c in _RESULT_COLUMNS)} FROM results r"


def _in_runs(kind: str, pairs: Sequence[tuple[str, str]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The WHERE clauses (and their values) that find ``pairs`` of (subject, run id):
    grouped by run (a run's baselines mostly sit in one earlier run), each an index
    lookup per subject (a long OR of pairs made SQLite scan the kind)."""
    by_run: dict[str, set[str]] = {}
    for subject, run_id in pairs:
        by_run.setdefault(run_id, set()).add(subject)
    for run_id, subjects in sorted(by_run.items()):
        for chunk in chunks(sorted(subjects)):
            names, marks = in_list(chunk)
            names.update(kind=kind, run_id=run_id)
            yield f"r.kind = :kind AND r.run_id = :run_id AND r.subject IN ({marks})", names


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

    @staticmethod
    def _scores(sql: Any, rows: list[Any]) -> dict[str, list[StoredScore]]:
        """Each row's named scores: its ``scores`` rows, or a cases result's execution
        columns when it has none (see ``_results.execution_scores``)."""
        scores: dict[str, list[StoredScore]] = {}
        for s in rows_in(sql, _SCORES, [r[0] for r in rows]):
            scores.setdefault(s[0], []).append(
                StoredScore(s[1], s[2], s[3], _bool(s[4]), s[5], s[6])
            )
        cases = [r[0] for r in rows if r[_KIND] == "cases" and r[0] not in scores]
        for e in rows_in(sql, _EXECUTION_SCORES, cases):
            scores[e[0]] = [
                StoredScore(metric, value, label, None, None, None)
                for metric, value, label in execution_scores(*e[1:])
            ]
        return scores

    def _read_rows(self, where: str, params: dict[str, Any], tail: str = "") -> list[StoredResult]:
        with self._read("reading results") as sql:
            rows = list(sql.rows(f"{_SELECT} WHERE {where}{tail}", params))
            scores = self._scores(sql, rows)
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
                    outcome=v["outcome"],
                )
            )
        return out

    def for_run(self, run_id: str) -> list[StoredResult]:
        return self._read_rows("r.run_id = :run_id", {"run_id": run_id}, " ORDER BY r.seq")

    def in_runs(
        self, kind: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[StoredResult]]:
        """Each (subject, run id) pair's results in that run (a case's repeats), whole and
        in the order stored, a statement per few hundred pairs (a run's baselines need
        only their tallies: :meth:`tally_rows`)."""
        found: dict[tuple[str, str], list[StoredResult]] = {}
        for where, names in _in_runs(kind, pairs):
            # by subject first: the order of ix_results_run_subject, no sort
            tail = " ORDER BY r.subject, r.seq"
            for row in self._read_rows(where, names, tail):
                found.setdefault((row.subject, row.run_id), []).append(row)
        return found

    def tally_rows(
        self, kind: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[tuple[str, bool | None, dict[str, Any]]]]:
        """:meth:`in_runs` as each result's (status, passed, details): what its tally is
        counted from (:func:`oxyeval.evaluation.tally_of_row`). A run reads these for
        each result's baseline; whole results cost several times as much to read."""
        found: dict[tuple[str, str], list[tuple[str, bool | None, dict[str, Any]]]] = {}
        with self._read("reading results") as sql:
            for where, names in _in_runs(kind, pairs):
                statement = (
                    "SELECT r.subject, r.run_id, r.status, r.passed, r.details FROM results r "
                    f"WHERE {where} ORDER BY r.subject, r.seq"
                )
                for subject, run_id, status, passed, details in sql.rows(statement, names):
                    found.setdefault((subject, run_id), []).append(
                        (status, _bool(passed), loads(details) or {})
                    )
        return found

    def history(self, kind: str, subject: str, limit: int = 20) -> list[StoredResult]:
        """A subject's latest results, newest first."""
        return self._read_rows(
            "r.kind = :kind AND r.subject = :subject",
            {"kind": kind, "subject": subject, "limit": max(1, min(int(limit), 10_000))},
            " ORDER BY r.created_at DESC, r.seq DESC LIMIT :limit",
        )

    def recent(
        self, kind: str, subjects: Sequence[str], limit: int = 20
    ) -> dict[str, list[tuple[str, str, float | None, str]]]:
        """Each subject's latest results, newest first, as (run id, status, score,
        created at): :meth:`history` of many subjects in a statement per few hundred,
        without the scores (what a run reads to find each result's previous one)."""
        limit = max(1, min(int(limit), 10_000))
        found: dict[str, list[tuple[str, str, float | None, str]]] = {}
        with self._read("reading results") as sql:
            for chunk in chunks(sorted(set(subjects)), LATEST_CHUNK):
                # Each subject's newest rows, by a backward walk of ix_results_subject.
                names = {f"s{n}": s for n, s in enumerate(chunk)}
                statement = newest_of_each(
                    "SELECT r.subject, r.run_id, r.status, r.score, r.created_at, r.seq "
                    "FROM results r WHERE r.kind = :kind",
                    [f"r.subject = :{name}" for name in names],
                    "r.created_at DESC, r.seq DESC",
                )
                rows = sql.rows(statement, {"kind": kind, "limit": limit, **names})
                rows.sort(key=lambda r: (r[0], r[4], r[5]), reverse=True)
                for subject, run_id, status, score, created_at, _seq in rows:
                    found.setdefault(subject, []).append((run_id, status, score, created_at))
        return found

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
