"""How each kind of run is reported: one :class:`RunReporter` per kind, so a command that
runs tests (and ``oxy report``, which re-gates a saved run) ends the same way whatever
it ran.

A reporter knows a kind's run object (what the library call fills in as it runs) and
turns it into the core's results (for the one decision), a JSON document, a pretty
report and JUnit XML. It never decides: every method that shows an outcome takes the
:class:`~oxyeval.evaluation.Decision` the caller made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..redact import redact

if TYPE_CHECKING:
    from rich.console import Console

    from ..evaluation import Decision

__all__ = ["REPORTERS", "RunReporter", "reporter", "saved_reporter"]


@dataclass(frozen=True)
class RunReporter:
    """The base every kind's reporter extends: what a run of no particular kind has."""

    #: What one unit of progress is called in the line an interruption prints.
    noun: ClassVar[str] = "result(s)"
    #: The pretty report ends with the gates' own lines (✓/✗ threshold, drop): on a
    #: terminal they are not repeated on stderr.
    shows_gates: ClassVar[bool] = False
    #: A run of one result whose error is the error that stopped the run (a workflow):
    #: the result's own error line would say it twice.
    one_result: ClassVar[bool] = False

    def finished(self, run: Any) -> int:
        """How many units finished (an error before any did is reported as the error)."""
        return len(run.as_results())

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        """Warnings to print on stderr before the verdict (load warnings, skipped files)."""
        return [f"warning: {w}" for w in getattr(run, "warnings", ())]

    def interrupted_line(self, run: Any, reason: str) -> str:
        """What a Ctrl-C or SIGTERM line says was kept (the exit code is appended)."""
        return f"{reason}: reporting the {self.finished(run)} {self.noun} that finished"

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def error_document(self, run: Any, decision: Decision, *, error: str) -> dict[str, Any]:
        """``--format json`` for a run that stopped before anything finished: the
        family's error document, the same for every kind and every command."""
        from .documents import error_document

        return error_document(error, decision.code)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        raise NotImplementedError

    #: The function of :mod:`.junit` that writes this kind's runs as JUnit XML (None: the
    #: kind has no JUnit form, as ``oxy run`` has no ``--junit``).
    junit_writer: ClassVar[str | None] = None

    def junit(
        self,
        run: Any,
        decision: Decision,
        *,
        error: str | None = None,
        timestamp: datetime | None = None,
    ) -> str:
        if self.junit_writer is None:
            raise NotImplementedError(f"{type(self).__name__} has no JUnit form")
        from . import junit

        write = getattr(junit, self.junit_writer)
        return str(write(run, decision, error=error, timestamp=timestamp))

    def error_line(self, error: BaseException, *, quiet: bool) -> str | None:
        """What stderr says of an error that stopped the run after something finished
        (None: the error in its own words, the usual ``error: ...`` paragraph)."""
        return None


def _with_error(doc: dict[str, Any], error: str | None) -> dict[str, Any]:
    """A run document with what stopped the run (after some results finished)."""
    if error is not None:
        doc["error"] = redact(error)
    return doc


@dataclass(frozen=True)
class ConsistencyReporter(RunReporter):
    noun: ClassVar[str] = "test(s)"
    junit_writer: ClassVar[str | None] = "consistency_junit"
    shows_gates: ClassVar[bool] = True

    def finished(self, run: Any) -> int:
        return len(run.tests)

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        lines = [] if quiet else list(run.warnings + run.skipped)
        # even with --quiet: results are missing from the history
        return lines + [f"warning: {line}" for line in run.history_errors]

    def interrupted_line(self, run: Any, reason: str) -> str:
        cut = sum(1 for t in run.tests if t.interrupted)
        return (
            f"{reason}: reporting {len(run.tests) - cut} test(s) that finished and {cut} cut "
            "short (their finished runs are kept, marked interrupted; a rerun with --cache "
            "replays every answer they got, those cut at the token limit too)"
        )

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .json import to_json

        return to_json(run, decision, error=error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        from .pretty import render_pretty

        render_pretty(run, decision, console, quiet=quiet)


@dataclass(frozen=True)
class CasesReporter(RunReporter):
    noun: ClassVar[str] = "case(s)"
    junit_writer: ClassVar[str | None] = "cases_junit"

    def finished(self, run: Any) -> int:
        return len(run.results)

    def interrupted_line(self, run: Any, reason: str) -> str:
        if not run.results:  # stopped before any case ended (or while its batches ran)
            return f"{reason}: no case had finished, none is stored"
        finished = len(run.results)
        stored = min(n.stored for n in run.history) if run.history else finished
        if stored != finished:  # a second signal cut the last writes short: say both
            return (
                f"{reason}: {finished} of {run.planned} case(s) finished; {stored} of them "
                f"are stored in {run.db}"
            )
        return f"{reason}: {finished} of {run.planned} case(s) finished and are stored in {run.db}"

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .cases import case_run_json

        return _with_error(case_run_json(run, decision), error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        from .cases_pretty import render_case_run

        render_case_run(run, console, quiet=quiet)


@dataclass(frozen=True)
class ABReporter(RunReporter):
    noun: ClassVar[str] = "execution(s) (stored)"
    junit_writer: ClassVar[str | None] = "ab_junit"

    def finished(self, run: Any) -> int:
        return run.execution_count  # counted, not listed: a large run's are on disk

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        return []  # the report lists them

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .ab import ab_run_json

        return _with_error(ab_run_json(run, decision), error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        from .ab import render_ab_run

        render_ab_run(run, console)


@dataclass(frozen=True)
class ChattestReporter(RunReporter):
    noun: ClassVar[str] = "prompt/model pair(s)"
    junit_writer: ClassVar[str | None] = "passfail_junit"

    def finished(self, run: Any) -> int:
        return len(run.subjects)

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        from .passfail import unjudged_notes

        # A cell that could be scored still left runs out: why, on stderr (a cell that
        # could not be scored at all is one of the decision's reasons already).
        return [f"warning: {line}" for line in unjudged_notes(run)]

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .passfail import chattest_json

        return _with_error(chattest_json(run, decision), error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        from .passfail import render_chattest

        render_chattest(run, console, quiet=quiet)


@dataclass(frozen=True)
class TestFilesReporter(ChattestReporter):
    noun: ClassVar[str] = "case(s)"

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        return []  # each case's lines in the report list its judge errors

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .passfail import test_files_json

        return _with_error(test_files_json(run, decision), error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        from .passfail import render_test_files

        render_test_files(run, console)


@dataclass(frozen=True)
class SavedConsistencyReporter(ConsistencyReporter):
    """``oxy report`` on a saved consistency run (:class:`~.saved.SavedRun`): the report
    of ``oxy test``, its document answered again with the new decision."""

    def finished(self, run: Any) -> int:
        return len(run.results)

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        return super().notes(run.run, quiet=quiet)

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .documents import with_decision

        return with_decision(run.doc, decision)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        super().render(run.run, decision, console, quiet=quiet)

    def junit(
        self,
        run: Any,
        decision: Decision,
        *,
        error: str | None = None,
        timestamp: datetime | None = None,
    ) -> str:
        return super().junit(run.run, decision, error=error, timestamp=timestamp)


@dataclass(frozen=True)
class SavedReporter(RunReporter):
    """``oxy report`` on a saved run of another kind: its results in a compact table, its
    document answered again with the new decision."""

    junit_writer: ClassVar[str | None] = "saved_junit"

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        """``error``: what stops this decision beyond the document's own (a shard that
        has not kept its outcome), so a CI job reading only the JSON learns it too."""
        from .documents import with_decision

        doc = with_decision(run.doc, decision)
        return doc if doc.get("error") else _with_error(doc, error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        from .saved_pretty import render_saved

        render_saved(run, decision, console)


@dataclass(frozen=True)
class WorkflowReporter(RunReporter):
    """``oxy run`` on a workflow: pretty prints its final output (each task had its line
    on stderr as it finished), JSON every task."""

    noun: ClassVar[str] = "task(s)"
    one_result: ClassVar[bool] = True

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        from .pretty import cached_calls_line

        calls = run.run.cached_calls
        return list(run.run.warnings) + ([cached_calls_line(calls)] if calls else [])

    def interrupted_line(self, run: Any, reason: str) -> str:
        done = sum(1 for r in run.run.records if r.finished)
        return f"{reason}: {done} task(s) had finished, {len(run.run.unfinished)} interrupted"

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .workflow import workflow_json

        return workflow_json(run, decision, error=error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        if run.status == "completed":  # a failed or cut run's tasks said what they got
            output = run.run.output
            _print_output(console, "" if output is None else str(output))

    def error_line(self, error: BaseException, *, quiet: bool) -> str | None:
        """Each failed task had its line as it failed: the closing line names them once."""
        failed = getattr(error, "run", None)
        if quiet or failed is None:
            return None
        return f"error: {failed.summary(brief=True)}"


@dataclass(frozen=True)
class AskReporter(RunReporter):
    """``oxy run AGENT --question``: pretty prints the answer, JSON the whole ask."""

    noun: ClassVar[str] = "answer(s)"

    def notes(self, run: Any, *, quiet: bool) -> list[str]:
        from .pretty import cached_calls_line

        calls = run.answer.cached_calls
        # A cut-off answer is said even with --quiet: the output printed is incomplete.
        warned = [f"warning: {w}" for w in run.answer.warnings]
        return warned + ([cached_calls_line(calls)] if calls else [])

    def interrupted_line(self, run: Any, reason: str) -> str:
        return f"{reason} before the agent answered"

    def document(self, run: Any, decision: Decision, *, error: str | None = None) -> dict[str, Any]:
        from .workflow import ask_json

        return ask_json(run, decision, error=error)

    def render(self, run: Any, decision: Decision, console: Console, *, quiet: bool) -> None:
        if not run.interrupted:
            _print_output(console, run.answer.output or "")


def _print_output(console: Console, text: str) -> None:
    """A model's output as the command's output: exactly its text, escape sequences
    written out, never run by the terminal (``--format json`` carries the exact text)."""
    from .text import shown

    text = shown(text)
    console.file.write(text if text.endswith("\n") else text + "\n")
    console.file.flush()


def saved_reporter(run: Any) -> RunReporter:
    """The reporter of a saved run (:class:`~.saved.SavedRun`) of any kind."""
    if run.consistency is not None:
        return SavedConsistencyReporter()
    return SavedReporter()


REPORTERS: dict[str, RunReporter] = {
    "consistency": ConsistencyReporter(),
    "cases": CasesReporter(),
    "ab": ABReporter(),
    "chattest": ChattestReporter(),
    "test-files": TestFilesReporter(),
    "workflow": WorkflowReporter(),
    "ask": AskReporter(),
}


def reporter(name: str) -> RunReporter:
    """The reporter of a kind of run by the name its command uses."""
    try:
        return REPORTERS[name]
    except KeyError:
        raise KeyError(redact(f"no reporter for runs of {name!r}")) from None
