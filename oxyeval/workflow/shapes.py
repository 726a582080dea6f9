"""What a task's output exposes to templates, checked before any task runs.

Some outputs have a shape the file itself declares (:mod:`.outputs`): a loop's
iterations hold the outputs of its body's tasks plus ``value`` and ``index``; inside
the body, the loop's name is the current item (``value``, ``index``); a conditional's
output holds the tasks of its branches. A template reading a part that cannot exist
(``{% for i in per_region %}{{ i.blurp }}``) used to fail only when it rendered, after
the SQL and agent tasks before it had run and spent their calls; the compiler now
reports it with the other static problems. Only what is certain is reported: a name
the template sets itself, an attribute of an attribute, a SQL result's columns are
left to run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..project.schema import did_you_mean
from ..project.templates import TemplateRef, subscripts, template_tree

if TYPE_CHECKING:
    from ..errors import Diagnostic
    from .spec import Task

__all__ = [
    "Shape",
    "body_shapes",
    "scope_shapes",
    "shape_problems",
    "shapes_of",
    "task_ref_problem",
]

#: What every group of task outputs (an iteration, a branch) also answers to: it is a
#: mapping of task names, read as its last task's output.
_MAPPING = frozenset({"keys", "items", "values", "get", "last"})
_ITEM = frozenset({"value", "index"})
#: What text (a formatter's output, an agent's answer) answers to: its string methods.
_TEXT = frozenset(name for name in dir(str) if not name.startswith("_"))
_CONSISTENT = _TEXT | {"value", "score", "details"}  # outputs.ConsistentOutput


@dataclass(frozen=True)
class Shape:
    """``kind``: ``loop`` (the output: a list of iterations), ``item`` (the loop's name
    inside its body) or ``branches`` (a conditional's output); ``members``: the parts
    it has."""

    kind: str
    members: frozenset[str]


def shapes_of(tasks: list[Task]) -> dict[str, Shape]:
    """The shapes of the tasks of one scope that have one."""
    out = {}
    for task in tasks:
        if task.cache is not None and task.cache.enabled:
            continue  # a cached output is what the file holds (JSON may be anything)
        if task.type == "formatter" or (task.type == "agent" and task.consistency_run <= 1):
            out[task.name] = Shape("text", _TEXT)
        elif task.type == "agent":
            out[task.name] = Shape("consistent", _CONSISTENT)
        elif task.type == "loop_sequential":
            out[task.name] = Shape("loop", frozenset(t.name for t in task.children) | _ITEM)
        elif task.type == "conditional":
            names = frozenset(t.name for b in task.branches for t in b.tasks)
            out[task.name] = Shape("branches", names)
    return out


def body_shapes(task: Task, shapes: dict[str, Shape]) -> dict[str, Shape]:
    """What the tasks nested in ``task`` see: inside a loop's body, its name is the
    current item."""
    if task.type != "loop_sequential":
        return shapes
    return {**shapes, task.name: Shape("item", _ITEM)}


def scope_shapes(outer: dict[str, Shape], tasks: list[Task]) -> dict[str, Shape]:
    """The shapes a scope's templates see: its own tasks', and the enclosing scopes' for
    names no task of its own takes (a nested task of the same name hides the outer one)."""
    local = {t.name for t in tasks}
    return {**{k: v for k, v in outer.items() if k not in local}, **shapes_of(tasks)}


def shape_problems(
    task: Task, field_name: str, ref: TemplateRef, shapes: dict[str, Shape]
) -> list[Diagnostic]:
    """Reads in one template field of parts that the outputs in ``shapes`` cannot have."""
    if not shapes or ref.doc is None:
        return []
    from jinja2 import nodes

    tree = template_tree(ref)
    if tree is None:  # a syntax error, reported by the template checks
        return []
    own = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    found: list[Diagnostic] = []

    def report(what: str, attr: str, line: int, shape: Shape, owner: str) -> None:
        parts = sorted(shape.members - _ITEM)
        if shape.kind == "text":
            has = "no parts: it is text"
        elif shape.kind == "consistent":
            has = "value, score and details"
        elif shape.kind == "branches":
            has = f"the tasks of its branches: {', '.join(parts) or 'none'}"
        elif shape.kind == "item":
            has = "value and index: it is the current item"
        else:
            has = f"value, index and its body's tasks: {', '.join(parts) or 'none'}"
        message = (
            f"task '{task.name}': {field_name} reads {what}.{attr}, which '{owner}' does "
            f"not have (it has {has}){did_you_mean(attr, shape.members)}"
        )
        where = ref.doc.text_line(ref.key, line) if ref.doc is not None else None
        found.append(task.doc.diagnostic(ref.key, message, line=where))

    for name, shape in shapes.items():
        if name in own:
            continue  # the template sets this name itself: another value
        allowed = shape.members | (_MAPPING if shape.kind in ("loop", "branches") else frozenset())
        if shape.kind != "loop":
            for attr, line in subscripts(tree, name):
                if attr not in allowed:
                    report(name, attr, line, shape, name)
            continue
        for loop in tree.find_all(nodes.For):  # {% for i in <loop> %}{{ i.x }}
            if not (
                isinstance(loop.iter, nodes.Name)
                and loop.iter.name == name
                and isinstance(loop.target, nodes.Name)
            ):
                continue
            var = loop.target.name
            for node in loop.body:
                if _sets(node, var):
                    break
                for attr, line in subscripts(node, var):
                    if attr not in allowed:
                        report(var, attr, line, shape, name)
        for node in tree.find_all(nodes.Getattr):  # <loop>[0].x
            item = node.node
            if (
                isinstance(item, nodes.Getitem)
                and isinstance(item.node, nodes.Name)
                and item.node.name == name
                and isinstance(item.arg, nodes.Const)
                and isinstance(item.arg.value, int)
                and node.attr not in allowed
            ):
                report(f"{name}[{item.arg.value}]", node.attr, node.lineno, shape, name)
    return found


def task_ref_problem(ref: str, shapes: dict[str, Shape]) -> str | None:
    """Why a test's dotted ``task_ref`` (``verdict.note``) can name no output, when the
    file says so already: a loop's output is a list of iterations (the test compares
    the loop's whole output, or a task after it), a conditional has only its branches'
    tasks."""
    head, _, rest = ref.partition(".")
    shape = shapes.get(head)
    if not rest or shape is None:
        return None
    part = rest.split(".")[0]
    if shape.kind == "text":
        return f"task_ref '{ref}': the output of '{head}' is text, with no part '{part}'"
    if shape.kind == "consistent" and part not in ("value", "score"):
        return (
            f"task_ref '{ref}': the output of '{head}' (a consistency run) has value and "
            f"score, no part '{part}'"
        )
    if shape.kind == "loop":
        return (
            f"task_ref '{ref}': '{head}' is a loop, whose output is a list of iterations "
            f"with no part '{part}'; name the loop ('{head}') or a task that reads it"
        )
    if shape.kind == "branches" and part not in shape.members:
        listed = ", ".join(sorted(shape.members)) or "none"
        return (
            f"task_ref '{ref}': the conditional '{head}' has no task '{part}'"
            f"{did_you_mean(part, shape.members)} (its branches' tasks: {listed})"
        )
    return None


def _sets(node: Any, name: str) -> bool:
    """Whether ``node`` (a statement in a loop's body) rebinds ``name``."""
    from jinja2 import nodes

    return any(
        n.name == name and n.ctx in ("store", "param")
        for n in [node, *node.find_all(nodes.Name)]
        if isinstance(n, nodes.Name)
    )
