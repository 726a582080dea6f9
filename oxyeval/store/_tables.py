"""The history schema as SQLAlchemy Core tables: what the repositories query.

This is the schema at the latest migration (``_migrations/versions``); the migrations are
its frozen history and never import this module. ``tests/store/test_migrations.py`` checks
that the two agree on every backend.

Portability rules (SQLite and PostgreSQL run the same SQL):

* Timestamps are ISO-8601 UTC text with milliseconds (``utc_timestamp``): string order is
  time order everywhere, and SQLite has no timestamp type.
* JSON is canonical text, so a content hash over it is stable.
* ``seq`` is an explicit integer key that gives insertion order as a tie-breaker for rows
  created in the same millisecond (a rowid alias on SQLite, an identity on PostgreSQL);
  public ids stay text (``id``).
* Aggregates (per case, per case and day) are maintained in the same transaction as each
  execution, so reads never scan the executions table.
"""

from __future__ import annotations

import sqlalchemy as sa

# Defined beside the code that checks them, which must not need SQLAlchemy (the lean store).
from ._cache import CACHE_KINDS
from .kinds import CONSISTENCY_STATUSES as TEST_STATUSES
from .kinds import EXECUTION_STATUSES, RUN_KINDS, RUN_STATUSES

__all__ = [
    "CACHE_KINDS",
    "EXECUTION_STATUSES",
    "RUN_KINDS",
    "RUN_STATUSES",
    "TEST_STATUSES",
    "batch_requests",
    "batches",
    "branch_outputs",
    "cache_entries",
    "case_baselines",
    "case_daily",
    "executions",
    "judge_calibrations",
    "live_name_index",
    "metadata",
    "prompt_versions",
    "prompts",
    "result_daily",
    "results",
    "run_group_shards",
    "run_totals",
    "runs",
    "scores",
    "test_branches",
    "test_cases",
    "test_results",
    "workflow_runs",
    "workflow_tasks",
]

metadata = sa.MetaData()

# An autoincrementing integer key: BIGINT identity on PostgreSQL, the rowid on SQLite.
# Tables with one never ask for it back (implicit_returning=False): no code needs it.
Seq = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


prompts = sa.Table(
    "prompts",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.Text, nullable=False),
)

prompt_versions = sa.Table(
    "prompt_versions",
    metadata,
    sa.Column("prompt_id", sa.Text, sa.ForeignKey("prompts.id"), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("content_hash", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.UniqueConstraint("prompt_id", "content_hash", name="uq_prompt_versions_hash"),
    sa.CheckConstraint("version >= 1", name="ck_prompt_versions_version"),
)

test_cases = sa.Table(
    "test_cases",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("prompt_id", sa.Text, sa.ForeignKey("prompts.id"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text),
    sa.Column("input", sa.Text, nullable=False, server_default="{}"),
    sa.Column("expected_output", sa.Text),
    sa.Column("threshold", sa.Float),
    sa.Column("source_file", sa.Text),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("deleted_at", sa.Text),
    # Aggregates over judged executions (passed or failed), maintained on every write.
    sa.Column("total_runs", sa.Integer, nullable=False, server_default="0"),
    sa.Column("pass_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("score_sum", sa.Float, nullable=False, server_default="0"),
    sa.Column("scored_runs", sa.Integer, nullable=False, server_default="0"),
    sa.Column("length_sum", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("last_run", sa.Text),
    sa.Column("last_passed", sa.Boolean),
    sa.Index("ix_test_cases_prompt", "prompt_id", "created_at", "seq"),
    # A name is used once per prompt among live cases (a deleted one keeps its name).
    sa.Index(
        "uq_test_cases_live_name",
        "prompt_id",
        "name",
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        # and postgresql_where, given when a PostgreSQL schema is made (live_name_index):
        # naming it here imported SQLAlchemy's PostgreSQL dialect into every SQLite run.
    ),
    implicit_returning=False,
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("kind", sa.Text, nullable=False, server_default="cases"),
    sa.Column("group_id", sa.Text),  # runs of one command (several prompts, several files)
    sa.Column("subject", sa.Text),  # what ran, for display: test files, a workflow file
    sa.Column("prompt_id", sa.Text),
    sa.Column("prompt_version", sa.Integer),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("finished_at", sa.Text),
    sa.Column("status", sa.Text, nullable=False, server_default="running"),
    sa.Column("total", sa.Integer, nullable=False, server_default="0"),
    sa.Column("done", sa.Integer, nullable=False, server_default="0"),
    sa.Column("pid", sa.Integer),
    sa.Column("host", sa.Text),
    sa.Column("owner", sa.Text),  # the process's identity beyond its pid (_owner.Owner)
    sa.CheckConstraint(_in("status", RUN_STATUSES), name="ck_runs_status"),
    sa.Index("ix_runs_started", "started_at", "seq"),
    sa.Index("ix_runs_kind_started", "kind", "started_at", "seq"),
    sa.Index("ix_runs_status", "status"),
    sa.Index("ix_runs_group", "group_id"),
    implicit_returning=False,
)

executions = sa.Table(
    "executions",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), nullable=False),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id")),
    sa.Column("execution_id", sa.Text, nullable=False),
    # passed/failed: judged against an expected output; pending: no expected output yet;
    # error: no usable output (provider, template or scoring failure, in error_message).
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("score", sa.Float),
    sa.Column("actual_output", sa.Text),
    sa.Column("expected_output", sa.Text),
    sa.Column("output_diff", sa.Text),
    sa.Column("exact_match", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("semantic_score", sa.Float),
    sa.Column("similarity_method", sa.Text, nullable=False, server_default=""),
    sa.Column("length_diff", sa.Integer),
    sa.Column("token_diff", sa.Integer),
    sa.Column("token_method", sa.Text, nullable=False, server_default=""),
    sa.Column("is_regression", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("regression_type", sa.Text),
    sa.Column("regression_types", sa.Text, nullable=False, server_default="[]"),
    sa.Column("prompt_version", sa.Integer, nullable=False),
    sa.Column("run_duration_ms", sa.Float, nullable=False, server_default="0"),
    sa.Column("latency_ms", sa.Float),
    sa.Column("input_tokens", sa.Integer),
    sa.Column("output_tokens", sa.Integer),
    sa.Column("finish_reason", sa.Text),  # as the vendor spelled it: tells a cut-off output
    sa.Column("error_message", sa.Text),
    # Judged executions only: hash of (expected output, similarity method), see case_baselines.
    sa.Column("baseline_key", sa.Text),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.CheckConstraint(_in("status", EXECUTION_STATUSES), name="ck_executions_status"),
    sa.Index("ix_executions_case_created", "test_case_id", "created_at", "seq"),
    sa.Index("ix_executions_case_regression", "test_case_id", "is_regression", "created_at", "seq"),
    sa.Index("ix_executions_run", "run_id"),
    sa.Index("ix_executions_case_baseline", "test_case_id", "baseline_key", "created_at", "seq"),
    implicit_returning=False,
)

case_daily = sa.Table(
    "case_daily",
    metadata,
    sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), primary_key=True),
    sa.Column("day", sa.Text, primary_key=True),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("passes", sa.Integer, nullable=False),
    sa.Column("score_sum", sa.Float, nullable=False),
    sa.Column("scored", sa.Integer, nullable=False),
)

# Per case and comparable baseline: what regression detection compares a new execution with,
# read in O(1) however long the case's history is.
case_baselines = sa.Table(
    "case_baselines",
    metadata,
    sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), primary_key=True),
    sa.Column("baseline_key", sa.Text, primary_key=True),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("passes", sa.Integer, nullable=False),
    sa.Column("score_sum", sa.Float, nullable=False),
    sa.Column("scored", sa.Integer, nullable=False),
    sa.Column("length_sum", sa.BigInteger, nullable=False),
    # The newest judged executions' [score, length], newest first, and the newest's time
    # (see _recent.py): what regression detection reads, without walking the executions.
    sa.Column("recent", sa.Text),
    sa.Column("recent_at", sa.Text),
)

test_results = sa.Table(
    "test_results",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
    # A consistency test is identified by its file (relative to the project) and its name.
    sa.Column("file", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("test_index", sa.Integer, nullable=False, server_default="0"),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("accuracy", sa.Float),
    sa.Column("n", sa.Integer, nullable=False, server_default="0"),
    sa.Column("runs_ok", sa.Integer, nullable=False, server_default="0"),
    sa.Column("pairing", sa.Text, nullable=False, server_default=""),
    sa.Column("model", sa.Text, nullable=False, server_default=""),
    sa.Column("judge_model", sa.Text, nullable=False, server_default=""),
    sa.Column("pairs_total", sa.Integer, nullable=False, server_default="0"),
    sa.Column("pairs_judged", sa.Integer, nullable=False, server_default="0"),
    sa.Column("identical_pairs", sa.Integer, nullable=False, server_default="0"),
    sa.Column("judge_calls", sa.Integer, nullable=False, server_default="0"),
    sa.Column("selected_run", sa.Integer),
    sa.Column("selected_output", sa.Text),
    sa.Column("run_errors", sa.Text, nullable=False, server_default="[]"),
    sa.Column("error_message", sa.Text),
    sa.Column("duration_ms", sa.Float, nullable=False, server_default="0"),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.CheckConstraint(_in("status", TEST_STATUSES), name="ck_test_results_status"),
    sa.Index("ix_test_results_test", "file", "name", "created_at", "seq"),
    sa.Index("ix_test_results_run", "run_id"),
    implicit_returning=False,
)

workflow_runs = sa.Table(
    "workflow_runs",
    metadata,
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("workflow", sa.Text, nullable=False),  # the file, relative to the project
    sa.Column("variables", sa.Text, nullable=False, server_default="{}"),
    sa.Column("output", sa.Text),
    sa.Column("error_message", sa.Text),
    sa.Column("duration_ms", sa.Float, nullable=False, server_default="0"),
    sa.Index("ix_workflow_runs_workflow", "workflow"),
)

workflow_tasks = sa.Table(
    "workflow_tasks",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("path", sa.Text, nullable=False),  # e.g. "report", "per_region[2].summary"
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("started_ms", sa.Float),
    sa.Column("duration_ms", sa.Float),
    sa.Column("output", sa.Text),
    sa.Column("error_message", sa.Text),
    sa.Index("ix_workflow_tasks_run", "run_id", "seq"),
    implicit_returning=False,
)

# Model answers and judge verdicts kept for reruns (revision 0002), one row per key: the
# sha256 of the canonical JSON of everything that decides the answer (never a key or a
# header). ``value`` is canonical JSON of the answer or verdict; ``hits`` counts replays.
cache_entries = sa.Table(
    "cache_entries",
    metadata,
    sa.Column("key_hash", sa.Text, primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False, server_default=""),  # vendor/model, for display
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("size", sa.Integer, nullable=False, server_default="0"),  # bytes of value
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("hits", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_hit_at", sa.Text),
    sa.CheckConstraint(_in("kind", CACHE_KINDS), name="ck_cache_entries_kind"),
    sa.Index("ix_cache_entries_created", "created_at"),
    sa.Index("ix_cache_entries_kind_created", "kind", "created_at"),
)

# Provider batches (revision 0008, ``_batches``): each one a run submitted, and each of
# its requests by the hash of the call's cache key, with the answer once it has ended, so
# an interrupted run collects the open batch instead of paying for it again.
batches = sa.Table(
    "batches",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("vendor", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("model_ref", sa.Text, nullable=False, server_default=""),
    sa.Column("api_url", sa.Text, nullable=False, server_default=""),
    sa.Column("remote_id", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("phase", sa.Text, nullable=False, server_default=""),
    sa.Column("kind", sa.Text, nullable=False, server_default=""),
    sa.Column("total", sa.Integer, nullable=False, server_default="0"),
    sa.Column("done", sa.Integer, nullable=False, server_default="0"),
    sa.Column("failed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("consumed", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Index("ix_batches_open", "consumed", "state"),
)

batch_requests = sa.Table(
    "batch_requests",
    metadata,
    sa.Column(
        "batch_id", sa.Text, sa.ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("custom_id", sa.Text, primary_key=True),
    sa.Column("key_hash", sa.Text, nullable=False),
    sa.Column("phase", sa.Text, nullable=False, server_default=""),
    sa.Column("subject", sa.Text, nullable=False, server_default=""),
    sa.Column("run_index", sa.Integer, nullable=False, server_default="1"),
    sa.Column("status", sa.Text, nullable=False, server_default="pending"),
    sa.Column("answer", sa.Text),
    sa.Column("error", sa.Text),
    sa.Index("ix_batch_requests_key", "key_hash"),
)

# The results table (revision 0004, ``_results``): one row per result of any kind, with
# what only its kind has in ``details`` (JSON). A kind is a registered name, not a CHECK:
# adding one needs no migration. The older kinds keep their detail tables above and write
# here too, in the same transaction; an execution's or a consistency result's row has the
# same id here.
results = sa.Table(
    "results",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id")),  # None: recorded outside a run
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),  # what was tested: a case id, file::test
    sa.Column("case_id", sa.Text),
    sa.Column("branch", sa.Text),  # a model configuration (A/B branches)
    sa.Column("repeat", sa.Integer, nullable=False, server_default="0"),
    sa.Column("status", sa.Text, nullable=False),  # one of its kind's statuses
    sa.Column("passed", sa.Boolean),  # None: no own check, or could not be judged
    sa.Column("score", sa.Float),  # the headline score, 0..1
    sa.Column("latency_ms", sa.Float),
    sa.Column("ttft_ms", sa.Float),
    sa.Column("input_tokens", sa.Integer),
    sa.Column("output_tokens", sa.Integer),
    sa.Column("cost_usd", sa.Float),  # None: no known price (never 0 for unknown)
    sa.Column("output", sa.Text),
    sa.Column("error_message", sa.Text),
    sa.Column("details", sa.Text, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.Text, nullable=False),
    # What the result counts as in its run (``kinds.RESULT_OUTCOMES``), as its kind said
    # when it was written (revision 0007): readers count every kind by it alone.
    sa.Column("outcome", sa.Text, nullable=False, server_default="unjudged"),
    sa.Index("ix_results_subject", "kind", "subject", "created_at", "seq"),
    sa.Index("ix_results_run", "run_id", "seq"),
    sa.Index("ix_results_run_subject", "run_id", "kind", "subject"),  # baselines
    sa.Index("ix_results_branch", "branch", "seq"),  # a branch's executions, newest first
    implicit_returning=False,
)

scores = sa.Table(
    "scores",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("result_id", sa.Text, sa.ForeignKey("results.id"), nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("value", sa.Float),
    sa.Column("label", sa.Text),
    sa.Column("passed", sa.Boolean),
    sa.Column("threshold", sa.Float),
    sa.Column("reason", sa.Text),
    sa.Index("ix_scores_result", "result_id", "seq"),
    implicit_returning=False,
)

# Per (kind, subject, UTC day), kept in the same transaction as each result: trend charts
# and dashboards read this, never a scan of ``results``.
result_daily = sa.Table(
    "result_daily",
    metadata,
    sa.Column("kind", sa.Text, primary_key=True),
    sa.Column("subject", sa.Text, primary_key=True),
    sa.Column("day", sa.Text, primary_key=True),
    sa.Column("results", sa.Integer, nullable=False),
    sa.Column("passes", sa.Integer, nullable=False),
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("errors", sa.Integer, nullable=False),
    sa.Column("scored", sa.Integer, nullable=False),
    sa.Column("score_sum", sa.Float, nullable=False),
    sa.Column("latency_n", sa.Integer, nullable=False),
    sa.Column("latency_sum", sa.Float, nullable=False),
    sa.Column("cost_n", sa.Integer, nullable=False),
    sa.Column("cost_sum", sa.Float, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
)


# Per run, its results counted by outcome and status (revision 0007), kept in the same
# transaction as each result like ``result_daily``: the runs list reads a few rows per
# run, never a scan of a run's results, however many it holds.
run_totals = sa.Table(
    "run_totals",
    metadata,
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("outcome", sa.Text, primary_key=True),
    sa.Column("status", sa.Text, primary_key=True),
    sa.Column("results", sa.Integer, nullable=False),
    sa.Column("scored", sa.Integer, nullable=False),
    sa.Column("score_sum", sa.Float, nullable=False),
    sa.Column("regressions", sa.Integer, nullable=False),
)


def _counter(name: str, *, real: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.Float if real else sa.Integer, nullable=False, server_default="0")


# A/B branches (revision 0005, ``_branches``): one model configuration of a test case. Its
# executions are results of kind ``ab`` (``results.branch`` = the branch id); the counters
# below are kept in the same transaction as each execution, so its aggregates (averages,
# pass rate, consistency) read in O(1). Averages are over successful executions that have
# the value; ``hashed_runs``/``top_hash_runs``: successful executions with an output hash,
# and how many of them share the most common hash (from ``branch_outputs``).
test_branches = sa.Table(
    "test_branches",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),  # <case id>@<name>, see branch_id
    sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text),
    sa.Column("provider", sa.Text),  # None: model is a config.yml model name
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("temperature", sa.Float, nullable=False, server_default="0.7"),
    sa.Column("max_tokens", sa.Integer, nullable=False, server_default="2048"),
    sa.Column("top_p", sa.Float, nullable=False, server_default="1.0"),
    sa.Column("is_control", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("other_params", sa.Text, nullable=False, server_default="{}"),
    sa.Column("source_file", sa.Text),  # None: created through the API
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("deleted_at", sa.Text),
    _counter("runs"),  # successful + errored executions
    _counter("errors"),
    _counter("latency_n"),
    _counter("latency_sum", real=True),
    _counter("cost_n"),
    _counter("cost_sum", real=True),
    _counter("quality_n"),
    _counter("quality_sum", real=True),
    _counter("passes"),
    _counter("tps_n"),
    _counter("tps_sum", real=True),
    _counter("hashed_runs"),
    _counter("top_hash_runs"),
    sa.Index("ix_test_branches_case", "test_case_id", "seq"),
    implicit_returning=False,
)

# Per branch and distinct (whitespace-normalised) output: how many successful executions
# gave it. Increments with ON CONFLICT DO UPDATE, as result_daily.
branch_outputs = sa.Table(
    "branch_outputs",
    metadata,
    sa.Column("branch_id", sa.Text, sa.ForeignKey("test_branches.id"), primary_key=True),
    sa.Column("consistency_hash", sa.Text, primary_key=True),
    sa.Column("runs", sa.Integer, nullable=False),
)

# One row per shard of a sharded run (revision 0008): the shard's run document, which
# ``oxy report --run-group`` merges with the other shards'. A rerun of a shard replaces it.
run_group_shards = sa.Table(
    "run_group_shards",
    metadata,
    sa.Column("run_group", sa.Text, primary_key=True),
    sa.Column("shard", sa.Integer, primary_key=True),  # 1..shards
    sa.Column("shards", sa.Integer, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),  # the command's run kind: cases, test-files...
    sa.Column("plan", sa.Text, nullable=False),  # the whole split's fingerprint
    sa.Column("tests", sa.Integer, nullable=False),  # this shard's share of the selection
    sa.Column("total", sa.Integer, nullable=False),  # the whole selection
    sa.Column("code", sa.Integer, nullable=False),  # the shard's own decision
    sa.Column("document", sa.Text, nullable=False),  # its run (or error) document, JSON
    sa.Column("host", sa.Text),
    sa.Column("finished_at", sa.Text, nullable=False),
)

# One row per judge calibration (revision 0010): a judge model and prompt version's
# agreement with a human-labelled set, newest last, so a judge change that agrees less
# with people is seen.
judge_calibrations = sa.Table(
    "judge_calibrations",
    metadata,
    sa.Column("seq", Seq, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("judge_model", sa.Text, nullable=False),
    sa.Column("prompt_version", sa.Text, nullable=False),  # a hash of the prompt template
    sa.Column("file", sa.Text, nullable=False),  # the labelled set, relative to the project
    sa.Column("items", sa.Integer, nullable=False),
    sa.Column("judged", sa.Integer, nullable=False),  # items the judge gave a verdict on
    sa.Column("observed", sa.Float),  # raw agreement share
    sa.Column("kappa", sa.Float),  # None: chance alone agrees fully
    sa.Column("kappa_low", sa.Float),
    sa.Column("kappa_high", sa.Float),
    sa.Column("confusion", sa.Text, nullable=False, server_default="[]"),  # JSON
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Index("ix_judge_calibrations_judge", "judge_model", "prompt_version", "created_at"),
    implicit_returning=False,
)


def live_name_index() -> sa.Index:
    """The index that keeps a live case's name unique, partial on PostgreSQL as on SQLite
    (its ``postgresql_where``, added once, before a PostgreSQL schema is created)."""
    index = next(i for i in test_cases.indexes if i.name == "uq_test_cases_live_name")
    options = index.dialect_options["postgresql"]
    if options["where"] is None:
        options["where"] = sa.text("deleted_at IS NULL")
    return index
