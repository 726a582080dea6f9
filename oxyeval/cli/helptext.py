"""How ``oxy --help`` and each group's help list their commands.

Click cuts each command's summary to the line's width with "..." and Typer lists the
commands in the order their modules were imported, groups last. A newcomer reads the
top-level list first: it starts with ``oxy init``, goes from running tests to reading
results, and gives every command one whole sentence. A group's own list (``oxy cases``)
shows each subcommand's first sentence whole, wrapped instead of cut.
"""

from __future__ import annotations

from typing import Any, ClassVar

from typer.core import TyperArgument, TyperGroup

__all__ = ["ROOT_COMMANDS", "CommandGroup", "RootGroup", "plain_required_arguments"]

#: The top-level commands in the order ``oxy --help`` lists them, with their summaries.
ROOT_COMMANDS: dict[str, str] = {
    "init": "Create a starter project that runs offline (mock models).",
    "test": "Run consistency tests and *.test.yml files; gate CI on accuracy.",
    "cases": "Test cases with expected outputs: run, list, show, accept.",
    "ab": "A/B tests: run cases on several model settings and rank them.",
    "chattest": "Run chattest folders: judged PASS/FAIL over repeated runs.",
    "run": "Run a workflow, or ask an agent a question.",
    "compile": "Show a workflow's execution plan.",
    "validate": "Check project and chattest files against their schemas.",
    "schema": "Print the JSON Schema of a project file or of an output.",
    "history": "Recent runs of every kind, or one test's results over time.",
    "report": "Decide again on a saved run and print its report.",
    "serve": "Serve the dashboard and the Testing API (GraphQL).",
    "cache": "The cached model answers and judge verdicts: stats, clear.",
    "judge": "Check a judge against labelled answers (calibrate).",
    "batch": "Batches sent with --batch: status, resume, cancel.",
    "exec": "Run a script of SDK suites; exit on their outcome.",
}


class CommandGroup(TyperGroup):
    """A group whose command list shows each summary whole (wrapped, never cut)."""

    summaries: ClassVar[dict[str, str]] = {}

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            summary = self.summaries.get(name) or command.get_short_help_str(limit=10_000)
            rows.append((name, summary))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class RootGroup(CommandGroup):
    """``oxy`` itself: the commands in :data:`ROOT_COMMANDS`' order, then any other."""

    summaries: ClassVar[dict[str, str]] = ROOT_COMMANDS

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(super().list_commands(ctx))
        order = {name: i for i, name in enumerate(ROOT_COMMANDS)}
        return sorted(names, key=lambda name: order.get(name, len(order)))


def plain_required_arguments() -> None:
    """Usage lines show a required argument as ``FILE`` (Click's and the Unix manual's
    convention) instead of Typer's ``{FILE}``, which reads as a set of choices."""
    original = TyperArgument.make_metavar
    if getattr(original, "_oxy_plain", False):
        return

    def make_metavar(self: TyperArgument, ctx: Any, *, usage: bool = False) -> str:
        text: str = original(self, ctx, usage=usage)
        if usage and self.required and text.startswith("{") and text.endswith("}"):
            return text[1:-1]
        return text

    make_metavar._oxy_plain = True  # type: ignore[attr-defined]
    TyperArgument.make_metavar = make_metavar  # type: ignore[method-assign]
