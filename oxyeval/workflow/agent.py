"""Running an agent on a question: its system prompt, its tools, its model.

Context files and the rendered system prompt are computed once per agent and
reused for every run, so n consistency runs cost n model calls and nothing else.
Tools are offered in each vendor's native function-calling format (the vendor
classes do the mapping); the loop here runs until the model answers or
``max_tool_calls`` is reached.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LoadError, ProviderError
from ..project import ContextMap, attribute_chains
from ..project.templates import render
from ..providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    ToolCall,
    ToolSpec,
    ToolStep,
    Usage,
    stopped_at_token_limit,
)
from ..redact import clip

if TYPE_CHECKING:
    from ..project.agents import Agent, ContextSpec
    from ..providers import ModelPool, ResponseCache
    from .sql import Databases

__all__ = [
    "AgentRunner",
    "counted",
    "read_context",
    "stopped_at_token_limit",
    "token_limit_warning",
]

_MAX_CONTEXT_BYTES = 2_000_000
_MAX_TOOL_RESULT_CHARS = 20_000
_DEFAULT_SQL_DESCRIPTION = (
    "Run a read-only SQL query ({dialect} dialect) on the database and return the rows."
)


def read_context(spec: ContextSpec, root: Path, where: str) -> str:
    """Concatenated text of the files a context entry's globs match, inside ``root`` only."""
    if spec.type != "file":
        raise ConfigError(
            f"{where}: context '{spec.name}' of type {spec.type} is not supported yet"
        )
    root = root.resolve()
    parts: list[str] = []
    total = 0
    for pattern in spec.src:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise ConfigError(
                f"{where}: context '{spec.name}' glob {pattern!r} must stay inside the project "
                f"folder {root} (no absolute paths or '..')"
            )
        matches = sorted(p for p in root.glob(pattern) if p.is_file())
        if not matches:
            raise ConfigError(
                f"{where}: context '{spec.name}' glob {pattern!r} matches no file under {root}"
            )
        for file in matches:
            real = file.resolve()
            if not real.is_relative_to(root):
                raise ConfigError(
                    f"{where}: context '{spec.name}' file {file} resolves outside the project folder"
                )
            with real.open("rb") as handle:  # never more than the budget left: no MemoryError
                data = handle.read(_MAX_CONTEXT_BYTES - total + 1)
            total += len(data)
            if total > _MAX_CONTEXT_BYTES:
                raise ConfigError(
                    f"{where}: context '{spec.name}' is larger than {_MAX_CONTEXT_BYTES} bytes"
                )
            parts.append(data.decode("utf-8", errors="replace"))
    return "\n\n".join(parts)


def counted(items: Sequence[object], total: int, noun: str, shown: int = 10) -> str:
    """``"the answer"`` for a single run, else ``"7 of 20 runs (1, 3, 4, ...)"``."""
    if total <= 1:
        return "the answer"
    names = ", ".join(str(i) for i in items[:shown])
    if len(items) > shown:
        names += f" and {len(items) - shown} more"
    return f"{len(items)} of {total} {noun}s ({names})"


def token_limit_warning(subject: str, which: str, model: str, max_tokens: int | None) -> str:
    """One line for every answer of ``subject`` that stopped at the token limit.

    ``which`` says what stopped (see :func:`counted`). The advice depends on who set
    the limit: with no ``max_tokens`` sent it was the server (llama.cpp stops when the
    prompt and answer fill its context window), and raising max_tokens is no fix; at the
    default cap (:data:`~oxyeval.providers.DEFAULT_OUTPUT_TOKENS`, or a local server's
    :data:`~oxyeval.providers.LOCAL_OUTPUT_TOKENS`) it may be either.
    """
    from ..providers import DEFAULT_OUTPUT_TOKENS, LOCAL_OUTPUT_TOKENS

    if max_tokens in (DEFAULT_OUTPUT_TOKENS, LOCAL_OUTPUT_TOKENS):
        return (
            f"{subject}: {which} stopped at the token limit (max_tokens: {max_tokens} for "
            f"model '{model}', the default when none is set) and may be cut off: set "
            "max_tokens for the model to allow longer answers; an answer shorter than that "
            "filled the server's context window instead (shorten the prompt, or give the "
            "server a larger context: llama.cpp --n_ctx / -c)"
        )
    if max_tokens is not None:
        return (
            f"{subject}: {which} stopped at the token limit (max_tokens: {max_tokens} for "
            f"model '{model}') and may be cut off; raise max_tokens if so"
        )
    return (
        f"{subject}: {which} stopped at the server's token limit (model '{model}' has no "
        "max_tokens set): the prompt and answer probably filled the model's context window, "
        "or the server caps answers by default. Shorten the prompt, give the server a larger "
        "context (llama.cpp: --n_ctx / -c), or set max_tokens to cut answers on purpose"
    )


class AgentRunner:
    """An agent bound to a model pool (and to databases for its tools); ``ask`` is one run."""

    def __init__(
        self,
        agent: Agent,
        pool: ModelPool,
        project_root: Path,
        sql: Databases | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.agent = agent
        self.pool = pool
        self.root = project_root
        self.sql = sql
        #: Answers of earlier identical calls (``oxy test --cache``); None: always ask.
        self.cache = cache
        self._system: str | None = None
        self._context: dict[str, str] | None = None
        self._prepared = False
        self.tools = {t["name"]: t for t in agent.tools if t.get("type") == "execute_sql"}

    @property
    def max_tokens(self) -> int | None:
        """The answer-length limit this agent's calls are sent with (None: the server's)."""
        return self.pool.max_tokens(self.agent.model, self.agent.params)

    def system_prompt(self, variables: dict[str, Any] | None = None, question: str = "") -> str:
        """The rendered system prompt: once per agent, unless variables are given or it
        reads the question (oxy's ``tools.prompt``). The databases it reads are described
        when first read (:meth:`prepare` does it off the event loop)."""
        once = not variables and not self.agent.reads_question
        if self._system is not None and once:
            return self._system
        if self._context is None:
            where = self.agent.display
            self._context = {c.name: read_context(c, self.root, where) for c in self.agent.context}
        values = self.agent.template_values(
            variables, self._context, question=question, describe=self._describe
        )
        text = render(self.agent.system_instructions, values)
        if once:
            self._system = text
        return text

    def _describe(self, name: str) -> ContextMap:
        if self.sql is None:
            raise ConfigError(
                f"{self.agent.display}: system_instructions reads databases.{name}, but no "
                "database is open for this agent here"
            )
        return self.sql.describe(name)

    def check_tools(self) -> None:
        """A tool on a database oxyeval cannot query here (no engine, no driver) stops the run before the model is
        asked (exit 2), at the tool's line: the agent cannot work without it."""
        if self.sql is None:
            return
        for i, tool in enumerate(self.agent.tools):
            if tool.get("type") != "execute_sql" or tool.get("database") is None:
                continue
            refusal = self.sql.refusal(str(tool["database"]))
            if not refusal:
                continue
            doc = self.agent.doc
            if doc is not None and doc.get(("tools", i, "database")) is not None:
                raise LoadError([doc.diagnostic(("tools", i, "database"), refusal)])
            raise ConfigError(f"{self.agent.display}: tool '{tool['name']}': {refusal}")

    async def prepare(self) -> None:
        """Describe the databases the system prompt reads, in a thread (introspecting a
        database waits on its worker), so rendering it never blocks the event loop; each
        is described once per run."""
        if self._prepared or self.sql is None or self.agent.builtins is None:
            return
        known = self.agent.builtins.databases
        chains = attribute_chains(self.agent.system_instructions, "databases")
        for name in sorted({c[0] for c, _ in chains if isinstance(c[0], str) and c[0] in known}):
            await asyncio.to_thread(self.sql.describe, name)
        self._prepared = True

    def messages(self, question: str, variables: dict[str, Any] | None = None) -> list[ChatMessage]:
        system = self.system_prompt(variables, question)
        out = [ChatMessage("system", system)] if system.strip() else []
        out.append(ChatMessage("user", question))
        return out

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        specs = []
        for name, tool in self.tools.items():
            specs.append(
                ToolSpec(
                    name=name,
                    description=tool.get("description")
                    or _DEFAULT_SQL_DESCRIPTION.format(dialect=self._dialect(tool)),
                    parameters={
                        "type": "object",
                        "properties": {
                            "sql": {"type": "string", "description": "The SQL query to run."}
                        },
                        "required": ["sql"],
                    },
                )
            )
        return tuple(specs)

    def _dialect(self, tool: dict[str, Any]) -> str:
        """The SQL dialect of the tool's database as oxy names it (DuckDB's by default)."""
        entry = (self.sql.databases if self.sql is not None else {}).get(tool.get("database"))
        names = {"duckdb": "DuckDB", "postgres": "PostgreSQL", "redshift": "PostgreSQL"}
        kind = str((entry or {}).get("type", "duckdb"))
        return names.get(
            kind, {"mysql": "MySQL", "clickhouse": "ClickHouse"}.get(kind, kind.title())
        )

    async def _run_tool(self, call: ToolCall) -> ToolStep:
        """The call with its result: ``output`` when the tool ran, else ``error``, the text
        the model is shown (``Error: ...``) so it can correct itself."""
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolStep(
                call,
                error=f"Error: there is no tool named {call.name!r}; tools: "
                f"{', '.join(self.tools) or 'none'}.",
            )
        if "_raw" in call.arguments:
            return ToolStep(
                call,
                error='Error: the arguments were not valid JSON; call the tool again with {"sql": "..."}.',
            )
        sql = call.arguments.get("sql")
        if not isinstance(sql, str) or not sql.strip():
            return ToolStep(call, error="Error: missing argument 'sql' (a SQL query string).")
        if self.sql is None:
            return ToolStep(call, error="Error: no database is available to this agent here.")
        from .sql import SqlError

        try:
            result = await self.sql.query(
                tool["database"], sql, limit=tool.get("dry_run_limit"), select_only=True
            )
        except (SqlError, ConfigError) as exc:
            return ToolStep(call, error=f"Error: {exc}")
        output = clip(
            str(result), _MAX_TOOL_RESULT_CHARS, f"\n(truncated; {len(result)} rows in all)"
        )
        return ToolStep(call, output=output)

    async def ask(
        self, question: str, variables: dict[str, Any] | None = None, *, run: int = 1
    ) -> Completion:
        """One run: model calls (and tool calls) until the model answers.

        ``run`` is the index of this run among repeated runs of the same question: with a
        cache, each of the loop's calls is keyed by its own messages and ``run``, so run k
        replays run k's conversation and n runs stay n different runs.
        """
        model = self.pool.get(self.agent.model)
        self.check_tools()
        await self.prepare()
        messages = self.messages(question, variables)
        specs = self.tool_specs()
        params: GenerateParams = replace(self.agent.params, tools=specs or None)
        limit = self.agent.max_tool_calls
        trace: list[ToolStep] = []  # every call made, with its result
        inputs = outputs = 0
        cost: float | None = 0.0  # every model call's, unknown once any one is
        started = time.perf_counter()
        replayed = True  # every model call came from the cache (then the answer took no time)
        extra_rounds = 0
        while True:
            completion = await model.generate(messages, params, run=run, cache=self.cache)
            replayed = replayed and completion.cached
            inputs += completion.usage.input_tokens or 0
            outputs += completion.usage.output_tokens or 0
            cost = None if cost is None or completion.cost is None else cost + completion.cost
            if not completion.tool_calls:
                break
            if len(trace) >= limit:
                extra_rounds += 1
                if extra_rounds > 1:
                    raise ProviderError(
                        f"model '{model.name}' kept calling tools after the limit of {limit} "
                        "tool calls (max_tool_calls) and never answered",
                        model=model.name,
                    )
            messages.append(
                ChatMessage("assistant", completion.text, tool_calls=tuple(completion.tool_calls))
            )
            for call in completion.tool_calls:
                if len(trace) >= limit:
                    step = ToolStep(
                        call,
                        error=f"Tool call limit reached ({limit} calls, max_tool_calls). Do not "
                        "call tools again; answer now with what you have.",
                    )
                else:
                    step = await self._run_tool(call)
                trace.append(step)
                messages.append(
                    ChatMessage("tool", step.reply, tool_call_id=call.id, name=call.name)
                )
        if not completion.text.strip():
            # An empty or blocked answer is not an answer: n empty runs would otherwise be
            # "identical", hence perfectly consistent, and pass any threshold.
            raise ProviderError(
                f"model '{model.name}' returned an empty answer (finish reason: "
                f"{completion.finish_reason or 'not given'}); a blocked or empty reply counts as a failed run",
                model=model.name,
            )
        # A cut-off answer is reported by the caller, which knows which test and run it
        # was and can say it once for all runs (see token_limit_warning).
        completion.usage = Usage(input_tokens=inputs or None, output_tokens=outputs or None)
        # A replayed answer reports latency 0 (docs/guides/history.md, "Cache"), not the time spent looking
        # it up; with tools, their time still counts.
        completion.latency = 0.0 if replayed and not trace else time.perf_counter() - started
        completion.tool_calls = [step.call for step in trace]
        completion.tool_trace = trace
        completion.cost = cost
        return completion


def describe_calls(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls as JSON-friendly dicts for reports."""
    return [
        {"id": c.id, "name": c.name, "arguments": json.loads(json.dumps(c.arguments, default=str))}
        for c in calls
    ]
