"""Which branches a command sees, worked out without writing to the history.

A run syncs the files' branches into the store (:func:`oxyeval.suites.ab.run_ab_tests`);
``oxy ab list`` and ``oxy ab show`` only read, so a branch declared in YAML and never run
is shown from its file (no runs yet), and one made through the API from the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...project.config import Project
from ...project.prompts import collect_case_files, load_prompts
from ...project.schema import did_you_mean
from ...store import TestBranch, branch_id, case_id, utc_timestamp

if TYPE_CHECKING:
    from ...project.branches import BranchDef
    from ...store import Store

__all__ = ["find_branch", "preview_branches"]


def _declared(
    project: Project, case: str, branch: BranchDef, source: str | None, prompt_cap: int | None
) -> TestBranch:
    now = utc_timestamp()
    return TestBranch(
        id=branch_id(case, branch.name),
        test_case_id=case,
        name=branch.name,
        description=branch.description,
        provider=branch.provider,
        model=branch.model,
        temperature=branch.temperature,
        max_tokens=branch.cap(project, prompt_cap),
        top_p=branch.top_p,
        is_control=branch.control,
        is_active=branch.active,
        other_params=dict(branch.other_params),
        source_file=source,
        created_at=now,
        updated_at=now,
    )


def preview_branches(
    store: Store | None,
    project: Project,
    paths: Sequence[str | Path],
    *,
    include_removed: bool = False,
) -> list[TestBranch]:
    """The branches of the given files' cases (default: the project's, and every branch
    made through the API): as declared, with the store's aggregates when it has them.
    ``include_removed``: also those removed from their file or deleted, with their
    history (``deleted_at`` set)."""
    prompts = load_prompts(project, collect_case_files(project, [str(p) for p in paths]))
    listed = store.branches.list(include_deleted=include_removed) if store is not None else []
    stored = {b.id: b for b in listed}
    shown: dict[str, TestBranch] = {}
    for prompt in prompts:
        source = project.relative(prompt.file) if prompt.file is not None else None
        for case in prompt.cases:
            cid = case_id(prompt.id, case.name)
            for branch in prompt.branches_of(case):
                declared = _declared(project, cid, branch, source, prompt.params.max_tokens)
                known = stored.get(declared.id)
                shown[declared.id] = declared if known is None else known
            if not paths:  # API-made branches of these cases too
                for b in stored.values():
                    if b.test_case_id == cid and b.source_file is None:
                        shown.setdefault(b.id, b)
    if not paths:
        for b in stored.values():
            shown.setdefault(b.id, b)
    return sorted(shown.values(), key=lambda b: (b.test_case_id, not b.is_control, b.name))


def find_branch(store: Store | None, project: Project, name: str) -> TestBranch:
    """A branch by its id (``<case id>@<name>``), or by its name when one branch has it;
    a branch removed from its file (or deleted) is found too: its history is kept."""
    branches = preview_branches(store, project, [], include_removed=True)
    for branch in branches:
        if branch.id == name:
            return branch
    named = [b for b in branches if b.name == name]
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(b.id for b in named)
        raise ConfigError(f"branch name '{name}' is used by several cases; give its id: {ids}")
    known = [b.id for b in branches]
    hint = did_you_mean(name, known + [b.name for b in branches])
    listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
    # What was typed, as the error shows it: one line, no escape sequence, bounded.
    asked = " ".join(name.split())[:200].encode("unicode_escape").decode("ascii")
    raise ConfigError(
        f"no branch '{asked}'{hint}; branches: "
        f"{listed or 'none (declare branches: in a *.prompt.yml)'}"
    )
