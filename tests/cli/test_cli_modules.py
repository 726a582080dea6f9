"""The command modules share their pieces through ``cli/_common`` (and ``_app``,
``console``...), never through one another or through private names."""

from __future__ import annotations

import ast
from pathlib import Path

import oxyeval.cli

CLI = Path(oxyeval.cli.__file__).parent


def _registers_a_command(tree: ast.Module) -> bool:
    """``@app.command(...)`` or ``app.add_typer(...)``: a module the ``oxy`` app imports
    for its commands."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if (
                isinstance(owner, ast.Name)
                and owner.id == "app"
                and node.func.attr in ("command", "add_typer")
            ):
                return True
    return False


def _imports_within_cli(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``from .module import names`` (at any depth of the file)."""
    return [
        (node.module or "", [alias.name for alias in node.names])
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1
    ]


def _trees() -> dict[str, ast.Module]:
    return {f.stem: ast.parse(f.read_text("utf-8")) for f in sorted(CLI.glob("*.py"))}


def test_no_private_name_is_imported_from_another_cli_module() -> None:
    wrong = [
        f"{name}.py imports {imported} from .{module}"
        for name, tree in _trees().items()
        for module, names in _imports_within_cli(tree)
        for imported in names
        if imported.startswith("_")
    ]
    assert wrong == []


def test_command_modules_do_not_import_from_each_other() -> None:
    trees = _trees()
    commands = {name for name, tree in trees.items() if _registers_a_command(tree)}
    assert {"cases", "cache", "history"} <= commands  # the check sees what it must
    wrong = [
        f"{name}.py imports {', '.join(names)} from .{module}"
        for name, tree in trees.items()
        if name in commands
        for module, names in _imports_within_cli(tree)
        if module in commands
    ]
    assert wrong == []
