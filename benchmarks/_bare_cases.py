"""The baseline of bench_cases_scale.py: a prompt file's cases run by the least code that
does the same work (load the file with libyaml, render one Jinja template per case,
answer by the first matching rule, compare exactly, store every result in SQLite)."""

from __future__ import annotations

import re
import sqlite3
import sys
import tempfile
from pathlib import Path

import jinja2
import yaml

RULES = [(re.compile("good"), "positive"), (re.compile("."), "negative")]


def main(path: str) -> None:
    prompt = yaml.load(Path(path).read_text(), Loader=yaml.CSafeLoader)
    template = jinja2.Environment().from_string(prompt["template"])
    rows = []
    for case in prompt["cases"]:
        text = template.render(**case["input"])
        answer = next(out for rule, out in RULES if rule.search(text))
        rows.append((case["name"], answer, answer == case["expected_output"]))
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "bare.db")
        db.execute("CREATE TABLE results (name TEXT, output TEXT, passed INTEGER)")
        db.executemany("INSERT INTO results VALUES (?, ?, ?)", rows)
        db.commit()
        db.close()
    print(f"{len(rows)} cases, {sum(r[2] for r in rows)} passed")


if __name__ == "__main__":
    main(sys.argv[1])
