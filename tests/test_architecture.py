"""The stage packages import only the stages before them, so one stage can change without
touching the others (README, "Architecture")."""

from __future__ import annotations

import re
from pathlib import Path

import oxyeval

#: Dependency order: each package may import the ones before it (and the shared modules
#: errors, redact and _lazy), never one after it.
ORDER = ["providers", "project", "judge", "workflow", "store", "suites", "report", "cli"]
PACKAGE = Path(oxyeval.__file__).parent
IMPORT = re.compile(r"^\s*from (\.+)([\w.]*) import", re.M)


def _imports(package: str) -> dict[str, set[str]]:
    """Other stage packages a package imports, with a file that does it."""
    found: dict[str, set[str]] = {}
    for file in (PACKAGE / package).rglob("*.py"):
        parts = file.relative_to(PACKAGE).parts
        for match in IMPORT.finditer(file.read_text("utf-8")):
            dots, name = len(match.group(1)), match.group(2)
            base = list(parts[:-1])[: len(parts) - dots]
            target = [*base, *name.split(".")] if name else base
            if target and target[0] in ORDER and target[0] != package:
                found.setdefault(target[0], set()).add(file.relative_to(PACKAGE).as_posix())
    return found


def test_every_package_is_in_the_order() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ORDER)


def test_stages_import_only_earlier_stages() -> None:
    wrong = []
    for k, package in enumerate(ORDER):
        for target, files in _imports(package).items():
            if ORDER.index(target) > k:
                wrong.append(f"{package} imports {target} in {', '.join(sorted(files))}")
    assert wrong == []


def test_no_private_module_is_imported_across_packages() -> None:
    private = re.compile(r"^\s*from \.\.+(\w+)\._(\w+) import", re.M)
    wrong = []
    for file in PACKAGE.rglob("*.py"):
        own = file.relative_to(PACKAGE).parts[0]
        for match in private.finditer(file.read_text("utf-8")):
            if match.group(1) != own:
                wrong.append(f"{file.relative_to(PACKAGE)}: {match.group(1)}._{match.group(2)}")
    assert wrong == []


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(f.relative_to(PACKAGE)): n
        for f in PACKAGE.rglob("*.py")
        if (n := len(f.read_text("utf-8").splitlines())) > 600
    }
    assert long == {}
