"""Judged pass/fail tests as a kind on the run pipeline (:class:`PassFail`): the subjects
built in the run's context (bad input creates no database), each subject's results
stored as it finishes.

The formats (chattest's JSON files, oxy's ``*.test.yml``) only say how their files
become :class:`~.engine.Subject` s; everything else is here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...evaluation import EventSink
from ...judge import PASS_FAIL, Judge
from ...project.config import Project
from ...project.templates import TemplateRef
from ...workflow.context import RunContext
from ..recorder import Handle, RunRow, Storage
from ..shards import ShardKey
from ..suite import SuiteRun, run_kind
from .engine import Subject, run_subjects, subject_result
from .results import PassFailRun, SubjectResult

if TYPE_CHECKING:
    from ...evaluation import Gates
    from ..shards import Sharding

__all__ = ["PassFail", "pass_fail_judge", "run_passfail"]


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


class PassFail:
    """Judged pass/fail tests as a kind on the run pipeline: one unit, the engine running
    every subject; each subject's results kept as it finishes (with its outputs unless
    ``keep_outputs`` is False: chattest shows outputs and does not keep them), under one
    run row named ``label``."""

    name = "passfail"
    storage = Storage()

    def __init__(
        self,
        project: Project,
        build: Callable[[RunContext], Sequence[Subject]],
        *,
        label: str,
        concurrency: int,
        adaptive: bool,
        alpha: float,
        keep_outputs: bool,
        run: PassFailRun,
    ) -> None:
        self.project = project
        self.build = build
        self.label = label
        self.concurrency = concurrency
        self.adaptive = adaptive
        self.alpha = alpha
        self.keep_outputs = keep_outputs
        self.run = run
        self.subjects: list[Subject] = []
        self._handle: Handle | None = None
        self._kept: set[str] = set()  # keys of the subjects whose results are kept

    async def plan(self, suite: SuiteRun) -> list[PassFail]:
        self.subjects = suite.shard(
            list(self.build(suite.context(self.project))),
            lambda s: ShardKey(s.group, s.name or s.key, s.runs * max(1, len(s.criteria))),
            [self.project],
        )
        self.run.history = suite.recorder.notes  # one entry per history, once it opens
        total = sum(len(s.criteria) for s in self.subjects)
        self._handle = suite.add(self.project, RunRow(subject=self.label), count=total)
        return [self]

    async def _keep(self, suite: SuiteRun, result: SubjectResult) -> None:
        assert self._handle is not None
        self._kept.add(result.key)
        outputs = {s.run: s.text for s in result.samples if s.text is not None}
        found = [r.as_result(outputs if self.keep_outputs else None) for r in result.results]
        kept = await asyncio.gather(*(suite.keep(self._handle, r) for r in found))
        for criterion, recorded in zip(result.results, kept, strict=True):
            criterion.previous = recorded.result.previous

    async def execute(self, unit: PassFail, suite: SuiteRun) -> None:
        await run_subjects(
            self.subjects,
            suite,
            self.run,
            concurrency=self.concurrency,
            adaptive=self.adaptive,
            alpha=self.alpha,
            on_subject=lambda result: self._keep(suite, result),
        )

    def finished(self, suite: SuiteRun) -> None:
        """Put in order before the decision (:meth:`in_order`)."""

    def stopped(self, suite: SuiteRun) -> None:
        """The subjects cut short keep their finished runs, marked interrupted; those that
        never started are listed too, with none."""
        assert self._handle is not None
        listed = set()
        for subject in self.run.subjects:
            listed.add(subject.key)
            if subject.key in self._kept:  # read back from disk, a subject is a copy
                continue
            self._keep_cut(suite, subject)
        for position, planned in enumerate(self.subjects):
            if planned.key not in listed:
                never = subject_result(planned, position)
                never.interrupted = True
                for r in never.results:
                    r.interrupted = True
                self._keep_cut(suite, never)
                self.run.subjects.append(never)

    def _keep_cut(self, suite: SuiteRun, subject: SubjectResult) -> None:
        assert self._handle is not None
        self._kept.add(subject.key)
        for r in subject.results:
            result = r.as_result()
            suite.record(result)
            suite.recorder.submit(self._handle, result)

    def in_order(self, suite: SuiteRun) -> None:
        """The subjects in plan order (they finish in any order), before the decision."""
        self.run.in_plan_order()


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
    gates: Gates | None = None,
    sharding: Sharding | None = None,
) -> PassFailRun:
    """Build the subjects (``build`` raises bad input before anything is opened), run
    them, store each subject's results under one run named ``label``; ``run.decision``
    is the one decision under ``gates``."""
    run = into if into is not None else PassFailRun()
    kind = PassFail(
        project,
        build,
        label=label,
        concurrency=concurrency,
        adaptive=adaptive,
        alpha=alpha,
        keep_outputs=keep_outputs,
        run=run,
    )
    await run_kind(
        kind,
        db=db,
        environ=environ,
        history=history,
        cache=cache,
        events=events,
        gates=gates,
        concurrency=max(1, concurrency),
        sharding=sharding,
    )
    return run
