"""What one case's A/B test needs, worked out before any call: its branches (synced
from the files, checked against the rules), each branch's model, the messages every
branch gets, and how its answers are scored.

Apart from :mod:`.run` (which makes the calls and stores them) so that everything that
can be bad input is found here, before the first call, and exits 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, LoadError
from ...evaluation import Similarity
from ...judge import SCALE_1_5, Judge
from ...project import with_limits
from ...project.config import Project
from ...project.prompts import PromptDef
from ...project.templates import TemplateRef
from ...providers import GenerateParams
from ...store import BranchRuleError
from ...workflow.context import RunContext
from ..prompt_sync import sync_prompt
from ..targets import PromptTarget
from .ranking import CRITERIA
from .results import ABCaseResult, BranchOutcome

if TYPE_CHECKING:
    from ...project.branches import BranchDef
    from ...providers import ChatMessage, Model
    from ...store import Store, TestBranch, TestCase

__all__ = ["MAX_ITERATIONS", "CasePlan", "check_options", "plan_cases", "sync_declared"]

#: Iterations per run: enough for a confidence interval, bounded so a typo cannot queue
#: a million calls.
MAX_ITERATIONS = 1000


@dataclass(repr=False)
class CasePlan:
    """One case's A/B test, with everything its calls share built once."""

    case: TestCase
    prompt_id: str
    version: int
    messages: list[ChatMessage]
    branches: list[TestBranch]
    models: dict[str, Model]
    scorer: Similarity
    result: ABCaseResult
    #: Grades quality when the prompt names a ``quality_judge`` (else quality = similarity).
    judge: Judge | None = None
    outcomes: dict[str, list[BranchOutcome]] = field(default_factory=dict)
    #: Where its executions are kept: its run row in the history (set when planned).
    handle: Any = None


def check_options(criteria: str, iterations: int) -> None:
    """The run's own options, checked before anything is read or opened (exit 2)."""
    if criteria not in CRITERIA:
        raise ConfigError(
            f"unknown winner criteria '{criteria}'; choose one of {', '.join(CRITERIA)}"
        )
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise ConfigError(f"iterations must be between 1 and {MAX_ITERATIONS}, not {iterations}")


def _branch_model(
    context: RunContext,
    project: Project,
    declared: Mapping[str, BranchDef],
    branch: TestBranch,
) -> Model:
    """The model a branch calls: a config.yml model with the branch's sampling settings,
    or the branch's vendor and model id at the endpoint config.yml's ``providers:`` or
    the vendor's environment variables give. Named by its model and the branch's id
    (unique per run), so a message about it ("needs an API key") names the model meant.
    A branch declared in a file (``declared``, by name) may set its own ``timeout`` and
    ``concurrency``; the endpoint's strictest concurrency applies to all its models."""
    own = declared.get(branch.name) if branch.source_file is not None else None
    timeout = own.timeout if own is not None else None
    concurrency = own.concurrency if own is not None else None
    name = f"{branch.model} [branch {branch.id}]"
    params = GenerateParams(
        temperature=branch.temperature,
        max_tokens=branch.max_tokens,
        top_p=branch.top_p,
        extra=dict(branch.other_params) or None,
    )
    if branch.provider is None:
        if branch.model not in project.models:
            raise ConfigError(
                f"branch '{branch.name}' of case '{branch.test_case_id}' uses model "
                f"'{branch.model}', which {project.config.display} does not define"
            )
        model = context.models.get(branch.model).variant(params, name=name, timeout=timeout)
        if concurrency is not None:
            model.limiter.share(name, concurrency)
        return model
    spec = project.provider_model_spec(
        branch.provider, branch.model, params=params, environ=context.environ, name=name
    )
    return context.models.add(with_limits(spec, timeout=timeout, concurrency=concurrency))


def _named(branch: TestBranch, build: Any, *args: Any) -> Model:
    """``build(*args, branch)``, its bad-input error naming the branch and its case."""
    try:
        return build(*args, branch)
    except ConfigError as exc:
        raise ConfigError(
            f"branch '{branch.name}' of case '{branch.test_case_id}': {exc}"
        ) from None


def _scorer(context: RunContext, method: str) -> Similarity:
    """The case's quality scorer: the same similarity as its test-case runs use."""
    if method in ("", "lexical"):
        return Similarity(None, method="lexical")
    embedder = context.embeddings.get(method)
    model_ref = context.project.embeddings[method].model_ref
    return Similarity(embedder.similarity, method=f"embedding:{method} ({model_ref})")


def _select(
    stored: Sequence[TestCase], names: Sequence[str] | None, found: set[str]
) -> list[TestCase]:
    if not names:
        return list(stored)
    chosen = []
    for case in stored:
        hits = {n for n in names if n in (case.id, case.name)}
        if hits:
            found.update(hits)
            chosen.append(case)
    return chosen


def sync_declared(store: Store, project: Project, prompts: Sequence[PromptDef]) -> None:
    """Put what the files declare into the store: each prompt's version, its cases and
    their A/B branches (what a run syncs first, and a server when it starts)."""
    for prompt in prompts:
        sync_prompt(store, project, prompt)
        source = project.relative(prompt.file) if prompt.file is not None else None
        for case in prompt.cases:
            cap = prompt.params.max_tokens
            declared = [b.fields(b.cap(project, cap)) for b in prompt.branches_of(case)]
            try:
                store.branches.sync(f"{prompt.id}::{case.name}", declared, source or "")
            except BranchRuleError as exc:
                # The file alone is valid (oxy validate): with the branches made through
                # the API for this case, it breaks a rule. Say where, and what to change.
                where = case.where if case.branches is not None else f"{source} (branches:)"
                raise ConfigError(
                    f"{where}: {exc}; the case also has branches made through the Python "
                    "API, which count too: delete one of them (store.branches.delete) or "
                    "declare fewer here"
                ) from None


async def plan_cases(
    store: Store,
    project: Project,
    prompts: Sequence[PromptDef],
    context: RunContext,
    *,
    cases: Sequence[str] | None,
    branch_ids: Sequence[str] | None,
    prompt_version: int | None,
    criteria: str,
    iterations: int,
    explicit: bool,
) -> list[CasePlan]:
    """Sync the files' prompts, cases and branches; then each selected case's plan."""
    by_id = {p.id: p for p in prompts}
    sync_declared(store, project, prompts)
    found: set[str] = set()
    stored = [c for p in prompts for c in store.cases.list(p.id)]
    if cases:  # a case of a prompt made through the API, named by its id
        have = {c.id for c in stored}
        stored += [c for c in (store.cases.get(n) for n in cases if n not in have) if c]
    selected = _select(stored, cases, found)
    missing = [n for n in cases or () if n not in found]
    if missing:
        known = ", ".join(sorted(c.id for c in stored)) or "none"
        raise ConfigError(f"no test case {', '.join(map(repr, missing))}; cases: {known}")
    plans = []
    for case in selected:
        branches = [b for b in store.branches.list(case.id) if b.is_active]
        if branch_ids:
            wanted = {b.id: b for b in store.branches.list(case.id)}
            unknown = [i for i in branch_ids if i not in wanted]
            if unknown:
                raise ConfigError(
                    f"case '{case.id}' has no branch {', '.join(map(repr, unknown))}; its "
                    f"branches: {', '.join(wanted) or 'none'}"
                )
            branches = [wanted[i] for i in branch_ids]
        if not branches:
            if explicit:
                raise ConfigError(
                    f"case '{case.id}' has no active branches to compare; declare branches: "
                    "in its prompt file (or on the case), or create them with store.branches"
                )
            continue
        prompt = by_id.get(case.prompt_id)
        version = (
            store.prompts.latest_version(case.prompt_id)
            if prompt_version is None
            else prompt_version
        )
        content = store.prompts.get_version(case.prompt_id, version) if version else None
        if content is None:
            raise ConfigError(f"prompt '{case.prompt_id}' has no version {prompt_version}")
        target = PromptTarget(
            context,
            content["model"],
            TemplateRef(content["template"]),
            TemplateRef(content["system"]) if content.get("system") else None,
        )
        try:
            messages = target.messages(case.input or {})
        except LoadError as exc:
            raise ConfigError(
                f"case '{case.id}': its input does not fit prompt '{case.prompt_id}' version "
                f"{version}: {exc.diagnostics[0].message}"
            ) from None
        method = prompt.similarity if prompt is not None else next(iter(project.embeddings), "")
        judge = None
        if prompt is not None and prompt.quality_judge is not None:
            judge = Judge(
                context.models.get(prompt.quality_judge),
                settings=project.judge,
                cache=context.verdicts,
                rubric=SCALE_1_5,
            )
        case_def = next((c for c in prompt.cases if c.name == case.name), None) if prompt else None
        declared = {d.name: d for d in prompt.branches_of(case_def)} if case_def and prompt else {}
        models = {b.id: _named(b, _branch_model, context, project, declared) for b in branches}
        plans.append(
            CasePlan(
                case=case,
                prompt_id=case.prompt_id,
                version=version,
                messages=messages,
                branches=branches,
                models=models,
                scorer=_scorer(context, method),
                judge=judge,
                result=ABCaseResult(
                    test_case_id=case.id,
                    case_name=case.name,
                    prompt_id=case.prompt_id,
                    prompt_version=version,
                    criteria=criteria,
                    iterations=iterations,
                ),
            )
        )
    return plans
