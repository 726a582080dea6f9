"""The stage packages import only the stages before them, and only what those stages make
public, so one stage can change without touching the others (ARCHITECTURE.md).

The imports are read from the syntax tree, not matched as text: every form counts
(``import oxyeval.store``, ``from oxyeval.store import x``, ``from ..store.cache import x``,
``importlib.import_module("oxyeval.store")``), at module level, under ``TYPE_CHECKING``
and inside functions alike.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import oxyeval

#: Dependency order: each package may import the ones before it (and the shared modules),
#: never one after it.
ORDER = [
    "providers",
    "project",
    "judge",
    "evaluation",
    "workflow",
    "store",
    "suites",
    "report",
    "testing",
    "server",
    "cli",
]
#: Top-level modules every stage may import; they import no stage.
SHARED = [
    "_collector",
    "_lazy",
    "_pickled",
    "_tasks",
    "errors",
    "inputs",
    "paths",
    "patterns",
    "redact",
    "terminal",
]
#: What a stage may import from the root package, which itself imports every stage.
ROOT_NAMES = {"__version__"}
PACKAGE = Path(oxyeval.__file__).parent

#: Cross-package imports of names the target package does not list in ``__all__``: a
#: ratchet. A new bypass fails the test, and so does an entry here that no longer
#: happens, so the list only shrinks. Key: (importing package, target package, name).
ALLOWED_BYPASSES: dict[tuple[str, str, str], str] = {
    ("workflow", "project", "environment"): (
        "workflow/sqltemplate.py overlays the one sandboxed Jinja environment; public "
        "under a name that says what it is (template_environment), not as 'environment'"
    ),
    ("suites", "workflow", "counted"): (
        "message wording ('7 of 20 runs (1, 3, ...)') shared by the agent runner and the "
        "suites; it belongs beside token_limit_warning wherever that settles"
    ),
    ("suites", "workflow", "token_limit_warning"): (
        "the warning for answers cut at max_tokens; moves with the max_tokens rule to providers"
    ),
    ("cli", "report", "empty_stats"): (
        "report builds a store row for a never-run case; `oxy cases show` "
        "belongs in suites (case_details), which returns the stats"
    ),
}


@dataclass(frozen=True)
class Use:
    """One import of something from the package: ``module`` (absolute), and ``name``
    taken from it, or None when the module itself is imported."""

    file: str
    line: int
    unit: str  # the importing stage package or shared module; "" for the root package
    module: str
    name: str | None

    @property
    def target(self) -> str:
        """The stage package or shared module imported from ("" for the root)."""
        parts = self.module.split(".")
        return parts[1] if len(parts) > 1 else ""

    @property
    def inner(self) -> list[str]:
        """The module path below the target: ``["cache"]`` for ``oxyeval.store.cache``."""
        return self.module.split(".")[2:]

    @property
    def used(self) -> str | None:
        """The name this import takes from the target package: the imported name, or for
        ``import oxyeval.store.cache`` the submodule; None for a whole package."""
        if self.name is not None:
            return self.name
        return self.inner[0] if self.inner else None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def _module_of(root: Path, file: Path) -> tuple[str, str]:
    """The module name of ``file`` and the package its relative imports start from."""
    parts = [root.name, *file.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        name = ".".join(parts[:-1])
        return name, name
    name = ".".join(parts)
    return name, name.rpartition(".")[0]


def _is_module(root: Path, module: str) -> bool:
    path = root.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _raw_imports(tree: ast.AST, package: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, absolute module, name or None) for every import anywhere in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:
                yield node.lineno, module, alias.name
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "import_module")
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value, None


def uses(root: Path) -> list[Use]:
    """Every import of the package ``root`` (a folder named as the package) by its own
    modules, resolved to absolute names; a name that is a submodule counts as the module."""
    found = []
    for file in sorted(root.rglob("*.py")):
        module, package = _module_of(root, file)
        parts = module.split(".")
        unit = parts[1] if len(parts) > 1 and parts[1] != "__main__" else ""
        tree = ast.parse(file.read_text("utf-8"), str(file))
        for line, target, name in _raw_imports(tree, package):
            if target != root.name and not target.startswith(root.name + "."):
                continue
            if name is not None and _is_module(root, f"{target}.{name}"):
                target, name = f"{target}.{name}", None
            rel = file.relative_to(root).as_posix()
            found.append(Use(rel, line, unit, target, name))
    return found


def _rank(unit: str) -> int:
    """Shared modules first, then the stages in order, then the root that imports them all."""
    if unit in ORDER:
        return ORDER.index(unit)
    return len(ORDER) if unit == "" else -1


def order_violations(found: list[Use]) -> list[str]:
    wrong = []
    for use in found:
        if use.target == use.unit or (use.target == "" and use.name in ROOT_NAMES):
            continue
        if _rank(use.target) > _rank(use.unit):
            wrong.append(f"{use}: {use.unit or 'the root'} imports {use.module}")
    return wrong


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_violations(found: list[Use]) -> list[str]:
    """Private modules or names of another package (shared ``_lazy``/``_tasks`` are public)."""
    wrong = []
    for use in found:
        if use.target == use.unit:
            continue
        names = [*use.inner, *([use.name] if use.name else [])]
        if any(_private(n) for n in names):
            wrong.append(f"{use}: {use.module}{'.' + use.name if use.name else ''}")
    return wrong


def public_names(root: Path, unit: str) -> set[str]:
    """``__all__`` of a stage package or shared module, read from its source."""
    path = root / unit / "__init__.py"
    if not path.is_file():
        path = root / f"{unit}.py"
    for node in ast.parse(path.read_text("utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert node.value is not None
            return set(ast.literal_eval(node.value))
    return set()


def bypasses(root: Path, found: list[Use]) -> dict[tuple[str, str, str], list[str]]:
    """Cross-package imports of names not in the target's ``__all__``, with where."""
    public: dict[str, set[str]] = {}
    wrong: dict[tuple[str, str, str], list[str]] = {}
    for use in found:
        if use.target in (use.unit, "") or use.used is None:
            continue
        if use.target not in public:
            public[use.target] = public_names(root, use.target)
        if use.used not in public[use.target]:
            wrong.setdefault((use.unit, use.target, use.used), []).append(str(use))
    return wrong


FOUND = uses(PACKAGE)


def test_every_package_is_in_the_order() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ORDER)
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert modules == set(SHARED)


def test_the_walk_sees_imports_in_functions() -> None:
    """A sanity check on the walk itself: cli imports most stages inside its commands."""
    lazy = [u for u in FOUND if u.file == "cli/run.py" and u.module == "oxyeval.report.text"]
    assert lazy and all(u.line > 40 for u in lazy)  # below the module-level imports


def test_stages_import_only_earlier_stages() -> None:
    assert order_violations(FOUND) == []


def test_no_private_module_or_name_is_imported_across_packages() -> None:
    assert private_violations(FOUND) == []


def test_cross_package_imports_use_only_public_names() -> None:
    found = bypasses(PACKAGE, FOUND)
    new = {f"{k}: {', '.join(v)}" for k, v in found.items() if k not in ALLOWED_BYPASSES}
    assert new == set(), "import it from where it is public, or add it to that __all__"
    gone = set(ALLOWED_BYPASSES) - set(found)
    assert gone == set(), "fixed: remove these from ALLOWED_BYPASSES"


@pytest.mark.parametrize("unit", ORDER + SHARED)
def test_public_names_read_from_source_are_the_runtime_ones(unit: str) -> None:
    module = __import__(f"oxyeval.{unit}", fromlist=["__all__"])
    assert public_names(PACKAGE, unit) == set(module.__all__)


#: Stages the store may not import although they come before it: it stores what its
#: callers decided (a pass, a cut-off output, a valid branch setting) and never decides
#: or calls a model itself, so it never needs the vendors, the project files, a judge
#: or a workflow; the suites come after it anyway and are listed to say so.
STORE_NEVER_IMPORTS = ("providers", "project", "judge", "workflow", "suites")


def store_violations(found: list[Use]) -> list[str]:
    return [
        f"{use}: store imports {use.module}"
        for use in found
        if use.unit == "store" and use.target in STORE_NEVER_IMPORTS
    ]


def test_the_store_imports_no_stage_that_decides_or_calls_a_model() -> None:
    assert store_violations(FOUND) == []


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(f.relative_to(PACKAGE)): n
        for f in PACKAGE.rglob("*.py")
        if (n := len(f.read_text("utf-8").splitlines())) > 600
    }
    assert long == {}


# The checks above, on a small made-up package, so that a check that stops seeing an
# import form fails here rather than passing quietly.

_FAKE = {
    "__init__.py": "__version__ = '0'\n",
    "errors.py": "__all__ = ['OxyError']\nclass OxyError(Exception): ...\n",
    "store/__init__.py": "__all__ = ['open_store']\n",
    "providers/__init__.py": "__all__ = ['stopped_at_token_limit']\n",
    "project/__init__.py": "__all__ = []\n",
    "project/files.py": "def inside_project(): ...\n",
    "evaluation/__init__.py": "__all__ = ['result_kind']\n",
    "store/_core.py": "def open_store(): ...\n_secret = 1\n",
    "store/cache.py": "def helper(): ...\n",
    "suites/__init__.py": "__all__ = ['run']\n",
    "suites/run.py": (
        "from ..store import open_store\n"  # public: fine
        "from ..errors import OxyError\n"  # shared: fine
        "from .. import __version__\n"  # the root's constant: fine
        "from ..store.cache import helper\n"  # bypass
        "def late():\n"
        "    from oxyeval.store._core import _secret\n"  # private module and name
        "    import oxyeval.store.cache\n"  # bypass (the submodule)
    ),
    "store/bad.py": (
        "import oxyeval.suites\n"  # order
        "from oxyeval.suites import run\n"  # order
        "def late():\n"
        "    from ..suites.run import late\n"  # order, and a bypass
        "    import importlib\n"
        "    importlib.import_module('oxyeval.suites')\n"  # order
        "from ._core import _secret\n"  # own package: fine
    ),
    "store/deciding.py": (
        "from ..providers import stopped_at_token_limit\n"  # store rule
        "def late():\n"
        "    from oxyeval.project.files import inside_project\n"  # store rule
        "    from ..evaluation import result_kind\n"  # earlier, allowed: fine
    ),
}


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    root = tmp_path / "oxyeval"
    for name, text in _FAKE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, "utf-8")
    return root


def test_the_checks_see_every_import_form(fake: Path) -> None:
    found = uses(fake)
    assert sorted(order_violations(found)) == [
        "store/bad.py:1: store imports oxyeval.suites",
        "store/bad.py:2: store imports oxyeval.suites.run",
        "store/bad.py:4: store imports oxyeval.suites.run",
        "store/bad.py:6: store imports oxyeval.suites",
    ]
    assert private_violations(found) == ["suites/run.py:6: oxyeval.store._core._secret"]
    assert sorted(store_violations(found)) == [
        "store/bad.py:1: store imports oxyeval.suites",
        "store/bad.py:2: store imports oxyeval.suites.run",
        "store/bad.py:4: store imports oxyeval.suites.run",
        "store/bad.py:6: store imports oxyeval.suites",
        "store/deciding.py:1: store imports oxyeval.providers",
        "store/deciding.py:3: store imports oxyeval.project.files",
    ]
    assert bypasses(fake, found) == {
        ("store", "project", "inside_project"): ["store/deciding.py:3"],
        ("store", "suites", "late"): ["store/bad.py:4"],
        ("suites", "store", "_secret"): ["suites/run.py:6"],
        ("suites", "store", "cache"): ["suites/run.py:7"],
        ("suites", "store", "helper"): ["suites/run.py:4"],
    }
