"""The Dockerfile and .dockerignore, tested without a Docker engine (none runs here).

What can be checked is: the Dockerfile's shape (a slim Python base, a user that is not
root, ``pip install .``, ``ENTRYPOINT ["oxy"]``); that the build context .dockerignore
leaves holds everything the install and the example need; and, with
``OXY_TEST_DOCKER_INSTALL=1`` (CI sets it), the image's commands run the same way in a
fresh venv: ``pip install .`` from a copy of that context, then ``oxy test`` on the
example. That one is opt-in because it installs every dependency (about 20 s, and a
package index to install from); the rest takes well under a second.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ["test", "examples/agents/users.agent.yml", "--format", "json", "--quiet"]
GATE = [*EXAMPLE, "--min-accuracy", "0.1"]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined."""
    joined: list[str] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text("utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    out = []
    for line in joined:
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _pattern(text: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regular expression over a context-relative path
    (Docker's rules: ``*`` and ``?`` stay within a folder, ``**`` spans folders)."""
    parts = text.strip("/").split("/")
    regex = ""
    for k, part in enumerate(parts):
        if part == "**":
            regex += "(?:[^/]+/)*"
            continue
        for ch in part:
            regex += "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
        if k < len(parts) - 1:
            regex += "/"
    return re.compile(regex + "$")


def ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in (ROOT / ".dockerignore").read_text("utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        rules.append((negate, _pattern(line.lstrip("!"))))
    return rules


def ignored(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether Docker leaves ``rel`` out of the context: the last matching rule wins, and
    a folder left out takes its contents with it."""
    parts = rel.split("/")
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        verdict = None
        for negate, pattern in rules:
            if pattern.match(prefix):
                verdict = not negate
        if verdict:
            return True
    return False


def context_files() -> list[str]:
    """The build context: every file under the repository that .dockerignore keeps."""
    rules = ignore_rules()
    found = []
    for folder, dirs, files in os.walk(ROOT):
        base = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if base == "." else base + "/"
        dirs[:] = [d for d in dirs if not ignored(prefix + d, rules)]
        found += [prefix + f for f in files if not ignored(prefix + f, rules)]
    return sorted(found)


def copy_context(dest: Path) -> Path:
    for rel in context_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target, follow_symlinks=True)
    return dest


def test_the_dockerfile_is_a_slim_non_root_image_running_oxy() -> None:
    steps = instructions()
    words = [w for w, _ in steps]
    assert words[0] == "FROM"
    assert re.fullmatch(r"python:3\.\d+-slim(-\w+)?", steps[0][1]), steps[0][1]
    runs = [k for k, (w, _) in enumerate(steps) if w == "RUN"]
    install = [k for k in runs if re.search(r"\bpip install \.(\s|$)", steps[k][1])]
    assert install, "no RUN pip install ."
    users = [(k, arg) for k, (w, arg) in enumerate(steps) if w == "USER"]
    assert users, "no USER: the image would run as root"
    last, user = users[-1]
    assert user.split(":")[0] not in ("root", "0")
    assert last > max(runs)  # every later step, and the container, run as that user
    (entrypoint,) = [arg for w, arg in steps if w == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["oxy"]  # exec form: signals reach oxy (docker stop)
    workdir_at_install = [arg for w, arg in steps[: install[0]] if w == "WORKDIR"][-1]
    copies = [arg.split() for w, arg in steps[: install[0]] if w == "COPY"]
    assert [".", "."] in copies or [".", workdir_at_install] in copies


def test_the_context_keeps_what_the_install_needs_and_leaves_the_rest() -> None:
    files = set(context_files())
    for needed in (
        "pyproject.toml",
        "README.md",
        "oxyeval/__init__.py",
        "oxyeval/cli/_app.py",
        "oxyeval/schemas/agent.schema.json",
        "examples/agents/users.agent.yml",
        "examples/config.yml",
    ):
        assert needed in files
    for left_out in ("tests/", ".git/", ".venv/", "benchmarks/", ".oxy/"):
        assert not any(f.startswith(left_out) for f in files), left_out
    assert not any(f.endswith(".pyc") or "/__pycache__/" in f for f in files)
    # And the rules work as Docker reads them.
    rules = ignore_rules()
    assert ignored("oxyeval/cli/__pycache__/x.pyc", rules)
    assert ignored("tests/cli/test_cli.py", rules)
    assert not ignored("oxyeval/report/junit.py", rules)


def test_the_context_alone_runs_the_example(tmp_path: Path) -> None:
    """What the image gets is enough to run (schemas, examples): the copy, on the path
    alone, gates the example the way the Docker build step does."""
    copy = copy_context(tmp_path / "ctx")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    where = subprocess.run(
        [sys.executable, "-c", "import oxyeval; print(oxyeval.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(copy)
    result = subprocess.run(
        [sys.executable, "-m", "oxyeval", *GATE],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["tests"]) == 2


@pytest.mark.skipif(
    os.environ.get("OXY_TEST_DOCKER_INSTALL") != "1",
    reason="installs oxyeval and its dependencies into a fresh venv (about 20 s); "
    "set OXY_TEST_DOCKER_INSTALL=1 (CI does)",
)
def test_the_image_commands_in_a_fresh_venv(tmp_path: Path) -> None:
    """The Dockerfile's install step, run as written in a copy of the context, then the
    seed's build step against the example project from another folder."""
    steps = instructions()
    (install,) = [arg for w, arg in steps if w == "RUN" and "pip install" in arg]
    copy = copy_context(tmp_path / "src")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    args = shlex.split(install)
    assert args[:2] == ["pip", "install"]
    subprocess.run(
        [str(bin_dir / "python"), "-m", *args],
        cwd=copy,
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    project = tmp_path / "project"
    shutil.copytree(copy / "examples", project / "examples")
    result = subprocess.run(
        [str(bin_dir / "oxy"), *GATE],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["tests"]) == 2
    below = subprocess.run(
        [str(bin_dir / "oxy"), *EXAMPLE, "--min-accuracy", "0.99"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert below.returncode == 1  # the build step fails the build below its threshold
