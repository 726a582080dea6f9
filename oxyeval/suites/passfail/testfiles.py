"""oxy's ``*.test.yml`` files on the pass/fail engine: each case's prompt asked of the
file's target (an agent, or a workflow) ``runs`` times, each answer judged for
correctness against the case's ``expected`` answer; a case's ``tool`` must have been
called in the run (oxy never implemented that check; we do).

A case is PASS when every judged run passed, FAIL when none did, FLKY otherwise (oxy's
``consistent``: all runs gave the same verdict); the run's gates (``--min-accuracy`` on
the overall score, the mean pass rate) decide the exit code, as for consistency tests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..._tasks import run_sync
from ...errors import ConfigError, Diagnostic
from ...evaluation import EventSink
from ...project.agent_tests import TestFile, collect_test_files, load_test_file, select_cases
from ...project.config import Project, load_project
from ...project.schema import did_you_mean
from ...workflow.context import RunContext
from ..targets import AgentTarget, Target, WorkflowTarget
from .engine import Subject
from .results import Criterion, PassFailRun
from .run import pass_fail_judge, run_passfail

if TYPE_CHECKING:
    from ..shards import Sharding

__all__ = ["load_test_files", "run_test_files", "run_test_files_async", "test_file_subjects"]

#: A workflow target's variable that receives the case's prompt, in this order.
_PROMPT_VARIABLES = ("question", "prompt")


def _load_workflow(project: Project, path: Path) -> list[Diagnostic]:
    from ...workflow.compile import compile_workflow
    from ...workflow.spec import load_workflow

    return list(compile_workflow(load_workflow(project, path)).all_warnings())


def load_test_files(
    project: Project, paths: Sequence[str | os.PathLike[str]] = ()
) -> list[TestFile]:
    """The project's ``*.test.yml`` files under ``paths`` (default: all), loaded and checked."""
    files = collect_test_files(project, [str(p) for p in paths])
    if not files:
        where = ", ".join(map(str, paths)) or str(project.root)
        also = "" if paths else " and no agent or workflow file there declares tests"
        raise ConfigError(f"no *.test.yml files in {where}{also}")
    return [load_test_file(project, f, load_workflow=_load_workflow) for f in files]


def _target(context: RunContext, test_file: TestFile) -> tuple[Target, str]:
    """The file's target and the input name that gets each case's prompt."""
    if test_file.target_kind == "agent":
        assert test_file.agent is not None
        return AgentTarget(context, test_file.agent), "question"
    from ...workflow.compile import compile_workflow
    from ...workflow.spec import load_workflow

    plan = compile_workflow(load_workflow(context.project, test_file.target))
    declared = plan.workflow.variables
    name = next((n for n in _PROMPT_VARIABLES if n in declared), None)
    if name is None:
        raise ConfigError(
            f"{test_file.display}: its target {plan.workflow.doc.display} declares no variable "
            f"{' or '.join(_PROMPT_VARIABLES)} to receive each case's prompt; add one "
            "(variables: {question: {type: string}})"
        )
    return WorkflowTarget(context, plan), name


def test_file_subjects(
    context: RunContext,
    test_files: Sequence[TestFile],
    *,
    tags: Sequence[str] = (),
    cases: Sequence[str] = (),
) -> list[Subject]:
    """One subject per selected case, judged by the file's judge_model (else the
    project's judge) for correctness against its expected answer."""
    subjects = []
    found: set[str] = set()
    for test_file in test_files:
        chosen = select_cases(test_file, tags, cases)
        found.update(n for n in cases for c in chosen if n == c.name)
        if not chosen:
            continue
        target, variable = _target(context, test_file)
        judge_model = test_file.settings.judge_model or context.project.default_judge
        judge = pass_fail_judge(context, judge_model, test_file.settings.judge_prompt)
        for case in chosen:
            criterion = Criterion(
                "expected",
                f"The answer gives the same facts as this expected answer: {case.expected}",
                tool=case.tool,
            )
            subjects.append(
                Subject(
                    key=f"{test_file.display}::{case.name}",
                    label=case.name,
                    target=target,
                    criteria=[criterion],
                    runs=test_file.settings.runs,
                    threshold=1.0,
                    min_judged=test_file.settings.min_judged,
                    judge=judge,
                    inputs={variable: case.prompt},
                    question=case.prompt,
                    group=test_file.display,
                    name=case.name,
                    model=str(getattr(target, "model", "") or ""),
                    own_check=False,
                )
            )
    missing = [n for n in cases if n not in found]
    if missing:
        known = [c.name for f in test_files for c in f.cases]
        hint = did_you_mean(missing[0], known)
        raise ConfigError(
            f"--case {missing[0]!r} matches no case{hint}; cases: {', '.join(known[:20])}"
        )
    if not subjects:
        raise ConfigError(
            f"no case carries the tag(s) {', '.join(tags)}" if tags else "no cases to run"
        )
    return subjects


async def run_test_files_async(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    project_dir: str | None = None,
    tags: Sequence[str] = (),
    cases: Sequence[str] = (),
    db: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | None = None,
    adaptive: bool = False,
    into: PassFailRun | None = None,
    sharding: Sharding | None = None,
) -> PassFailRun:
    """Run oxy's ``*.test.yml`` files (default: every one in the project); ``tags``
    keeps the cases carrying any of them, ``cases`` the ones so named."""
    start = Path(paths[0]) if paths else None
    project = load_project(start, project_dir=project_dir)
    test_files = load_test_files(project, paths)
    concurrency = max(f.settings.concurrency for f in test_files)
    return await run_passfail(
        project,
        lambda context: test_file_subjects(context, test_files, tags=tags, cases=cases),
        label=", ".join(f.display for f in test_files),
        db=db,
        environ=environ,
        history=history,
        cache=cache,
        events=events,
        concurrency=concurrency,
        adaptive=adaptive,
        into=into,
        sharding=sharding,
    )


def run_test_files(paths: Sequence[str | os.PathLike[str]] = (), **options: object) -> PassFailRun:
    """:func:`run_test_files_async` for scripts."""
    return run_sync(run_test_files_async(paths, **options), "run_test_files_async")  # type: ignore[arg-type]
