"""A run of judged pass/fail tests inside a :class:`~oxyeval.suites.suite.SuiteRun`: the
subjects built once the run's context exists, the history opened only when they are
(bad input creates no database), each subject's results stored as it finishes.

The formats (chattest's JSON files, oxy's ``*.test.yml``) only say how their files
become :class:`~.engine.Subject` s; everything else is here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ...evaluation import EventSink
from ...judge import PASS_FAIL, Judge
from ...project.config import Project
from ...project.templates import TemplateRef
from ...workflow.context import RunContext
from ..suite import SuiteRun, final_status
from .engine import Subject, run_subjects
from .results import PassFailRun, SubjectResult

if TYPE_CHECKING:
    from ...store import Store

__all__ = ["pass_fail_judge", "run_passfail"]


def pass_fail_judge(context: RunContext, model: str, prompt: TemplateRef | None = None) -> Judge:
    """The judge of a run's pass/fail verdicts: ``model`` under the PASS/FAIL rubric
    (with a file's own ``prompt``, else the rubric's), config.yml's ``judge:`` settings
    and the run's verdict cache."""
    return Judge(
        context.models.get(model),
        prompt,
        settings=context.project.judge,
        cache=context.verdicts,
        rubric=PASS_FAIL,
    )


async def run_passfail(
    project: Project,
    build: Callable[[RunContext], Sequence[Subject]],
    *,
    label: str,
    db: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | None = None,
    concurrency: int = 5,
    adaptive: bool = False,
    alpha: float = 0.05,
    keep_outputs: bool = True,
    into: PassFailRun | None = None,
) -> PassFailRun:
    """Build the subjects (``build`` raises bad input before anything is opened), run
    them, store each subject's results (with its outputs unless ``keep_outputs`` is
    False: chattest shows outputs and does not keep them) under one run named ``label``."""
    run = into if into is not None else PassFailRun()
    suite = SuiteRun(
        "passfail", db=db, environ=environ, history=history, cache=cache, events=events
    )
    async with suite:
        context = RunContext(project, environ=environ)
        store: Store | None = None
        run_id: str | None = None
        try:
            subjects = list(build(context))
            suite.start(len(subjects))
            book = suite.histories.for_project(project, full=True)
            context.cache = suite.caches(project)
            if book is not None:
                store = cast("Store | None", await book.store())
            if store is not None:
                total = sum(len(s.criteria) for s in subjects)
                run_id = store.runs.start("passfail", total=total, subject=label)

            async def kept(result: SubjectResult) -> None:
                outputs = {s.run: s.text for s in result.samples if s.text is not None}
                found = [r.as_result(outputs if keep_outputs else None) for r in result.results]
                for r in found:
                    suite.record(r)
                if store is not None and run_id is not None:
                    await asyncio.to_thread(store.results.add, run_id, found)

            await run_subjects(
                subjects,
                suite,
                run,
                concurrency=concurrency,
                adaptive=adaptive,
                alpha=alpha,
                on_subject=kept,
            )
        except (asyncio.CancelledError, KeyboardInterrupt):
            run.interrupted = True
            # The subjects cut short: their finished runs are kept too, marked interrupted.
            if store is not None and run_id is not None:
                cut = [r.as_result() for s in run.subjects if s.interrupted for r in s.results]
                if cut:
                    store.results.add(run_id, cut)
            raise
        finally:
            if store is not None and run_id is not None:
                failed = any(r.status == "error" for r in run.results)
                store.runs.finish(run_id, final_status(interrupted=run.interrupted, failed=failed))
            await context.aclose()
    return run
