"""The SQL sandbox enforced from the engine's side.

Each attack is a real ``oxy run`` (in-process CLI, or a subprocess where signals and the
process's working directory matter) started from a folder outside the project, so a
relative path that resolved against the user's working directory would land there; each
asserts that nothing was written outside the dataset (nor the dataset changed on a
read-only database), and the exit code and message.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.workflow import _sqlclient
from oxyeval.workflow.sql import Databases

ORDERS = "region,amount\nNorth,10\nSouth,25\nNorth,5\n"
REPO = Path(__file__).resolve().parents[2]


def config(database: str = "dataset: data", **limits: object) -> str:
    extra = "".join(f", {k}: {v}" for k, v in limits.items())
    return textwrap.dedent(
        f"""\
        models:
          - {{name: m, vendor: mock, outputs: ["x"]}}
        databases:
          - {{name: shop, type: duckdb, {database}{extra}}}
        """
    )


def project(tmp_path: Path, sql: str = "{{ sql }}", cfg: str | None = None) -> Path:
    """tmp_path/proj with data/orders.csv; tmp_path/elsewhere is the user's folder."""
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    (root / "data" / "orders.csv").write_text(ORDERS)
    (root / "config.yml").write_text(cfg or config())
    variables = "variables:\n  sql: {default: 'SELECT 1'}\n" if "{{ sql }}" in sql else ""
    (root / "w.workflow.yml").write_text(
        f"{variables}tasks:\n"
        f"  - {{name: q, type: execute_sql, database: shop, sql_query: {json.dumps(sql)}}}\n"
    )
    (tmp_path / "elsewhere").mkdir()
    return root


def listing(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text(errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def oxy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``oxy ARGS`` in-process, started from tmp_path/elsewhere (outside the project)."""

    def invoke(*args: str):
        monkeypatch.chdir(tmp_path / "elsewhere")
        return CliRunner().invoke(app, list(args))

    return invoke


def oxy_process(tmp_path: Path, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OXY_DB": str(tmp_path / "history.db")}
    return subprocess.Popen(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=tmp_path / "elsewhere",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


# -- 1, 2: the statement as DuckDB parses it -------------------------------------------------


WRITES_INSIDE_READS = [
    "EXPLAIN ANALYZE COPY (SELECT 'x' AS a) TO 'orders.csv'",
    "EXPLAIN ANALYZE COPY (SELECT 'x' AS a) TO '~/orders.csv'",
    "EXPLAIN (ANALYZE, FORMAT json) COPY (SELECT 'x' AS a) TO 'orders.csv'",
    "explain  /* c */ analyse COPY (SELECT 'x' AS a) TO 'orders.csv'",
    "EXPLAIN ANALYZE INSERT INTO t SELECT 1",
    "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
]


@pytest.mark.parametrize("sql", WRITES_INSIDE_READS)
def test_explain_is_classified_as_what_it_runs(oxy, tmp_path: Path, sql: str) -> None:
    root = project(tmp_path)
    result = oxy("run", str(root / "w.workflow.yml"), "--var", f"sql={sql}")
    assert result.exit_code == 3, result.output
    assert "is read-only" in result.stderr and "read_only: false" in result.stderr
    assert listing(tmp_path / "elsewhere") == {}
    assert listing(root / "data") == {"orders.csv": ORDERS}
    # Written in the file, it is a validation error with its line, before any run.
    static = project(tmp_path / "static", sql=sql)
    result = oxy("validate", str(static / "w.workflow.yml"))
    assert result.exit_code == 2 and "w.workflow.yml:2:" in result.stderr


@pytest.mark.parametrize(
    "sql",
    [
        "IMPORT DATABASE '~/pwn'",
        "PRAGMA import_database('~/pwn')",
        "import  /* x */ database 'pwn'",
    ],
)
def test_import_database_is_refused(oxy, tmp_path: Path, sql: str) -> None:
    root = project(tmp_path)
    outside = tmp_path / "pwned.csv"
    pwn = root / "data" / "pwn"
    pwn.mkdir()
    (pwn / "schema.sql").write_text(
        f"COPY (SELECT 'owned') TO '{outside}';\nATTACH '{tmp_path / 'x.db'}' AS x;\n"
    )
    (pwn / "load.sql").write_text("COPY (SELECT 'owned') TO '~/orders.csv';\n")
    result = oxy("run", str(root / "w.workflow.yml"), "--var", f"sql={sql}")
    assert result.exit_code == 3
    assert "IMPORT DATABASE is not allowed" in result.stderr
    assert not outside.exists() and not (tmp_path / "x.db").exists()
    assert (root / "data" / "orders.csv").read_text() == ORDERS


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("PRAGMA enable_profiling", "PRAGMA enable_profiling is not allowed"),
        ("PRAGMA profiling_output='/tmp/x'", "SET/USE/RESET statements are not allowed"),
        ("CHECKPOINT", "CHECKPOINT statements need 'read_only: false'"),
        ("CALL force_checkpoint()", "CHECKPOINT statements need 'read_only: false'"),
        ("PREPARE p AS SELECT 1", "PREPARE statements are not allowed"),
    ],
)
def test_other_statements_are_classified_by_what_they_do(
    oxy, tmp_path: Path, sql: str, message: str
) -> None:
    root = project(tmp_path)
    result = oxy("run", str(root / "w.workflow.yml"), "--var", f"sql={sql}")
    assert result.exit_code == 3 and message in result.stderr, result.stderr


def test_reads_still_work(oxy, tmp_path: Path) -> None:
    root = project(tmp_path)
    for sql in (
        "PRAGMA show_tables",
        "EXPLAIN SELECT * FROM orders.csv",
        "EXPLAIN ANALYZE SELECT count(*) FROM orders.csv",
        "CALL pragma_version()",
        "SELECT count(*) AS n FROM orders.csv",
    ):
        result = oxy("run", str(root / "w.workflow.yml"), "--var", f"sql={sql}", "--format", "json")
        assert result.exit_code == 0, (sql, result.stderr)


# -- 3: relative paths never mean the user's folder -------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "COPY (SELECT 'x' AS a) TO 'ord'\n'ers2.csv'",
        "COPY (SELECT 'x' AS a) TO 'orders2.csv'",
        "ATTACH 'ne'\n'w.db' AS n",
    ],
)
def test_writes_of_a_writable_database_stay_in_its_dataset(oxy, tmp_path: Path, sql: str) -> None:
    root = project(tmp_path, cfg=config("dataset: data, read_only: false"))
    result = oxy("run", str(root / "w.workflow.yml"), "--var", f"sql={sql}")
    assert result.exit_code == 0, result.stderr
    assert listing(tmp_path / "elsewhere") == {}
    written = set(listing(root / "data")) - {"orders.csv"}
    assert written in (
        {"orders2.csv"},
        {"ers2.csv"},
        {"new.db"},
        {"new.db.wal"},
        {"new.db", "new.db.wal"},
    )
    outside = set(listing(tmp_path)) - {f"proj/{n}" for n in listing(root)}
    assert outside == set()


def test_sql_runs_with_the_dataset_as_its_working_folder(oxy, tmp_path: Path) -> None:
    root = project(tmp_path)
    (tmp_path / "elsewhere" / "orders.csv").write_text("region,amount\nFAKE,1\n")
    result = oxy(
        "run",
        str(root / "w.workflow.yml"),
        "--format",
        "json",
        "--var",
        "sql=SELECT min(region) AS r FROM read_csv('orders.csv')",
    )
    assert json.loads(result.stdout)["output"]["rows"] == [{"r": "North"}]


# -- 4: extensions and the network ------------------------------------------------------------


def test_an_sqlite_database_file_is_a_clear_error(oxy, tmp_path: Path) -> None:
    root = project(tmp_path, cfg=config("path: shop.db"))
    sqlite3.connect(root / "shop.db").execute("CREATE TABLE t (a)").connection.close()
    for command in ("validate", "run"):
        result = oxy(command, str(root / "w.workflow.yml"))
        assert result.exit_code == 2, result.output
        assert "config.yml:4:" in result.stderr and "databases[0].path" in result.stderr
        assert "is an SQLite database" in result.stderr and "never loads" in result.stderr


def test_the_worker_opens_no_extension_even_when_asked(tmp_path: Path) -> None:
    """Past the load-time check (a file swapped in later), DuckDB is told before it opens
    the file that it may not install or load anything: a clear failure, no download."""
    db = tmp_path / "shop.db"
    sqlite3.connect(db).execute("CREATE TABLE t (a)").connection.close()
    worker = _sqlclient.SqlWorker(_setup(tmp_path, path=str(db)))
    with pytest.raises(_sqlclient.WorkerError) as caught:
        worker.submit("SELECT 1", [], _options())
    assert "sqlite" in caught.value.message and "not found" in caught.value.message


def _kernel_sandbox() -> int:
    code = "from oxyeval.workflow._landlock import restrict; print(restrict([]))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return int(done.stdout.strip() or 0)


needs_landlock = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _kernel_sandbox() < 4,
    reason="the kernel has no Landlock with network rules (Linux 6.7+); the worker then "
    "relies on DuckDB's settings and the statement checks alone",
)


@needs_landlock
def test_landlock_denies_writes_outside_and_any_tcp_connection(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        port = server.getsockname()[1]
        code = textwrap.dedent(
            f"""
            import socket
            from oxyeval.workflow._landlock import restrict
            assert restrict([{str(allowed)!r}]) >= 4
            open({str(allowed / "ok")!r}, 'w').write('x')
            for attempt in ('write', 'connect'):
                try:
                    if attempt == 'write':
                        open({str(tmp_path / "outside")!r}, 'w')
                    else:
                        socket.create_connection(('127.0.0.1', {port}), timeout=1)
                    print(attempt, 'ALLOWED')
                except PermissionError:
                    print(attempt, 'denied')
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        with pytest.raises(TimeoutError):
            server.accept()  # nothing ever reached the listener
    assert done.stdout.split() == ["write", "denied", "connect", "denied"], done.stderr
    assert (allowed / "ok").exists() and not (tmp_path / "outside").exists()


@needs_landlock
def test_the_kernel_stops_a_write_the_checks_let_through(tmp_path: Path) -> None:
    """The layers under the statement check hold alone: a read-only database's worker,
    asked to run a COPY as if it were allowed, cannot write into the dataset."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "orders.csv").write_text(ORDERS)
    worker = _sqlclient.SqlWorker(_setup(tmp_path, dataset=str(data)))
    try:
        _qid, future = worker.submit(
            "COPY (SELECT 'owned' AS a) TO '~/orders.csv'", [], _options(writable=True)
        )
        with pytest.raises(_sqlclient.WorkerError) as caught:
            future.result(timeout=30)
        assert worker.abi is not None and worker.abi >= 4
    finally:
        worker.close()
    assert "Permission denied" in caught.value.message or "IO Error" in caught.value.message
    assert (data / "orders.csv").read_text() == ORDERS


def test_the_worker_environment_holds_no_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-must-not-see-this-1234")
    worker = _sqlclient.SqlWorker(_setup(tmp_path))
    try:
        _qid, future = worker.submit("SELECT 1 AS one", [], _options())
        assert future.result(timeout=30)[1] == [[1]]  # (columns, rows, truncated)
        assert worker._proc is not None
        environ = Path(f"/proc/{worker._proc.pid}/environ")
        if environ.exists():
            assert b"sk-worker-must-not-see-this" not in environ.read_bytes()
            assert b"OPENAI_API_KEY" not in environ.read_bytes()
    finally:
        worker.close()


def _setup(tmp_path: Path, **overrides: object) -> dict:
    return {
        "database": "shop",
        "dataset": None,
        "dataset_shown": None,
        "path": None,
        "path_dir": None,
        "writable": False,
        "memory_limit": "1GB",
        "threads": 1,
        "max_temp": "1GB",
        **overrides,
    }


def _options(**overrides: object) -> dict:
    return {
        "writable": False,
        "select_only": False,
        "timeout": 10.0,
        "max_rows": 100,
        "max_chars": 1_000_000,
        **overrides,
    }


# -- 5: time, memory and rows -----------------------------------------------------------------


def test_a_query_past_its_deadline_is_stopped(oxy, tmp_path: Path) -> None:
    root = project(tmp_path, cfg=config(timeout=1))
    started = time.monotonic()
    result = oxy(
        "run",
        str(root / "w.workflow.yml"),
        "--var",
        "sql=SELECT count(*) FROM range(100000000000000)",
    )
    assert time.monotonic() - started < 15
    assert result.exit_code == 3
    assert "the query ran past 1 s" in result.stderr and "set 'timeout'" in result.stderr


def test_sigterm_ends_a_running_query_and_the_process(tmp_path: Path) -> None:
    root = project(tmp_path)  # the default timeout (60 s): only the signal can stop it
    proc = oxy_process(
        tmp_path,
        "run",
        str(root / "w.workflow.yml"),
        "--format",
        "json",
        "--var",
        "sql=SELECT count(*) FROM range(100000000000000)",
    )
    time.sleep(1.5)  # the worker started and the query runs
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the process did not end after SIGTERM")
    assert proc.returncode == 3, err
    assert "interrupted (SIGTERM)" in err
    assert json.loads(out)["status"] == "interrupted"


def test_results_are_capped_in_rows_not_memory(oxy, tmp_path: Path) -> None:
    root = project(tmp_path, cfg=config(max_rows=100))
    result = oxy(
        "run",
        str(root / "w.workflow.yml"),
        "--format",
        "json",
        "--var",
        "sql=SELECT * FROM range(200000000)",
    )
    assert result.exit_code == 0, result.stderr
    output = json.loads(result.stdout)["output"]
    assert len(output["rows"]) == 100 and output["truncated"] is True
    assert "returned more than 100 rows" in result.stderr


def test_a_huge_value_is_an_error_not_a_memory_error(oxy, tmp_path: Path) -> None:
    root = project(tmp_path)
    result = oxy(
        "run", str(root / "w.workflow.yml"), "--var", "sql=SELECT repeat('x', 100000000) AS v"
    )
    assert result.exit_code == 3
    assert "one row is larger than 64,000,000 characters" in result.stderr


def test_the_sandbox_settings_are_fixed_in_the_worker(tmp_path: Path) -> None:
    root = project(tmp_path, cfg=config(memory_limit="512MB", threads=1))
    from oxyeval.project import load_project

    databases = Databases(load_project(root).databases, root)
    names = ("memory_limit", "threads", "lock_configuration", "enable_external_access")
    sql = "SELECT " + ", ".join(f"current_setting('{n}') AS {n}" for n in names)
    try:
        row = asyncio.run(databases.query("shop", sql)).rows[0]
    finally:
        databases.close()
    assert row["threads"] == 1 and row["lock_configuration"] is True
    assert row["enable_external_access"] is False
    assert row["memory_limit"].replace(" ", "") in ("488.2MiB", "512.0MB", "512MB")


def test_concurrent_queries_share_one_worker(tmp_path: Path) -> None:
    root = project(tmp_path)
    from oxyeval.project import load_project

    databases = Databases(load_project(root).databases, root)

    async def go() -> list[int]:
        results = await asyncio.gather(
            *(databases.query("shop", f"SELECT {i} AS v") for i in range(20))
        )
        return [r.rows[0]["v"] for r in results]

    try:
        assert asyncio.run(go()) == list(range(20))
        assert len(_sqlclient._workers) >= 1
    finally:
        databases.close()


# -- 6: where a value stands is DuckDB's call -------------------------------------------------


def test_dollar_quote_tags_are_read_as_duckdb_reads_them(oxy, tmp_path: Path) -> None:
    sql = "SELECT $é$it's$é$ AS t, region FROM orders.csv WHERE region = {{ r }} -- '"
    root = project(tmp_path, sql=sql)
    (root / "w.workflow.yml").write_text(
        "variables:\n  r: {default: North}\ntasks:\n"
        f"  - {{name: q, type: execute_sql, database: shop, sql_query: {json.dumps(sql)}}}\n"
    )
    attack = "region IS NOT NULL UNION ALL SELECT 99, 99"
    result = oxy("run", str(root / "w.workflow.yml"), "--format", "json", "--var", f"r={attack}")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["output"]["rows"] == []
    result = oxy("run", str(root / "w.workflow.yml"), "--format", "json")
    assert len(json.loads(result.stdout)["output"]["rows"]) == 2


def test_a_disagreement_with_duckdb_is_refused_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should our reading of where a value stands ever differ from DuckDB's, the final
    text is checked with DuckDB's tokenizer and the statement refused."""
    from oxyeval.errors import LoadError
    from oxyeval.workflow import sqltemplate

    def wrong(text: str):  # calls everything a string: a lexer that is out of step
        yield "string", 0, len(text)

    monkeypatch.setattr(sqltemplate, "sql_segments", wrong)
    ref = sqltemplate.SqlTemplateRef("SELECT 1 WHERE a = {{ v }}")
    with pytest.raises(LoadError, match="reads differently to DuckDB"):
        sqltemplate.render_sql(ref, {"v": "1 OR 1=1"})


@pytest.mark.parametrize(
    "source",
    [
        "SELECT X'{{ v }}'",
        "SELECT B'{{ v }}'",
        "SELECT $tag$ {{ v }} $tag$",
        "SELECT $é$ {{ v }} $é$",
    ],
)
def test_values_in_literals_without_escapes_are_refused(source: str) -> None:
    from oxyeval.errors import LoadError
    from oxyeval.workflow.sqltemplate import SqlTemplateRef, render_sql

    with pytest.raises(LoadError, match="cannot be escaped"):
        render_sql(SqlTemplateRef(source), {"v": "'; SELECT 1; --"})


# -- 21, 22: what validate says about SQL -----------------------------------------------------


def test_a_missing_dataset_file_is_named_with_a_suggestion(oxy, tmp_path: Path) -> None:
    root = project(tmp_path, sql="SELECT * FROM citys.csv")
    (root / "data" / "cities.csv").write_text("name\nOslo\n")
    for command in ("validate", "run"):
        result = oxy(command, str(root / "w.workflow.yml"))
        assert result.exit_code == 2, result.output
        assert "w.workflow.yml:2:" in result.stderr
        assert "no file citys.csv in data/ (did you mean cities.csv?)" in result.stderr
    # Written by a value at run time: the same words, as the task's failure.
    dynamic = project(tmp_path / "dyn")
    result = oxy("run", str(dynamic / "w.workflow.yml"), "--var", "sql=SELECT * FROM 'orders.cvs'")
    assert result.exit_code == 3
    assert "no file orders.cvs in data/ (did you mean orders.csv?)" in result.stderr


def test_a_missing_dataset_folder_is_a_config_error(oxy, tmp_path: Path) -> None:
    root = project(tmp_path, cfg=config("dataset: dta"))
    result = oxy("validate", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert "config.yml:4:" in result.stderr and "databases[0].dataset" in result.stderr
    assert "dataset folder 'dta' does not exist" in result.stderr


def test_deeply_nested_sql_is_a_clear_error(oxy, tmp_path: Path) -> None:
    sql = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    root = project(tmp_path, sql=sql)
    result = oxy("validate", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert (
        "Max expression depth" in result.stderr and "SET max_expression_depth" not in result.stderr
    )
    assert "internal error" not in result.output and "Traceback" not in result.output


def test_a_worker_killed_mid_query_fails_that_query_only(tmp_path: Path) -> None:
    root = project(tmp_path)
    from oxyeval.project import load_project

    databases = Databases(load_project(root).databases, root)

    async def go() -> tuple[str, int]:
        slow = asyncio.ensure_future(
            databases.query("shop", "SELECT count(*) FROM range(100000000000000)")
        )
        await asyncio.sleep(1.0)
        worker = databases._workers["shop"]
        threading.Thread(target=worker.kill).start()
        with pytest.raises(Exception) as caught:
            await slow
        after = await databases.query("shop", "SELECT count(*) AS n FROM orders.csv")
        return str(caught.value), after.rows[0]["n"]

    try:
        message, n = asyncio.run(go())
    finally:
        databases.close()
    assert "the SQL worker stopped" in message
    assert n == 3  # a new worker took over


# -- second pass: what an attacker's review of the above found ---------------------------------


def test_the_worker_address_space_is_capped_by_the_kernel(tmp_path: Path) -> None:
    """memory_limit bounds DuckDB's buffer manager only; list functions and the Python
    objects of a result allocate outside it, so the kernel caps the whole worker."""
    from oxyeval.workflow.sql import WORKER_HEADROOM

    root = project(tmp_path, cfg=config(memory_limit="100MB", threads=1))
    from oxyeval.project import load_project

    databases = Databases(load_project(root).databases, root)
    try:
        asyncio.run(databases.query("shop", "SELECT 1"))
        pid = databases._workers["shop"]._proc.pid  # type: ignore[union-attr]
        limits = Path(f"/proc/{pid}/limits")
        if not limits.exists():
            pytest.skip("no /proc here to read the worker's limits from")
        line = next(x for x in limits.read_text().splitlines() if x.startswith("Max address space"))
        assert int(line.split()[3]) == 100 * 10**6 + WORKER_HEADROOM + 16 * 2**20
        with pytest.raises(Exception, match="more memory than the database's memory_limit"):
            asyncio.run(databases.query("shop", "SELECT range(30000000) AS r"))
        assert asyncio.run(databases.query("shop", "SELECT 2 AS v")).rows == [{"v": 2}]
    finally:
        databases.close()


def test_the_character_cap_counts_what_is_sent_however_deep(tmp_path: Path) -> None:
    worker = _sqlclient.SqlWorker(_setup(tmp_path))
    deep = "[" * 60 + "range(200000)" + "]" * 60
    try:
        _qid, future = worker.submit(f"SELECT {deep} AS d FROM range(5)", [], _options())
        with pytest.raises(_sqlclient.WorkerError, match="one row is larger than 1,000,000"):
            future.result(timeout=30)
        deeper = "[" * 101 + "1" + "]" * 101
        _qid, future = worker.submit(f"SELECT {deeper} AS d", [], _options())
        with pytest.raises(_sqlclient.WorkerError, match="more than 100 deep"):
            future.result(timeout=30)
    finally:
        worker.close()


def test_values_json_has_no_type_for_are_written_as_text(oxy, tmp_path: Path) -> None:
    root = project(tmp_path)
    sql = "SELECT uuid() AS u, 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS i, [-'inf'::FLOAT] AS l"
    result = oxy("run", str(root / "w.workflow.yml"), "--format", "json", "--var", f"sql={sql}")
    assert result.exit_code == 0, result.output

    def strict(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    row = json.loads(result.stdout, parse_constant=strict)["output"]["rows"][0]
    assert len(row["u"]) == 36 and row["n"] == "NaN" and row["i"] == "Infinity"
    assert row["l"] == ["-Infinity"]


def test_a_query_cut_short_by_another_query_s_kill_runs_again(tmp_path: Path) -> None:
    """The worker is shared: stopping it for one query past its deadline cuts short the
    others; on a read-only database they are reads, and run again on the new worker."""
    root = project(tmp_path)
    from oxyeval.project import load_project

    databases = Databases(load_project(root).databases, root)

    async def go() -> tuple[int, int, int]:
        await databases.query("shop", "SELECT 1")
        worker = databases._workers["shop"]
        first = worker._proc.pid  # type: ignore[union-attr]
        sibling = asyncio.ensure_future(
            databases.query("shop", "SELECT sum(range) AS n FROM range(2000000000)")
        )
        await asyncio.sleep(0.3)
        worker.kill("another query ran past its deadline")
        n = (await sibling).rows[0]["n"]
        return first, worker._proc.pid, n  # type: ignore[union-attr]

    try:
        first, second, n = asyncio.run(go())
    finally:
        databases.close()
    assert n == 1999999999 * 2000000000 // 2 and first != second


@pytest.mark.parametrize(
    ("database", "where", "message"),
    [
        (
            "type: duckdb, dataset: data, path: sub/new.duckdb, read_only: false",
            "config.yml:4:",
            "the folder of sub/new.duckdb does not exist",
        ),
        ("type: duckdb, path: 's3://b/x.duckdb'", "config.yml:4:", "is not a local DuckDB file"),
        ("type: duckdb, dataset: ., read_only: false", "config.yml:4:", "is the project folder"),
    ],
)
def test_database_settings_a_run_would_reject_fail_validate(
    oxy, tmp_path: Path, database: str, where: str, message: str
) -> None:
    root = project(tmp_path, sql="SELECT 1")
    (root / "config.yml").write_text(config().replace("type: duckdb, dataset: data", database))
    result = oxy("validate", str(root / "w.workflow.yml"))
    assert result.exit_code == 2, result.output
    assert where in result.stderr and message in result.stderr


def test_an_invalid_character_in_sql_is_replaced_like_any_text(oxy, tmp_path: Path) -> None:
    root = project(tmp_path, sql="SELECT '{{ \"\\ud800\" }}' AS s")
    result = oxy("run", str(root / "w.workflow.yml"), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"]["rows"] == [{"s": "\ufffd"}]
    assert "replaced by U+FFFD" in result.stderr


def test_a_killed_run_leaves_no_spill_files(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal
        from pathlib import Path
        from oxyeval.workflow.sql import Databases
        d = Databases({{"shop": {{"name": "shop", "type": "duckdb"}}}}, Path({str(tmp_path)!r}))
        asyncio.run(d.query("shop", "SELECT 1"))
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup of ours runs
        """
    )
    import tempfile

    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    child.communicate()
    assert child.returncode == -signal.SIGKILL
    # Named after the process that made it: other runs on this machine make their own.
    left = set(Path(tempfile.gettempdir()).glob(f"oxyeval-sql-{child.pid}-*"))
    assert len(left) == 1
    (folder,) = left
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(folder.iterdir()):
        time.sleep(0.05)  # the worker saw its stdin close and empties its folder
    assert list(folder.iterdir()) == []
    _sqlclient._sweep()  # the next worker started removes what a dead process left
    assert not folder.exists()


def test_sql_longer_than_the_limit_is_refused_before_parsing(oxy, tmp_path: Path) -> None:
    from oxyeval.workflow._sqlsyntax import MAX_SQL_CHARS

    root = project(tmp_path)
    (root / "q.sql").write_text("SELECT " + ",".join(["1"] * (MAX_SQL_CHARS // 2)))
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: shop, sql_file: q.sql}\n"
    )
    result = oxy("validate", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert f"statements are limited to {MAX_SQL_CHARS:,}" in result.stderr


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("COPY FROM DATABASE a TO b", "COPY_DATABASE"),
        ("CALL main.force_checkpoint()", "CHECKPOINT"),
        ('CALL "main"."checkpoint"()', "CHECKPOINT"),
        ("FORCE CHECKPOINT", "CHECKPOINT"),
        ("CALL pragma_version()", "CALL"),
    ],
)
def test_statement_kinds_by_what_they_do(sql: str, kind: str) -> None:
    from oxyeval.workflow._sqlsyntax import statement_kind

    assert statement_kind(sql) == kind


def test_a_kind_the_client_cannot_name_is_refused_in_words() -> None:
    from oxyeval.workflow._sqlsyntax import Refused, statement_kind

    with pytest.raises(Refused, match="UPDATE EXTENSIONS statements are not allowed"):
        statement_kind("UPDATE EXTENSIONS")
