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
    "WORKFLOW_SUFFIXES",
    "chattest_folders",
    "file_kind",
    "find_config",
    "inside_project",
    "link_leaves",
    "outside_project",
    "project_files",
    "project_root",
]

CONFIG_NAMES = ("config.yml", "config.yaml")


TEST_SUFFIXES = (".test.yml", ".test.yaml")
#: oxy's procedures, under each name they have had (workflow, automation, procedure).
WORKFLOW_SUFFIXES = tuple(
    f".{kind}.{ext}" for kind in ("procedure", "workflow", "automation") for ext in ("yml", "yaml")
)


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
    if name.endswith(WORKFLOW_SUFFIXES):
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


def _nearest_config(folder: Path) -> Path | None:
    """The config.yml in ``folder`` or the nearest folder above it, walked by name.

    By name, not through links: a folder on the way that is a link out of the project
    must not decide which project a file belongs to (its target has no config.yml, so
    the file would seem to be in none, and be read as a stray file)."""
    for here in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            candidate = here / name
            if candidate.is_file():
                return candidate
    return None


def find_config(start: Path) -> Path | None:
    """Walk up from ``start`` (a file or folder) to the nearest config.yml.

    The file itself is not followed: a link in a project belongs to that project, wherever
    it points (and is then refused when it points out of it, see :func:`link_leaves`).
    """
    try:
        start.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        raise LoadError([Diagnostic(str(start), path_problem(start) or SYMLINK_LOOP)]) from None
    here = Path(os.path.abspath(start))
    return _nearest_config(here if start.is_dir() else here.parent)


def project_root(path: str | os.PathLike[str]) -> Path | None:
    """The project folder of a file: the nearest folder above it holding a config.yml
    (found by name, the file itself not followed); None for a file in no project."""
    config = _nearest_config(Path(os.path.abspath(path)).parent)
    return None if config is None else config.parent


def link_leaves(path: str | os.PathLike[str]) -> str | None:
    """Why a project's file must not be read: it is a link (or lies in a linked folder)
    whose target is outside its project. None when it stays inside, or is in no project.

    A shared project (a fork's pull request, a downloaded example) can ship
    ``prompts/x.prompt.yml`` as a link to ``~/.git-credentials``; reading it would let a
    parse error quote the token in a CI log, or a prompt send it to a model. The rule is
    :func:`inside_project`'s, applied to the file's own path.
    """
    root = project_root(path)
    if root is None:
        return None
    try:
        base = root.resolve()
    except (OSError, RuntimeError):
        base = root
    full = os.path.abspath(path)
    if inside_project(base, full) is not None:
        return None
    return (
        f"is a link that leaves the project folder {root}: {os.path.relpath(full, root)} (or a "
        "folder on its way) points outside it; oxyeval reads no file outside the project "
        "through a link, so a shared project cannot make it show or send another file. "
        "Copy the file into the project instead"
    )


def outside_project(what: str, text: str, root: Path) -> str:
    """The one message for a path that leaves the project, at load and at run time."""
    return (
        f"{what} path {text!r} leaves the project folder {root}; paths in project files "
        "must stay inside it"
    )


def chattest_folders(root: Path) -> list[Path]:
    """The chattest folders under ``root`` (each a folder whose ``prompts/`` holds JSON
    files, as ``oxy chattest`` reads it), hidden and build folders skipped."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        folder = Path(dirpath)
        if folder.name == "prompts" and any(n.lower().endswith(".json") for n in filenames):
            found.append(folder.parent)
    return found
