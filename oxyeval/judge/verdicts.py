"""Judge verdicts kept between runs: the contract and the key.

A rerun that produces the same pair of outputs should cost no judge call: the verdict
is a function of the judge model, its settings and the rendered prompt, which holds the
question and both submissions. The cache itself lives in the history store
(:mod:`oxyeval.suites.run_cache`); this package cannot import the store, so it states what a
:class:`~oxyeval.judge.Judge` needs: :class:`VerdictCache`, keyed by
:func:`verdict_key`. Only verdicts are kept: a judge error (a failed call, a reply
without a verdict even when asked again) is tried afresh on the next run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..redact import mask_credentials

if TYPE_CHECKING:
    from ..providers import GenerateParams, Model
    from .judge import JudgeResult
    from .rubrics import Rubric

__all__ = [
    "JSON_ANSWER",
    "READING",
    "VerdictCache",
    "answer_key",
    "key_labels",
    "verdict_data",
    "verdict_from_data",
    "verdict_key",
]

#: The version of how a reply is read into a verdict (``parse_verdict``), part of every key:
#: a cached verdict keeps the choice the parser of its day made, so when the reading changes
#: (2: a judge that changes its mind, "Answer: A? No, B.", counts as B; 3: a reply cut at
#: the token limit counts only by a complete, final verdict) old verdicts must not be
#: replayed. Raise it with any change that can read a reply differently.
READING = 3

#: The one label of a JSON judge's entry (:class:`~oxyeval.judge.answers.JsonJudge`): the
#: judge answered with an object of the schema asked for, kept as the entry's ``answer``.
#: Its key names it as its rubric's only label (:func:`answer_key`), so an entry kept for
#: one kind of question is never read as the other's, and JSON answers are kept and
#: replayed by the same cache as verdicts.
JSON_ANSWER = "JSON"


@runtime_checkable
class VerdictCache(Protocol):
    """Verdicts of earlier judge calls, by :func:`verdict_key`."""

    async def get(self, key: Mapping[str, Any]) -> JudgeResult | None: ...

    async def put(self, key: Mapping[str, Any], result: JudgeResult) -> None: ...


def verdict_key(
    model: Model,
    params: GenerateParams,
    structured: str,
    prompt: str,
    rubric: Rubric | None = None,
) -> dict[str, Any]:
    """The key of one verdict: the judge model (vendor, model id, endpoint, options), the
    parameters its calls are sent with, the ``judge.structured`` mode, the rendered prompt,
    how replies are read (:data:`READING`) and the rubric (its name, labels and prompt), so
    a PASS/FAIL verdict never answers an A/B question. No key, header, password in the URL
    or config.yml name of the model.

    The consistency rubric (and None) adds nothing: keys of verdicts kept before rubrics
    existed stay the same, and those verdicts are replayed. A pair of submissions is in
    the rendered prompt in the order it was sent, which pair planning makes canonical
    (:func:`oxyeval.judge.plan_comparisons`): the same two outputs give the same key
    whichever run produced which."""
    import json

    from .rubrics import CONSISTENCY

    spec = model.spec
    api = getattr(model, "api", None)
    sampling = {
        name: getattr(params, name)
        for name in ("temperature", "max_tokens", "top_p", "seed", "stop")
        if getattr(params, name) is not None
    }
    key: dict[str, Any] = {
        "kind": "verdict",
        "vendor": spec.vendor,
        "model": spec.model_ref,
        "base_url": mask_credentials(getattr(api, "base_url", "") or ""),
        "options": spec.options,
        "params": sampling,
        "structured": structured,
        "prompt": prompt,
        "reading": READING,
    }
    if rubric is not None and rubric.identity() != CONSISTENCY.identity():
        key["rubric"] = rubric.identity()
    return json.loads(json.dumps(key, default=str))


def answer_key(
    model: Model, params: GenerateParams, structured: str, prompt: str, schema: Mapping[str, Any]
) -> dict[str, Any]:
    """The key of one JSON answer: as :func:`verdict_key`, with the schema asked for in
    place of a rubric, so an answer is replayed only for the same question asked for the
    same shape of object."""
    import json

    key = verdict_key(model, params, structured, prompt)
    key["rubric"] = {
        "name": "json",
        "labels": [[JSON_ANSWER, "an object valid under the schema"]],
        "schema": json.loads(json.dumps(schema, default=str)),
    }
    return key


def verdict_data(result: JudgeResult) -> dict[str, Any]:
    """What is kept of a verdict: the choice, the reasoning, the raw reply and how many
    calls it took (what a replay saves); a JSON judge's object too."""
    data: dict[str, Any] = {
        "choice": result.choice,
        "reasoning": result.reasoning,
        "raw": result.raw,
        "calls": result.calls,
    }
    if result.answer is not None:
        data["answer"] = result.answer
    return data


def key_labels(key: Mapping[str, Any]) -> tuple[str, ...]:
    """The labels a verdict kept under ``key`` may have: its rubric's (A/B when the key
    names none: the consistency rubric's)."""
    rubric = key.get("rubric")
    labels = rubric.get("labels") if isinstance(rubric, Mapping) else None
    if isinstance(labels, list):
        return tuple(str(item[0]) for item in labels if isinstance(item, list) and item)
    return ("A", "B")


def verdict_from_data(
    data: Mapping[str, Any], labels: Collection[str] = ("A", "B")
) -> JudgeResult | None:
    """The kept verdict as a JudgeResult served from the cache (no call made), or None
    when the entry is not a verdict: its choice is not one of ``labels`` (the rubric's,
    :func:`key_labels`)."""
    from .judge import JudgeResult

    choice = data.get("choice")
    if not isinstance(choice, str) or choice not in labels:
        return None
    answer = data.get("answer")
    if choice == JSON_ANSWER and not isinstance(answer, dict):
        return None  # a JSON answer is its object: without it the entry is no answer
    reasoning, raw, calls = data.get("reasoning"), data.get("raw"), data.get("calls")
    return JudgeResult(
        choice,
        reasoning if isinstance(reasoning, str) else "",
        raw if isinstance(raw, str) else "",
        0,
        cached_calls=calls if isinstance(calls, int) and calls > 0 else 1,
        answer=answer if isinstance(answer, dict) else None,
    )
