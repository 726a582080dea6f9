"""oxy's globals: the ``globals/`` folder, one YAML file per name, that agents read as
``{{ globals.<file>.<key> }}`` (``globals/tables.yml`` is ``globals.tables``).

oxy loads every ``*.yml``/``*.yaml`` file of the folder into one mapping keyed by the
file's stem, and hands it to every agent's ``system_instructions``. The folder is read
once per project, and only when an agent reads ``globals``: a project without that
folder, or whose agents never use it, reads nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import Diagnostic, LoadError
from .document import load_yaml

__all__ = ["GLOBALS_FOLDER", "read_globals"]

#: Where oxy reads its globals from, relative to the project folder.
GLOBALS_FOLDER = "globals"
_SUFFIXES = (".yml", ".yaml")


def read_globals(root: Path, cache: dict[str, Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The globals of the project at ``root`` (file stem -> its mapping) and the problems
    of files that are not a YAML mapping (errors at their line); ``cache`` (the project's)
    keeps the answer for the next agent of the run."""
    if "globals" in cache:
        return cache["globals"], cache["problems"]
    folder = root / GLOBALS_FOLDER
    found: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    files = (
        sorted(folder.iterdir(), key=lambda p: (p.stem, p.suffix != ".yml"))
        if folder.is_dir()
        else []
    )
    for path in files:
        if path.suffix not in _SUFFIXES or not path.is_file():
            continue
        if not path.resolve().is_relative_to(root.resolve()):
            problems.append(
                Diagnostic(str(path), f"{path.name} reaches a file outside the project {root}")
            )
            continue
        if path.stem in found:  # oxy reads <stem>.yml: the .yml of a pair wins
            continue
        try:
            doc = load_yaml(path)
        except LoadError as exc:
            problems.extend(exc.diagnostics)
            continue
        if not isinstance(doc.data, dict):
            problems.append(
                doc.diagnostic(
                    (), "a globals file is a mapping (key: value), read as globals." + path.stem
                )
            )
            continue
        found[path.stem] = doc.data
    cache["globals"], cache["problems"] = found, problems
    return found, problems
