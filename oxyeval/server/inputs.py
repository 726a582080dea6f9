"""Every input the API takes, checked before it reaches the store or a run: sizes, ranges,
names, and which model a branch names. A refusal is BAD_USER_INPUT naming the field;
the store checks again (its own rules are the last word), so nothing here must be
complete, only early and clear."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from typing import Any

from ..inputs import value_problem
from ..providers import extra_problem
from ..store import RUN_KIND_ALIASES, RUN_KINDS
from .errors import BAD_USER_INPUT, ApiError

__all__ = [
    "CRITERIA",
    "MAX_ITERATIONS",
    "check_ab_input",
    "check_branch_input",
    "check_case_input",
    "check_limit",
    "check_output",
    "check_prompt_input",
    "check_run_kind",
    "check_version",
]

MAX_NAME = 200
MAX_DESCRIPTION = 10_000
MAX_INPUT_BYTES = 200_000
MAX_OUTPUT = 1_000_000
MAX_LIMIT = 500
MAX_ITERATIONS = 50
MAX_IDS = 1000
CRITERIA = ("best_quality", "fastest", "cheapest", "best_value", "balanced")
#: The provider of a branch that names a model of config.yml (the mock vendor, a custom
#: endpoint) instead of a vendor's model id.
PROJECT_PROVIDER = "project"


def _bad(message: str) -> ApiError:
    return ApiError(BAD_USER_INPUT, message)


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{field} must be a non-empty string")
    if len(value) > MAX_NAME:
        raise _bad(f"{field} is {len(value)} characters; at most {MAX_NAME}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise _bad(f"{field} must not contain control characters")
    return value


def _text(value: Any, field: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(f"{field} must be a string")
    if len(value) > limit:
        raise _bad(f"{field} is {len(value):,} characters; at most {limit:,}")
    return value


def check_output(value: Any, field: str) -> str:
    text = _text(value, field, MAX_OUTPUT)
    if text is None:
        raise _bad(f"{field} is required")
    return text


def check_limit(limit: int | None, offset: int | None, *, default: int = 50) -> tuple[int, int]:
    lim = default if limit is None else limit
    off = 0 if offset is None else offset
    if not 1 <= lim <= MAX_LIMIT:
        raise _bad(f"limit must be from 1 to {MAX_LIMIT}, got {lim}")
    if off < 0:
        raise _bad(f"offset must be 0 or more, got {off}")
    return lim, off


def check_version(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise _bad(f"promptVersion must be 1 or more, got {value}")
    return value


def check_run_kind(kind: str | None) -> str | None:
    if kind is None:
        return None
    kind = RUN_KIND_ALIASES.get(kind, kind)
    if kind not in RUN_KINDS:
        raise _bad(f"kind must be one of {', '.join(RUN_KINDS)}, not {kind!r}")
    return kind


def _json(value: Any, field: str) -> None:
    """Strict, bounded JSON (finite numbers, 308-digit integers, 100 levels): what the
    store keeps and every later answer must be able to write."""
    problem = value_problem(value, field)
    if problem is not None:
        raise _bad(problem)


def check_case_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """TestCaseInput -> the store's fields."""
    payload = data.get("input")
    if not isinstance(payload, dict):
        raise _bad("input must be a JSON object of the prompt's template variables")
    _json(payload, "input")
    size = len(json.dumps(payload, default=str))
    if size > MAX_INPUT_BYTES:
        raise _bad(f"input is {size:,} bytes of JSON; at most {MAX_INPUT_BYTES:,}")
    return {
        "prompt_id": _name(data.get("promptId"), "promptId"),
        "name": _name(data.get("name"), "name"),
        "description": _text(data.get("description"), "description", MAX_DESCRIPTION) or None,
        "input": payload,
        "expected_output": _text(data.get("expectedOutput"), "expectedOutput", MAX_OUTPUT),
    }


def _template(value: Any) -> str:
    text = _text(value, "template", 100_000)
    if text is None or not text.strip():
        raise _bad("template must be a non-empty template (what the model is sent)")
    return text


def check_prompt_input(data: Mapping[str, Any]) -> dict[str, Any]:
    params = data.get("params")
    if params is not None and not isinstance(params, dict):
        raise _bad("params must be a JSON object (temperature, max_tokens, top_p, seed, stop)")
    _json(params, "params")
    return {
        "name": _name(data.get("name"), "name"),
        "model": _name(data.get("model"), "model"),
        "template": _template(data.get("template")),
        "system": _text(data.get("system"), "system", 100_000),
        "params": params or {},
    }


def _number(value: Any, field: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value) or not low <= value <= high:
        raise _bad(f"{field} must be from {low:g} to {high:g}, got {value}")
    return float(value)


def check_branch_input(
    data: Mapping[str, Any], project: Any, providers: Collection[str]
) -> dict[str, Any]:
    """TestBranchInput -> :meth:`oxyeval.store.Store.branches` fields. ``provider`` is a
    vendor (``openai``, ``anthropic``, ``gemini``, ``ollama``) with that vendor's model id,
    or ``project`` (or the model's own vendor) with a model named in config.yml."""
    provider = _name(data.get("provider"), "provider")
    model = _name(data.get("model"), "model")
    spec = project.models.get(model)
    if provider in providers and (spec is None or spec.vendor != provider):
        vendor: str | None = provider
    elif spec is not None and provider in (PROJECT_PROVIDER, spec.vendor):
        vendor = None  # the configured model, with its endpoint and key
    else:
        known = ", ".join(sorted(project.models)) or "none"
        raise _bad(
            f"provider must be one of {', '.join(providers)} (with that vendor's model id), or "
            f"'{PROJECT_PROVIDER}' with a model of config.yml ({known}); got provider "
            f"{provider!r}, model {model!r}"
        )
    fields: dict[str, Any] = {
        "test_case_id": _name(data.get("testCaseId"), "testCaseId"),
        "name": _name(data.get("name"), "name"),
        "model": model,
        "provider": vendor,
        "description": _text(data.get("description"), "description", MAX_DESCRIPTION),
    }
    for key, field, low, high in (
        ("temperature", "temperature", 0.0, 2.0),
        ("top_p", "topP", 0.0, 1.0),
    ):
        value = _number(data.get(field), field, low, high)
        if value is not None:
            fields[key] = value
    max_tokens = data.get("maxTokens")
    if max_tokens is not None:
        if not 1 <= max_tokens <= 10_000_000:
            raise _bad(f"maxTokens must be from 1 to 10000000, got {max_tokens}")
        fields["max_tokens"] = max_tokens
    for key, field in (("is_control", "isControl"), ("is_active", "isActive")):
        if data.get(field) is not None:
            fields[key] = bool(data[field])
    other = data.get("otherParams")
    if other is not None:
        if not isinstance(other, dict):
            raise _bad("otherParams must be a JSON object")
        _json(other, "otherParams")
        if len(json.dumps(other, default=str)) > 20_000:
            raise _bad("otherParams is larger than 20,000 bytes of JSON")
        problem = extra_problem(other)  # what a vendor accepts: the store does not know
        if problem is not None:
            raise _bad(f"otherParams {problem}")
        fields["other_params"] = other
    return fields


def check_ab_input(data: Mapping[str, Any]) -> tuple[str, list[str], int | None, str, int]:
    case_id = _name(data.get("testCaseId"), "testCaseId")
    ids = list(dict.fromkeys(str(i) for i in data.get("branchIds") or ()))
    if not ids:
        raise _bad("branchIds must name at least one branch of the test case")
    if len(ids) > MAX_IDS:
        raise _bad(f"branchIds names {len(ids)} branches; at most {MAX_IDS}")
    criteria = data.get("winnerCriteria") or "best_quality"
    if criteria not in CRITERIA:
        raise _bad(f"winnerCriteria must be one of {', '.join(CRITERIA)}, not {criteria!r}")
    iterations = data.get("iterations") or 1
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise _bad(f"iterations must be from 1 to {MAX_ITERATIONS}, got {iterations}")
    return case_id, ids, check_version(data.get("promptVersion")), criteria, iterations
