"""The words of schema errors: a misspelt vendor gets its "did you
mean", not also the keys the schema's branch for other vendors would require."""

from __future__ import annotations

from pathlib import Path

from oxyeval.errors import Diagnostic
from oxyeval.project.document import parse_yaml
from oxyeval.project.schema import validate_document

VENDORS = "openai, openai_compat, open_ai_compat, ollama, anthropic, google, gemini, mock"


def check(text: str) -> list[Diagnostic]:
    doc, problems = parse_yaml(text, Path("config.yml"))
    assert problems == []
    return validate_document(doc, "config")


def test_a_misspelt_vendor_is_the_only_error() -> None:
    problems = check("models:\n  - name: m\n    vendor: mokc\n")
    assert [(d.key, d.message) for d in problems] == [
        ("models[0].vendor", f"string 'mokc' is not one of: {VENDORS}; did you mean 'mock'?")
    ]


def test_a_real_vendor_still_needs_model_ref() -> None:
    problems = check("models:\n  - name: m\n    vendor: openai\n")
    assert [(d.key, d.message) for d in problems] == [
        ("models[0]", "missing required key 'model_ref'")
    ]


def test_other_missing_keys_beside_a_misspelt_vendor_are_still_reported() -> None:
    problems = check("models:\n  - vendor: mokc\n")
    assert [(d.key, d.message) for d in problems] == [
        ("models[0]", "missing required key 'name'"),
        ("models[0].vendor", f"string 'mokc' is not one of: {VENDORS}; did you mean 'mock'?"),
    ]
