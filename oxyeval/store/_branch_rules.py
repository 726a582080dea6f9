"""The rules a branch's settings and a test case's branches must keep, checked by every
write of ``store.branches`` (the CLI's sync, the Python API, the GraphQL server), so no
caller can store a sixth branch, a second control, an id two branches share or settings
out of range.

What a vendor accepts in ``other_params`` (no field the branch's own settings decide,
bounded depth and size) is the providers' rule, checked by the callers that take it from
a user (``project.branches`` for YAML files, the server's inputs), before the store: the
store keeps only its own rule for it, a mapping of plain, finite JSON."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import BranchRuleError
from ._util import canonical_json, redact_json, redact_text
from .kinds import BRANCH_PROVIDERS, MAX_BRANCHES

__all__ = ["MAX_TOKENS", "check_case", "settings"]


def _number(who: str, name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise BranchRuleError(f"{who}: {name} must be a number, not {value!r}")
    if not low <= value <= high:
        raise BranchRuleError(f"{who}: {name} must be between {low:g} and {high:g}, got {value!r}")
    return float(value)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: As project.branches.MAX_BRANCH_TOKENS (the store cannot import the project stage).
MAX_TOKENS = 10_000_000


def settings(fields: Mapping[str, Any], who: str) -> dict[str, Any]:
    """The column values of ``fields`` (any subset of the settings), checked; ``who``
    names the branch in messages."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key in ("name", "model"):
            if not isinstance(value, str) or not value.strip():
                raise BranchRuleError(f"{who}: {key} must be a non-empty string, not {value!r}")
            if len(value) > 200:
                raise BranchRuleError(f"{who}: {key} is longer than 200 characters")
            if _CONTROL.search(value) or (key == "name" and "@" in value):
                # "@" joins a case id and a name into the branch's id: in a name, two
                # branches of two cases could share an id.
                raise BranchRuleError(
                    f"{who}: {key} may not hold control characters"
                    + (" or '@' (the branch id is <case id>@<name>)" if key == "name" else "")
                )
            out[key] = value.strip()
        elif key == "provider":
            if value is not None and value not in BRANCH_PROVIDERS:
                raise BranchRuleError(
                    f"{who}: provider must be one of {', '.join(BRANCH_PROVIDERS)} (or none, "
                    f"for a model of config.yml), not {value!r}"
                )
            out[key] = value
        elif key in ("description", "source_file"):
            if value is not None and not isinstance(value, str):
                raise BranchRuleError(f"{who}: {key} must be a string or None, not {value!r}")
            out[key] = redact_text(value) if key == "description" else value
        elif key == "temperature":
            out[key] = _number(who, key, value, 0.0, 2.0)
        elif key == "top_p":
            out[key] = _number(who, key, value, 0.0, 1.0)
        elif key == "max_tokens":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_TOKENS
            ):
                raise BranchRuleError(
                    f"{who}: max_tokens must be a whole number from 1 to {MAX_TOKENS}, not "
                    f"{value!r}"
                )
            out[key] = value
        elif key in ("is_control", "is_active"):
            if not isinstance(value, bool):
                raise BranchRuleError(f"{who}: {key} must be true or false, not {value!r}")
            out[key] = value
        elif key == "other_params":
            if value is not None and not isinstance(value, Mapping):
                raise BranchRuleError(f"{who}: other_params must be a mapping, not {value!r}")
            try:
                json.dumps(dict(value or {}), allow_nan=False)  # stored as JSON others read
                out[key] = canonical_json(redact_json(dict(value or {})))
            except (TypeError, ValueError) as exc:
                raise BranchRuleError(f"{who}: other_params must be plain JSON ({exc})") from None
        else:
            raise TypeError(f"unknown branch field {key!r}")
    return out


def check_case(case_id: str, live: Sequence[Mapping[str, Any]], focus: str | None) -> None:
    """The rules over a test case's live branches as they would be (``id``, ``name``,
    ``is_control`` each); ``focus`` is the branch being written, named first."""
    where = f"test case {case_id!r}"
    names = Counter(b["name"] for b in live)
    twice = sorted(n for n, k in names.items() if k > 1)
    if twice:
        raise BranchRuleError(
            f"branch {twice[0]!r} of {where}: a branch name is used once per test case"
        )
    if len(live) > MAX_BRANCHES:
        listed = ", ".join(repr(b["name"]) for b in live)
        head = f"branch {focus!r} of {where}" if focus else where
        raise BranchRuleError(
            f"{head}: a test case has at most {MAX_BRANCHES} branches, this would make "
            f"{len(live)} ({listed}); delete one first"
        )
    controls = [b["name"] for b in live if b["is_control"]]
    if len(controls) > 1:
        first = focus if focus in controls else controls[-1]
        other = next(n for n in controls if n != first)
        raise BranchRuleError(
            f"branch {first!r} of {where}: a test case has at most one control branch, "
            f"and {other!r} is its control"
        )
