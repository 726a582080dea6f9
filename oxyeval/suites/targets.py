"""What a suite runs: a :class:`Target` takes inputs and returns one completion.

A consistency test runs a target n times on the same inputs; a test case runs it once
per case on the case's inputs; an A/B comparison will run two targets on the same
inputs, a judged pass/fail test one target per scenario. The target is where "an
agent", "a prompt version" and "a task of a workflow" become the same thing, so a
suite never needs to know which one it is running.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..project.templates import TemplateRef, render
from ..providers import ChatMessage, Completion, GenerateParams, repeat_scope

if TYPE_CHECKING:
    from ..project.agents import Agent
    from ..project.tests import TestSpec
    from ..workflow.compile import CompiledWorkflow
    from ..workflow.context import RunContext
    from ..workflow.engine import WorkflowRun

__all__ = [
    "AgentTarget",
    "PromptTarget",
    "Target",
    "TextTarget",
    "WorkflowTarget",
    "task_output",
    "workflow_question",
]

_QUESTION = TemplateRef("{{ question }}")  # an agent's input, unless a prompt says otherwise


class Target(ABC):
    """Inputs in, one completion out; errors are ProviderError, TaskFailed, SqlError or,
    for inputs that do not fit the target's template, LoadError.

    ``run`` is the index of this call among repeated calls on the same inputs (a
    consistency test's run k): a cache replays run k's answer for run k, so n runs
    never collapse into one."""

    #: Shown in reports: the model that answers ("workflow" for a workflow's task).
    model: str
    #: Every model a call may use, so missing API keys fail before the first call.
    models: tuple[str, ...]

    @abstractmethod
    async def complete(
        self, inputs: Mapping[str, Any] | None = None, *, run: int = 1
    ) -> Completion: ...

    def check(self) -> None:  # noqa: B027 (optional: most targets have nothing to check)
        """Raise now (bad input, exit 2) what would fail every call: a template error."""

    @property
    def max_tokens(self) -> int | None:
        """The answer-length limit calls are sent with (None: the server's own)."""
        return None


class PromptTarget(Target):
    """A prompt version: its system and user templates, filled from the inputs, sent to
    its model with its sampling parameters."""

    def __init__(
        self,
        context: RunContext,
        model: str,
        template: TemplateRef,
        system: TemplateRef | None = None,
        params: GenerateParams | None = None,
    ) -> None:
        self.model = model
        self.models = (model,)
        self._context = context
        self.template = template
        self.system = system
        self.params = params or GenerateParams()

    def messages(self, inputs: Mapping[str, Any] | None = None) -> list[ChatMessage]:
        """The conversation the inputs make: what an A/B test sends to every branch."""
        values = dict(inputs or {})
        user = render(self.template, values)
        system = render(self.system, values) if self.system is not None else ""
        messages = [ChatMessage("system", system)] if system.strip() else []
        messages.append(ChatMessage("user", user))
        return messages

    async def complete(
        self, inputs: Mapping[str, Any] | None = None, *, run: int = 1
    ) -> Completion:
        model = self._context.models.get(self.model)
        return await model.generate(
            self.messages(inputs), self.params, run=run, cache=self._context.answers
        )

    @property
    def max_tokens(self) -> int | None:
        return self._context.models.max_tokens(self.model, self.params)


class TextTarget(Target):
    """A fixed prompt, sent as written (never rendered as a template: chattest's prompts
    are plain text), to one model with its own settings."""

    def __init__(self, context: RunContext, model: str, text: str, system: str = "") -> None:
        self.model = model
        self.models = (model,)
        self._context = context
        self.text = text
        self.system = system

    async def complete(
        self, inputs: Mapping[str, Any] | None = None, *, run: int = 1
    ) -> Completion:
        messages = [ChatMessage("system", self.system)] if self.system.strip() else []
        messages.append(ChatMessage("user", self.text))
        model = self._context.models.get(self.model)
        return await model.generate(messages, run=run, cache=self._context.answers)

    @property
    def max_tokens(self) -> int | None:
        return self._context.models.max_tokens(self.model)


class AgentTarget(Target):
    """An agent answering a question (its tools and tool loop included); the question is
    ``template`` filled from the inputs, by default the input ``question``. Inputs the
    agent declares as variables also override its defaults in its system prompt (as a
    workflow task's ``variables:`` do); the others only fill the question."""

    def __init__(
        self, context: RunContext, agent: Agent, template: TemplateRef | None = None
    ) -> None:
        self.runner = context.agent(agent)
        self.model = agent.model
        self.models = (agent.model,)
        self.template = template or _QUESTION

    async def complete(
        self, inputs: Mapping[str, Any] | None = None, *, run: int = 1
    ) -> Completion:
        values = dict(inputs or {})
        question = render(self.template, values)
        variables = self.runner.agent.own_variables(values)
        return await self.runner.ask(question, variables or None, run=run)

    def check(self) -> None:
        self.runner.check_tools()  # a tool on a database oxyeval cannot query here
        self.runner.system_prompt()  # context files and template errors: once, now

    @property
    def max_tokens(self) -> int | None:
        return self.runner.max_tokens


class WorkflowTarget(Target):
    """One task's output of a workflow run on the inputs (its variables)."""

    model = "workflow"

    def __init__(self, context: RunContext, plan: CompiledWorkflow, ref: str | None = None) -> None:
        self._engine = context.engine
        self.plan = plan
        self.ref = ref or plan.workflow.tasks[-1].name
        self.models = tuple(sorted(self._engine.models_used(plan)))
        #: The tested task's prompt as a run rendered it (the first run that got there):
        #: what its judge is told was asked, rather than the template as written.
        self.asked: str | None = None

    async def complete(
        self, inputs: Mapping[str, Any] | None = None, *, run: int = 1
    ) -> Completion:
        started = time.perf_counter()
        # Every model call of this workflow run, at any depth, is part of repeated run `run`.
        with repeat_scope(run):
            done = await self._engine.run(Path(self.plan.workflow.path), dict(inputs or {}))
        if self.asked is None:
            head = self.ref.split(".")[0]
            record = next((r for r in done.records if r.path == head), None)
            self.asked = record.asked if record is not None else None
        value = task_output(done, self.ref)
        return Completion(text=str(value), latency=time.perf_counter() - started)

    def check(self) -> None:
        self._engine.resolve_variables(self.plan.workflow, {})  # missing variables: exit 2 now


def task_output(run: WorkflowRun, ref: str) -> Any:
    """The output at a task_ref: a top-level name, or a dotted path into its parts."""
    from ..errors import ConfigError
    from ..workflow.engine import TaskFailed

    head, *rest = ref.split(".")
    bad_input = next((r for r in run.failed if r.bad_input), None)
    if bad_input is not None:  # the same file fails every run: stop with exit 2, not n errors
        raise ConfigError(f"task '{bad_input.path}' failed: {bad_input.error}")
    if head not in run.outputs:
        record = next((r for r in run.records if r.path == head), None)
        why = f": {record.error}" if record is not None and record.error else ""
        raise TaskFailed(f"task '{head}' produced no output{why}")
    value = run.outputs[head]
    for depth, part in enumerate(rest, 1):
        try:
            value = value[part] if isinstance(value, Mapping) else getattr(value, part)
        except (KeyError, AttributeError):
            # A part the output does not have (a sub-workflow's task, a SQL column): bad
            # input, named, never an internal error.
            path = ".".join([head, *rest[:depth]])
            raise ConfigError(
                f"task_ref '{ref}': the output of '{'.'.join([head, *rest[: depth - 1]])}' "
                f"has no part '{part}' (reading {path})"
            ) from None
    return value


def workflow_question(plan: CompiledWorkflow, spec: TestSpec) -> str:
    """What a workflow's consistency test asks, as its report shows it and its judge is
    told: the test's task_description, else the tested task's prompt rendered with the
    workflow's default variables (what the runs were asked), else that prompt as written
    when it needs more than those (another task's output, a variable with no default)."""
    from ..errors import LoadError

    if spec.task_description:
        return spec.task_description
    ref = spec.task_ref or plan.workflow.tasks[-1].name
    task = next((t for t in plan.workflow.tasks if t.name == ref.split(".")[0]), None)
    if task is not None and "prompt" in task.templates:
        prompt = task.templates["prompt"]
        defaults = {
            name: schema["default"]
            for name, schema in plan.workflow.variables.items()
            if isinstance(schema, dict) and "default" in schema
        }
        try:
            return render(prompt, defaults).strip()
        except LoadError:
            return prompt.source.strip()
    return f"the output of task '{ref}' in {plan.workflow.doc.display}"
