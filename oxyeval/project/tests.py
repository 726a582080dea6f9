"""Consistency tests as agent and workflow files declare them (``tests:``), defaults filled in.

Every spec can also be built in code (the SDK), without a file behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Diagnostic
from .config import JudgeSettings, Project, check_model
from .document import Document, KeyPath
from .limits import MAX_ALL_PAIRS_RUNS, MAX_RUNS
from .schema import did_you_mean
from .templates import TemplateRef, referenced_names, template_diagnostics

__all__ = [
    "DEFAULT_MIN_JUDGED",
    "DEFAULT_N",
    "DEFAULT_SCORES",
    "DEFAULT_TEST_CONCURRENCY",
    "JUDGE_PROMPT_NAMES",
    "JudgeSpec",
    "TestSpec",
    "check_judge_prompt",
    "parse_tests",
    "unseen_submissions",
]

DEFAULT_SCORES = {"A": 1.0, "B": 0.0}
DEFAULT_N = 10
DEFAULT_TEST_CONCURRENCY = 10
#: Share of a test's run pairs that must get a verdict for its accuracy to count.
DEFAULT_MIN_JUDGED = 0.5


@dataclass
class JudgeSpec:
    """How one metric judges a pair: its prompt (None = built-in), model and scores."""

    prompt: TemplateRef | None
    model: str
    scores: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_SCORES))
    key: KeyPath = ()  # where it is declared; () for one built in code
    settings: JudgeSettings = field(default_factory=JudgeSettings)  # the project's judge:


@dataclass
class TestSpec:
    """One consistency test as declared in a file, defaults filled in.

    Every field has a default, so a test can be built in code (the SDK) as well as
    loaded: ``TestSpec(name="capital", task_description="...", judges=[JudgeSpec(None, "m")])``.
    """

    __test__ = False  # not a pytest class

    index: int = 0  # 0-based position in the file's tests:
    name: str = "Test 1"
    file: Path | None = None  # None: built in code, not read from a file
    display: str = "<code>"
    key: KeyPath = ()
    n: int = DEFAULT_N
    task_description: str | None = None
    task_ref: str | None = None
    concurrency: int = DEFAULT_TEST_CONCURRENCY
    pairing: str = "all"
    judges: list[JudgeSpec] = field(default_factory=list)
    min_judged: float = DEFAULT_MIN_JUDGED  # share of run pairs that must get a verdict
    #: Each pair judged in both orders (``judge_swap``, else config.yml's ``judge.swap``).
    judge_swap: bool = False


#: What a judge prompt renders with; it must read both submissions.
JUDGE_PROMPT_NAMES = frozenset({"submission_1", "submission_2", "task_description"})


def unseen_submissions(ref: TemplateRef) -> list[str]:
    """The submissions a judge prompt never reads (``submission_1``, ``submission_2``).
    A judge that cannot see the answers cannot compare them: it would call every pair
    consistent (a false 100%). Empty for a prompt that does not compile (its syntax
    error is reported instead)."""
    if template_diagnostics(ref):
        return []
    names = referenced_names(ref)
    return [v for v in ("submission_1", "submission_2") if v not in names]


def check_judge_prompt(ref: TemplateRef, problems: list[Diagnostic]) -> None:
    """A custom judge prompt (a test's ``prompt:``, a workflow's ``consistency_prompt:``):
    it compiles, reads both submissions, and reads no name it will not be given. The
    one check for every place a file declares one, so validate, compile and run agree."""
    found = template_diagnostics(ref)
    problems.extend(found)
    if found or ref.doc is None:
        return
    missing = unseen_submissions(ref)
    if missing:
        problems.append(
            ref.doc.diagnostic(
                ref.key,
                "judge prompt never uses {{ "
                + " }} or {{ ".join(missing)
                + " }}, so the judge cannot see what it compares and every pair would "
                "count as consistent; put both answers in the prompt",
            )
        )
    unknown = referenced_names(ref) - JUDGE_PROMPT_NAMES
    if unknown:
        problems.append(
            ref.doc.diagnostic(
                ref.key,
                f"judge prompt uses unknown variable(s) {', '.join(sorted(unknown))}; only "
                "submission_1, submission_2 and task_description are available",
            )
        )


def parse_tests(
    doc: Document, project: Project, problems: list[Diagnostic], *, owner: str
) -> list[TestSpec]:
    """Consistency tests of an agent or workflow file; other test types are skipped (warned)."""
    specs: list[TestSpec] = []
    names_seen: set[str] = set()
    for i, test in enumerate(doc.data.get("tests") or []):
        if test.get("type") != "consistency":
            continue
        key: KeyPath = ("tests", i)
        metrics = test.get("metrics")
        judges: list[JudgeSpec] = []
        if metrics:
            for flat in ("prompt", "model_ref", "scores"):
                if flat in test:
                    problems.append(
                        doc.diagnostic(
                            (*key, flat),
                            f"give '{flat}' either on the test or in its metrics, not both",
                        )
                    )
            for m, metric in enumerate(metrics):
                if metric.get("type") != "similarity":
                    continue
                judges.append(_judge(doc, (*key, "metrics", m), metric, project, problems))
        else:
            judges.append(_judge(doc, key, test, project, problems))
        # A misspelt task_description is said once, by the schema's "did you mean".
        misspelt = any(
            k != "task_description" and did_you_mean(str(k), ("task_description",)) for k in test
        )
        if owner == "agent" and not test.get("task_description") and not misspelt:
            problems.append(
                doc.diagnostic(
                    key,
                    "an agent's consistency test needs task_description: the question the "
                    "agent answers n times",
                    at_key=True,
                )
            )
        if owner == "agent" and "task_ref" in test:
            problems.append(
                doc.diagnostic(
                    (*key, "task_ref"),
                    "task_ref is for workflow tests; agents use task_description",
                )
            )
        n = test.get("n", DEFAULT_N)
        if (
            test.get("pairing", "all") in ("all", "cluster")
            and isinstance(n, int)
            and MAX_ALL_PAIRS_RUNS < n <= MAX_RUNS
        ):
            problems.append(
                doc.diagnostic(
                    (*key, "n"),
                    f"{n} runs with pairing: {test.get('pairing', 'all')} make "
                    f"{n * (n - 1) // 2:,} pairs to judge; pairing: all and cluster take at most {MAX_ALL_PAIRS_RUNS} runs (pairing: ring "
                    f"takes up to {MAX_RUNS:,})",
                )
            )
        name = test.get("name") or f"Test {i + 1}"
        if not test.get("name") and len(doc.data.get("tests") or []) > 1:
            # The history tells tests apart by file and name: an unnamed one is 'Test N',
            # so inserting a test above it would compare it with another test's past.
            problems.append(
                doc.diagnostic(
                    key,
                    f"this test has no name, so its results are stored as '{name}', by "
                    "position: add or remove a test above it and its history (previous "
                    "accuracy, --fail-on-drop) follows another test; give it a name",
                    severity="warning",
                    at_key=True,
                )
            )
        if name in names_seen:
            problems.append(
                doc.diagnostic(
                    (*key, "name"),
                    f"test name '{name}' is used twice in this file; reports and thresholds name tests by it",
                )
            )
        names_seen.add(name)
        specs.append(
            TestSpec(
                index=i,
                name=name,
                file=doc.path,
                display=doc.display,
                key=key,
                n=n,
                task_description=test.get("task_description"),
                task_ref=test.get("task_ref"),
                concurrency=test.get("concurrency", DEFAULT_TEST_CONCURRENCY),
                pairing=test.get("pairing", "all"),
                judges=judges,
                min_judged=float(test.get("min_judged", DEFAULT_MIN_JUDGED)),
                judge_swap=bool(test.get("judge_swap", project.judge.swap)),
            )
        )
    return specs


def _judge(
    doc: Document, key: KeyPath, entry: dict[str, Any], project: Project, problems: list[Diagnostic]
) -> JudgeSpec:
    prompt = None
    if entry.get("prompt"):
        prompt = TemplateRef(entry["prompt"], doc, (*key, "prompt"))
        check_judge_prompt(prompt, problems)
    model = entry.get("model_ref") or project.default_judge
    check_model(doc, (*key, "model_ref"), entry.get("model_ref"), project, problems, "judge model")
    scores = {**DEFAULT_SCORES, **{k: float(v) for k, v in (entry.get("scores") or {}).items()}}
    for letter, value in scores.items():
        if not math.isfinite(value):  # YAML's .nan passes every numeric bound
            problems.append(
                doc.diagnostic(
                    (*key, "scores", letter), f"score must be a number between 0 and 1, got {value}"
                )
            )
    return JudgeSpec(prompt=prompt, model=model, scores=scores, key=key, settings=project.judge)
