"""Every kind of test is a plugin on one core: the suite run (``suites.suite``) and what it
is built from set a run up, keep its results and decide it; a kind (consistency tests,
test cases, A/B branches, pass/fail tests, workflows, the SDK) is one module or package
above it that imports the core and nothing of another kind. So a new kind adds a module,
not arrows into every other, and no command, server or report sets a run up its own way.

Read from the syntax tree, every import form and place (inside functions too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import oxyeval
from oxyeval.suites import AB, Ask, Cases, Consistency, PassFail, Storage, Workflow
from oxyeval.testing._run import Sdk

PACKAGE = Path(oxyeval.__file__).parent
SUITES = PACKAGE / "suites"
#: Each kind's modules, by the kind's name: a package of its own or one module.
KINDS = {
    "consistency": "suites/consistency/",
    "cases": "suites/cases/",
    "ab": "suites/ab/",
    "passfail": "suites/passfail/",
    "workflow": "suites/workflows.py",
    "ask": "suites/asking.py",
    "sdk": "testing/",
}
#: The core every kind stands on (and the modules it shares among them).
CORE = [
    "suites/suite.py",
    "suites/recorder.py",
    "suites/status.py",
    "suites/history_store.py",
    "suites/run_cache.py",
    "suites/targets.py",
    "suites/prompt_sync.py",
]


def _kind_of(relative: str) -> str | None:
    for name, where in KINDS.items():
        if relative == where or (where.endswith("/") and relative.startswith(where)):
            return name
    return None


def _imported_modules(path: Path) -> set[str]:
    """Absolute module names ``path`` imports, relative imports resolved."""
    relative = path.relative_to(PACKAGE.parent).with_suffix("").as_posix().split("/")
    package = relative[:-1]  # a module's package, and an __init__'s own
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _module_file(module: str) -> str | None:
    """The package-relative file of an ``oxyeval`` module name, if it is one."""
    parts = module.split(".")
    if parts[0] != "oxyeval":
        return None
    rel = "/".join(parts[1:])
    if (PACKAGE / rel / "__init__.py").is_file():
        return rel + "/"
    if (PACKAGE / f"{rel}.py").is_file():
        return f"{rel}.py"
    return None


def _python_files(where: str) -> list[Path]:
    root = PACKAGE / where
    return sorted(root.rglob("*.py")) if where.endswith("/") else [root]


def test_no_kind_imports_another_kind() -> None:
    wrong = []
    for name, where in KINDS.items():
        for path in _python_files(where):
            for module in _imported_modules(path):
                target = _module_file(module)
                other = None if target is None else _kind_of(target)
                if other is not None and other != name:
                    wrong.append(f"{path.relative_to(PACKAGE)} ({name}) imports {module} ({other})")
    assert wrong == [], "a kind stands on the core alone:\n" + "\n".join(sorted(set(wrong)))


def test_the_core_imports_no_kind() -> None:
    wrong = []
    for where in CORE:
        for module in _imported_modules(PACKAGE / where):
            target = _module_file(module)
            if target is not None and _kind_of(target) is not None:
                wrong.append(f"{where} imports {module}")
    assert wrong == [], "the core knows no kind:\n" + "\n".join(wrong)


def test_a_run_is_set_up_only_by_a_kind_or_the_core() -> None:
    """``SuiteRun(...)`` is made where a kind starts its run, never by a command, the
    server or a report: they call the kind's library function."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if _kind_of(relative) is not None or relative in CORE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name == "SuiteRun":
                    wrong.append(f"{relative}:{node.lineno}")
    assert wrong == [], "a run is set up by its kind:\n" + "\n".join(wrong)


@pytest.mark.parametrize("kind", [Consistency, Cases, AB, PassFail, Workflow, Ask, Sdk])
def test_each_kind_is_the_core_s_plugin(kind: type) -> None:
    """What :class:`oxyeval.suites.Kind` asks of a kind, and a registered result kind."""
    from oxyeval.evaluation import result_kind

    assert isinstance(kind.storage, Storage)
    assert result_kind(kind.name).name == kind.name
    for method in ("plan", "execute", "stopped", "finished"):
        assert callable(getattr(kind, method, None)), f"{kind.__name__}.{method}"


def test_the_checks_see_a_kind_importing_another(tmp_path: Path) -> None:
    path = PACKAGE / "suites" / "ab" / "plan.py"
    assert "oxyeval.suites.prompt_sync" in _imported_modules(path)  # relative, resolved
    assert _kind_of("suites/cases/run.py") == "cases" and _kind_of("suites/suite.py") is None
    assert _module_file("oxyeval.suites.cases.run") == "suites/cases/run.py"
