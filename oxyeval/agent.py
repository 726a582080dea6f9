"""Running an agent on a question: system prompt from its template, one model call.

Context files and the rendered system prompt are computed once per agent and
reused for every run, so n consistency runs cost n model calls and nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .providers._base import ChatMessage, Completion
from .templates import render

if TYPE_CHECKING:
    from .project import Agent, ContextSpec
    from .providers._pool import ModelPool

__all__ = ["AgentRunner", "read_context"]

_MAX_CONTEXT_BYTES = 2_000_000


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
            data = real.read_bytes()
            total += len(data)
            if total > _MAX_CONTEXT_BYTES:
                raise ConfigError(
                    f"{where}: context '{spec.name}' is larger than {_MAX_CONTEXT_BYTES} bytes"
                )
            parts.append(data.decode("utf-8", errors="replace"))
    return "\n\n".join(parts)


class AgentRunner:
    """An agent bound to a model pool; ``ask`` is one run."""

    def __init__(self, agent: Agent, pool: ModelPool, project_root: Path) -> None:
        self.agent = agent
        self.pool = pool
        self.root = project_root
        self._system: str | None = None

    def system_prompt(self, variables: dict[str, Any] | None = None) -> str:
        if self._system is not None and variables is None:
            return self._system
        where = self.agent.doc.display
        context = {c.name: read_context(c, self.root, where) for c in self.agent.context}
        values = {**self.agent.variables, **(variables or {}), "context": context}
        text = render(self.agent.system_instructions, values)
        if variables is None:
            self._system = text
        return text

    def messages(self, question: str) -> list[ChatMessage]:
        system = self.system_prompt()
        out = [ChatMessage("system", system)] if system.strip() else []
        out.append(ChatMessage("user", question))
        return out

    async def ask(self, question: str) -> Completion:
        model = self.pool.get(self.agent.model)
        return await model.generate(self.messages(question), self.agent.params)
