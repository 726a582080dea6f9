"""The family of JSON documents: every command's ``--format json`` holds to its published
schema, a key has one type wherever the family uses it, the error document is the same
from every path, and a schema never changes without ``schemaVersion`` being raised.

Each command runs once, in process, on one small shared project with mock models, so
the whole module takes a few seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.report import (
    DOCUMENTS,
    OUTPUT_SCHEMAS,
    SCHEMA_VERSION,
    load_output_schema,
    output_validator,
)

from .shared_project import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINTS = Path(__file__).with_name("document_fingerprints.json")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_prints_a_document_of_its_published_schema(
    outputs: dict[str, Any], name: str
) -> None:
    code, doc = outputs[name]
    expected = COMMANDS[name][1]
    assert doc["schemaVersion"] == SCHEMA_VERSION and doc["document"] == expected, doc
    errors = sorted(output_validator(DOCUMENTS[expected]).iter_errors(doc), key=str)
    assert not errors, "\n".join(
        f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:5]
    )
    if expected == "run":
        assert doc["summary"]["exitCode"] == doc["decision"]["exitCode"] == code
    elif expected in ("error", "validation"):
        assert doc["exitCode"] == code and (code != 0) == (expected == "error")
    else:  # a read: shown, exit 0
        assert code == 0


def test_the_run_documents_cover_every_kind(outputs: dict[str, Any]) -> None:
    kinds = {doc["kind"] for _code, doc in outputs.values() if doc["document"] == "run"}
    assert kinds == {"consistency", "test-files", "cases", "ab", "chattest", "workflow", "ask"}
    gated = outputs["test-gated"][1]["decision"]
    assert gated["gates"]["minAccuracy"] == 0.9 and gated["gates"]["failOnDrop"] == 5
    assert gated["threshold"]["minAccuracy"] == 0.9 and gated["drop"]["maxDrop"] == 5
    cases = outputs["cases-run"][1]
    assert [r["outcome"] for r in cases["results"]] == ["passed", "failed"]
    assert cases["history"][0]["runId"] == cases["results"][0]["runId"]


_FREE_FORM = {
    "details",
    "variables",
    "output",
    "otherParams",
    "input",
    "arguments",
    "outputs",
    "promptVersions",
    "runIds",
    "winnerDistribution",
    "verdictScores",
}


def _types(value: Any, path: str, seen: dict[str, set[str]]) -> None:
    """Every key path (list items as ``[]``) with the JSON types found there, null
    aside; free-form data (a kind's details, a model's output, variables) and maps keyed
    by the user's names (prompts, models, branches, verdicts) not entered."""
    if isinstance(value, dict):
        seen.setdefault(path, set()).add("object")
        if path.rsplit(".", 1)[-1] in _FREE_FORM:
            return
        for key, item in value.items():
            _types(item, f"{path}.{key}", seen)
    elif isinstance(value, list):
        seen.setdefault(path, set()).add("array")
        for item in value:
            _types(item, f"{path}[]", seen)
    elif value is not None:
        kind = "boolean" if isinstance(value, bool) else type(value).__name__
        seen.setdefault(path, set()).add("number" if kind in ("int", "float") else kind)


def test_a_key_has_one_type_wherever_the_family_uses_it(outputs: dict[str, Any]) -> None:
    seen: dict[str, set[str]] = {}
    for _code, doc in outputs.values():
        _types(doc, "", seen)
    mixed = {p: t for p, t in seen.items() if len(t) > 1 and p != ".accuracy"}
    assert not mixed, mixed
    top = {k for _code, doc in outputs.values() for k in doc}
    assert all("_" not in k for k in top), sorted(k for k in top if "_" in k)


def test_every_key_is_camel_case(outputs: dict[str, Any]) -> None:
    snake = {p for p in _all_paths(outputs) if "_" in p.rsplit(".", 1)[-1]}
    assert not snake, sorted(snake)


def _all_paths(outputs: dict[str, Any]) -> set[str]:
    seen: dict[str, set[str]] = {}
    for _code, doc in outputs.values():
        _types(doc, "", seen)
    return set(seen)


def test_the_error_document_is_the_same_from_every_path(outputs: dict[str, Any]) -> None:
    errors = {n: doc for n, (_code, doc) in outputs.items() if n.startswith("error-")}
    assert {tuple(doc) for doc in errors.values()} == {
        ("schemaVersion", "document", "error", "exitCode")
    }
    assert {n: d["exitCode"] for n, d in errors.items()} == {
        "error-test": 2,
        "error-read": 2,
        "error-usage": 2,
        "error-report": 2,
        "error-run": 2,
        "error-validate": 2,
    }


def test_every_document_has_its_schema_and_oxy_schema_prints_it() -> None:
    assert set(DOCUMENTS.values()) | {"common"} == set(OUTPUT_SCHEMAS)
    listed = CliRunner().invoke(app, ["schema", "--list"]).stdout.split()
    for name, stem in DOCUMENTS.items():
        schema = load_output_schema(stem)
        assert schema["properties"]["document"]["const"] == name
        assert schema["properties"]["schemaVersion"]["const"] == SCHEMA_VERSION
        assert f"output/{stem}" in listed
        printed = CliRunner().invoke(app, ["schema", f"output/{stem}"])
        assert printed.exit_code == 0 and json.loads(printed.stdout) == schema


def test_the_shipped_schemas_are_the_repository_copies() -> None:
    """``schemas/`` (what editors and readers link to) and the package's copy (what
    ``oxy schema`` prints and the tests validate against) never drift apart."""
    top, shipped = ROOT / "schemas", ROOT / "oxyeval" / "schemas"
    files = sorted(p.relative_to(top) for p in top.rglob("*.json"))
    assert files == sorted(p.relative_to(shipped) for p in shipped.rglob("*.json"))
    for name in files:
        assert (top / name).read_bytes() == (shipped / name).read_bytes(), name


def _fingerprints() -> dict[str, str]:
    out = {}
    for name in OUTPUT_SCHEMAS:
        text = json.dumps(load_output_schema(name), sort_keys=True, separators=(",", ":"))
        out[name] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def test_a_schema_changes_only_with_a_new_schema_version() -> None:
    """The fingerprint of each output schema, recorded per ``schemaVersion``: a schema
    that changes while the version stays says so here. To change one, raise
    SCHEMA_VERSION (and each schema's ``schemaVersion`` const) and record the new
    fingerprints under the new version: ``OXY_RECORD_FINGERPRINTS=1 pytest`` this test."""
    recorded = json.loads(FINGERPRINTS.read_text("utf-8")) if FINGERPRINTS.exists() else {}
    now = _fingerprints()
    if os.environ.get("OXY_RECORD_FINGERPRINTS") and str(SCHEMA_VERSION) not in recorded:
        recorded[str(SCHEMA_VERSION)] = now
        FINGERPRINTS.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    assert str(SCHEMA_VERSION) in recorded, (
        f"schemaVersion {SCHEMA_VERSION} has no recorded fingerprints in {FINGERPRINTS.name}: "
        "record them (OXY_RECORD_FINGERPRINTS=1) once the new version's schemas are final"
    )
    changed = sorted(n for n in now if recorded[str(SCHEMA_VERSION)].get(n) != now[n])
    assert not changed, (
        f"schemas/output/{{{','.join(changed)}}}.schema.json changed but schemaVersion is "
        f"still {SCHEMA_VERSION}: a pipeline reading version {SCHEMA_VERSION} would break. "
        "Raise SCHEMA_VERSION in oxyeval/report/documents.py and the schemas' const, then "
        f"record the new fingerprints in tests/report/{FINGERPRINTS.name}"
    )
    versions = sorted(int(v) for v in recorded)
    assert versions == list(range(1, SCHEMA_VERSION + 1)), "a version's record went missing"
