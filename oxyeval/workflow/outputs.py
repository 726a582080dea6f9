"""Values that task outputs take inside templates.

Each reads naturally as text (``{{ report }}``) and also exposes its parts:
a consistency run's ``value`` and ``score``, a loop's iterations with their
``value`` and body outputs, a sub-workflow's or branch's task outputs by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..redact import clip

__all__ = ["ConsistentOutput", "LoopOutput", "LoopValue", "ScopeOutput", "to_jsonable"]


class ConsistentOutput(str):
    """The most consistent of N agent runs, with its consistency score (0..1 or None).

    It is the answer's text (a ``str``), so a template uses it exactly as a plain agent
    task's output (``| upper``, ``| tojson``, slicing); ``.score`` and ``.details`` say
    how consistent it was.
    """

    score: float | None
    details: dict[str, Any]

    def __new__(cls, value: str, score: float | None, details: dict[str, Any]) -> ConsistentOutput:
        text = super().__new__(cls, value)
        text.score = score
        text.details = details
        return text

    @property
    def value(self) -> str:
        return str.__str__(self)

    def _template_missing(self, name: object) -> str:
        """What a template reading a missing attribute is told (see project/templates.py)."""
        if isinstance(name, int):
            return f"the agent's answer has no character {name} (it has {len(self)})"
        return f"the agent's answer has no attribute {name!r} (it has value, score and details)"

    def __repr__(self) -> str:
        return f"ConsistentOutput(score={self.score!r}, value={clip(self.value, 40, '')!r})"


class ScopeOutput(Mapping[str, Any]):
    """Outputs of a group of tasks (a branch, an iteration, a sub-workflow), by task name.

    Reads as its last task's output. A name declared in the group but not run
    (a branch not taken) reads as empty text rather than failing the template.
    """

    def __init__(
        self, outputs: dict[str, Any], known: Iterable[str] = (), last: str | None = None
    ) -> None:
        self._outputs = dict(outputs)
        self._known = set(known) | set(outputs)
        self._last = last

    def __getitem__(self, name: str) -> Any:
        if name in self._outputs:
            return self._outputs[name]
        if name in self._known:
            return ""
        raise KeyError(name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            known = ", ".join(sorted(self.__dict__.get("_known", ()))) or "none"
            raise AttributeError(f"no task '{name}' here; tasks: {known}") from None

    def _template_missing(self, name: object) -> str:
        """What a template reading a missing task is told (see project/templates.py)."""
        known = ", ".join(sorted(self._known)) or "none"
        return f"no task {name!r} here (tasks: {known})"

    def __iter__(self) -> Iterator[str]:
        return iter(self._outputs)

    def __len__(self) -> int:
        return len(self._outputs)

    @property
    def last(self) -> Any:
        return self._outputs.get(self._last, "") if self._last else ""

    def __str__(self) -> str:
        return str(self.last)

    def _template_json(self) -> dict[str, Any]:
        """What ``| tojson`` writes (project/sandbox_filters.template_json): the task
        outputs by name (each written by its own rule)."""
        return dict(self._outputs)


class LoopValue:
    """What a loop's body sees under the loop's name: the current value and its index."""

    def __init__(self, value: Any, index: int) -> None:
        self.value = value
        self.index = index

    def __str__(self) -> str:
        return str(self.value)

    def _template_json(self) -> Any:
        """What ``| tojson`` writes: the current value, as the loop's item reads."""
        return self.value

    def _template_missing(self, name: object) -> str:
        """What a template reading a missing attribute is told (see project/templates.py)."""
        return f"the loop's current item has no attribute {name!r} (it has value and index)"


class LoopIteration(ScopeOutput):
    """One iteration's outputs, plus the ``value`` it ran for."""

    def __init__(
        self,
        value: Any,
        index: int,
        outputs: dict[str, Any],
        known: Iterable[str],
        last: str | None,
    ) -> None:
        super().__init__(outputs, known, last)
        self.value = value
        self.index = index

    def _template_json(self) -> dict[str, Any]:
        """What ``| tojson`` writes: the value it ran for and its task outputs."""
        return {"value": self.value, **self._outputs}

    def _template_missing(self, name: object) -> str:
        """What a template reading a missing task is told (see project/templates.py)."""
        known = ", ".join(sorted(self._known)) or "none"
        return f"the iteration has no task {name!r} (tasks: {known}; and value, index)"


class LoopOutput(list):  # type: ignore[type-arg]
    """A loop's output: one :class:`LoopIteration` per value, in value order."""

    def __str__(self) -> str:
        return "\n".join(str(item) for item in self)

    def _template_missing(self, name: object) -> str:
        """What a template reading a missing iteration is told (see project/templates.py)."""
        count = len(self)
        if isinstance(name, int):
            return f"the loop's output has no iteration {name} (it has {count})"
        return (
            f"the loop's output has no attribute {name!r}: it is a list of {count} "
            "iteration(s); read one ([0].name) or loop over them"
        )


def to_jsonable(value: Any) -> Any:
    """Plain JSON data for reports and exports."""
    from .sql import SqlResult

    if isinstance(value, SqlResult):
        out: dict[str, Any] = {"columns": value.columns, "rows": value.to_json()}
        if value.truncated:
            out["truncated"] = True  # more rows than the database's max_rows: these are the first
        return out
    if isinstance(value, ConsistentOutput):
        return {"value": value.value, "score": value.score}
    if isinstance(value, LoopIteration):
        return {"value": to_jsonable(value.value), **{k: to_jsonable(v) for k, v in value.items()}}
    if isinstance(value, ScopeOutput):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, LoopValue):
        return to_jsonable(value.value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
