"""A/B branches as declared in YAML: the model configurations a test case's prompt runs on.

``branches:`` on a prompt applies to every case of it; a case's own ``branches:`` replace
the prompt's for that case (one list per case, so the 5-branch and one-control rules are
checked on what will really run). A branch either names a model of config.yml
(``model: local``) or a vendor and that vendor's model id (``provider: openai, model:
gpt-4o-mini``); where such a request goes is the providers stage's business
(``providers:`` in config.yml, then the vendor's environment variables).

The rules are checked here for YAML, with the file, line and branch named, and again by
the store for branches made through the API (``store.branches``), so no caller can make a
sixth branch or a second control.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic
from ..providers import extra_problem
from .config import Project
from .document import Document, KeyPath
from .schema import did_you_mean

__all__ = [
    "BRANCH_PROVIDERS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TOP_P",
    "MAX_BRANCHES",
    "MAX_BRANCH_TOKENS",
    "BranchDef",
    "branch_problems",
    "parse_branches",
]

#: The Testing API's three vendors, and Ollama.
BRANCH_PROVIDERS = ("openai", "anthropic", "gemini", "ollama")
#: The Testing API's limit per test case.
MAX_BRANCHES = 5
#: The Testing API's defaults: a branch is a sampling configuration, so it always sends
#: them; all but the answer cap, which a branch declared in a file takes from its prompt
#: or model unless it sets its own (:meth:`BranchDef.cap`), so an A/B test measures the
#: request ``oxy cases run`` makes. A branch made through the API stores the API's 2048.
DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 2048
DEFAULT_TOP_P = 1.0
#: Above any model's output limit; bounds what a file or a caller can store.
MAX_BRANCH_TOKENS = 10_000_000


@dataclass(frozen=True, repr=False)
class BranchDef:
    """One branch as declared (or as given to the Python API)."""

    name: str
    model: str
    provider: str | None = None
    description: str | None = None
    temperature: float = DEFAULT_TEMPERATURE
    #: None: not declared, the prompt's or model's cap applies (:meth:`cap`).
    max_tokens: int | None = None
    top_p: float = DEFAULT_TOP_P
    #: Seconds per attempt and requests in flight (extensions, YAML only); None: the
    #: model's own.
    timeout: float | None = None
    concurrency: int | None = None
    control: bool = False
    active: bool = True
    other_params: Mapping[str, Any] = field(default_factory=dict)
    doc: Document | None = None
    key: KeyPath = ()

    def __repr__(self) -> str:
        return f"BranchDef({self.name!r}, {self.provider or 'config'}:{self.model})"

    @property
    def where(self) -> str:
        if self.doc is None:
            return f"branch '{self.name}'"
        pos = self.doc.locate(self.key)
        line = f":{pos.line}" if pos else ""
        return f"{self.doc.display}{line} (branch '{self.name}')"

    def cap(self, project: Project, prompt_cap: int | None) -> int:
        """The answer cap the branch sends: its own, else its prompt's (``prompt_cap``),
        else its config.yml model's, else the default cap of every model (a local
        server's smaller one)."""
        from ..providers import DEFAULT_OUTPUT_TOKENS, LOCAL_OUTPUT_TOKENS

        if self.max_tokens is not None:
            return self.max_tokens
        if prompt_cap is not None:
            return prompt_cap
        spec = project.models.get(self.model) if self.provider is None else None
        if spec is not None and spec.params.max_tokens is not None:
            return spec.params.max_tokens
        return LOCAL_OUTPUT_TOKENS if spec is not None and spec.local else DEFAULT_OUTPUT_TOKENS

    def fields(self, max_tokens: int | None = None) -> dict[str, Any]:
        """The store's fields (``store.branches.sync`` / ``create``); ``max_tokens``: the
        cap it sends (:meth:`cap`) when it declares none."""
        return {
            "name": self.name,
            "model": self.model,
            "provider": self.provider,
            "description": self.description,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens
            if self.max_tokens is not None
            else max_tokens or DEFAULT_MAX_TOKENS,
            "top_p": self.top_p,
            "is_control": self.control,
            "is_active": self.active,
            "other_params": dict(self.other_params),
        }


def parse_branches(
    doc: Document, items: Sequence[Mapping[str, Any]], key: KeyPath
) -> list[BranchDef]:
    """Branches of a schema-checked ``branches:`` list."""
    return [
        BranchDef(
            name=item["name"],
            model=item["model"],
            provider=item.get("provider"),
            description=item.get("description"),
            temperature=float(item.get("temperature", DEFAULT_TEMPERATURE)),
            max_tokens=int(item["max_tokens"]) if "max_tokens" in item else None,
            timeout=float(item["timeout"]) if "timeout" in item else None,
            concurrency=int(item["concurrency"]) if "concurrency" in item else None,
            top_p=float(item.get("top_p", DEFAULT_TOP_P)),
            control=bool(item.get("control", False)),
            active=bool(item.get("active", True)),
            other_params=dict(item.get("other_params") or {}),
            doc=doc,
            key=(*key, i),
        )
        for i, item in enumerate(items)
    ]


def _problem(branch: BranchDef, subkey: str | None, message: str) -> Diagnostic:
    if branch.doc is None:
        return Diagnostic("", f"{branch.where}: {message}")
    where = (*branch.key, subkey) if subkey else branch.key
    return branch.doc.diagnostic(where, message)


def branch_problems(project: Project, case: str, branches: Sequence[BranchDef]) -> list[Diagnostic]:
    """What is wrong with one list of branches (``case`` says whose, for the messages:
    "case 'x'"): a sixth branch, a second control, a name
    used twice, a config.yml model that does not exist. Each problem names the branch."""
    problems: list[Diagnostic] = []
    names: dict[str, BranchDef] = {}
    control: BranchDef | None = None
    for i, branch in enumerate(branches):
        if i == MAX_BRANCHES:
            problems.append(
                _problem(
                    branch,
                    "name",
                    f"{case} has {len(branches)} branches; at most {MAX_BRANCHES} are "
                    f"allowed, so branch '{branch.name}' and any after it are one too many",
                )
            )
        first = names.setdefault(branch.name, branch)
        if first is not branch:
            problems.append(
                _problem(
                    branch,
                    "name",
                    f"branch name '{branch.name}' is used twice for {case} (first at "
                    f"{first.where}); a name identifies a branch's history",
                )
            )
        if branch.control:
            if control is not None:
                problems.append(
                    _problem(
                        branch,
                        "control",
                        f"{case} has two control branches, '{control.name}' and "
                        f"'{branch.name}'; at most one branch is the control",
                    )
                )
            else:
                control = branch
        problem = extra_problem(branch.other_params)
        if problem is not None:
            problems.append(
                _problem(branch, "other_params", f"branch '{branch.name}': other_params {problem}")
            )
        if branch.provider is None and branch.model not in project.models:
            problems.append(
                _problem(
                    branch,
                    "model",
                    f"branch '{branch.name}': unknown model '{branch.model}'"
                    f"{did_you_mean(branch.model, list(project.models))} (without provider:, "
                    f"model names a model of {project.config.display}: "
                    f"{', '.join(project.models) or 'none defined'}; with provider: "
                    f"{'|'.join(BRANCH_PROVIDERS)}, it is that vendor's model id)",
                )
            )
    return problems
