"""chattest on the pass/fail engine: every prompt x each of its models x ``runVolume``
runs, each output judged by ``testModel`` against each test; a test passes for a model
when its pass rate meets ``successThreshold`` (default 0).

Outputs are shown, not kept (the spec: "outputs should be displayed upon test run, but
are not stored"); the pass rates are kept in the history when a project holds one. A
folder of chattest files needs no config.yml: its models are its own JSON files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..._tasks import run_sync
from ...errors import ConfigError
from ...evaluation import EventSink, Gates
from ...project.chattest import ChatTestSuite, load_chattest
from ...project.config import Project, load_project
from ...project.document import Document
from ...project.files import find_config
from ...workflow.context import RunContext
from ..targets import TextTarget
from .engine import Subject
from .results import Criterion, PassFailRun
from .run import pass_fail_judge, run_passfail

if TYPE_CHECKING:
    from ..shards import Sharding

__all__ = ["chattest_subjects", "run_chattest", "run_chattest_async"]


def _project_for(
    paths: Sequence[str | os.PathLike[str]], project_dir: str | None
) -> Project | None:
    """The project the files belong to, if any (its models, judge settings, history)."""
    if project_dir is not None:
        return load_project(project_dir=project_dir)
    start = Path(paths[0]) if paths else Path.cwd()
    return load_project(start) if find_config(start) is not None else None


def _bare_project(paths: Sequence[str | os.PathLike[str]]) -> Project:
    """A stand-in project for chattest files outside any: no models of its own (the
    files bring theirs), no history."""
    first = Path(paths[0]) if paths else Path.cwd()
    root = (first if first.is_dir() else first.parent).resolve()
    return Project(
        root=root,
        config=Document(path=root / "config.yml", text="", data={}),
        models={},
        default_model="",
        default_judge="",
        databases={},
    )


def chattest_subjects(suite: ChatTestSuite, context: RunContext) -> list[Subject]:
    """One subject per (prompt, model): the prompt sent as written, judged by its test
    model against each of its tests."""
    for key, model in suite.models.items():
        if key not in context.project.models:  # a config.yml model is there already
            context.models.add(model.spec)
    subjects = []
    for prompt in suite.prompts:
        judge = pass_fail_judge(context, prompt.test_model, prompt.test_prompt)
        criteria = [Criterion(test, test) for test in prompt.tests]
        for model in prompt.models:
            subjects.append(
                Subject(
                    key=f"{prompt.key}::{model}",
                    label=f"{prompt.key} on {model}",
                    target=TextTarget(context, model, prompt.prompt),
                    criteria=criteria,
                    runs=prompt.run_volume,
                    threshold=prompt.success_threshold,
                    min_judged=prompt.min_judged,
                    judge=judge,
                    question=prompt.prompt,
                    group=prompt.key,
                    name=model,
                    model=model,
                )
            )
    return subjects


async def run_chattest_async(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    project_dir: str | None = None,
    db: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    cache: bool | None = None,
    events: EventSink | None = None,
    concurrency: int = 5,
    adaptive: bool = False,
    into: PassFailRun | None = None,
    sharding: Sharding | None = None,
    gates: Gates | None = None,
) -> PassFailRun:
    """Run chattest's prompt files (a folder with ``prompts/`` and ``models/``, or files).
    Inside a project (a config.yml found from the files, or ``project_dir``) its models
    may be named too and the pass rates go to its history; outside one, none is kept.
    ``run.decision`` is the one decision under ``gates``."""
    project = _project_for(paths, project_dir)
    suite = load_chattest(list(paths), project=project, environ=environ)
    if not suite.prompts:
        raise ConfigError(
            f"no chattest prompt files in {', '.join(map(str, paths)) or '.'}: expected "
            "prompts/*.json (and models/*.json)"
        )
    run = into if into is not None else PassFailRun()
    run.warnings.extend(d.message for d in suite.warnings)
    return await run_passfail(
        project if project is not None else _bare_project(paths),
        lambda context: chattest_subjects(suite, context),
        label="chattest: " + ", ".join(p.key for p in suite.prompts),
        db=db,
        environ=environ,
        history=project is not None,
        # Outputs are not stored (the spec): no answer cache kept unless asked for with
        # cache=True (--cache), which keeps and replays answers on purpose.
        cache=cache if cache is not None else False,
        events=events,
        concurrency=concurrency,
        adaptive=adaptive,
        keep_outputs=False,
        into=run,
        sharding=sharding,
        gates=gates,
    )


def run_chattest(paths: Sequence[str | os.PathLike[str]] = (), **options: object) -> PassFailRun:
    """:func:`run_chattest_async` for scripts."""
    return run_sync(run_chattest_async(paths, **options), "run_chattest_async")  # type: ignore[arg-type]
