"""Workflow SQL: values never become SQL, every query runs in the dataset sandbox.

The attacks are real ``oxy run`` invocations (a subprocess for the two from the
issue, Typer's runner for the rest, both in the project folder so relative paths
mean what they would for a user) that try to write or read a file outside the
project; each asserts the file was not written and the exit code and message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import LoadError
from oxyeval.workflow.sqltemplate import SqlTemplateRef, render_sql

ORDERS = "region,amount\nNorth,10\nSouth,25\nNorth,5\n"
ATTACK = "'; COPY (SELECT 'owned') TO '../outside.csv'; SELECT '1"


def config(*, read_only: bool = True, answer: str = "North") -> str:
    return textwrap.dedent(
        f"""\
        models:
          - name: m
            vendor: mock
            rules:
              - {{match: ".", output: {json.dumps(answer)}}}
        databases:
          - {{name: shop, type: duckdb, dataset: data{"" if read_only else ", read_only: false"}}}
        """
    )


def make(tmp_path: Path, workflow: str, *, cfg: str | None = None, **files: str) -> Path:
    """A project in tmp_path/proj (so tmp_path itself is 'outside'), cwd-independent."""
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    (root / "config.yml").write_text(cfg or config())
    (root / "data" / "orders.csv").write_text(ORDERS)
    (root / "a.agent.yml").write_text("model: m\nsystem_instructions: brief\n")
    (root / "w.workflow.yml").write_text(textwrap.dedent(workflow))
    for name, text in files.items():
        path = root / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def oxy_subprocess(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def oxy(monkeypatch: pytest.MonkeyPatch):
    """``oxy ARGS`` in-process, with the project folder as the working directory."""

    def invoke(root: Path, *args: str):
        monkeypatch.chdir(root)
        return CliRunner().invoke(app, list(args))

    return invoke


def sql_workflow(sql: str, variables: str = "") -> str:
    return f"{variables}tasks:\n  - {{name: q, type: execute_sql, database: shop, sql_query: {json.dumps(sql)}}}\n"


# -- the two attacks of the issue, as a user would run them ---------------------------------


def test_var_in_quoted_literal_stays_a_value(tmp_path: Path) -> None:
    root = make(
        tmp_path,
        sql_workflow(
            "SELECT COUNT(*) AS n FROM orders.csv WHERE region = '{{ r }}'",
            "variables:\n  r: {type: string, default: North}\n",
        ),
    )
    done = oxy_subprocess(
        root, "run", "w.workflow.yml", "--var", f"r=x{ATTACK}", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tasks"][0]["output"] == {"columns": ["n"], "rows": [{"n": 0}]}
    assert not (tmp_path / "outside.csv").exists()
    # The same workflow still answers for a real region.
    done = oxy_subprocess(root, "run", "w.workflow.yml", "--var", "r=North", "--format", "json")
    assert json.loads(done.stdout)["tasks"][0]["output"]["rows"] == [{"n": 2}]


def test_model_answer_in_quoted_literal_stays_a_value(tmp_path: Path) -> None:
    workflow = """\
    tasks:
      - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: "Which region?"}
      - {name: q, type: execute_sql, database: shop, sql_query: "SELECT COUNT(*) AS n FROM orders.csv WHERE region = '{{ ask }}'"}
    """
    root = make(tmp_path, workflow, cfg=config(answer="North" + ATTACK))
    done = oxy_subprocess(root, "run", "w.workflow.yml", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"columns": ["n"], "rows": [{"n": 0}]}
    assert not (tmp_path / "outside.csv").exists()


def test_var_in_unquoted_placeholder_is_bound(oxy, tmp_path: Path) -> None:
    root = make(
        tmp_path,
        sql_workflow(
            "SELECT COUNT(*) AS n FROM orders.csv WHERE amount > {{ n }}",
            "variables:\n  n: {default: 0}\n",
        ),
    )
    attack = "0; COPY (SELECT 'owned') TO '../outside.csv'"
    result = oxy(root, "run", "w.workflow.yml", "--var", f"n={attack}")
    assert result.exit_code == 3
    assert "Conversion Error" in result.stderr  # the text compared as a value, and failed
    assert not (tmp_path / "outside.csv").exists()


# -- the sandbox: what the SQL itself may do -------------------------------------------------


def outside_attacks(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """SQL that reaches outside the dataset -> (file that must not appear, message)."""
    secret = tmp_path / "secret.csv"
    secret.write_text("a\nSECRET-ROW\n")
    out = tmp_path / "outside.csv"
    return {
        "copy_to": (f"COPY (SELECT 'owned') TO '{out}'", "outside.csv"),
        "copy_relative": ("COPY (SELECT 'owned') TO '../outside.csv'", "outside.csv"),
        "attach": (f"ATTACH '{tmp_path / 'new.db'}' AS x", "new.db"),
        "export": (f"EXPORT DATABASE '{tmp_path / 'dump'}'", "dump"),
        "read_csv": (f"SELECT * FROM read_csv('{secret}')", ""),
        "read_relative": ("SELECT * FROM read_text('../config.yml')", ""),
    }


@pytest.mark.parametrize("read_only", [True, False])
@pytest.mark.parametrize(
    "attack", ["copy_to", "copy_relative", "attach", "export", "read_csv", "read_relative"]
)
def test_sql_cannot_reach_outside_the_dataset(
    oxy, tmp_path: Path, attack: str, read_only: bool
) -> None:
    sql, target = outside_attacks(tmp_path)[attack]
    # Through a variable that is the whole statement, so the run-time sandbox decides
    # (SQL written without templates is refused earlier, by validation: tested below).
    workflow = sql_workflow("{{ sql }}", f"variables:\n  sql: {{default: {json.dumps(sql)}}}\n")
    root = make(tmp_path, workflow, cfg=config(read_only=read_only))
    result = oxy(root, "run", "w.workflow.yml")
    assert result.exit_code == 3, result.stderr
    assert "Traceback" not in result.stderr and "SECRET-ROW" not in result.output
    if target:
        assert not (tmp_path / target).exists()
        assert not (root / target).exists()
    writes = attack in ("copy_to", "copy_relative", "attach", "export")
    if read_only and writes:
        assert "is read-only" in result.stderr and "read_only: false" in result.stderr
    else:
        assert "Permission Error" in result.stderr
        assert "only inside the database's dataset folder" in result.stderr


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("INSTALL httpfs", "installing or loading DuckDB extensions is not allowed"),
        ("LOAD httpfs", "installing or loading DuckDB extensions is not allowed"),
        ("SET enable_external_access = true", "SET/USE/RESET statements are not allowed"),
        ("SELECT 1; SELECT 2", "one SQL statement per task, got 2"),
        (
            "SELECT 1 AS one; COPY (SELECT 'owned') TO '../outside.csv'; SELECT 2",
            "one SQL statement per task, got 3",
        ),
    ],
)
def test_refused_statements(oxy, tmp_path: Path, sql: str, message: str) -> None:
    # Written in the workflow: a validation error (exit 2) with file:line:key ...
    root = make(tmp_path, sql_workflow(sql), cfg=config(read_only=False))
    result = oxy(root, "validate", "w.workflow.yml")
    assert result.exit_code == 2
    assert "w.workflow.yml:2:" in result.stderr and "tasks[0].sql_query" in result.stderr
    assert message in result.stderr
    assert oxy(root, "run", "w.workflow.yml").exit_code == 2
    # ... and from a value at run time: the task fails (exit 3) with the same reason.
    workflow = sql_workflow("{{ sql }}", f"variables:\n  sql: {{default: {json.dumps(sql)}}}\n")
    (root / "w.workflow.yml").write_text(workflow)
    result = oxy(root, "run", "w.workflow.yml")
    assert result.exit_code == 3 and message in result.stderr
    assert not (tmp_path / "outside.csv").exists()


def test_model_written_statement_is_sandboxed(oxy, tmp_path: Path) -> None:
    workflow = """\
    tasks:
      - {name: sql, type: agent, agent_ref: a.agent.yml, prompt: "Write SQL"}
      - {name: q, type: execute_sql, database: shop, sql_query: "{{ sql }}"}
    """
    answer = "COPY (SELECT 'owned') TO '../outside.csv'"
    root = make(tmp_path, workflow, cfg=config(read_only=False, answer=answer))
    result = oxy(root, "run", "w.workflow.yml")
    assert result.exit_code == 3 and "Permission Error" in result.stderr
    assert not (tmp_path / "outside.csv").exists()


# -- paths that leave the project ------------------------------------------------------------


def test_sql_file_outside_the_project_is_a_validation_error(oxy, tmp_path: Path) -> None:
    (tmp_path / "secret.sql").write_text("SECRET-CONTENT {{ broken\n")
    workflow = """\
    tasks:
      - name: q
        type: execute_sql
        database: shop
        sql_file: ../secret.sql
        export: {format: csv, path: ../out.csv}
        cache: {enabled: true, path: /tmp/oxy-cache.json}
    """
    root = make(tmp_path, workflow)
    for command in ("validate", "compile", "run"):
        result = oxy(root, command, "w.workflow.yml")
        assert result.exit_code == 2, (command, result.output)
        assert "SECRET-CONTENT" not in result.output
        for line, key in ((5, "sql_file"), (6, "export.path"), (7, "cache.path")):
            assert f"w.workflow.yml:{line}:" in result.stderr and f"tasks[0].{key}" in result.stderr
        assert "leaves the project folder" in result.stderr
    assert not (tmp_path / "out.csv").exists()


def test_templated_sql_file_outside_fails_at_run_time(oxy, tmp_path: Path) -> None:
    (tmp_path / "secret.sql").write_text("SECRET-CONTENT {{ broken\n")
    workflow = """\
    variables:
      name: {default: q}
    tasks:
      - {name: q, type: execute_sql, database: shop, sql_file: "{{ name }}.sql"}
    """
    root = make(tmp_path, workflow, **{"q.sql": "SELECT COUNT(*) AS n FROM orders.csv"})
    assert oxy(root, "run", "w.workflow.yml").exit_code == 0
    result = oxy(root, "run", "w.workflow.yml", "--var", "name=../secret")
    assert result.exit_code == 3
    assert "sql_file path '../secret.sql' leaves the project folder" in result.stderr
    assert "SECRET-CONTENT" not in result.output


def test_dataset_outside_the_project_is_a_config_error(oxy, tmp_path: Path) -> None:
    root = make(tmp_path, sql_workflow("SELECT 1"))
    (root / "config.yml").write_text(config().replace("dataset: data", "dataset: /etc"))
    result = oxy(root, "validate", "w.workflow.yml")
    assert result.exit_code == 2
    assert "config.yml:7:" in result.stderr and "databases[0].dataset" in result.stderr
    assert "leaves the project folder" in result.stderr


def test_sql_errors_are_one_short_line(oxy, tmp_path: Path) -> None:
    long_name = "x" * 2000
    root = make(
        tmp_path,
        sql_workflow(
            "SELECT {{ c | sql_identifier }} FROM orders.csv", "variables:\n  c: {default: a}\n"
        ),
    )
    result = oxy(root, "run", "w.workflow.yml", "--var", f"c={long_name}")
    assert result.exit_code == 3
    line = next(line for line in result.stderr.splitlines() if "Binder Error" in line)
    assert len(line) < 600 and line.endswith("...")


# -- what keeps working ----------------------------------------------------------------------


def run_json(oxy, root: Path, *args: str) -> dict:
    result = oxy(root, "run", "w.workflow.yml", "--format", "json", "-q", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_quoted_and_numeric_placeholders(oxy, tmp_path: Path) -> None:
    workflow = sql_workflow(
        "SELECT region, SUM(amount) AS s FROM orders.csv WHERE region = '{{ r }}' "
        "AND amount >= {{ min }} -- for {{ r }}\nGROUP BY region LIMIT {{ n }}",
        "variables:\n  r: {default: North}\n  min: {type: integer, default: 5}\n  n: {type: integer, default: 1}\n",
    )
    root = make(tmp_path, workflow)
    assert run_json(oxy, root)["output"]["rows"] == [{"region": "North", "s": 15}]
    assert run_json(oxy, root, "--var", "min=6")["output"]["rows"] == [{"region": "North", "s": 10}]
    # A quote in the value is content, in the literal and in the comment.
    assert run_json(oxy, root, "--var", "r=O'Hare\nSELECT")["output"]["rows"] == []


def test_model_written_statement_with_task_variable_placeholders(oxy, tmp_path: Path) -> None:
    # oxy's workflows/cache.workflow.yml: a model writes the SQL once, with a {{ placeholder }}
    # that each loop iteration fills from the task's own variables.
    answer = "SELECT SUM(amount) AS s FROM orders.csv WHERE region = '{{grouping_value}}'"
    workflow = """\
    tasks:
      - {name: sql, type: agent, agent_ref: a.agent.yml, prompt: "Write SQL"}
      - name: groupings
        type: loop_sequential
        values: ["North", "South", "O'Hare"]
        tasks:
          - name: q
            type: execute_sql
            database: shop
            sql_query: "{{sql}}"
            variables:
              grouping_value: "{{groupings.value}}"
      - {name: out, type: formatter, template: "{% for g in groupings %}{{ g.q.s[0] }} {% endfor %}"}
    """
    root = make(tmp_path, workflow, cfg=config(answer=answer))
    assert run_json(oxy, root)["output"] == "15 25 None "


def test_model_written_statement_cannot_read_other_values(oxy, tmp_path: Path) -> None:
    answer = "SELECT '{{ secret }}' AS leaked"
    workflow = """\
    variables:
      secret: {default: hunter2}
    tasks:
      - {name: sql, type: agent, agent_ref: a.agent.yml, prompt: "Write SQL"}
      - {name: q, type: execute_sql, database: shop, sql_query: "{{ sql }}"}
    """
    root = make(tmp_path, workflow, cfg=config(answer=answer))
    result = oxy(root, "run", "w.workflow.yml")
    assert result.exit_code == 3
    assert "uses {{ secret }}, which is not one of this task's variables" in result.stderr
    assert "hunter2" not in result.output


def test_identifier_and_raw_sql_opt_ins(oxy, tmp_path: Path) -> None:
    workflow = sql_workflow(
        "SELECT {{ col | sql_identifier }} AS v FROM {{ table | sql_identifier }} "
        "ORDER BY {{ order | raw_sql }} LIMIT 1",
        "variables:\n  col: {default: amount}\n  table: {default: orders.csv}\n"
        "  order: {default: amount DESC}\n",
    )
    root = make(tmp_path, workflow)
    assert run_json(oxy, root)["output"]["rows"] == [{"v": 25}]
    assert run_json(oxy, root, "--var", "order=amount ASC")["output"]["rows"] == [{"v": 5}]
    # An identifier is only ever a name: a quote in it cannot end it.
    result = oxy(root, "run", "w.workflow.yml", "--var", 'col=amount" FROM orders.csv; --')
    assert result.exit_code == 3 and "Binder Error" in result.stderr


def test_raw_sql_refuses_a_model_answer(oxy, tmp_path: Path) -> None:
    workflow = """\
    tasks:
      - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: "Order by?"}
      - {name: q, type: execute_sql, database: shop, sql_query: "SELECT 1 ORDER BY {{ ask | raw_sql }}"}
    """
    root = make(tmp_path, workflow, cfg=config(answer="1; COPY (SELECT 1) TO '../outside.csv'"))
    result = oxy(root, "run", "w.workflow.yml")
    assert result.exit_code == 2  # the template misuses raw_sql: bad input, like any template error
    assert "raw_sql prints SQL text only from a workflow variable's own value" in result.stderr
    assert not (tmp_path / "outside.csv").exists()


def test_writable_database_writes_inside_its_dataset(oxy, tmp_path: Path) -> None:
    workflow = sql_workflow(
        "COPY (SELECT region FROM orders.csv WHERE region = '{{ r }}') TO '~/{{ r }}.csv'",
        "variables:\n  r: {default: North}\n",
    )
    root = make(tmp_path, workflow, cfg=config(read_only=False))
    result = oxy(root, "run", "w.workflow.yml")
    assert result.exit_code == 0, result.stderr
    assert (root / "data" / "North.csv").read_text() == "region\nNorth\nNorth\n"
    # The same statement on a read-only database is refused before it runs.
    (root / "config.yml").write_text(config())
    result = oxy(root, "run", "w.workflow.yml", "--var", "r=South")
    assert result.exit_code == 3 and "is read-only" in result.stderr
    assert not (root / "data" / "South.csv").exists()


def test_writable_database_file(oxy, tmp_path: Path) -> None:
    cfg = config(read_only=False).replace("dataset: data", "path: shop.duckdb")
    workflow = """\
    tasks:
      - {name: make, type: execute_sql, database: shop, sql_query: "CREATE TABLE t AS SELECT 42 AS v"}
      - {name: read, type: execute_sql, database: shop, sql_query: "SELECT v FROM t", depends_on: [make]}
    """
    root = make(tmp_path, workflow, cfg=cfg)
    assert run_json(oxy, root)["output"]["rows"] == [{"v": 42}]
    assert (root / "shop.duckdb").is_file()


def test_a_same_named_file_in_the_working_directory_is_not_read(
    oxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQL runs in the dataset folder (the worker's working directory), never in the user's.
    root = make(tmp_path, sql_workflow("SELECT COUNT(*) AS n, MIN(region) AS r FROM orders.csv"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "orders.csv").write_text("region,amount\nFAKE,1\n")
    monkeypatch.chdir(elsewhere)
    for sql in ("orders.csv", "'orders.csv'", "'~/orders.csv'"):
        (root / "w.workflow.yml").write_text(
            sql_workflow(f"SELECT COUNT(*) AS n, MIN(region) AS r FROM {sql}")
        )
        result = CliRunner().invoke(app, ["run", str(root / "w.workflow.yml"), "--format", "json"])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["output"]["rows"] == [{"n": 3, "r": "North"}]


def test_given_variables_are_not_rendered_as_templates(oxy, tmp_path: Path) -> None:
    workflow = """\
    variables:
      secret: {default: hunter2}
      note: {default: "n/a"}
    tasks:
      - {name: t, type: formatter, template: "{{ note }}"}
    """
    root = make(tmp_path, workflow)
    assert run_json(oxy, root, "--var", "note={{ secret }}")["output"] == "{{ secret }}"


# -- the binding rules, one by one -----------------------------------------------------------


def bind(source: str, **context: object):
    return render_sql(SqlTemplateRef(source), context, trusted=frozenset({"trusted"}))


@pytest.mark.parametrize(
    ("source", "text", "params"),
    [
        ("WHERE a = {{ v }}", "WHERE a = $1", ("x'y",)),
        ("WHERE a = '{{ v }}'", "WHERE a = 'x''y'", ()),
        ("WHERE a = '%{{ v }}%'", "WHERE a = '%x''y%'", ()),
        ("WHERE a = E'{{ w }}'", "WHERE a = E'a\\\\''b'", ()),
        ('SELECT "{{ v }}"', 'SELECT "x\'y"', ()),
        ('SELECT "{{ q }}"', 'SELECT "a""b"', ()),
        ("SELECT 1 -- {{ n }}", "SELECT 1 -- a b", ()),
        ("SELECT 1 /* {{ c }} */", "SELECT 1 /* * / x / * */", ()),
        ("SELECT {{ v }}, {{ i }}, {{ none }}", "SELECT $1, $2, $3", ("x'y", 3, None)),
        ("SELECT {{ items }}", "SELECT $1", ([1, "a"],)),
        ("SELECT {{ q | sql_identifier }}", 'SELECT "a""b"', ()),
        ("SELECT {{ [v, q] | sql_identifier }}", 'SELECT "x\'y", "a""b"', ()),
        ("SELECT {{ t | raw_sql }}", "SELECT trusted", ()),
        ("{% for x in items %}{{ x }},{% endfor %}", "$1,$2,", (1, "a")),
    ],
)
def test_binding_rules(source: str, text: str, params: tuple) -> None:
    bound = bind(
        source, v="x'y", w="a\\'b", q='a"b', n="a\nb", c="*/ x /*", i=3, items=[1, "a"], t="trusted"
    )
    assert (bound.text, bound.params) == (text, params)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("SELECT $$ {{ v }} $$", "inside a $$-quoted string cannot be escaped"),
        ("SELECT tbl_{{ v }}", "cannot be part of one"),
        ("SELECT {{ v }}1", "cannot be part of one"),
        ("SELECT '{{ v | sql_identifier }}'", "use it outside quotes"),
        ("SELECT {{ v | raw_sql }}", "raw_sql prints SQL text only"),
        ("{% macro m() %}x{% endmacro %}SELECT {{ m() }}", "{% macro %} is not allowed in SQL"),
        ("{% set s %}{{ v }}{% endset %}SELECT {{ s }}", "{% set %}...{% endset %} is not allowed"),
        ("SELECT {{ v | sqlsafe }}", "No filter named 'sqlsafe'"),
    ],
)
def test_binding_refusals(source: str, message: str) -> None:
    with pytest.raises(LoadError) as caught:
        bind(source, v="x")
    assert message in str(caught.value)


def test_whole_statement_from_one_value() -> None:
    bound = render_sql(
        SqlTemplateRef("  {{ sql }}\n"),
        {"sql": "SELECT * FROM t WHERE g = '{{g}}' AND h = {{ g }}"},
        placeholders={"g": "it's"},
    )
    assert bound.upstream
    assert (bound.text, bound.params) == ("SELECT * FROM t WHERE g = 'it''s' AND h = $1", ("it's",))


def test_sandbox_settings_hold_for_every_query(tmp_path: Path) -> None:
    # Queries run on cursors: a setting made for the first connection only would not hold.
    import asyncio

    from oxyeval.workflow.sql import Databases

    root = make(tmp_path, sql_workflow("SELECT 1"))
    runner = Databases({"shop": {"name": "shop", "type": "duckdb", "dataset": "data"}}, root)
    names = (
        "enable_external_access",
        "lock_configuration",
        "autoload_known_extensions",
        "autoinstall_known_extensions",
        "python_enable_replacements",
        "allow_persistent_secrets",
        "home_directory",
        "allowed_directories",
    )
    sql = "SELECT " + ", ".join(f"current_setting('{n}') AS {n}" for n in names)
    try:
        row = asyncio.run(runner.query("shop", sql)).rows[0]
    finally:
        runner.close()
    dataset = str((root / "data").resolve())
    assert row["enable_external_access"] is False and row["lock_configuration"] is True
    assert (
        row["autoload_known_extensions"] is False and row["autoinstall_known_extensions"] is False
    )
    assert row["python_enable_replacements"] is False and row["allow_persistent_secrets"] is False
    assert row["home_directory"] == dataset
    assert dataset + "/" in row["allowed_directories"]
    assert not any(str(root) in d and "data" not in d for d in row["allowed_directories"])
