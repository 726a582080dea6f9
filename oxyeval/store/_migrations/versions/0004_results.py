"""The results table: one ``results`` table for every kind of test, its named ``scores``,
and the ``result_daily`` rollup; the run kind is no longer a CHECK constraint.

Existing rows are copied in (executions as kind ``cases``, consistency results as
``consistency``, workflow runs as ``workflow``), under the same ids, with their scores
and daily totals, so an upgraded history reads as if it had always had the table; the
detail tables they came from stay as they were.

Revision ID: 0004
Revises: 0003

Frozen history: never edit a released revision, add the next one. (The mapping below is
this revision's own copy of the one in ``_results``, as a migration must not import the
code of a later day.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_BATCH = 1000
Seq = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_SUMS = (
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


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _batches(conn: sa.Connection, query: str) -> Iterator[list[Any]]:
    # Per statement: Connection.execution_options would change the migration's connection.
    result = conn.execute(sa.text(query).execution_options(stream_results=True))
    while True:
        rows = result.mappings().fetchmany(_BATCH)
        if not rows:
            return
        yield list(rows)


def _result(v: Any, **fields: Any) -> dict[str, Any]:
    row = dict.fromkeys(
        (
            "case_id",
            "branch",
            "passed",
            "score",
            "latency_ms",
            "ttft_ms",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "output",
            "error_message",
        )
    )
    row.update(repeat=0, **fields)
    return row


def _copy(conn: sa.Connection, results: sa.Table, scores: sa.Table) -> dict[tuple, dict]:
    daily: dict[tuple[str, str, str], dict[str, Any]] = {}

    def write(rows: list[dict[str, Any]], score_rows: list[dict[str, Any]]) -> None:
        if rows:
            conn.execute(results.insert(), rows)
        if score_rows:
            conn.execute(scores.insert(), score_rows)
        for r in rows:
            t = daily.setdefault(
                (r["kind"], r["subject"], r["created_at"][:10]), dict.fromkeys(_SUMS, 0)
            )
            t["results"] += 1
            t["passes"] += r["passed"] is True
            t["failures"] += r["passed"] is False
            t["errors"] += r["error_message"] is not None
            if r["score"] is not None:
                t["scored"] += 1
                t["score_sum"] += r["score"]
            if r["latency_ms"] is not None:
                t["latency_n"] += 1
                t["latency_sum"] += r["latency_ms"]
            t["input_tokens"] += r["input_tokens"] or 0
            t["output_tokens"] += r["output_tokens"] or 0

    def score(result_id: str, metric: str, value: Any, label: Any = None) -> dict[str, Any]:
        return {
            "result_id": result_id,
            "metric": metric,
            "value": value,
            "label": label,
            "passed": None,
            "threshold": None,
            "reason": None,
        }

    for batch in _batches(conn, "SELECT * FROM executions ORDER BY seq"):
        rows, score_rows = [], []
        for v in batch:
            judged = v["status"] in ("passed", "failed")
            rows.append(
                _result(
                    v,
                    id=v["id"],
                    run_id=v["run_id"],
                    kind="cases",
                    subject=v["test_case_id"],
                    case_id=v["test_case_id"],
                    status=v["status"],
                    passed=(v["status"] == "passed") if judged else None,
                    score=v["score"],
                    latency_ms=v["latency_ms"],
                    input_tokens=v["input_tokens"],
                    output_tokens=v["output_tokens"],
                    output=v["actual_output"],
                    error_message=v["error_message"],
                    created_at=v["created_at"],
                    details=_json(
                        {
                            "executionId": v["execution_id"],
                            "promptVersion": v["prompt_version"],
                            "isRegression": bool(v["is_regression"]),
                            "regressionTypes": json.loads(v["regression_types"] or "[]"),
                            "finishReason": v["finish_reason"],
                        }
                    ),
                )
            )
            if judged:
                score_rows.append(score(v["id"], "score", v["score"]))
                score_rows.append(score(v["id"], "exact_match", 1.0 if v["exact_match"] else 0.0))
                if v["semantic_score"] is not None:
                    score_rows.append(
                        score(
                            v["id"],
                            "similarity",
                            v["semantic_score"],
                            v["similarity_method"] or None,
                        )
                    )
        write(rows, score_rows)

    details = [
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
    ]
    for batch in _batches(conn, "SELECT * FROM test_results ORDER BY seq"):
        rows, score_rows = [], []
        for v in batch:
            rows.append(
                _result(
                    v,
                    id=v["id"],
                    run_id=v["run_id"],
                    kind="consistency",
                    subject=f"{v['file']}::{v['name']}",
                    status=v["status"],
                    score=v["accuracy"],
                    latency_ms=v["duration_ms"],
                    output=v["selected_output"],
                    error_message=v["error_message"],
                    created_at=v["created_at"],
                    details=_json({k: v[k] for k in details}),
                )
            )
            if v["accuracy"] is not None:
                score_rows.append(score(v["id"], "accuracy", v["accuracy"]))
        write(rows, score_rows)

    for batch in _batches(
        conn,
        "SELECT w.*, r.status AS run_status, r.started_at AS run_started FROM workflow_runs w "
        "JOIN runs r ON r.id = w.run_id ORDER BY r.seq",
    ):
        rows = []
        for v in batch:
            status = v["run_status"] if v["run_status"] != "running" else "interrupted"
            rows.append(
                _result(
                    v,
                    id=v["run_id"],
                    run_id=v["run_id"],
                    kind="workflow",
                    subject=v["workflow"],
                    status=status,
                    latency_ms=v["duration_ms"],
                    output=v["output"],
                    error_message=v["error_message"],
                    created_at=v["run_started"],
                    details=_json({"variables": json.loads(v["variables"] or "{}")}),
                )
            )
        write(rows, [])
    return daily


def _drop_kind_check(conn: sa.Connection) -> None:
    """``runs`` without ``ck_runs_kind``. SQLite cannot drop a constraint, and rebuilding
    the table (Alembic's batch mode) drops the old one while executions point at it, which
    fails the foreign key check inside the migration's transaction, where foreign keys
    cannot be switched off. Removing a CHECK changes nothing stored, so SQLite's documented
    way applies: the table's definition is edited in place (``writable_schema``) and the
    schema version bumped so every connection reloads it."""
    if conn.dialect.name != "sqlite":
        op.drop_constraint("ck_runs_kind", "runs", type_="check")
        return
    ddl = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
    ).scalar_one()
    without = re.sub(r",?\s*CONSTRAINT ck_runs_kind CHECK \(kind IN \([^()]*\)\)", "", ddl)
    if without == ddl:
        raise RuntimeError("revision 0004: ck_runs_kind not found in the runs table")
    version = conn.exec_driver_sql("PRAGMA schema_version").scalar_one()
    conn.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        conn.exec_driver_sql(
            "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'runs'", (without,)
        )
        conn.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        conn.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    conn = op.get_bind()
    _drop_kind_check(conn)
    results = op.create_table(
        "results",
        sa.Column("seq", Seq, primary_key=True, autoincrement=True),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id")),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("case_id", sa.Text),
        sa.Column("branch", sa.Text),
        sa.Column("repeat", sa.Integer, nullable=False, server_default="0"),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("passed", sa.Boolean),
        sa.Column("score", sa.Float),
        sa.Column("latency_ms", sa.Float),
        sa.Column("ttft_ms", sa.Float),
        sa.Column("input_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
        sa.Column("cost_usd", sa.Float),
        sa.Column("output", sa.Text),
        sa.Column("error_message", sa.Text),
        sa.Column("details", sa.Text, nullable=False, server_default="{}"),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    op.create_index("ix_results_subject", "results", ["kind", "subject", "created_at", "seq"])
    op.create_index("ix_results_run", "results", ["run_id", "seq"])
    scores = op.create_table(
        "scores",
        sa.Column("seq", Seq, primary_key=True, autoincrement=True),
        sa.Column("result_id", sa.Text, sa.ForeignKey("results.id"), nullable=False),
        sa.Column("metric", sa.Text, nullable=False),
        sa.Column("value", sa.Float),
        sa.Column("label", sa.Text),
        sa.Column("passed", sa.Boolean),
        sa.Column("threshold", sa.Float),
        sa.Column("reason", sa.Text),
    )
    op.create_index("ix_scores_result", "scores", ["result_id", "seq"])
    daily = op.create_table(
        "result_daily",
        sa.Column("kind", sa.Text, primary_key=True),
        sa.Column("subject", sa.Text, primary_key=True),
        sa.Column("day", sa.Text, primary_key=True),
        *(
            sa.Column(c, sa.Float if c.endswith("_sum") else sa.Integer, nullable=False)
            for c in _SUMS
            if c not in ("input_tokens", "output_tokens")
        ),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
    )
    totals = _copy(conn, results, scores)
    if totals:
        conn.execute(
            daily.insert(),
            [{"kind": k, "subject": s, "day": d, **t} for (k, s, d), t in sorted(totals.items())],
        )


def downgrade() -> None:
    """Only for the migration tests on an unreleased database: the constraint comes back
    on PostgreSQL; a SQLite file keeps its runs table as it is."""
    if op.get_bind().dialect.name != "sqlite":
        op.create_check_constraint(
            "ck_runs_kind", "runs", "kind IN ('cases', 'consistency', 'workflow', 'ab', 'passfail')"
        )
    op.drop_index("ix_scores_result", table_name="scores")
    op.drop_table("scores")
    op.drop_table("result_daily")
    op.drop_index("ix_results_run", table_name="results")
    op.drop_index("ix_results_subject", table_name="results")
    op.drop_table("results")
