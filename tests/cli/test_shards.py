"""Sharded runs end to end: four shard processes store into one throwaway PostgreSQL
under a run group, and ``oxy report --run-group`` decides on them exactly as an unsharded
run of the same suite decides (same results, same decision, same counts); a missing
shard is exit 3, never a pass; shards that disagree, and bad shard options, are exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject, pg_skip_reason
from ..pgcluster import PgCluster

ROOT = Path(__file__).resolve().parents[2]
XSD = ROOT / "tests" / "report" / "JUnit.xsd"

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: "hate", output: "negative"}
      - {match: ".", output: "neutral"}
"""
#: Nine cases, one failing its threshold: every shard of four gets some.
PROMPT = (
    "name: sentiment\nmodel: m\nsimilarity: lexical\ntemplate: 'Feedback: {{ text }}'\ncases:\n"
    + "".join(
        f"  - {{name: case {k}, input: {{text: '{text}'}}, expected_output: {expected}}}\n"
        for k, (text, expected) in enumerate(
            [
                ("I love it", "positive"),
                ("I hate it", "negative"),
                ("It is a thing", "neutral"),
                ("love love", "positive"),
                ("hate hate", "negative"),
                ("a chair", "neutral"),
                ("so much love", "positive"),
                ("just hate", "negative"),
                ("It is a thing too", "negative"),  # fails: the model says neutral
            ]
        )
    )
)


def oxy(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OXY_DB", None)
    return subprocess.Popen(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, Any, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, json.loads(out) if out.strip() else None, err


def comparable(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The results as the decision reads them, without what differs between any two runs
    (ids, times, the history's previous results)."""
    varying = {"id", "runId", "createdAt", "latencyMs", "timeToFirstTokenMs", "previous"}
    results = [{k: v for k, v in r.items() if k not in varying} for r in doc["results"]]
    for r in results:
        r["details"] = {k: v for k, v in r["details"].items() if "Id" not in k and "ms" not in k}
    return sorted(results, key=lambda r: r["subject"])


def test_four_shards_on_postgresql_merge_into_the_unsharded_run(
    pg_cluster: PgCluster | None, make_project: MakeProject, tmp_path: Path
) -> None:
    if pg_cluster is None:
        pytest.skip(pg_skip_reason())
    import xmlschema

    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    url = pg_cluster.url(pg_cluster.create_database())
    shards = [
        oxy(
            "cases",
            "run",
            "--db",
            url,
            "--shard",
            f"{i}/4",
            "--run-group",
            "ci-42",
            "--format",
            "json",
            "--junit",
            f"shard-{i}.xml",
            cwd=root,
        )
        for i in range(1, 5)
    ]
    whole = oxy("cases", "run", "--db", str(tmp_path / "alone.db"), "--format", "json", cwd=root)
    done = [finish(p) for p in shards]
    whole_code, whole_doc, whole_err = finish(whole)
    assert whole_code == 1, whole_err  # one case fails its threshold
    assert {code for code, _doc, _err in done} <= {0, 1}, [err for _c, _d, err in done]
    counts = [len(doc["results"]) for _code, doc, _err in done]
    assert sum(counts) == 9 and min(counts) >= 2  # each case once, the shards balanced
    assert all(f"shard {i}/4 of run group ci-42" in e for i, (_c, _d, e) in enumerate(done, 1))

    merged = invoke(
        "report",
        "--run-group",
        "ci-42",
        "--db",
        url,
        "--project",
        str(root),
        "--format",
        "json",
        "--junit",
        str(root / "merged.xml"),
    )
    code, doc, err = merged.exit_code, json.loads(merged.stdout), merged.stderr
    assert code == whole_code == 1, err
    assert comparable(doc) == comparable(whole_doc)
    assert doc["summary"] == whole_doc["summary"]
    for key in ("exitCode", "reasons", "headline", "gates"):
        assert doc["decision"][key] == whole_doc["decision"][key], key
    assert doc["planned"] == whole_doc["planned"] == 9
    assert "shard(s) 1, 2, 3, 4 of 4" in err

    schema = xmlschema.XMLSchema(str(XSD))
    names = []
    for i in range(1, 5):
        text = (root / f"shard-{i}.xml").read_text("utf-8")
        schema.validate(text)
        names += [e.get("name") for e in ElementTree.fromstring(text).iter("testcase")]
    assert sorted(names) == sorted(f"case {k}" for k in range(9))
    text = (root / "merged.xml").read_text("utf-8")
    schema.validate(text)
    cases = list(ElementTree.fromstring(text).iter("testcase"))
    assert sorted(c.get("name") for c in cases) == sorted(names)
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["case 8"]

    # A shard that never kept its outcome (its runner died): the merged decision is
    # unknown, exit 3, whatever the other shards say, and the report names it.
    pg_cluster.admin_sql(
        "DELETE FROM run_group_shards WHERE shard = 3", database=url.rsplit("/", 1)[1]
    )
    missing = invoke(
        "report", "--run-group", "ci-42", "--db", url, "--project", str(root), "--format", "json"
    )
    code, doc, err = missing.exit_code, json.loads(missing.stdout), missing.stderr
    assert code == 3, err
    assert "shard(s) 3 of 4 have not kept their outcome" in err
    assert doc["summary"]["exitCode"] == 3 and doc["decision"]["passed"] is False
    assert "shard(s) 3 of 4" in doc["error"]  # a job reading only the JSON learns it too
    assert len(doc["results"]) == 9 - counts[2]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--shard", "0/4", "--run-group", "g"], "numbered from 1 to 4"),
        (["--shard", "5/4", "--run-group", "g"], "numbered from 1 to 4"),
        (["--shard", "x/y", "--run-group", "g"], "expected I/N"),
        (["--shard", "2/4"], "needs --run-group"),
    ],
)
def test_bad_shard_options_are_bad_input_on_every_command(
    make_project: MakeProject, args: list[str], words: str
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT, "t.test.yml": "[]\n"})
    for command in (
        ["cases", "run", str(root / "s.prompt.yml")],
        ["test", str(root / "missing.agent.yml")],
        ["ab", "run", "--project", str(root)],
        ["chattest", str(root)],
    ):
        result = invoke(*command, *args, "--format", "json")
        assert result.exit_code == 2, (command, result.stderr)
        assert words in result.stderr
        assert json.loads(result.stdout)["document"] == "error"
    assert not (root / ".oxy").exists()  # nothing ran, nothing was created


def test_shards_that_disagree_are_bad_input_and_a_lone_shard_decides_alone(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(root)
    path = str(root / "s.prompt.yml")
    one = invoke("cases", "run", path, "--shard", "1/2", "--run-group", "g", "-q")
    assert one.exit_code in (0, 1), one.stderr
    other = invoke("cases", "run", path, "--shard", "2/3", "--run-group", "g", "-q")
    assert other.exit_code in (0, 1), other.stderr
    report = invoke("report", "--run-group", "g", "--project", str(root), "--junit", "g.xml")
    assert report.exit_code == 2
    assert "shard 1 ran as 1/2 but shard 2 as 2/3" in report.stderr
    assert "shard 1 ran as 1/2" in Path("g.xml").read_text("utf-8")  # the CI system shows it
    # More shards than cases: a shard with none passes (no empty-selection failure) and
    # still counts as in.
    (root / "two.prompt.yml").write_text(
        PROMPT.replace("name: sentiment", "name: two").split("  - {name: case 2")[0]
    )
    codes = [
        invoke(
            "cases",
            "run",
            str(root / "two.prompt.yml"),
            "--shard",
            f"{k}/3",
            "--run-group",
            "wide",
            "-q",
            "--min-accuracy",
            "0.1",
        ).exit_code
        for k in (1, 2, 3)
    ]
    assert codes == [0, 0, 0]
    report = invoke("report", "--run-group", "wide", "--project", str(root), "--format", "json")
    assert report.exit_code == 0, report.stderr
    assert json.loads(report.stdout)["summary"]["results"] == 2
    none = invoke("report", "--run-group", "nope", "--project", str(root), "--junit", "n.xml")
    assert none.exit_code == 3 and "no shard has kept its outcome" in none.stderr
    assert "no shard has kept its outcome" in Path("n.xml").read_text("utf-8")  # CI shows it
    both = invoke("report", "doc.json", "--run-group", "g")
    assert both.exit_code == 2 and "not both" in both.stderr


def test_a_gate_job_needs_no_project_and_gets_its_junit_and_bad_ids_are_bad_input(
    make_project: MakeProject,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    path, db = str(root / "s.prompt.yml"), str(root / ".oxy" / "oxyeval.db")
    for k in (1, 2):
        shard = invoke("cases", "run", path, "--shard", f"{k}/2", "--run-group", "g", "-q")
        assert shard.exit_code in (0, 1), shard.stderr
    # A gate job with no checkout (no config.yml here or above): --db names the history.
    monkeypatch.chdir(tmp_path_factory.mktemp("gate"))
    merged = invoke("report", "--run-group", "g", "--db", db, "--format", "json")
    assert merged.exit_code == 1, merged.stderr  # case 8 fails, as unsharded
    assert json.loads(merged.stdout)["summary"]["results"] == 9
    # A saved document decided again writes its JUnit too.
    Path("doc.json").write_text(merged.stdout, "utf-8")
    again = invoke("report", "doc.json", "--junit", "again.xml")
    assert again.exit_code == 1, again.stderr
    cases = list(ElementTree.fromstring(Path("again.xml").read_text("utf-8")).iter("testcase"))
    assert len(cases) == 9
    # Shards under other gate options: the merged decision would be one shard's say.
    strict = invoke("cases", "run", path, "--shard", "2/2", "--run-group", "g", "-q", "--strict")
    assert strict.exit_code in (0, 1), strict.stderr
    mixed = invoke("report", "--run-group", "g", "--db", db)
    assert mixed.exit_code == 2 and "different gate options (strict)" in mixed.stderr
    given = invoke("report", "--run-group", "g", "--db", db, "--min-accuracy", "0.1")
    assert given.exit_code == 1, given.stderr  # decided under its own gates, not refused
    assert "case 8" in given.stderr and "gate options" not in given.stderr
    for bad in ("", "bad id!"):  # an unset $RUN_GROUP in CI is not a missing shard
        result = invoke("report", "--run-group", bad, "--db", db, "--format", "json")
        assert result.exit_code == 2 and "--run-group" in result.stderr, result.stderr
        assert json.loads(result.stdout)["document"] == "error"
    # A shard cut short (SIGTERM in CI) is named, not only counted as unknown.
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE run_group_shards SET document = json_set(document, "
            "'$.summary.interrupted', json('true')) WHERE shard = 2"
        )
    cut = invoke("report", "--run-group", "g", "--db", db, "--min-accuracy", "0.1")
    assert cut.exit_code == 3 and "shard 2/2 was interrupted" in cut.stderr, cut.stderr
    # A bad shard is said alone, before the hints a project's other files get.
    hint = invoke("test", "--project", str(root), "--shard", "0/4", "--run-group", "g")
    assert hint.exit_code == 2 and "numbered from 1 to 4" in hint.stderr
    assert "oxy cases run" not in hint.stderr, hint.stderr
    # Python test files are pytest's: sharding them would run the whole suite per shard.
    Path("test_x.py").write_text("def test_one():\n    assert True\n", "utf-8")
    python = invoke("test", "test_x.py", "--shard", "1/2", "--run-group", "g")
    assert python.exit_code == 2 and "not to Python test files" in python.stderr


def test_a_run_group_needs_a_history_to_keep_it_in(tmp_path: Path) -> None:
    import shutil

    folder = shutil.copytree(ROOT / "examples" / "chattest", tmp_path / "chattest")
    result = invoke("chattest", str(folder), "--shard", "1/2", "--run-group", "g")
    assert result.exit_code == 2  # outside a project: no history, said before any call
    assert "keeps none (chattest files outside a project)" in result.stderr
    alone = invoke("test", str(tmp_path / "a.agent.yml"), "--run-group", "g", "--no-history")
    assert alone.exit_code == 2 and "--no-history turns off" in alone.stderr


def agent(*runs: int) -> str:
    tests = "".join(
        f"  - type: consistency\n    name: t{n}\n    n: {n}\n"
        f"    task_description: What is the total {n}?\n    model_ref: judge\n"
        for n in runs
    )
    return f"model: agent_model\nsystem_instructions: Answer briefly.\ntests:\n{tests}"


def test_consistency_shards_merge_into_the_unsharded_document(make_project: MakeProject) -> None:
    from oxyeval.report.schemas import output_validator

    root = make_project(files={"a.agent.yml": agent(2, 5), "b.agent.yml": agent(3)})
    files = [str(root / "a.agent.yml"), str(root / "b.agent.yml")]
    gate = ["--min-accuracy", "0.5", "--format", "json"]
    for k in (1, 2):
        shard = invoke("test", *files, "--shard", f"{k}/2", "--run-group", "g", *gate)
        assert shard.exit_code == 0, shard.stderr
    whole = invoke("test", *files, "--no-history", *gate)
    merged = invoke("report", "--run-group", "g", "--project", str(root), "--format", "json")
    assert merged.exit_code == whole.exit_code == 0, merged.stderr
    doc, alone = json.loads(merged.stdout), json.loads(whole.stdout)
    assert list(output_validator("run").iter_errors(doc)) == []
    assert comparable(doc) == comparable(alone)  # named by file too: two files ran
    assert doc["summary"] == alone["summary"] and doc["scored"] == alone["scored"] == 3
    assert doc["decision"]["threshold"] == alone["decision"]["threshold"]
    assert sorted(doc["accuracy"]) == sorted(alone["accuracy"])
    assert sorted(t["name"] for t in doc["tests"]) == ["t2", "t3", "t5"]
