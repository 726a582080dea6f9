"""Exceptions that carry their own exit code, so the CLI never has to guess.

Exit codes are part of the public contract (CI scripts branch on them):
0 pass, 1 tests failed or below threshold, 2 bad input or config,
3 provider or infrastructure failure (or a test that could not be scored).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .redact import redact

__all__ = [
    "EXIT_FAILED",
    "EXIT_INFRA",
    "EXIT_INPUT",
    "EXIT_OK",
    "LISTED_DIAGNOSTICS",
    "SHOWN_DIAGNOSTICS",
    "ConfigError",
    "Diagnostic",
    "LoadError",
    "OxyError",
    "ProviderError",
    "is_bad_input",
    "listed",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2
EXIT_INFRA = 3


#: Problems a message on the terminal shows before it counts the rest, as a compiler
#: stops after a screenful: ten thousand of one mistake are read in the first few.
SHOWN_DIAGNOSTICS = 50
#: Problems a JSON document lists before one entry that counts the rest (a program may
#: want more than a screenful, but not a document of megabytes).
LISTED_DIAGNOSTICS = 1000


def listed(diagnostics: list[Diagnostic], limit: int) -> list[Diagnostic]:
    """The first ``limit`` of ``diagnostics``, then, when there were more, one in their
    place that counts them (its file: the files they were in)."""
    if len(diagnostics) <= limit:
        return list(diagnostics)
    rest = diagnostics[limit:]
    files = ", ".join(dict.fromkeys(d.file for d in rest))
    severity = "error" if any(d.severity == "error" for d in rest) else "warning"
    counted = f"{_more(rest)} not listed"
    return [*diagnostics[:limit], Diagnostic(files, counted, severity=severity)]


def _more(diagnostics: list[Diagnostic]) -> str:
    """``12 more error(s) and 3 more warning(s)``."""
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    parts = [f"{errors} more error(s)" if errors else ""]
    parts.append(f"{warnings} more warning(s)" if warnings else "")
    return " and ".join(p for p in parts if p)


class OxyError(Exception):
    """Base of every error we expect to show a user (as one paragraph, no traceback)."""

    exit_code: int = EXIT_INPUT

    def __str__(self) -> str:
        return redact(super().__str__())


class ConfigError(OxyError):
    """Bad input that is not tied to one place in a file (missing env var, bad flag)."""

    exit_code = EXIT_INPUT


@dataclass
class Diagnostic:
    """One problem at one place in one file; the unit of every load error."""

    file: str
    message: str
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based
    key: str = ""  # dotted key path, e.g. "tests[0].n"
    severity: str = "error"  # "error" | "warning"
    source_line: str | None = None
    span: int = 1  # how many characters to underline

    def location(self) -> str:
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        return loc

    def format(self) -> str:
        head = f"{self.severity}: {self.location()}: "
        if self.key:
            head += f"{self.key}: "
        text = head + self.message
        if self.source_line is not None and self.line is not None:
            num = str(self.line)
            pad = " " * len(num)
            text += f"\n  {num} | {self.source_line.rstrip()}"
            if self.column is not None:
                caret = " " * (self.column - 1) + "^" * max(1, self.span)
                text += f"\n  {pad} | {caret}"
        return redact(text)


@dataclass
class LoadError(OxyError):
    """All errors found in one or more files, reported together."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    exit_code = EXIT_INPUT

    def __post_init__(self) -> None:
        super().__init__(self.render())

    @classmethod
    def of(cls, diagnostics: Iterable[Diagnostic]) -> LoadError:
        return cls([d for d in diagnostics if d.severity == "error"])

    def render(self) -> str:
        errors = [d for d in self.diagnostics if d.severity == "error"]
        files = sorted({d.file for d in errors})
        body = "\n".join(d.format() for d in errors[:SHOWN_DIAGNOSTICS])
        if len(errors) > SHOWN_DIAGNOSTICS:
            body += (
                f"\n... {len(errors) - SHOWN_DIAGNOSTICS} more error(s) not shown "
                f"(the first {SHOWN_DIAGNOSTICS} are above)"
            )
        count = f"{len(errors)} error(s) in {', '.join(files)}" if files else "errors"
        return f"{body}\n{count}" if body else count

    def __str__(self) -> str:
        return self.render()


class ProviderError(OxyError):
    """A model call that failed for good (after retries, or at once on 401/403/404)."""

    exit_code = EXIT_INFRA

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(redact(message))
        self.model = model
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


def is_bad_input(error: BaseException) -> bool:
    """``error`` is bad input (a file, a value, an option): running again will not help,
    so a run stops on it rather than count it as one failed sample."""
    return isinstance(error, OxyError) and error.exit_code == EXIT_INPUT
