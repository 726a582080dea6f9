"""examples/ci/github-actions.yml: a workflow GitHub can read, whose oxy commands are real
invocations. Its ``run:`` scripts are executed here as GitHub runs them (bash -e, the
workflow's env), against a copy of the example project with its mock models, and the
files it uploads must exist afterwards, the JUnit ones valid."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
XSD = ROOT / "tests" / "report" / "JUnit.xsd"


def load() -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    assert isinstance(doc, dict)
    return doc


def steps() -> list[dict[str, Any]]:
    (job,) = load()["jobs"].values()
    return job["steps"]


def test_the_workflow_is_a_github_workflow() -> None:
    doc = load()
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    (job,) = doc["jobs"].values()
    assert job["runs-on"].startswith("ubuntu")
    uses = [s["uses"].split("@")[0] for s in steps() if "uses" in s]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    scripts = "\n".join(s.get("run", "") for s in steps())
    assert "pip install" in scripts
    assert "oxy test" in scripts and "--min-accuracy" in scripts and "--junit" in scripts
    assert "oxy cases run" in scripts and "--fail-on-regression" in scripts
    (upload,) = [s for s in steps() if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert "always()" in upload["if"]  # failed gates still upload their reports
    paths = upload["with"]["path"].split()
    assert {Path(p).suffix for p in paths} == {".xml", ".json"}


#: The majors whose action runs on node24 (checked against each action's own action.yml,
#: 2026-11): GitHub removes the node20 runtime, and actionlint flags older majors.
NODE24_MAJORS = {
    "actions/checkout": 7,
    "actions/setup-python": 7,
    "actions/cache/restore": 5,
    "actions/cache/save": 5,
    "actions/upload-artifact": 7,
}


def test_the_example_uses_actions_on_a_current_runtime() -> None:
    used = {s["uses"].split("@")[0]: s["uses"].split("@")[1] for s in steps() if "uses" in s}
    assert set(used) == set(NODE24_MAJORS)
    for action, version in used.items():
        assert int(version.lstrip("v").split(".")[0]) >= NODE24_MAJORS[action], action


def test_the_history_is_kept_also_when_a_gate_fails() -> None:
    """actions/cache saves only after a green job; the red runs' results matter most, so
    the history is restored and saved in two steps, the save under always()."""
    names = [s.get("uses", "").split("@")[0] for s in steps()]
    assert "actions/cache" not in names
    restore = names.index("actions/cache/restore")
    save = names.index("actions/cache/save")
    gates = [i for i, s in enumerate(steps()) if "oxy " in s.get("run", "")]
    assert restore < min(gates) and save > max(gates)
    saved = steps()[save]
    assert "always()" in saved["if"]
    assert saved["with"]["path"] == steps()[restore]["with"]["path"]
    assert saved["with"]["path"].endswith("/.oxy")
    assert saved["with"]["key"] == steps()[restore]["with"]["key"]


def oxy_shim(folder: Path) -> Path:
    """An ``oxy`` on PATH that runs this tree, as the installed entry point would."""
    folder.mkdir()
    shim = folder / "oxy"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oxyeval "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.mark.skipif(shutil.which("bash") is None, reason="runs the workflow's bash scripts")
def test_the_workflow_commands_run_against_the_example_project(tmp_path: Path) -> None:
    import xmlschema

    checkout = tmp_path / "checkout"
    shutil.copytree(
        ROOT / "examples", checkout / "examples", ignore=shutil.ignore_patterns("output", ".oxy")
    )
    (job,) = load()["jobs"].values()
    env = {
        **os.environ,
        **{k: str(v) for k, v in (job.get("env") or {}).items()},
        "PATH": f"{oxy_shim(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }
    codes = {}
    for step in steps():
        script = step.get("run")
        if script is None or "pip install" in script:  # oxyeval is this tree, already
            continue
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode != 2, f"{step['name']}: bad input\n{result.stderr}"
        codes[step["name"]] = (result.returncode, result.stderr)
    test_code, _ = codes["Consistency tests (oxy test)"]
    assert test_code == 0  # the examples' mocks average 0.79, above the workflow's 0.6
    cases_code, cases_err = codes["Test cases (oxy cases run)"]
    assert cases_code == 1  # the example prompt fails one case on purpose
    assert "failed: sentiment::subtle negative" in cases_err
    (upload,) = [s for s in steps() if s.get("uses", "").startswith("actions/upload-artifact@")]
    schema = xmlschema.XMLSchema(str(XSD))
    for path in upload["with"]["path"].split():
        target = checkout / path
        assert target.is_file(), path
        if target.suffix == ".xml":
            schema.validate(target.read_text("utf-8"))
        else:
            json.loads(target.read_text("utf-8"))
