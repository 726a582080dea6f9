"""The LLM judge: a rubric's prompt, one verdict parser, used by every judge call.

oxy has two parsers that disagree (in its test path "Answer: A" scores 0, in
workflows it counts as B). Here there is exactly one (:mod:`oxyeval.judge.reading`),
built from a rubric's labels: :func:`parse_verdict` reads the consistency rubric's A/B.
A reply without a verdict is asked again once; if it still has none, that is a
judge error, reported and excluded from the score, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ProviderError
from ..project.templates import TemplateRef, render
from ..providers import ChatMessage, Completion, GenerateParams, thinking_model
from ..redact import clip
from .reading import Verdict
from .rubrics import CONSISTENCY, DEFAULT_CONSISTENCY_PROMPT, Rubric
from .structured import STRUCTURED_MODES, JudgeSession, ask
from .verdicts import VerdictCache, verdict_key

if TYPE_CHECKING:
    from ..project.config import JudgeSettings
    from ..providers import Model

__all__ = [
    "DEFAULT_CONSISTENCY_PROMPT",
    "DEFAULT_JUDGE_MAX_TOKENS",
    "REASK_MESSAGE",
    "STRUCTURED_MODES",
    "VERDICT_SCHEMA",
    "Judge",
    "JudgeResult",
    "JudgeSession",
    "Verdict",
    "parse_verdict",
    "structured_verdict",
]

REASK_MESSAGE = CONSISTENCY.reask
VERDICT_SCHEMA = CONSISTENCY.schema


def parse_verdict(
    text: str, instructions: str | None = None, rubric: Rubric = CONSISTENCY
) -> Verdict | None:
    """The judge's verdict and the reasoning before it, or None when it gave none.

    The consistency rubric's labels (A/B) unless ``rubric`` says otherwise; every
    rubric is read by the same rules (see :func:`oxyeval.judge.reading.read_verdict`).
    What repeats ``instructions`` (the prompt template's own text; the rubric's prompt
    when None) is never a verdict.
    """
    return rubric.parse(text, instructions)


def structured_verdict(data: dict[str, Any], rubric: Rubric = CONSISTENCY) -> Verdict | None:
    """The verdict of a structured reply ``{"reasoning": ..., "verdict": "A"|"B"}``, or None."""
    return rubric.structured(data)


@dataclass
class JudgeResult:
    choice: str | None  # one of the rubric's labels ("A", "B"), or None for a judge error
    reasoning: str
    raw: str
    calls: int
    error: str | None = None
    #: Served from a verdict cache: the judge calls it took when it was first made
    #: (``calls`` is 0: none was made now).
    cached_calls: int = 0
    #: USD the judge's calls for this verdict cost now (0 when replayed from the cache);
    #: None when a call's price or token counts are unknown. Kept apart from the cost of
    #: what was judged, so a report can say what judging cost.
    cost: float | None = 0.0
    #: A JSON judge's answer (:class:`~oxyeval.judge.answers.JsonJudge`): the object the
    #: judge gave, valid under the schema it was asked for; None for a rubric's verdict.
    answer: dict[str, Any] | None = None


#: Judge replies are a few sentences and a verdict; without a cap a small model that
#: rambles holds a single-slot server for minutes (and a cut-off reply is reported).
DEFAULT_JUDGE_MAX_TOKENS = 512


def _pair(task_description: str, submission_1: str, submission_2: str) -> dict[str, str]:
    """The consistency rubric's variables."""
    return {
        "task_description": task_description,
        "submission_1": submission_1,
        "submission_2": submission_2,
    }


def _raw(completion: Completion) -> str:
    if completion.text.strip() or completion.structured is None:
        return completion.text
    return json.dumps(completion.structured, ensure_ascii=False)


class Judge:
    """Judges with one model, one rubric and one prompt template (the rubric's own by
    default); the consistency rubric compares two submissions (:meth:`compare`).

    ``session``: the run's :class:`JudgeSession`, shared by its judges; None gives this
    judge one of its own."""

    def __init__(
        self,
        model: Model,
        prompt: TemplateRef | None = None,
        params: GenerateParams | None = None,
        settings: JudgeSettings | None = None,
        cache: VerdictCache | None = None,
        *,
        rubric: Rubric = CONSISTENCY,
        session: JudgeSession | None = None,
    ) -> None:
        if prompt is not None:
            missing = rubric.unseen_subjects(prompt)
            if missing:
                # Files are checked when they load; this guards prompts built in code. A
                # judge that cannot see the answers would call every pair consistent.
                raise ConfigError(
                    f"{prompt.name}: judge prompt never uses {{{{ "
                    + " }} or {{ ".join(missing)
                    + " }}, so the judge cannot see what it compares"
                )
        self.model = model
        self.rubric = rubric
        self.prompt = prompt or rubric.template()
        self.params = params
        #: Verdicts of earlier runs (see :mod:`oxyeval.judge.verdicts`); None: always ask.
        self.cache = cache
        self.session = session if session is not None else JudgeSession()
        # config.yml's judge: section (project.JudgeSettings); None means the defaults.
        self.structured_mode = settings.structured if settings is not None else "auto"
        self.max_tokens_setting = settings.max_tokens if settings is not None else None

    def render(self, task_description: str, submission_1: str, submission_2: str) -> str:
        """The consistency prompt for two submissions."""
        return self.render_variables(_pair(task_description, submission_1, submission_2))

    def render_variables(self, variables: Mapping[str, Any]) -> str:
        """The prompt with the rubric's variables; a missing one is a ConfigError naming it
        (before any call), an optional one not given renders as empty."""
        self.rubric.check_variables(variables)
        context = {name: "" for name in self.rubric.optional}
        context.update(variables)
        return render(self.prompt, context)

    @property
    def max_tokens(self) -> int | None:
        """The cap on a judge reply: judge.max_tokens, the call's or model's own, else 512."""
        if self.max_tokens_setting is not None:
            return self.max_tokens_setting
        if self.params is not None and self.params.max_tokens is not None:
            return self.params.max_tokens
        spec = self.model.spec
        if spec.params.max_tokens is not None:
            return spec.params.max_tokens
        # Reasoning models get no default cap: their hidden thinking counts against it.
        return None if thinking_model(spec.model_ref) else DEFAULT_JUDGE_MAX_TOKENS

    def _request(self, structured: bool) -> GenerateParams:
        own = GenerateParams(
            max_tokens=self.max_tokens,
            response_schema=self.rubric.schema if structured else None,
        )
        return (self.params or GenerateParams()).merged(own)

    async def _ask(self, messages: list[ChatMessage]) -> Completion:
        """One judge call: structured when allowed, plain text after the server refused it."""
        return await ask(
            self.model,
            messages,
            self._request(False),
            self.rubric.schema,
            mode=str(self.structured_mode),
            session=self.session,
            cache=self.cache,
        )

    def _verdict(self, completion: Completion) -> Verdict | None:
        """The verdict of one reply: a structured one (a whole JSON object, so complete
        even when the reply then ran on to the token limit), else read from the text; a
        reply cut at the token limit only by its complete, final verdict."""
        if completion.structured is not None:
            verdict = self.rubric.structured(completion.structured)
            if verdict is not None:
                return verdict
        # No structured answer, or a malformed one: read the text as from any judge.
        return self.rubric.parse(_raw(completion), self.prompt.source, cut=completion.truncated)

    def _limit(self) -> str:
        limit = self.model.max_tokens(self._request(False))
        return "the server's limit (no max_tokens set)" if limit is None else f"max_tokens={limit}"

    def _no_verdict(self, first: Completion, retry: Completion) -> str:
        snippet = clip(" ".join(_raw(retry).split()), 160, "") or "(empty reply)"
        if retry.truncated:
            return (
                f"no verdict: the judge's reply was cut off at {self._limit()} (finish reason "
                f"{retry.finish_reason}), also when asked again; raise judge.max_tokens in "
                f"config.yml: {snippet!r}"
            )
        if first.truncated:
            return (
                f"no verdict in the judge's reply, even when asked again (its first reply was "
                f"cut off at {self._limit()}): {snippet!r}"
            )
        return f"no verdict in the judge's reply, even when asked again: {snippet!r}"

    def comparer(
        self,
        task_description: str,
        slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> Callable[[str, str], Awaitable[JudgeResult]]:
        """A compare function for :func:`oxyeval.judge.consistency.assess`, optionally under a slot."""

        async def compare(s1: str, s2: str) -> JudgeResult:
            if slot is None:
                return await self.compare(task_description, s1, s2)
            async with slot():
                return await self.compare(task_description, s1, s2)

        return compare

    async def compare(
        self, task_description: str, submission_1: str, submission_2: str
    ) -> JudgeResult:
        """The consistency verdict on two submissions, in the order given (the pair
        planning puts them in a canonical order: :func:`oxyeval.judge.plan_comparisons`)."""
        return await self.judge(_pair(task_description, submission_1, submission_2))

    async def judge(self, variables: Mapping[str, Any]) -> JudgeResult:
        """The verdict on the rubric's variables; with a cache, an earlier verdict on the
        same rendered prompt by the same judge under the same rubric is replayed, and a
        new verdict (never an error) is kept."""
        prompt = self.render_variables(variables)
        if self.cache is None:
            return await self._judge(prompt)
        sent = self.model.spec.params.merged(self._request(False))  # what the calls carry
        key = verdict_key(self.model, sent, str(self.structured_mode), prompt, self.rubric)
        hit = await self.cache.get(key)
        if hit is not None and hit.choice in self.rubric.names:
            return hit
        result = await self._judge(prompt)
        if result.choice is not None and result.error is None:
            await self.cache.put(key, result)
        return result

    async def _judge(self, prompt: str) -> JudgeResult:
        """One verdict, asking again once (same cached verdict) when the reply has none."""
        messages = [ChatMessage("user", prompt)]
        calls = 0
        raw = ""
        spent: list[float | None] = []

        def cost() -> float | None:
            return None if None in spent else sum(c for c in spent if c is not None)

        try:
            first = await self._ask(messages)
            calls += 1
            spent.append(first.cost)
            raw = _raw(first)
            verdict = self._verdict(first)
            if verdict is None:
                # An empty assistant turn is rejected by some APIs (Anthropic): leave it out.
                if raw.strip():
                    messages += [ChatMessage("assistant", raw)]
                messages += [ChatMessage("user", self.rubric.reask)]
                retry = await self._ask(messages)
                calls += 1
                spent.append(retry.cost)
                verdict = self._verdict(retry)
                both = raw + "\n---\n" + _raw(retry)
                if verdict is not None:
                    reasoning = raw.strip() or verdict.reasoning
                    return JudgeResult(verdict.choice, reasoning, both, calls, cost=cost())
                error = self._no_verdict(first, retry)
                return JudgeResult(None, both.strip(), both, calls, error=error, cost=cost())
        except ProviderError as exc:
            return JudgeResult(None, "", raw, calls, error=f"judge call failed: {exc}", cost=cost())
        return JudgeResult(verdict.choice, verdict.reasoning, raw, calls, cost=cost())
