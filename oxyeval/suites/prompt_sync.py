"""A project's prompts and their declared test cases kept in the history, for every kind
that runs them (test cases, A/B branches) and for the server.

The files are the source of truth for the cases they declare: a sync writes what they
say into the store (the prompt, its current version, each case), and deletes the stored
cases that left their file; their history stays. Cases made through the API have no file
(their source is :data:`API_SOURCE`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..project.config import Project
from ..project.prompts import PromptDef, collect_case_files, load_prompts
from ..store import NameTakenError, TestCase, case_id

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "API_SOURCE",
    "declared_cases",
    "leaving_cases",
    "sync_files",
    "sync_prompt",
    "sync_prompt_cases",
]

#: The source of a prompt or case made through the API rather than declared in a file.
API_SOURCE = "api"


def declared_cases(project: Project, prompt: PromptDef) -> dict[str, dict[str, Any]]:
    """The cases a prompt's files declare: id -> the fields a sync stores."""
    return {
        case_id(prompt.id, case.name): {
            "prompt_id": prompt.id,
            "name": case.name,
            "input": case.input,
            "expected_output": case.expected_output,
            "description": case.description or None,
            "threshold": case.threshold,
            "source_file": project.relative(case.doc.path) if case.doc is not None else None,
        }
        for case in prompt.cases
    }


def leaving_cases(project: Project, prompt: PromptDef, stored: Sequence[TestCase]) -> set[str]:
    """Stored cases that leave the suite: removed from their file, or their file is gone
    (their history stays in the store)."""
    declared = {case_id(prompt.id, c.name) for c in prompt.cases}
    return _leaving(project, declared, _files(project, prompt), stored)


def _files(project: Project, prompt: PromptDef) -> set[str]:
    """The files a prompt's cases are declared in (and its own)."""
    files = {project.relative(c.doc.path) for c in prompt.cases if c.doc is not None}
    if prompt.file is not None:
        files.add(project.relative(prompt.file))
    return files


def _leaving(
    project: Project, declared: set[str], files: set[str], stored: Sequence[TestCase]
) -> set[str]:
    leaving = set()
    present: dict[str, bool] = {}
    for case in stored:
        source = case.source_file
        if case.id in declared or source is None:
            continue
        if source not in present:
            present[source] = (project.root / source).is_file()
        if source in files or not present[source]:
            leaving.add(case.id)
    return leaving


def sync_prompt(store: Store, project: Project, prompt: PromptDef) -> int:
    """Record the prompt, its current version and its YAML cases; returns the version."""
    return sync_prompt_cases(store, project, prompt)[0]


def sync_prompt_cases(
    store: Store, project: Project, prompt: PromptDef, *, release: bool = False
) -> tuple[int, list[TestCase]]:
    """:func:`sync_prompt`, and the prompt's live cases once synced (listed once: a run
    of a file of thousands of cases plans from them). ``release``: let the declared
    cases go (``prompt.cases`` emptied) before the stored ones are listed, so a run of
    100,000 cases never holds both."""
    source = API_SOURCE if prompt.file is None else project.relative(prompt.file)
    store.prompts.upsert(prompt.id, prompt.id, source)
    version = store.prompts.ensure_version(prompt.id, prompt.content(project))
    declared = declared_cases(project, prompt)
    try:
        stored = store.cases.synced(prompt.id, declared)
    except NameTakenError as exc:
        cid = exc.wanted
        if cid not in declared:
            raise
        where = next(c.where for c in prompt.cases if case_id(prompt.id, c.name) == cid)
        # The file alone is valid: a case made through the API has the name. Say where.
        raise ConfigError(
            f"{where}: prompt '{prompt.id}' already has a test case named "
            f"'{declared[cid]['name']}' made through the API (id '{exc.taken}'); a name is "
            "used once per prompt: rename or delete that case (updateTestCase, "
            "deleteTestCase), or rename this one"
        ) from None
    ids, files = set(declared), _files(project, prompt)
    del declared
    if release:
        prompt.cases = []
    leaving = _leaving(project, ids, files, stored)
    for cid in leaving:
        store.cases.delete(cid)
    return version, [case for case in stored if case.id not in leaving]


def sync_files(store: Store, project: Project, paths: Sequence[str]) -> list[PromptDef]:
    """Load the prompt/cases files under ``paths`` (default: the project) into the store."""
    prompts = load_prompts(project, collect_case_files(project, list(paths)))
    for prompt in prompts:
        sync_prompt(store, project, prompt)
    return prompts
