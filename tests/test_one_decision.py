"""One decision: only :mod:`oxyeval.evaluation.decision` turns results, gates and errors
into an exit code, so a command, a saved report, the SDK and the server never disagree.

Read from the syntax tree: the exit-code constants are named only where they are
defined (``errors``), in the decision module, and inside an exception class (an error
says what it is: bad input or infrastructure); nothing else reads an error's
``exit_code`` to work out a code of its own.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import oxyeval

PACKAGE = Path(oxyeval.__file__).parent
DECIDERS = {"errors.py", "evaluation/decision.py"}
OUTCOME_CODES = {"EXIT_OK", "EXIT_FAILED"}  # pass and fail: the decision's alone
ERROR_CODES = {"EXIT_INPUT", "EXIT_INFRA"}  # an error's category: its class says it


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        yield relative, ast.parse(path.read_text(encoding="utf-8"), relative)


def _module_name(relative: str) -> str:
    parts = relative.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["oxyeval", *parts])


def _in_exception_class(relative: str, stack: list[ast.AST]) -> bool:
    """The innermost class around a node is an exception class (checked at run time)."""
    classes = [node for node in stack if isinstance(node, ast.ClassDef)]
    if not classes:
        return False
    found = importlib.import_module(_module_name(relative))
    for cls in classes:
        found = getattr(found, cls.name, None)
        if found is None:
            return False
    return isinstance(found, type) and issubclass(found, BaseException)


def _walk(node: ast.AST, stack: list[ast.AST]) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    yield node, stack
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, [*stack, node])


def _names(node: ast.AST) -> set[str]:
    """The name a node uses (imports are checked where what they bring in is used)."""
    return {node.id} if isinstance(node, ast.Name) else set()


def test_exit_codes_are_named_only_by_the_decision_and_by_errors() -> None:
    wrong = []
    for relative, tree in _modules():
        if relative in DECIDERS:
            continue
        for node, stack in _walk(tree, []):
            named = _names(node)
            if named & OUTCOME_CODES or (
                named & ERROR_CODES and not _in_exception_class(relative, stack)
            ):
                wrong.append(f"{relative}:{node.lineno}: {', '.join(sorted(named))}")
    assert wrong == [], (
        "exit codes are worked out by oxyeval.evaluation.decision (decide, decide_run, "
        "error_code, interrupted_code, usage_code, with_artifact_failure); an error class "
        "may say its own category:\n" + "\n".join(wrong)
    )


def test_no_code_reads_an_errors_exit_code_but_the_decision() -> None:
    wrong = []
    for relative, tree in _modules():
        if relative in DECIDERS:
            continue
        for node, stack in _walk(tree, []):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "exit_code"
                and isinstance(node.ctx, ast.Load)
                and not _in_exception_class(relative, stack)
            ):
                wrong.append(f"{relative}:{node.lineno}")
    assert wrong == [], (
        "read an error's code through oxyeval.evaluation.error_code (or errors.is_bad_input "
        "for its category):\n" + "\n".join(wrong)
    )


def test_the_checks_catch_what_they_forbid(tmp_path: Path) -> None:
    tree = ast.parse(
        "from oxyeval.errors import EXIT_FAILED\n"
        "def f(exc):\n"
        "    return EXIT_FAILED if exc.exit_code else 0\n"
    )
    named = [n for n, _ in _walk(tree, []) if _names(n) & OUTCOME_CODES]
    read = [
        n
        for n, _ in _walk(tree, [])
        if isinstance(n, ast.Attribute) and n.attr == "exit_code" and isinstance(n.ctx, ast.Load)
    ]
    assert len(named) == 1 and len(read) == 1
