"""The quick schema check may only ever say what jsonschema would: ``True`` for a file
jsonschema finds nothing in (then jsonschema is skipped), ``False`` for one it finds an
error in. Checked on every example file of the repository and on thousands of seeded
mutations of them (a key dropped, a value of another type, an unknown key...)."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest

from oxyeval.project import schema
from oxyeval.project.document import parse_yaml
from oxyeval.project.files import file_kind

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"chattest-prompt", "chattest-model"}


def _examples() -> list[tuple[str, str, Any]]:
    found = []
    for path in sorted((ROOT / "examples").rglob("*.y*ml")):
        kind = file_kind(path)
        if kind is None:
            continue
        doc, problems = parse_yaml(path.read_text(), path)
        if not problems and isinstance(doc.data, dict):
            found.append((str(path.relative_to(ROOT)), kind, doc.data))
    return found


EXAMPLES = _examples()
ODD_VALUES = [None, True, 0, 1, -1, 1.0, 2.5, float("nan"), "", "x", "mock", [], [1], {}, {"k": 1}]


def _agree(kind: str, data: Any) -> bool | None:
    quick = schema._quick_check(kind)(data)
    errors = [e for e in schema._validator(kind).iter_errors(data) if e.validator is not None]
    if quick is True:
        assert errors == [], f"quick said valid; jsonschema: {errors[0].message}"
    elif quick is False:
        assert errors, "quick said invalid; jsonschema found nothing"
    return quick


def _places(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _places(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data[:3]):
            out += _places(v, (*path, i))
    return out


def _mutate(data: Any, rng: random.Random) -> Any:
    data = copy.deepcopy(data)
    place = rng.choice(_places(data))
    if not place:
        return rng.choice(ODD_VALUES)
    parent = data
    for part in place[:-1]:
        parent = parent[part]
    last = place[-1]
    action = rng.randrange(4)
    if action == 0 and isinstance(parent, dict):
        del parent[last]
    elif action == 1 and isinstance(parent, dict):
        parent[rng.choice(["nmae", "type", "extra", "x-note", "model", "n"])] = rng.choice(
            ODD_VALUES
        )
    elif action == 2 and isinstance(parent[last], str):
        parent[last] = rng.choice(["", "x" * 300, "mock", "consistency", "openai", "1"])
    else:
        parent[last] = rng.choice(ODD_VALUES)
    return data


def test_there_are_examples_of_every_common_kind() -> None:
    kinds = {kind for _, kind, _ in EXAMPLES}
    assert {"config", "agent", "workflow", "prompt"} <= kinds


@pytest.mark.parametrize(("name", "kind", "data"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_quick_check_agrees_on_every_example(name: str, kind: str, data: Any) -> None:
    _agree(kind, data)


def test_quick_check_agrees_on_mutated_examples() -> None:
    rng = random.Random(20261127)
    verdicts: dict[object, int] = {True: 0, False: 0, None: 0}
    for _, kind, data in EXAMPLES:
        for _ in range(60):
            verdicts[_agree(kind, _mutate(data, rng))] += 1
    # each answer is given often: the check is both used and exercised where it must refuse
    assert min(verdicts.values()) > 20, verdicts


def test_a_large_valid_case_list_is_proved_without_jsonschema() -> None:
    cases = [
        {"name": f"c{i}", "input": {"text": f"item {i}"}, "expected_output": "positive"}
        for i in range(500)
    ]
    data = {"name": "p", "model": "m", "template": "{{ text }}", "cases": cases}
    assert _agree("prompt", data) is True
    data["cases"][250]["expected_outptu"] = "x"
    assert _agree("prompt", data) is False
