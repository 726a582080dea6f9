"""``oxy test FILE.py``: a Python test file run through pytest with the SDK's plugin, as
``deepeval test run FILE.py`` runs one.

Every ``assert_test`` of the session is one run ("pytest") in the project's history.
DeepEval's flags keep their meaning: ``--repeat N`` runs each test N times,
``--ignore-errors`` and ``--skip-on-missing-params`` set what ``assert_test`` does with
a metric that cannot score or lacks a field, ``-x`` stops at the first failure, ``-m``
selects marks; anything after ``--`` goes to pytest as it is.

Exit codes are oxy's, read off pytest's: 0 every test passed; 1 a test failed (as
pytest and DeepEval give); 2 bad input (pytest's usage error, or no test collected); 3
interrupted or pytest's own internal error. DeepEval passes pytest's code (2 to 5)
through; oxy keeps its four so one CI script reads every oxy command.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["is_python_test", "run_pytest_command"]


def is_python_test(path: str) -> bool:
    """A Python file (``test_*.py`` or any ``*.py``) that ``oxy test`` runs through pytest."""
    return path.endswith(".py")


def pytest_args(
    paths: list[str],
    *,
    repeat: int | None,
    ignore_errors: bool,
    skip_on_missing_params: bool,
    exit_on_first_failure: bool,
    mark: str | None,
    no_history: bool,
    junit: str | None,
    quiet: bool,
    extra: list[str],
) -> list[str]:
    """pytest's command line for ``oxy test FILE.py ...``."""
    # oxy imported oxyeval (and so its plugin) before pytest started: nothing to rewrite
    quiet_rewrite = "ignore:Module already imported so cannot be rewritten; oxyeval"
    args = ["-p", "no:cacheprovider", "-W", quiet_rewrite, *paths]
    args.append("--quiet" if quiet else "-rfE")
    if exit_on_first_failure:
        args.append("-x")
    if repeat is not None:
        args += ["--oxy-repeat", str(repeat)]
    if ignore_errors:
        args.append("--oxy-ignore-errors")
    if skip_on_missing_params:
        args.append("--oxy-skip-on-missing-params")
    if mark:
        args += ["-m", mark]
    if no_history:
        args.append("--oxy-no-history")
    if junit:
        args += ["--junitxml", junit]
    return args + extra


#: pytest's exit codes as oxy's: tests failed 1, usage error or nothing collected 2,
#: interrupted or pytest's internal error 3.
EXIT_CODES = {0: 0, 1: 1, 2: 3, 3: 3, 4: 2, 5: 2}


def run_pytest_command(paths: list[str], **options: object) -> int:
    """Run ``paths`` through pytest in this process; oxy's exit code."""
    import pytest

    for path in paths:
        if not Path(path).is_file():
            from ..errors import ConfigError

            raise ConfigError(f"{path}: no such Python test file")
    code = pytest.main(pytest_args(paths, **options))  # type: ignore[arg-type]
    return EXIT_CODES.get(int(code), 3)
