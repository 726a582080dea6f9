"""Which files make a project: oxy's file-name conventions and the walk that finds them."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import Diagnostic, LoadError
from ..paths import inside_project  # the rule lives below the store, which applies it too
from .document import SYMLINK_LOOP, path_problem

__all__ = [
    "CONFIG_NAMES",
    "SKIP_DIRS",
    "TEST_SUFFIXES",
    "file_kind",
    "find_config",
    "inside_project",
    "outside_project",
    "project_files",
]

CONFIG_NAMES = ("config.yml", "config.yaml")


TEST_SUFFIXES = (".test.yml", ".test.yaml")


def file_kind(path: Path) -> str | None:
    """``agent``, ``workflow``, ``config``, ``prompt``, ``cases`` or ``test`` from the file
    name (oxy's conventions).

    ``test`` (oxy's pass/fail test files) is decided first: ``sales.agent.test.yml``
    tests the agent ``sales.agent.yml`` and is not an agent file itself.
    """
    name = path.name.lower()
    if name.endswith(TEST_SUFFIXES):
        return "test"
    if name.endswith((".agent.yml", ".agent.yaml")):
        return "agent"
    if name.endswith((".workflow.yml", ".workflow.yaml", ".automation.yml", ".automation.yaml")):
        return "workflow"
    if name in CONFIG_NAMES:
        return "config"
    if name.endswith((".prompt.yml", ".prompt.yaml")):
        return "prompt"
    if name.endswith((".cases.yml", ".cases.yaml")):
        return "cases"
    return None


SKIP_DIRS = frozenset({"node_modules", "__pycache__", "target", "dist", "build"})


def project_files(root: Path, kinds: tuple[str, ...]) -> list[Path]:
    """Files of the given kinds under ``root``, sorted, skipping hidden and build folders."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        out.extend(Path(dirpath) / n for n in sorted(filenames) if file_kind(Path(n)) in kinds)
    return out


def find_config(start: Path) -> Path | None:
    """Walk up from ``start`` (a file or folder) to the nearest config.yml."""
    try:
        here = start.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        raise LoadError([Diagnostic(str(start), path_problem(start) or SYMLINK_LOOP)]) from None
    if here.is_file() or not here.exists():
        here = here.parent
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


def outside_project(what: str, text: str, root: Path) -> str:
    """The one message for a path that leaves the project, at load and at run time."""
    return (
        f"{what} path {text!r} leaves the project folder {root}; paths in project files "
        "must stay inside it"
    )
