"""A document with long lists written item by item reads as what json.dumps writes of it
whole (each streamed item on one line, the rest byte for byte as indented), each item
scrubbed of secrets and of numbers JSON cannot hold, whichever encoder wrote it."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import NamedTuple

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
    assert '    {"n":0,"text":"é 0","list":[0,[0]],"none":null},' in lines
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


@dataclass
class _Point:
    x: int


def test_what_the_fast_encoder_cannot_write_is_written_by_json_all_the_same() -> None:
    wide = 2**70  # past orjson's 64 bits
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    items: list[object] = [
        {"wide": wide},
        {"lone": "a\ud800b"},  # a lone surrogate: orjson refuses it
        {"point": _Point(1), "when": when, 3: "int key"},
    ]
    out = io.StringIO()
    write_json(_doc(items), out)
    doc = json.loads(out.getvalue())
    assert doc["executions"][0] == {"wide": wide}
    assert doc["executions"][1]["lone"].startswith("a") and doc["executions"][1]["lone"].endswith(
        "b"
    )
    # what JSON has no type for is written as its text, as json.dumps(default=str) does
    assert doc["executions"][2] == {"point": str(_Point(1)), "when": str(when), "3": "int key"}


def test_an_unstreamed_document_is_what_json_dumps_indents() -> None:
    doc = {
        "schemaVersion": 2,
        "results": [{"score": 0.25, "text": 'é\u2028\x00"q"', "none": None, "t": True}],
        "empty": {"list": [], "map": {}},
        "number": 12345678901234567,
    }
    out = io.StringIO()
    write_json(doc, out)
    assert out.getvalue() == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


class _Float(float):
    """A float subclass, as numpy's float64 is."""


class _Pair(NamedTuple):
    x: int
    y: int


def test_subclasses_of_float_and_tuple_are_written_as_json_writes_them() -> None:
    items: list[object] = [{"score": _Float(0.25), "nan": _Float("nan"), "pair": _Pair(1, 2)}]
    out = io.StringIO()
    write_json(_doc(items), out)
    assert json.loads(out.getvalue())["executions"][0] == {
        "score": 0.25,
        "nan": None,
        "pair": [1, 2],
    }
