"""The documentation cannot drift from the code: the generated reference names every
command and option and every schema key, every example project file in the docs
validates with oxyeval's own loader, the site builds with warnings as errors, and the
README stays a short way in."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SCHEMAS = ROOT / "oxyeval" / "schemas"

# A fenced block with a title is a file at that path (CONTRIBUTING.md, "Documentation").
FENCE = re.compile(r'^```(\w+)[^\n]*?title="([^"]+)"[^\n]*\n(.*?)^```', re.S | re.M)

# The project a page's titled files are checked in when the page has no titled
# config.yml of its own: mock models under the names the docs' examples use.
BASE_CONFIG = """
models:
  - {name: gpt-4o-mini, vendor: mock, outputs: [ok]}
  - {name: judge, vendor: mock, outputs: ["Answer: A"]}
  - {name: grader, vendor: mock, outputs: ["Verdict: PASS"]}
  - {name: analyst, vendor: mock, outputs: [ok]}
  - {name: sql_analyst, vendor: mock, outputs: [ok]}
  - {name: writer, vendor: mock, outputs: [ok]}
  - {name: classifier, vendor: mock, outputs: [positive]}
  - {name: classifier-mini, vendor: mock, outputs: [positive]}
embeddings:
  - {name: small, vendor: mock}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "docs_hooks" / "reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _page(name: str) -> str:
    render: Any = getattr(_reference(), name)
    return str(render())


def _commands() -> list[tuple[str, Any]]:
    """The app's command tree, walked here on its own (not through the hook), so a
    command the hook skipped is caught."""
    from typer.main import get_command

    from oxyeval.cli import app

    found: list[tuple[str, Any]] = []
    pending = [("oxy", get_command(app))]
    while pending:
        name, command = pending.pop()
        found.append((name, command))
        for sub_name, sub in (getattr(command, "commands", None) or {}).items():
            pending.append((f"{name} {sub_name}", sub))
    return found


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    page = _page("cli_reference")
    commands = _commands()
    assert len(commands) > 15  # oxy, its commands and the groups' subcommands
    for name, command in commands:
        section = page.split(f"`{name}`\n", 1)
        assert len(section) == 2, f"no section for {name}"
        body = section[1].split("\n#", 1)[0] if name != "oxy" else section[1]
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            if param.param_type_name == "argument":
                assert param.human_readable_name.upper() in body.upper(), (name, param.name)
                continue
            for flag in [*param.opts, *param.secondary_opts]:
                # in the options table: the flag's cell, not a mention in prose
                assert re.search(rf"^\| <code>[^<]*{re.escape(flag)}\b", body, re.M), (name, flag)


def _properties(schema: dict[str, Any]) -> set[str]:
    names = set(schema.get("properties", {}))
    for branch in schema.get("allOf", ()):
        names |= set(branch.get("then", {}).get("properties", {}))
    return names


@pytest.mark.parametrize(
    ("page", "folder"),
    [("project_files_reference", SCHEMAS), ("outputs_reference", SCHEMAS / "output")],
)
def test_every_schema_and_its_keys_are_in_the_reference(page: str, folder: Path) -> None:
    text = _page(page)
    paths = sorted(folder.glob("*.schema.json"))
    assert paths
    for path in paths:
        schema = json.loads(path.read_text("utf-8"))
        assert f"`{path.name}`" in text or f"/{path.name}`" in text, path.name
        definitions = [schema, *schema.get("$defs", {}).values()]
        for definition in definitions:
            for key in _properties(definition):
                assert f"`{key}`" in text or f".{key}`" in text, (path.name, key)


def _titled_files() -> dict[Path, dict[str, str]]:
    files: dict[Path, dict[str, str]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for _lang, title, body in FENCE.findall(page.read_text("utf-8")):
            files.setdefault(page, {})[title] = body
    return files


def test_every_example_project_file_in_the_docs_validates(tmp_path: Path) -> None:
    from oxyeval import validate_paths

    pages = _titled_files()
    checked = [title for files in pages.values() for title in files if title.endswith(".yml")]
    assert len(checked) >= 8, "the docs lost their checked examples"
    for page, files in pages.items():
        project = tmp_path / page.relative_to(DOCS).with_suffix("").as_posix().replace("/", "-")
        (project / "data").mkdir(parents=True)
        if "config.yml" not in files:
            (project / "config.yml").write_text(BASE_CONFIG, "utf-8")
        for title, body in files.items():
            target = project / title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, "utf-8")
        report = validate_paths([str(project)])
        errors = report.errors
        assert errors == [], f"{page.relative_to(ROOT)}: " + "; ".join(map(str, errors))
        assert len(report.files) >= len([t for t in files if t.endswith(".yml")]), page


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for page in ("reference/cli", "reference/project-files", "reference/outputs", "security"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text("utf-8")
    assert "--min-accuracy" in cli and 'id="oxy-cases-run"' in cli


def test_the_readme_is_a_short_way_in() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    assert len(text.splitlines()) <= 160
    first_block = text.split("```", 2)[1]
    commands = [line for line in first_block.splitlines()[1:] if line.strip()]
    assert len(commands) == 2, commands
    assert "pip install ." in commands[0] and "oxy " in commands[0]
    assert "pytest" in commands[1]
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).exists(), target
    image = ROOT / "docs" / "images" / "dashboard.png"
    assert image.stat().st_size < 200_000
