"""``oxy test`` as a library call: load files, run their tests, return a TestRun.

All files are loaded (and every model key resolved) before the first model call,
so bad input fails fast with every problem listed, and a run never dies halfway
through on a config error. Provider failures during a run are recorded per run
or per judge call; they never abort the other tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .agent import AgentRunner
from .consistency import evaluate
from .errors import ConfigError, Diagnostic, LoadError, OxyError, ProviderError
from .judge import Judge
from .load import load_yaml
from .project import Agent, JudgeSpec, Project, TestSpec, file_kind, load_agent, load_project
from .providers._model import RetryPolicy
from .providers._pool import ModelPool
from .results import OutputRecord, TestResult, TestRun
from .validate import validate_document

__all__ = ["ProgressSink", "collect_files", "run_tests", "run_tests_async"]


class ProgressSink(Protocol):
    def start(self, key: str, label: str, total: int) -> None: ...
    def add_total(self, key: str, amount: int) -> None: ...
    def advance(self, key: str, amount: int = 1) -> None: ...


class _NoProgress:
    def start(self, key: str, label: str, total: int) -> None:
        pass

    def add_total(self, key: str, amount: int) -> None:
        pass

    def advance(self, key: str, amount: int = 1) -> None:
        pass


_SKIP_DIRS = {".git", ".oxy", ".venv", "node_modules", "__pycache__", "target", "dist", "build"}


def collect_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files to test: given files as they are, folders searched for agent/workflow files."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and file_kind(p) in ("agent", "workflow")
                and not any(part in _SKIP_DIRS for part in p.relative_to(path).parts[:-1])
            )
            if not found:
                raise ConfigError(f"{path}: no *.agent.yml or *.workflow.yml files in this folder")
            out.extend(found)
        elif not path.exists():
            raise LoadError([Diagnostic(str(path), "file not found")])
        else:
            out.append(path)
    return out


@dataclass
class _Loaded:
    project: Project
    agent: Agent


def _load_all(files: list[Path], project_dir: str | None) -> tuple[list[_Loaded], list[str]]:
    projects: dict[Path, Project] = {}
    loaded: list[_Loaded] = []
    problems: list[Diagnostic] = []
    warnings: list[str] = []
    for file in files:
        kind = file_kind(file)
        try:
            project = load_project(file, project_dir=project_dir)
            project = projects.setdefault(project.root, project)
            if kind == "workflow":
                doc = load_yaml(file)
                found = validate_document(doc, "workflow")
                if any(d.severity == "error" for d in found):
                    raise LoadError(found)
                if doc.data.get("tests"):
                    raise ConfigError(
                        f"{doc.display}: tests in workflow files need the workflow engine, which "
                        "is not in this version of oxyeval yet; run the tests of an agent file"
                    )
                warnings.append(f"{doc.display}: no tests")
                continue
            if kind != "agent":
                raise LoadError(
                    [
                        Diagnostic(
                            str(file),
                            "not a test file: oxy test takes *.agent.yml or *.workflow.yml files",
                        )
                    ]
                )
            agent = load_agent(project, file)
            if agent.kind == "routing" and agent.tests:
                raise ConfigError(
                    f"{agent.doc.display}: routing agents are not supported by oxyeval yet, so "
                    "their tests cannot run"
                )
        except LoadError as exc:
            problems.extend(exc.diagnostics)
            continue
        loaded.append(_Loaded(project, agent))
        warnings.extend(w.format() for w in agent.warnings)
    if problems:
        raise LoadError(problems)
    for project in projects.values():
        warnings[:0] = [w.format() for w in project.warnings]
    return loaded, warnings


def _comparison_dict(comp, scores: Mapping[str, float]) -> dict[str, object]:
    return {
        "runs": list(comp.runs),
        "weight": comp.weight,
        "identical": comp.identical,
        "verdict": comp.choice,
        "score": scores.get(comp.choice, 0.0) if comp.choice else None,
        "reasoning": comp.reasoning,
        "error": comp.error,
        "judge_calls": comp.judge_calls,
    }


async def _judge_outputs(
    spec: TestSpec,
    judge_spec: JudgeSpec,
    label: str,
    outputs: list[OutputRecord],
    agent: Agent,
    pool: ModelPool,
    progress: ProgressSink,
    started: float,
) -> TestResult:
    key = f"{spec.display}#{spec.index}"
    result = TestResult(
        name=label,
        file=spec.display,
        index=spec.index,
        task_description=spec.task_description,
        n=spec.n,
        pairing=spec.pairing,
        agent_model=agent.model,
        judge_model=judge_spec.model,
        scores=dict(judge_spec.scores),
        outputs=[OutputRecord(**o.__dict__) for o in outputs],
    )
    texts = {o.run: o.text or "" for o in outputs if o.error is None}
    if len(texts) < 2:
        first = next((o.error for o in outputs if o.error), None)
        why = f"; first error: {first}" if first else ""
        result.error = (
            f"only {len(texts)} of {spec.n} runs succeeded, need at least 2 to compare{why}"
        )
        result.duration = time.perf_counter() - started
        return result
    judge = Judge(pool.get(judge_spec.model), judge_spec.prompt)
    comparisons, score = await evaluate(
        texts,
        judge.comparer(spec.task_description or ""),
        pairing=spec.pairing,
        scores=result.scores,
        concurrency=spec.concurrency,
        on_planned=lambda count: progress.add_total(key, count),
        on_done=lambda _c: progress.advance(key),
    )
    result.accuracy = score.accuracy
    result.pairs = score.pairs
    result.judged_pairs = score.judged_pairs
    result.identical_pairs = sum(c.weight for c in comparisons if c.identical)
    result.judge_calls = score.judge_calls
    result.selected = score.selected
    for o in result.outputs:
        o.consistency = score.per_run.get(o.run)
    result.comparisons = [_comparison_dict(c, result.scores) for c in comparisons]
    if result.accuracy is None:
        errors = [c.error for c in comparisons if c.error]
        result.error = (
            f"no valid verdicts: all {len(errors)} judge call(s) failed; first: {errors[0]}"
            if errors
            else "no valid verdicts"
        )
    result.duration = time.perf_counter() - started
    return result


async def _run_test(
    spec: TestSpec, agent_runner: AgentRunner, pool: ModelPool, progress: ProgressSink
) -> list[TestResult]:
    started = time.perf_counter()
    key = f"{spec.display}#{spec.index}"
    progress.start(key, f"{spec.display} · {spec.name}", spec.n)
    semaphore = asyncio.Semaphore(spec.concurrency)
    question = spec.task_description or ""

    async def one(run: int) -> OutputRecord:
        async with semaphore:
            try:
                c = await agent_runner.ask(question)
            except ProviderError as exc:
                return OutputRecord(run=run, text=None, error=str(exc))
            finally:
                progress.advance(key)
        return OutputRecord(
            run=run,
            text=c.text,
            latency=c.latency,
            input_tokens=c.usage.input_tokens,
            output_tokens=c.usage.output_tokens,
        )

    outputs = list(await asyncio.gather(*(one(r) for r in range(1, spec.n + 1))))
    multi = len(spec.judges) > 1
    return list(
        await asyncio.gather(
            *(
                _judge_outputs(
                    spec,
                    judge,
                    f"{spec.name} [metric {k + 1}]" if multi else spec.name,
                    outputs,
                    agent_runner.agent,
                    pool,
                    progress,
                    started,
                )
                for k, judge in enumerate(spec.judges)
            )
        )
    )


async def run_tests_async(
    paths: Iterable[str | Path],
    *,
    project_dir: str | None = None,
    progress: ProgressSink | None = None,
    into: TestRun | None = None,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
) -> TestRun:
    """Run the consistency tests of the given agent files.

    ``into`` is filled as tests finish, so a caller that is interrupted still has
    every finished result.
    """
    run = into if into is not None else TestRun()
    loaded, warnings = _load_all(collect_files(paths), project_dir)
    run.warnings.extend(warnings)
    progress = progress or _NoProgress()
    pools: dict[Path, ModelPool] = {}
    try:
        jobs = []
        for item in loaded:
            pool = pools.get(item.project.root)
            if pool is None:
                pool = pools[item.project.root] = ModelPool(
                    item.project.models, retry=retry, environ=environ
                )
            if not item.agent.tests:
                run.skipped.append(f"{item.agent.doc.display}: no consistency tests")
                continue
            # Resolve keys before any call: a missing key is a config error, not n failed runs.
            pool.check([item.agent.model, *(j.model for t in item.agent.tests for j in t.judges)])
            runner = AgentRunner(item.agent, pool, item.project.root)
            runner.system_prompt()  # template errors surface now, once, as exit 2
            jobs.extend((spec, runner, pool) for spec in item.agent.tests)

        async def job(spec: TestSpec, runner: AgentRunner, pool: ModelPool) -> None:
            try:
                results = await _run_test(spec, runner, pool, progress)
            except OxyError:
                raise
            run.tests.extend(results)

        await asyncio.gather(*(job(*j) for j in jobs))
    finally:
        for pool in pools.values():
            await pool.aclose()
    # Report in file order, whatever order the tests finished in.
    order = {(s.display, s.index): k for k, (s, _r, _p) in enumerate(jobs)}
    run.tests.sort(key=lambda t: (order.get((t.file, t.index), 0), t.name))
    return run


def run_tests(paths: Iterable[str | Path], **kwargs: object) -> TestRun:
    """Synchronous :func:`run_tests_async`, for scripts and notebooks without a loop."""
    return asyncio.run(run_tests_async(paths, **kwargs))  # type: ignore[arg-type]
