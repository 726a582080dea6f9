"""Accepting a baseline: a case's expected output set from its latest actual output.

The case's YAML file is the source of truth, so the value is rewritten there (in
place, comments and layout kept) before the store is updated; the next sync would
otherwise undo a store-only change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...inputs import valid_text
from ...project import file_lock
from ...project.config import Project
from ...project.prompts import rewrite_expected_output
from ...project.schema import did_you_mean
from ...providers import stopped_at_token_limit
from ...redact import redact
from ..prompt_sync import sync_files
from .selection import preview_cases

if TYPE_CHECKING:
    from ...store import Store, TestCase

__all__ = ["accept_baseline", "check_accept", "find_case"]


def find_case(cases: Sequence[TestCase], name: str) -> TestCase:
    """A case by its full id <prompt>::<case>, or by its name when that is unique."""
    matches = [c for c in cases if c.id == name] or [c for c in cases if c.name == name]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        names = sorted({c.name for c in cases} | {c.id for c in cases})
        raise ConfigError(f"no test case named {name!r}{did_you_mean(name, names)}")
    ids = ", ".join(c.id for c in matches)
    raise ConfigError(
        f"{len(matches)} test cases are named {name!r}: {ids}; use the full id <prompt>::<case>"
    )


def check_accept(
    store: Store | None,
    project: Project,
    name: str,
    output: str | None = None,
    *,
    force: bool = False,
) -> TestCase:
    """What :func:`accept_baseline` would refuse, found without writing (``store`` None:
    no history yet): an unknown or ambiguous name, or no output to adopt."""
    case = find_case(preview_cases(store, project, []), name)
    if output is None:
        _latest_output(store, case, force)
    return case


def _latest_output(store: Store | None, case: TestCase, force: bool) -> str:
    """The output ``accept`` adopts by default; one cut off at the token limit only with
    ``force`` (a baseline that ends mid-sentence fails every later correct answer)."""
    latest = None if store is None else store.executions.latest(case.id)
    if latest is None or latest.actual_output is None:
        raise ConfigError(f"case {case.id!r} has never run; pass the expected output")
    if not force and stopped_at_token_limit(latest.finish_reason):
        raise ConfigError(
            f"case {case.id!r}: its latest output stopped at the model's token limit "
            f"(finish reason {latest.finish_reason!r}, {len(latest.actual_output)} characters), "
            "so it is probably cut off. Raise max_tokens and run the case again, or accept "
            "it anyway with --force"
        )
    return latest.actual_output


def accept_baseline(
    store: Store, project: Project, name: str, output: str | None = None, *, force: bool = False
) -> tuple[TestCase, str]:
    """Make ``output`` (default: the latest actual output) the expected output of a case.

    A YAML-declared case is changed in its file first (the file is the source of truth:
    the next sync would undo a store-only change), then in the store. Returns the updated
    case and where it was set. Secrets are scrubbed from the output first: a history
    written before they were, or a value typed with ``--output``, must not put a key
    into a file that gets committed. A latest output that stopped at the model's token
    limit is probably cut off mid-answer; adopting it as the baseline takes ``force``.
    """
    prompts = sync_files(store, project, [])
    case = find_case(store.cases.list(), name)
    if output is None:
        output = _latest_output(store, case, force)
    # Valid text: a lone surrogate (from a JSON client, or a command-line byte that is
    # not UTF-8) can be neither written to the file nor stored; it becomes U+FFFD.
    output = valid_text(redact(output), f"the expected output of {case.id!r}")
    declared = next(
        (c for p in prompts if p.id == case.prompt_id for c in p.cases if c.name == case.name),
        None,
    )
    if declared is None or declared.doc is None:
        return store.cases.update_expected_output(case.id, output), "the store"
    # The file's turn is held until the store has the value too: two accepts of one
    # file then leave the file and the store agreeing on the last one.
    with file_lock(declared.doc.path):
        where = project.relative(rewrite_expected_output(declared, output))
        return store.cases.update_expected_output(case.id, output), where
