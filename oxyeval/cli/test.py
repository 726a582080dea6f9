"""``oxy test``: run the consistency tests of agent and workflow files, gate CI on accuracy."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..errors import ConfigError
from ._app import (
    AllowEmptyOption,
    BatchOption,
    CacheOption,
    DbOption,
    DebugOption,
    FailOnDropOption,
    FailOnRegressionOption,
    Format,
    Inconclusive,
    InconclusiveOption,
    MinAccuracyOption,
    MinPassRateOption,
    ProjectOption,
    RunGroupOption,
    ShardOption,
    StrictOption,
    ThresholdMode,
    ThresholdModeOption,
    app,
    gates,
    no_history_conflict,
    setup_logging,
    shards,
)
from ._common import batched, fail
from .artifacts import JunitOption
from .console import stderr_console, stdout_console

__all__ = ["project_tests", "test_command"]


@app.command("test")
def test_command(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE...",
            help="Agent or workflow files (or folders) whose tests to run, *.test.yml "
            "files (default: the project's *.test.yml files, else its consistency tests), "
            "or Python test files (*.py, run through pytest as deepeval test run does).",
        ),
    ] = None,
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    min_accuracy: MinAccuracyOption = None,
    threshold_mode: ThresholdModeOption = ThresholdMode.average,
    min_pass_rate: MinPassRateOption = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no details.")
    ] = False,
    project: ProjectOption = None,
    strict: StrictOption = False,
    fail_on_drop: FailOnDropOption = None,
    fail_on_regression: FailOnRegressionOption = False,
    inconclusive: InconclusiveOption = Inconclusive.passes,
    judge_agreement: Annotated[
        str | None,
        typer.Option(
            "--judge-agreement",
            metavar="MODEL",
            help="Consistency tests: re-judge a sample of each test's judged pairs with "
            "this second judge model and report Cohen's kappa between the two judges.",
        ),
    ] = None,
    allow_empty: AllowEmptyOption = False,
    no_history: Annotated[
        bool,
        typer.Option(
            "--no-history",
            help="Do not store the results, nor read earlier ones or cached verdicts.",
        ),
    ] = False,
    db: DbOption = None,
    junit: JunitOption = None,
    cache: CacheOption = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", metavar="TAG", help="*.test.yml: only cases with this tag (repeatable)."
        ),
    ] = None,
    case: Annotated[
        list[str] | None,
        typer.Option("--case", metavar="NAME", help="*.test.yml: only this case (repeatable)."),
    ] = None,
    adaptive: Annotated[
        bool,
        typer.Option(
            "--adaptive",
            help="*.test.yml: runs is a maximum; stop a case once its verdict is "
            "statistically settled (anytime-valid, wrong decisions at most 5%).",
        ),
    ] = False,
    batch: BatchOption = False,
    shard: ShardOption = None,
    run_group: RunGroupOption = None,
    repeat: Annotated[
        int | None,
        typer.Option(
            "--repeat", "-r", min=1, max=1000, metavar="N", help="*.py: run each test N times."
        ),
    ] = None,
    ignore_errors: Annotated[
        bool,
        typer.Option(
            "--ignore-errors", "-i", help="*.py: a metric that cannot score fails its test."
        ),
    ] = False,
    skip_on_missing_params: Annotated[
        bool,
        typer.Option(
            "--skip-on-missing-params",
            "-s",
            help="*.py: skip a metric whose test case lacks a field it reads.",
        ),
    ] = False,
    exit_on_first_failure: Annotated[
        bool, typer.Option("--exit-on-first-failure", "-x", help="*.py: stop at the first failure.")
    ] = False,
    mark: Annotated[
        str | None,
        typer.Option(
            "--mark", "-m", metavar="EXPR", help="*.py: only tests with this pytest mark."
        ),
    ] = None,
    pytest_extra: Annotated[
        list[str] | None,
        typer.Option("--pytest-arg", metavar="ARG", help="*.py: one more pytest argument."),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Run the consistency tests declared in agent and workflow files, or oxy's judged
    pass/fail *.test.yml files; gate CI on accuracy.

    *.test.yml files run each case `runs` times and judge each answer against its
    expected one (PASS, FLKY, FAIL); the score is the mean pass rate. Agent and workflow
    files run their consistency tests. With no FILE: the project's *.test.yml files, or
    when it has none, every consistency test it declares; the commands for its other
    kinds of tests (oxy cases run, oxy ab run) are named on stderr.

    Every result is stored in the project's history (--no-history: not), and each test's
    accuracy is shown against its previous run.

    Python test files (*.py) run through pytest with oxyeval's plugin, as DeepEval's
    `deepeval test run` runs them (--repeat, --ignore-errors, --skip-on-missing-params,
    -x, -m): 0 every test passed, 1 one failed, 2 bad input or nothing collected, 3
    interrupted.

    Exit codes: 0 pass; 1 below --min-accuracy, a drop over --fail-on-drop, or a gate
    given with no test found (--allow-empty: 0); 2 bad input or config; 3 provider failure, interrupted run, a
    test that could not be scored, or --fail-on-drop with a history that could not be read
    (a broken history is otherwise a warning and never changes the exit code).
    """
    from ..report import reporter
    from ..suites.consistency import run_tests_async
    from ..suites.consistency.results import ConsistencyRun
    from .driver import drive
    from .testfiles import is_test_file, run_test_files_command

    err = stderr_console()
    setup_logging(err, debug)
    as_json = format is Format.json
    # Said before anything else is (the hints about the project's other files included).
    sharding, shard_problem = shards(shard, run_group, kind="", stored=not no_history)
    if shard_problem is not None:
        raise fail(err, ConfigError(shard_problem), as_json)
    if not files and not (tag or case or adaptive):
        files, others = project_tests(project)
        if not quiet:
            for line in others:
                err.print(line, style="dim", markup=False, highlight=False)
    files = files or []
    from .pytests import is_python_test, run_pytest_command

    python = [f for f in files if is_python_test(f)]
    if python:
        if len(python) != len(files):
            message = "oxy test was given Python test files with other files: run them apart"
        elif as_json:
            message = "--format json does not apply to Python test files (pytest reports them)"
        elif tag or case or adaptive:
            message = "--tag, --case and --adaptive apply to *.test.yml files"
        elif shard is not None or run_group is not None:
            # Ignored, every shard of a CI matrix would run the whole suite and keep nothing.
            message = (
                "--shard and --run-group apply to *.test.yml files and the other run "
                "commands, not to Python test files (pytest runs those; split them with "
                "pytest's own options)"
            )
        else:
            message = None
        if message is not None:
            raise fail(err, ConfigError(message), as_json)
        try:
            code = run_pytest_command(
                python,
                repeat=repeat,
                ignore_errors=ignore_errors,
                skip_on_missing_params=skip_on_missing_params,
                exit_on_first_failure=exit_on_first_failure,
                mark=mark,
                no_history=no_history,
                junit=junit,
                quiet=quiet,
                extra=list(pytest_extra or []),
            )
        except ConfigError as exc:
            raise fail(err, exc, as_json) from None
        raise typer.Exit(code)
    if repeat or ignore_errors or skip_on_missing_params or exit_on_first_failure or mark:
        raise fail(
            err,
            ConfigError(
                "--repeat, --ignore-errors, --skip-on-missing-params, -x and -m apply to "
                "Python test files"
            ),
            as_json,
        )
    pass_fail = [f for f in files if is_test_file(f)]
    message = None
    if not files or pass_fail:
        if len(pass_fail) != len(files):
            message = (
                "oxy test was given *.test.yml files and agent or workflow files together; "
                "they report differently: run them in two calls"
            )
    elif tag or case or adaptive:
        message = "--tag, --case and --adaptive apply to *.test.yml files"
    if message is None and judge_agreement is not None and (not files or pass_fail):
        message = "--judge-agreement applies to the consistency tests of agent and workflow files"
    if message is not None:
        raise fail(err, ConfigError(message), as_json)
    held = gates(
        min_accuracy,
        threshold_mode,
        min_pass_rate,
        strict,
        fail_on_drop,
        allow_empty,
        fail_on_regression=fail_on_regression,
        inconclusive=inconclusive,
    )
    if sharding is not None:
        sharding.kind = "test-files" if not files or pass_fail else "consistency"
    if not files or pass_fail:
        raise typer.Exit(
            run_test_files_command(
                files,
                as_json=as_json,
                quiet=quiet,
                project=project,
                db=db,
                junit=junit,
                cache=cache,
                no_history=no_history,
                tags=tag or [],
                cases=case or [],
                adaptive=adaptive,
                gates=held,
                debug=debug,
                batch=batch,
                sharding=sharding,
            )
        )
    run = ConsistencyRun(agreement_model=judge_agreement)

    def once(events: Any, final: bool = True) -> Any:
        return run_tests_async(
            files,
            project_dir=project,
            into=run if final else ConsistencyRun(agreement_model=judge_agreement),
            cache=cache,
            db=db,
            history=not no_history,
            events=events if final else None,
            sharding=sharding,
        )

    code = drive(
        reporter("consistency"),
        run,
        batched(once, err, "consistency", files, project, db, no_history) if batch else once,
        held,
        err=err,
        out=stdout_console(),
        as_json=as_json,
        quiet=quiet,
        junit=junit,
        debug=debug,
        problem=no_history_conflict(no_history, cache, fail_on_drop, fail_on_regression),
        sharding=sharding,
    )
    raise typer.Exit(code)


def project_tests(project: str | None) -> tuple[list[str], list[str]]:
    """What a bare ``oxy test`` runs, and a line for each other kind of test it does not.

    The project's ``*.test.yml`` files when it has any (oxy's meaning: the list stays
    empty and the pass/fail side finds them), else its agents' and workflows' consistency
    tests (the project folder). The other kinds report differently and run by their own
    command, so each found is named with the exact command to type. No project: nothing,
    and the pass/fail side says how to make one.
    """
    import os
    from pathlib import Path

    from ..project import find_config, project_files

    config = (Path(project) / "config.yml") if project is not None else find_config(Path.cwd())
    if config is None or not config.parent.is_dir():
        return [], []
    root = config.parent
    shown = os.path.relpath(root) if project is None else project
    found = project_files(root, ("test", "agent", "workflow", "prompt", "cases"))
    by_kind: dict[str, list[Path]] = {}
    for path in found:
        by_kind.setdefault(_test_kind(path), []).append(path)
    others: list[str] = []
    if by_kind.get("test"):
        files: list[str] = []
        if by_kind.get("consistency"):
            others.append(
                f"consistency tests in {_count(by_kind['consistency'])} do not run with "
                f"the *.test.yml files: oxy test {shown}"
            )
    else:
        files = [shown] if by_kind.get("consistency") else []
    if by_kind.get("cases"):
        others.append(f"test cases in {_count(by_kind['cases'])}: oxy cases run")
    if by_kind.get("ab"):
        others.append(f"A/B branches in {_count(by_kind['ab'])}: oxy ab run")
    return files, others


def _count(paths: list[object]) -> str:
    return f"{len(paths)} file{'s' if len(paths) != 1 else ''}"


def _test_kind(path: object) -> str:
    """Which command runs the tests ``path`` declares: ``test`` (a *.test.yml file),
    ``consistency``, ``cases``, ``ab`` or ``none``; read with the project's YAML loader,
    a file that does not parse counts as none (the run that reads it says why)."""
    from pathlib import Path

    from ..errors import OxyError
    from ..project import file_kind, parse_yaml, read_text

    assert isinstance(path, Path)
    kind = file_kind(path)
    if kind == "test":
        return "test"
    try:
        doc, problems = parse_yaml(read_text(path), path)
    except OxyError:
        return "none"
    data = doc.data if not problems and isinstance(doc.data, dict) else {}
    if kind in ("agent", "workflow"):
        return "consistency" if data.get("tests") else "none"
    cases = data.get("cases") if isinstance(data.get("cases"), list) else []
    if data.get("branches") or any(isinstance(c, dict) and c.get("branches") for c in cases):
        return "ab"
    return "cases" if kind == "cases" or data.get("cases") else "none"
