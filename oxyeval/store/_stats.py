"""Statistics of test cases, read from the maintained aggregates (and a few index rows).

``case_stats`` touches the case row, ``recent`` + 50 index entries and one rollup row per
day: its cost does not grow with history. ``history`` gives regression detection the
case's comparable past. ``rebuild`` recounts every aggregate from the executions (repair,
and the reference the tests compare the incremental numbers against).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._recent import Baseline, Window, read_baselines, usable, walk
from ._rows import (
    CaseActivity,
    CaseHistory,
    CaseStats,
    ExecutionSummary,
    HistoryPoint,
    TrendPoint,
    average,
)
from ._tables import case_baselines, case_daily, executions, result_daily, runs, test_cases
from ._util import baseline_key, loads, redact_text

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ._core import Store

__all__ = ["REGRESSIONS_SHOWN", "Stats"]

REGRESSIONS_SHOWN = 50
_E = executions.c
_JUDGED = _E.status.in_(("passed", "failed"))


#: What regression detection reads of each recent judged execution (:func:`_point`).
_RECENT_COLUMNS = (
    "e.test_case_id, e.baseline_key, e.id, e.status, e.score, "
    "length(e.actual_output) AS actual_length, e.length_diff, e.exact_match, "
    "e.semantic_score, e.is_regression, e.prompt_version, e.created_at, e.seq"
)


def _point(r: Any) -> HistoryPoint:
    return HistoryPoint(
        id=r.id,
        status=r.status,
        score=r.score,
        actual_length=r.actual_length,
        length_diff=r.length_diff,
        exact_match=bool(r.exact_match),
        semantic_score=r.semantic_score,
        is_regression=bool(r.is_regression),
        prompt_version=r.prompt_version,
        created_at=r.created_at,
    )


def _newest(q: Any) -> Any:
    return q.order_by(_E.created_at.desc(), _E.seq.desc())


def _summary(r: Any) -> ExecutionSummary:
    types = getattr(r, "regression_types", None)
    return ExecutionSummary(
        id=r.id,
        status=r.status,
        score=r.score,
        prompt_version=r.prompt_version,
        created_at=r.created_at,
        regression_type=getattr(r, "regression_type", None),
        regression_types=tuple(loads(types) or ()) if types is not None else (),
    )


class Stats:
    def activity(self, case_ids: list[str] | None = None) -> dict[str, CaseActivity]:
        """Every execution of each case (all of them: ``case_ids`` None), pending and
        errored ones too, from the daily rollup of the results table (no scan of
        executions). Cases never run are absent."""
        r = result_daily.c
        query = (
            sa.select(
                r.subject,
                sa.func.sum(r.results),
                sa.func.sum(r.passes),
                sa.func.sum(r.failures),
                sa.func.sum(r.errors),
                sa.func.max(r.day),
            )
            .where(r.kind == "cases")
            .group_by(r.subject)
        )
        if case_ids is not None:
            query = query.where(r.subject.in_(case_ids))
        with self._store.read("reading test case activity") as conn:
            rows = conn.execute(query).all()
        return {
            subject: CaseActivity(int(n), int(p), int(f), int(e), day)
            for subject, n, p, f, e, day in rows
        }

    def __init__(self, store: Store) -> None:
        self._store = store

    def regression_counts(self, case_ids: list[str] | None = None) -> dict[str, int]:
        """Executions flagged as a regression, per case (absent: none), from the
        (case, is_regression) index: a list of a thousand cases needs no scan of the rest."""
        query = (
            sa.select(_E.test_case_id, sa.func.count())
            .where(_E.is_regression == sa.true())
            .group_by(_E.test_case_id)
        )
        if case_ids is not None:
            query = query.where(_E.test_case_id.in_(case_ids))
        with self._store.read("counting regressions") as conn:
            rows = conn.execute(query).all()
        return {case: int(n) for case, n in rows}

    def case_stats(
        self, test_case_id: str, recent: int = 10, *, trend_days: int | None = None
    ) -> CaseStats | None:
        """The Testing API's testCaseStats; None for an unknown id. Soft-deleted cases still answer.
        ``trend_days`` limits the trend to the last N days with data."""
        t = test_cases.c
        d = case_daily.c
        with self._store.read("reading test case statistics") as conn:
            case = conn.execute(
                sa.select(t.total_runs, t.pass_count, t.score_sum, t.scored_runs).where(
                    t.id == test_case_id
                )
            ).first()
            if case is None:
                return None
            recent_rows = conn.execute(
                _newest(
                    sa.select(_E.id, _E.status, _E.score, _E.prompt_version, _E.created_at).where(
                        _E.test_case_id == test_case_id
                    )
                ).limit(recent)
            ).all()
            regression = sa.and_(_E.test_case_id == test_case_id, _E.is_regression == sa.true())
            reg_rows = conn.execute(
                _newest(
                    sa.select(
                        _E.id,
                        _E.status,
                        _E.score,
                        _E.regression_type,
                        _E.regression_types,
                        _E.prompt_version,
                        _E.created_at,
                    ).where(regression)
                ).limit(REGRESSIONS_SHOWN)
            ).all()
            reg_count = conn.execute(
                sa.select(sa.func.count()).select_from(executions).where(regression)
            ).scalar_one()
            daily = sa.select(d.day, d.runs, d.passes, d.score_sum, d.scored).where(
                d.test_case_id == test_case_id
            )
            if trend_days is None:
                days = conn.execute(daily.order_by(d.day)).all()
            else:
                days = list(
                    reversed(conn.execute(daily.order_by(d.day.desc()).limit(trend_days)).all())
                )
        total = case.total_runs
        return CaseStats(
            test_case_id=test_case_id,
            total_runs=total,
            pass_rate=None if total == 0 else 100.0 * case.pass_count / total,
            avg_score=average(case.score_sum, case.scored_runs),
            recent_runs=tuple(_summary(r) for r in recent_rows),
            regressions=tuple(_summary(r) for r in reg_rows),
            regression_count=int(reg_count),
            trend=tuple(TrendPoint(r.day, r.runs, r.passes, r.score_sum, r.scored) for r in days),
        )

    def history(
        self, case_id: str, recent: int = 10, *, baseline: tuple[str | None, str] | None = None
    ) -> CaseHistory:
        """Regression-detection inputs in one snapshot (judged executions only).

        With ``baseline=(expected_output, similarity_method)`` only comparable earlier
        executions count: judged against that expected output with that method, so
        accepting a new baseline or switching lexical -> embedding scores starts afresh
        (:meth:`histories` of this one case). Call it before recording the current
        execution, so it is not its own baseline.
        """
        if baseline is not None:
            return self.histories([(case_id, baseline)], recent)[0]
        t = test_cases.c
        totals = sa.select(
            t.total_runs, t.pass_count, t.score_sum, t.scored_runs, t.length_sum
        ).where(t.id == case_id)
        length = sa.func.length(_E.actual_output)
        with self._store.read("reading test history") as conn:
            row = conn.execute(totals).first()
            total, passes, score_sum, scored, length_sum = (
                row if row is not None else (0, 0, 0.0, 0, 0)
            )
            items = conn.execute(
                _newest(
                    sa.select(
                        _E.id,
                        _E.status,
                        _E.score,
                        length.label("actual_length"),
                        _E.length_diff,
                        _E.exact_match,
                        _E.semantic_score,
                        _E.is_regression,
                        _E.prompt_version,
                        _E.created_at,
                    ).where(_E.test_case_id == case_id, _JUDGED)
                ).limit(recent)
            ).all()
        points = tuple(_point(r) for r in items)
        return CaseHistory(
            total_runs=int(total),
            historical_pass_rate=None if not total else passes / total,
            avg_score=average(float(score_sum), int(scored)),
            avg_length=None if not total else float(length_sum) / total,
            recent=points,
            recent_scores=tuple(p.score for p in points),
            recent_lengths=_lengths(p.actual_length for p in points),
        )

    def histories(
        self, requests: Sequence[tuple[str, tuple[str | None, str]]], recent: int = 10
    ) -> list[CaseHistory]:
        """:meth:`history` of many cases at once, each with its ``baseline``: a few
        statements per few hundred cases instead of two per case, each case's newest
        judged executions walked in full (:meth:`baselines` reads less)."""
        keyed = _keyed(requests)
        with self._store.read("reading test history") as conn:
            totals = read_baselines(conn, keyed)
            seen = [key for key in keyed if key in totals and totals[key].runs]
            walked = walk(conn, seen, recent, _RECENT_COLUMNS)
        found = []
        for key in keyed:
            points = tuple(_point(r) for r in walked.get(key, ()))
            scores = tuple(p.score for p in points)
            found.append(
                _history(totals.get(key), points, scores, [p.actual_length for p in points])
            )
        return found

    def baselines(
        self, requests: Sequence[tuple[str, tuple[str | None, str]]], recent: int = 10
    ) -> list[CaseHistory]:
        """What regression detection reads of many cases (each with its ``baseline``):
        :meth:`histories` without the executions' details (``recent`` is empty; the
        scores and lengths are filled), read from each (case, baseline)'s kept window
        (:mod:`._recent`): one row per case however many runs it has, its executions
        walked only where no window is kept or ``recent`` asks for more than it holds."""
        keyed = _keyed(requests)
        with self._store.read("reading test history") as conn:
            totals = read_baselines(conn, keyed)
            windows: dict[tuple[str, str], Window] = {}
            walked = []
            for key, row in totals.items():
                window = usable(row, recent) if row.runs else ((), ())
                if window is None:
                    walked.append(key)
                else:
                    windows[key] = window
            for key, rows in walk(conn, walked, recent).items():
                windows[key] = (
                    tuple(r.score for r in rows),
                    tuple(r.actual_length for r in rows),
                )
        return [_history(totals.get(key), (), *windows.get(key, ((), ()))) for key in keyed]

    def rebuild(self) -> None:
        """Recompute every derived number from the executions (repair after manual edits)."""
        with self._store.write("rebuilding aggregates") as conn:
            _rebuild(conn)


def _keyed(
    requests: Sequence[tuple[str, tuple[str | None, str]]],
) -> list[tuple[str, str]]:
    return [
        (case_id, baseline_key(redact_text(expected), method))
        for case_id, (expected, method) in requests
    ]


def _history(
    row: Baseline | None,
    points: tuple[HistoryPoint, ...],
    scores: tuple[float | None, ...],
    lengths: Iterable[int | None],
) -> CaseHistory:
    """A (case, baseline)'s regression inputs from its row (None: never judged)."""
    if row is None or not row.runs:
        return CaseHistory(0, None, None, None, ())
    return CaseHistory(
        total_runs=int(row.runs),
        historical_pass_rate=row.passes / row.runs,
        avg_score=average(float(row.score_sum), int(row.scored)),
        avg_length=float(row.length_sum) / row.runs,
        recent=points,
        recent_scores=scores,
        recent_lengths=_lengths(lengths),
    )


def _lengths(lengths: Iterable[int | None]) -> tuple[int, ...]:
    """The lengths detection compares with: an execution with no output has none."""
    return tuple(n for n in lengths if n is not None)


def _rebuild(conn: Connection) -> None:
    t = test_cases.c
    judged = sa.and_(_E.test_case_id == t.id, _JUDGED)

    def agg(expr: Any) -> Any:
        return sa.select(expr).where(judged).scalar_subquery()

    def latest(col: Any) -> Any:
        return _newest(sa.select(col).where(judged)).limit(1).scalar_subquery()

    conn.execute(
        test_cases.update().values(
            total_runs=agg(sa.func.count()),
            pass_count=agg(
                sa.func.coalesce(sa.func.sum(sa.case((_E.status == "passed", 1), else_=0)), 0)
            ),
            score_sum=agg(sa.func.coalesce(sa.func.sum(_E.score), 0.0)),
            scored_runs=agg(sa.func.count(_E.score)),
            length_sum=agg(sa.func.coalesce(sa.func.sum(sa.func.length(_E.actual_output)), 0)),
            last_run=latest(_E.created_at),
            last_passed=latest(_E.status == "passed"),
        )
    )
    conn.execute(case_baselines.delete())
    conn.execute(
        case_baselines.insert().from_select(
            ["test_case_id", "baseline_key", "runs", "passes", "score_sum", "scored", "length_sum"],
            sa.select(
                _E.test_case_id,
                _E.baseline_key,
                sa.func.count(),
                sa.func.sum(sa.case((_E.status == "passed", 1), else_=0)),
                sa.func.coalesce(sa.func.sum(_E.score), 0.0),
                sa.func.count(_E.score),
                sa.func.coalesce(sa.func.sum(sa.func.length(_E.actual_output)), 0),
            )
            .where(_JUDGED)
            .group_by(_E.test_case_id, _E.baseline_key),
        )
    )
    conn.execute(case_daily.delete())
    day = sa.func.substr(_E.created_at, 1, 10)
    conn.execute(
        case_daily.insert().from_select(
            ["test_case_id", "day", "runs", "passes", "score_sum", "scored"],
            sa.select(
                _E.test_case_id,
                day,
                sa.func.count(),
                sa.func.sum(sa.case((_E.status == "passed", 1), else_=0)),
                sa.func.coalesce(sa.func.sum(_E.score), 0.0),
                sa.func.count(_E.score),
            )
            .where(_JUDGED)
            .group_by(_E.test_case_id, day),
        )
    )
    e = executions.alias("e")
    conn.execute(
        runs.update().values(
            done=sa.select(sa.func.count())
            .select_from(e)
            .where(e.c.run_id == runs.c.id)
            .scalar_subquery()
        )
    )
