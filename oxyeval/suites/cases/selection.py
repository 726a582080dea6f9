"""Which test cases a command sees, worked out without writing to the history.

The files are the source of truth for the cases they declare; the store holds their
history and the cases created through the API. A sync (:func:`~oxyeval.suites.prompt_sync.sync_prompt`) writes
the files' truth into the store; the functions here compute the same result in memory, so
read commands (``oxy cases list|show``) and a run's up-front checks never write, and never
create a database just to look at it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...project.config import Project
from ...project.prompts import PromptDef, collect_case_files, load_prompts
from ...project.schema import did_you_mean
from ...store import Location, TestCase, utc_timestamp
from ..prompt_sync import declared_cases, leaving_cases

if TYPE_CHECKING:
    from ...store import Store

__all__ = [
    "by_name",
    "declared_cases",
    "leaving_cases",
    "no_version_error",
    "precheck",
    "preview_cases",
    "preview_prompt",
    "run_subject",
    "select_cases",
    "unknown_names_error",
]


def select_cases(
    cases: list[TestCase],
    names: Sequence[str] | None,
    files: set[str] | None,
    found: set[str],
) -> list[TestCase]:
    """The cases to run: those of the given files (all, for the whole project), narrowed to
    ``names`` (a case name or its full id <prompt>::<case>); ``found`` collects the names hit."""
    if files is not None:
        cases = [c for c in cases if c.source_file in files]
    if not names:
        return cases
    chosen = []
    for case in cases:
        hits = {n for n in names if n in (case.id, case.name)}
        if hits:
            found.update(hits)
            chosen.append(case)  # each case once, however many names pick it
    return chosen


def preview_prompt(
    project: Project, prompt: PromptDef, stored: Sequence[TestCase]
) -> list[TestCase]:
    """Replace ``stored`` (every case of the store, deleted ones too) with what a sync of
    ``prompt`` would leave, without writing: read commands show the files' truth."""
    declared = declared_cases(project, prompt)
    mine = [c for c in stored if c.prompt_id == prompt.id and c.deleted_at is None]
    leaving = leaving_cases(project, prompt, mine)
    out: list[TestCase] = []
    seen: set[str] = set()
    for case in stored:
        fields = declared.get(case.id)
        if fields is not None:  # declared: the file's fields, the store's history
            out.append(dataclasses.replace(case, deleted_at=None, **fields))
            seen.add(case.id)
        elif case.id not in leaving:
            out.append(case)
    now = utc_timestamp()
    for cid, fields in declared.items():
        if cid not in seen:  # declared but never stored: no history yet
            out.append(TestCase(id=cid, created_at=now, updated_at=now, **fields))
    return out


def preview_cases(store: Store | None, project: Project, paths: Sequence[str]) -> list[TestCase]:
    """Every live case as a sync of ``paths`` would leave the store, without writing it
    (``store`` None: there is no history yet)."""
    cases = [] if store is None else store.cases.list(include_deleted=True)
    for prompt in load_prompts(project, collect_case_files(project, list(paths))):
        cases = preview_prompt(project, prompt, cases)
    live = [c for c in cases if c.deleted_at is None]
    order = {c.id: i for i, c in enumerate(live)}
    return sorted(live, key=lambda c: (c.prompt_id, order[c.id]))


def _known_names(known: Mapping[str, TestCase], shown: int = 10) -> str:
    """When no name is close: the cases there are (by name), so the user need not guess."""
    names = sorted({case.name for case in known.values()})
    if not names:
        return "; no test cases are declared"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"; the cases are: {', '.join(names[:shown])}{more}"


def unknown_names_error(
    names: Sequence[str] | None,
    found: set[str],
    known: Mapping[str, TestCase],
    only_files: set[str] | None,
) -> ConfigError | None:
    """Why some ``--case`` names selected nothing. ``known`` maps every name and id of the
    prompts' live cases to its case: a name found there exists but is not in the given
    files (created through the API, or declared in another file), which a suggestion of
    that very name would not explain."""
    missing = [n for n in dict.fromkeys(names or ()) if n not in found]
    if not missing:
        return None
    parts = []
    unknown = [n for n in missing if n not in known]
    if unknown:
        parts.append(
            f"no test case named {', '.join(repr(m) for m in unknown)}"
            + (" in the given files" if only_files is not None else "")
            + (did_you_mean(unknown[0], list(known)) or _known_names(known))
        )
    for name in (n for n in missing if n in known):
        case = known[name]
        if case.source_file is None:
            why = (
                "it was created through the API, and a run of files runs only the cases they "
                "declare; give no file arguments to run the whole project, API cases included"
            )
        else:
            why = f"it is declared in {case.source_file}; add that file to the arguments"
        parts.append(f"test case {case.id!r} is not in the given files: {why}")
    return ConfigError("; ".join(parts))


def no_version_error(prompt: PromptDef, version: int, known: Sequence[int]) -> ConfigError:
    return ConfigError(
        f"prompt '{prompt.id}' has no version {version}; versions: {', '.join(map(str, known))}"
    )


def _declares(project: Project, prompt: PromptDef, only_files: set[str] | None) -> bool:
    """Whether ``prompt`` declares a case in one of ``only_files`` (any file: None), by
    its files, each looked at once rather than per case."""
    if only_files is None:
        return bool(prompt.cases)
    files = {case.doc.path for case in prompt.cases if case.doc is not None}
    return any(project.relative(path) in only_files for path in files)


def precheck(
    location: Location,
    project: Project,
    prompts: Sequence[PromptDef],
    names: Sequence[str] | None,
    version: int | None,
    only_files: set[str] | None,
) -> tuple[set[str], set[str]]:
    """Refuse a bad ``--case`` or ``--version`` from a read-only look, before the history is
    opened for writing: a run that cannot start must not create (or change) a database.

    Returns the models and similarity methods the selected cases use, so the caller can
    check their keys before the history is opened too."""
    from ..history_store import read_before_writing

    if (
        not names
        and version is None
        and all(_declares(project, prompt, only_files) for prompt in prompts)
    ):
        # Nothing to refuse: every prompt has a declared case among the files, so each
        # runs, and the history need not be listed (10,000 stored cases took 0.4 s).
        return {p.model for p in prompts}, {p.similarity for p in prompts}
    reader = read_before_writing(location)
    try:
        stored = [] if reader is None else reader.cases.list(include_deleted=True)
        found: set[str] = set()
        known: dict[str, TestCase] = {}
        models: set[str] = set()
        similarities: set[str] = set()
        for prompt in prompts:
            stored = preview_prompt(project, prompt, stored)
            mine = [c for c in stored if c.prompt_id == prompt.id and c.deleted_at is None]
            known.update(by_name(mine))
            if not select_cases(mine, names, only_files, found):
                continue  # a prompt none of whose cases run needs no such version
            model = prompt.model
            if version is not None:
                versions = (
                    []
                    if reader is None
                    else [v.version for v in reader.prompts.versions(prompt.id)]
                )
                content = prompt.content(project)
                if reader is None or reader.prompts.find_version(prompt.id, content) is None:
                    versions.append(max(versions, default=0) + 1)  # what this run's sync adds
                if version not in versions:
                    raise no_version_error(prompt, version, versions)
                earlier = None if reader is None else reader.prompts.get_version(prompt.id, version)
                model = earlier.get("model", model) if earlier is not None else model
            models.add(model)
            similarities.add(prompt.similarity)
        error = unknown_names_error(names, found, known, only_files)
        if error is not None:
            raise error
        return models, similarities
    finally:
        if reader is not None:
            reader.close()


def by_name(cases: Sequence[TestCase]) -> dict[str, TestCase]:
    """Each case under its name and its full id, the two ways ``--case`` selects it."""
    return {**{c.name: c for c in cases}, **{c.id: c for c in cases}}


def run_subject(prompt: PromptDef, root: Path) -> str | None:
    """What a cases run is of, as ``oxy history`` lists it: the prompt's file, relative to
    the project (a prompt built in code or made through the API: its id)."""
    if prompt.file is None:
        return prompt.id
    try:
        return Path(prompt.file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(prompt.file)
