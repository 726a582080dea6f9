"""examples/ci/github-actions-sharded.yml and gitlab-ci-sharded.yml: a matrix of 4 shards
and a final gate job that GitHub and GitLab can read, whose oxy commands are real. Their
scripts run here as each CI system would run them (bash -e, the job's variables, each
runner its own copy of the checkout), sharing one history as the CI's shared PostgreSQL
would be shared (here a file every "runner" reaches); each gate decides on all four
shards, and the reports exist, the JUnit ones valid."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .test_ci_example import ROOT, XSD, oxy_shim

GITHUB = ROOT / "examples" / "ci" / "github-actions-sharded.yml"
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci-sharded.yml"


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(doc, dict)
    return doc


def github_expressions(text: str, values: dict[str, str]) -> str:
    """``${{ name }}`` replaced as GitHub would, for the names the workflow uses."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1).strip()
        assert name in values, f"an expression the test does not know: {name}"
        return values[name]

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def checkout(tmp_path: Path, name: str) -> Path:
    """One runner's checkout: the example project, as the repository holds it."""
    where = tmp_path / name
    shutil.copytree(
        ROOT / "examples", where / "examples", ignore=shutil.ignore_patterns("output", ".oxy")
    )
    return where


def run_scripts(jobs: list[tuple[str, Path, dict[str, str]]]) -> list[tuple[int, str]]:
    """Run each (script, folder, env) at once, as parallel CI jobs do; codes and stderr."""
    started = [
        subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script, cwd, env in jobs
    ]
    return [(p.wait(timeout=300), p.communicate()[1]) for p in started]


def check_reports(folder: Path, names: list[str]) -> None:
    import xmlschema

    schema = xmlschema.XMLSchema(str(XSD))
    for name in names:
        target = folder / "reports" / name
        assert target.is_file(), name
        if target.suffix == ".xml":
            schema.validate(target.read_text("utf-8"))
        else:
            json.loads(target.read_text("utf-8"))


def test_the_github_workflow_is_a_matrix_of_four_and_a_gate() -> None:
    doc = load(GITHUB)
    assert "pull_request" in doc.get("on", doc.get(True))
    shards, gate = doc["jobs"]["shards"], doc["jobs"]["gate"]
    assert shards["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert shards["strategy"]["fail-fast"] is False
    assert gate["needs"] == "shards" and "!cancelled()" in gate["if"]
    assert doc["env"]["OXY_DB"] == "${{ secrets.OXY_DB }}"
    scripts = " ".join(s.get("run", "") for s in shards["steps"])
    assert '--shard "$SHARD"' in scripts and '--run-group "$RUN_GROUP"' in scripts
    assert "oxy report --run-group" in " ".join(s.get("run", "") for s in gate["steps"])


def test_the_gitlab_pipeline_is_parallel_four_and_a_gate() -> None:
    doc = load(GITLAB)
    shard, gate = doc["oxy-shard"], doc["oxy-gate"]
    assert shard["parallel"] == 4 and doc["stages"] == ["test", "gate"]
    assert gate["needs"] == ["oxy-shard"] and gate["when"] == "always"
    assert '--shard "$CI_NODE_INDEX/$CI_NODE_TOTAL"' in " ".join(shard["script"])
    assert shard["artifacts"]["reports"]["junit"] == "reports/shard-*.xml"
    assert gate["artifacts"]["reports"]["junit"] == "reports/merged.xml"


@pytest.mark.skipif(shutil.which("bash") is None, reason="runs the examples' bash scripts")
def test_the_sharded_examples_run_and_their_gates_decide_as_one_run(tmp_path: Path) -> None:
    """Shards 1 and 2 run GitHub's script, shards 3 and 4 GitLab's, under one run group:
    both compute the same split, so either gate decides on all four."""
    history = tmp_path / "shared-history.db"  # what OXY_DB names on the CI
    base = {
        **os.environ,
        "PATH": f"{oxy_shim(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "OXY_DB": str(history),
    }
    doc, lab = load(GITHUB), load(GITLAB)
    values = {"secrets.OXY_DB": str(history), "github.run_id": "ci-7", "strategy.job-total": "4"}
    shards, gate = doc["jobs"]["shards"], doc["jobs"]["gate"]
    (step,) = [s for s in shards["steps"] if "oxy cases run" in s.get("run", "")]
    jobs = []
    for i in (1, 2):  # GitHub's matrix jobs
        at = {**values, "matrix.shard": str(i)}
        env = {**doc["env"], **shards["env"]}
        env = {k: github_expressions(str(v), at) for k, v in env.items()}
        script = github_expressions(step["run"], at)
        jobs.append((script, checkout(tmp_path, f"gh{i}"), {**base, **env}))
    lab_env = {"OXY_PROJECT": lab["variables"]["OXY_PROJECT"], "RUN_GROUP": "ci-7"}
    for i in (3, 4):  # GitLab's parallel jobs, CI_NODE_* set by the runner
        env = {**base, **lab_env, "CI_NODE_INDEX": str(i), "CI_NODE_TOTAL": "4"}
        jobs.append(("\n".join(lab["oxy-shard"]["script"]), checkout(tmp_path, f"gl{i}"), env))
    done = run_scripts(jobs)
    for code, err in done:
        assert code in (0, 1), err  # a shard holding the failing case fails its own job
    assert [code for code, _err in done].count(1) == 1  # it is in one shard
    for k, (_script, folder, _env) in enumerate(jobs, 1):
        check_reports(folder, [f"shard-{k}.xml", f"shard-{k}.json"])

    (step,) = [s for s in gate["steps"] if "oxy report" in s.get("run", "")]
    env = {k: github_expressions(str(v), values) for k, v in doc["env"].items()}
    gh_gate = (github_expressions(step["run"], values), checkout(tmp_path, "ghgate"))
    gl_gate = ("\n".join(lab["oxy-gate"]["script"]), checkout(tmp_path, "glgate"))
    gates = run_scripts([(*gh_gate, {**base, **env}), (*gl_gate, {**base, **lab_env})])
    merged = []
    for (code, err), (_script, folder) in zip(gates, [gh_gate, gl_gate], strict=True):
        assert code == 1, err  # the example prompt fails one case on purpose
        assert "failed: sentiment::subtle negative" in err
        assert "shard(s) 1, 2, 3, 4 of 4" in err
        check_reports(folder, ["merged.xml", "merged.json"])
        merged.append(json.loads((folder / "reports" / "merged.json").read_text("utf-8")))
    # The example's four cases, each run once (tests/cli/test_shards.py compares a merged
    # run with an unsharded one in full).
    assert merged[0]["summary"] == merged[1]["summary"]
    assert (merged[0]["summary"]["results"], merged[0]["summary"]["failed"]) == (4, 1)
    subjects = [sorted(r["subject"] for r in doc["results"]) for doc in merged]
    assert subjects[0] == subjects[1] and len(set(subjects[0])) == 4
