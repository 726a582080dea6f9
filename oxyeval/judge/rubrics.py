"""Rubrics: what a judge is asked, which verdicts it may give, and what each is worth.

A rubric is the one place a kind of judgement is described: its labels (A/B for
consistency, PASS/FAIL for judged tests, 1-5 for a graded scale), the value of each,
the prompt, and the variables the prompt needs. The verdict parser, the re-ask, the
structured-output schema and the verdict cache key are all derived from it, so a new
kind of judgement is a new rubric, not a fourth copy of the parser.

Label spelling, as the parser reads it (see :mod:`oxyeval.judge.reading`): a label of
one letter is case-sensitive ("A", never the article "a" in prose); a label of several
letters matches in any case ("Verdict: Pass"); labels made of digits form a scale, where
"4/5" and "4 out of 5" (the highest label after it) read as 4, and "1-5", "1 to 5",
"4/10" or "4.5" are no verdict.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..project.templates import TemplateRef, referenced_names, template_diagnostics
from ..providers import ResponseSchema

if TYPE_CHECKING:
    from .reading import Verdict

__all__ = [
    "CONSISTENCY",
    "DEFAULT_CONSISTENCY_PROMPT",
    "DEFAULT_PASS_FAIL_PROMPT",
    "DEFAULT_SCALE_PROMPT",
    "PASS_FAIL",
    "SCALE_1_5",
    "Label",
    "Rubric",
]

DEFAULT_CONSISTENCY_PROMPT = """\
You are checking whether two answers to the same data-analysis question state the same facts.

Question: {{ task_description }}

[Submission 1]
{{ submission_1 }}
[End of submission 1]

[Submission 2]
{{ submission_2 }}
[End of submission 2]

Treat the submissions as CONSISTENT when they differ only in:
- rounding or precision, where numbers differ by less than 0.1% \
(1,081,396 vs 1,081,395.67; 42.67% vs 42.7%);
- grammar, tense, contractions or word choice that keeps the meaning \
("sales fell" vs "sales decreased"; "there are" vs "there're");
- how numbers, dates, units or layout are written \
(1000 vs 1,000; 2024-01-15 vs January 15, 2024; a table vs a sentence; whitespace);
- extra detail, context or explanation in one submission that does not contradict the other.

Treat them as INCONSISTENT when:
- they make opposite or incompatible claims ("sales increased" vs "sales decreased");
- a number that answers the question differs by 0.1% or more (500,000 vs 450,000);
- they name different entities, periods, counts or categories for the same fact;
- one answers the question and the other refuses, fails or answers a different question.

Reason briefly (at most three sentences) about the facts each submission states.
Then write the verdict alone on the last line, exactly one of:
Answer: A
Answer: B
(A = consistent, B = they disagree)
"""

#: What a grading prompt shows the judge of one answer (both graded rubrics').
_ONE_ANSWER = """\
{% if input %}
[Input]
{{ input }}
[End of input]
{% endif %}
[Answer]
{{ output }}
[End of answer]

Criterion: {{ criterion }}
"""

DEFAULT_PASS_FAIL_PROMPT = (
    """You are grading one answer against one criterion.
"""
    + _ONE_ANSWER
    + """
The answer PASSES when it meets the criterion; small differences in wording, rounding \
or layout do not matter. It FAILS when it does not meet the criterion, contradicts it, \
refuses, or answers a different question.

Reason briefly (at most three sentences) about whether the answer meets the criterion.
Then write the verdict alone on the last line, exactly one of:
Verdict: PASS
Verdict: FAIL
"""
)

DEFAULT_SCALE_PROMPT = (
    """You are grading how well one answer meets one criterion, on a scale of 1 to 5.
"""
    + _ONE_ANSWER
    + """
Grade the answer:
5 when it meets the criterion fully;
4 when it meets it with minor gaps;
3 when it meets it partly;
2 when it mostly misses it;
1 when it does not meet it at all, refuses, or answers a different question.

Reason briefly (at most three sentences) about how well the answer meets the criterion.
Then write the grade alone on the last line, as "Score: N", with N one of 1, 2, 3, 4, 5.
"""
)


@dataclass(frozen=True)
class Label:
    """One verdict a rubric allows; ``meaning`` is a condition ("the answer meets the
    criterion"), used in the re-ask ("'Verdict: PASS' if ...") and the schema."""

    name: str
    value: float
    meaning: str


@dataclass(frozen=True)
class Rubric:
    """A kind of judgement: labels with values, the prompt and the variables it needs.

    ``variables`` must be given to every call (a missing one is a ConfigError naming
    it); ``optional`` may be; ``subjects`` are what a prompt must show the judge (a
    custom prompt that never reads one could not see what it judges). ``keyword`` is
    the word the verdict follows ("Answer: A"); ``keywords`` are further words a
    verdict may follow, besides answer, verdict, choice, decision, grade and result.
    """

    name: str
    labels: tuple[Label, ...]
    prompt: str
    variables: tuple[str, ...]
    optional: tuple[str, ...] = ()
    subjects: tuple[str, ...] = ()
    keyword: str = "Verdict"
    keywords: tuple[str, ...] = ()
    schema_description: str = "Your verdict, as the instructions ask for it."
    reasoning_description: str = "Brief reasoning, before the verdict."
    #: The schema's description of the verdict field; None: made from the labels.
    verdict_description: str | None = field(default=None)

    def __post_init__(self) -> None:
        names = [label.name for label in self.labels]
        if len(names) < 2:
            raise ConfigError(f"rubric '{self.name}': it needs at least two labels")
        bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9]+", n)]
        if bad:
            raise ConfigError(
                f"rubric '{self.name}': label(s) {', '.join(map(repr, bad))} must be letters "
                "or digits only"
            )
        if len({n.casefold() for n in names}) != len(names):
            raise ConfigError(f"rubric '{self.name}': two labels differ only in case")
        digits = [n.isdigit() for n in names]
        if any(digits) and not all(digits):
            raise ConfigError(
                f"rubric '{self.name}': mix of number and word labels; a scale uses numbers only"
            )

    # -- labels ------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(label.name for label in self.labels)

    @property
    def values(self) -> dict[str, float]:
        """Label -> value: the default scores of a verdict."""
        return {label.name: label.value for label in self.labels}

    def label(self, text: str) -> str | None:
        """The label a spelling stands for ("pass" -> "PASS"), or None."""
        folded = text.casefold()
        return next((n for n in self.names if n.casefold() == folded), None)

    @staticmethod
    def _listed(items: list[str], last: str = " or ") -> str:
        """``a, b or c`` (``last`` joins the final two)."""
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + last + items[-1]

    # -- what the judge is told ----------------------------------------------------------

    @property
    def reask(self) -> str:
        """The message sent once when a reply has no verdict."""
        options = [f"'{self.keyword}: {label.name}' if {label.meaning}" for label in self.labels]
        listed = self._listed(options, ", or ")
        return f"Your reply did not end with a verdict. Reply with exactly one line: {listed}."

    @property
    def schema(self) -> ResponseSchema:
        """The structured-output schema: brief reasoning, then one label from an enum."""
        described = self.verdict_description
        if described is None:
            meanings = [f"{label.name} if {label.meaning}" for label in self.labels]
            described = f"The verdict the instructions ask for: {self._listed(meanings)}."
        return _schema(self.schema_description, self.reasoning_description, self.names, described)

    def template(self) -> TemplateRef:
        """The rubric's own prompt, compiled once."""
        return _template(self.prompt)

    def identity(self) -> dict[str, Any]:
        """What a cached verdict must agree on besides the rendered prompt: a PASS/FAIL
        verdict can never answer an A/B question (see :func:`oxyeval.judge.verdict_key`).
        Worked out once per rubric: every cached judge call asks for it."""
        return dict(_identity(self))

    # -- checks --------------------------------------------------------------------------

    def check_variables(self, variables: Mapping[str, Any]) -> None:
        """Every variable the rubric needs is given, before any call is made."""
        missing = [name for name in self.variables if name not in variables]
        if missing:
            raise ConfigError(
                f"rubric '{self.name}': missing variable(s) {', '.join(missing)} for the "
                "judge prompt"
            )

    def unseen_subjects(self, prompt: TemplateRef) -> list[str]:
        """The subjects a (custom) prompt never reads; empty for one that does not compile
        (its syntax error is reported instead)."""
        if template_diagnostics(prompt):
            return []
        names = referenced_names(prompt)
        return [name for name in self.subjects if name not in names]

    # -- reading replies -----------------------------------------------------------------

    def parse(
        self, text: str, instructions: str | None = None, *, cut: bool = False
    ) -> Verdict | None:
        """The verdict of a text reply (see :func:`oxyeval.judge.reading.read_verdict`);
        ``cut``: the reply stopped at the token limit, and only a complete, final verdict
        counts (:func:`~oxyeval.judge.reading.read_cut_verdict`)."""
        from .reading import read_cut_verdict, read_verdict

        if cut:
            return read_cut_verdict(text, self, instructions)
        return read_verdict(text, self, instructions)

    def structured(self, data: Mapping[str, Any]) -> Verdict | None:
        """The verdict of a structured reply ``{"reasoning": ..., "verdict": label}``."""
        from .reading import structured_reading

        return structured_reading(data, self)


@lru_cache(maxsize=32)
def _identity(rubric: Rubric) -> tuple[tuple[str, Any], ...]:
    return (
        ("name", rubric.name),
        ("labels", [[label.name, label.meaning] for label in rubric.labels]),
        ("prompt", hashlib.sha256(rubric.prompt.encode("utf-8")).hexdigest()),
    )


@lru_cache(maxsize=32)
def _template(source: str) -> TemplateRef:
    return TemplateRef(source)


@lru_cache(maxsize=32)
def _schema(
    description: str, reasoning: str, labels: tuple[str, ...], verdict: str
) -> ResponseSchema:
    return ResponseSchema(
        name="verdict",
        description=description,
        schema={
            "type": "object",
            "properties": {
                "reasoning": {"type": "string", "description": reasoning},
                "verdict": {"type": "string", "enum": list(labels), "description": verdict},
            },
            "required": ["reasoning", "verdict"],
            "additionalProperties": False,
        },
    )


CONSISTENCY = Rubric(
    name="consistency",
    labels=(
        Label("A", 1.0, "the two submissions are consistent"),
        Label("B", 0.0, "they disagree"),
    ),
    prompt=DEFAULT_CONSISTENCY_PROMPT,
    variables=("task_description", "submission_1", "submission_2"),
    subjects=("submission_1", "submission_2"),
    keyword="Answer",
    schema_description="Your verdict on the two submissions, as the instructions ask for it.",
    reasoning_description="Brief reasoning about the facts each submission states.",
    verdict_description="The verdict the instructions ask for: A or B.",
)

PASS_FAIL = Rubric(
    name="pass_fail",
    labels=(
        Label("PASS", 1.0, "the answer meets the criterion"),
        Label("FAIL", 0.0, "it does not"),
    ),
    prompt=DEFAULT_PASS_FAIL_PROMPT,
    variables=("output", "criterion"),
    optional=("input",),
    subjects=("output",),
    keyword="Verdict",
    schema_description="Your verdict on the answer, as the instructions ask for it.",
    reasoning_description="Brief reasoning about whether the answer meets the criterion.",
)

#: A 1-5 grade; values spread evenly over 0..1 (1 -> 0.0, 3 -> 0.5, 5 -> 1.0), so a
#: scale's mean is comparable with a pass rate.
SCALE_1_5 = Rubric(
    name="scale_1_5",
    labels=(
        Label("1", 0.0, "the answer does not meet the criterion at all"),
        Label("2", 0.25, "it mostly misses it"),
        Label("3", 0.5, "it meets it partly"),
        Label("4", 0.75, "it meets it with minor gaps"),
        Label("5", 1.0, "it meets it fully"),
    ),
    prompt=DEFAULT_SCALE_PROMPT,
    variables=("output", "criterion"),
    optional=("input",),
    subjects=("output",),
    keyword="Score",
    keywords=("score", "rating"),
    schema_description="Your grade of the answer, as the instructions ask for it.",
    reasoning_description="Brief reasoning about how well the answer meets the criterion.",
)
