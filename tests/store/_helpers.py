"""Small builders shared by the store tests."""

from __future__ import annotations

from typing import Any

from oxyeval.store import Execution, NewExecution, Store, TestCase


def make_case(s: Store, case_id: str = "c1", prompt: str = "p1", **kw: Any) -> TestCase:
    return s.cases.create(prompt, f"case {case_id}", {"text": "hi"}, "positive", id=case_id, **kw)


def record(s: Store, case_id: str = "c1", **kw: Any) -> Execution:
    fields: dict[str, Any] = {
        "test_case_id": case_id,
        "status": "passed",
        "actual_output": "positive",
        "prompt_version": 1,
    }
    if "passed" in kw:
        fields["status"] = "passed" if kw.pop("passed") else "failed"
    fields.update(kw)
    return s.executions.record(NewExecution(**fields))


def new(case_id: str = "c1", **kw: Any) -> NewExecution:
    fields: dict[str, Any] = {
        "test_case_id": case_id,
        "status": "passed",
        "actual_output": "positive",
        "prompt_version": 1,
    }
    if "passed" in kw:
        fields["status"] = "passed" if kw.pop("passed") else "failed"
    fields.update(kw)
    return NewExecution(**fields)
