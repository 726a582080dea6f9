"""A document with long lists written item by item is byte for byte what json.dumps
writes of it whole, each item scrubbed of secrets and of numbers JSON cannot hold."""

from __future__ import annotations

import io
import json
import math

from oxyeval.redact import register_secret
from oxyeval.report import Streamed, plain, write_json


def _doc(items: list[object]) -> dict[str, object]:
    return {
        "kind": "cases",
        "executions": Streamed(lambda: iter(items), len(items)),
        "nested": {"empty": Streamed(lambda: iter(()), 0), "plain": [1, {"a": [2, 3]}], "e": {}},
        "results": [Streamed(lambda: iter(items[:2]), 2)],
        "summary": {"results": len(items)},
    }


def test_a_streamed_document_reads_as_the_whole_one_an_item_per_line() -> None:
    items: list[object] = [
        {"n": n, "text": f"é {n}", "list": [n, [n]], "none": None} for n in range(5)
    ]
    items += [[], {}, "plain", 3.5]
    out = io.StringIO()
    write_json(_doc(items), out)
    assert json.loads(out.getvalue()) == plain(_doc(items))
    lines = out.getvalue().splitlines()
    assert '    {"n": 0, "text": "é 0", "list": [0, [0]], "none": null},' in lines
    assert lines[:3] == ["{", '  "kind": "cases",', '  "executions": [']
    # what is not streamed is written as json.dumps(indent=2) writes it
    assert '    "plain": [\n      1,\n      {\n        "a": [' in out.getvalue()
    assert '"empty": []' in out.getvalue() and '"e": {}' in out.getvalue()


def test_each_streamed_item_is_cleaned_as_it_is_written() -> None:
    register_secret("sk-streamed-secret-123456")
    items = [{"answer": "the key is sk-streamed-secret-123456", "score": math.nan}]
    out = io.StringIO()
    write_json(_doc(items), out)
    assert "sk-streamed-secret-123456" not in out.getvalue()
    doc = json.loads(out.getvalue())  # strict JSON: NaN written as null
    assert doc["executions"][0] == {"answer": "the key is ***", "score": None}
