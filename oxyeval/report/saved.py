"""A saved ``oxy test --format json`` document read back into a ConsistencyRun, so it can be
gated again (``oxy report``) without a single model call.

Everything the verdict needs is in the document: each test's accuracy and status, its
run and judge errors (``--strict``), its previous result (``--fail-on-drop``), and
whether the run was interrupted. Anything else (an ``oxy cases run`` document, a file
that is not JSON, a test without a name) is bad input, said in one sentence that names
the file and the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import EXIT_INFRA, EXIT_INPUT, ConfigError, OxyError
from ..evaluation import Previous
from ..inputs import JSONProblem, loads
from ..redact import clip
from ..store import CONSISTENCY_STATUSES
from ..suites import StoredRun
from ..suites.consistency import ConsistencyRun, ConsistencyTestResult, OutputRecord

__all__ = ["SavedRun", "load_saved_run", "parse_saved_run"]

MAX_BYTES = 256 * 1024 * 1024  # a saved document larger than this is not ours


class SavedRunError(OxyError):
    """What stopped a saved run before any test finished, with the category the run
    gave it: bad input stays bad input; anything else left the outcome unknown."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.exit_code = EXIT_INPUT if code == EXIT_INPUT else EXIT_INFRA


class SavedRun:
    """A saved document as a ConsistencyRun, plus what the original run ended with."""

    def __init__(self, run: ConsistencyRun, *, error: str | None, code: int | None) -> None:
        self.run = run
        self.error = error  # what stopped the original run before any test finished
        self.code = code  # the exit code the original run ended with

    def failure(self) -> SavedRunError:
        """The error that stopped the saved run, to decide on again."""
        return SavedRunError(self.error or "the saved run failed", self.code)


class _Doc:
    """Typed access to one JSON object, with errors naming where in the file."""

    def __init__(self, source: str, data: Mapping[str, Any], where: str) -> None:
        self.source, self.data, self.where = source, data, where

    def fail(self, key: str, expected: str) -> ConfigError:
        return ConfigError(
            f"{self.source}: {self.where}{key}: expected {expected}, got "
            f"{clip(json.dumps(self.data.get(key)), 60, '')}; oxy report reads what "
            "`oxy test --format json` writes"
        )

    def get(self, key: str, kinds: tuple[type, ...], expected: str, default: Any = None) -> Any:
        value = self.data.get(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(key, expected)
        if not isinstance(value, kinds):
            raise self.fail(key, expected)
        return value

    def text(self, key: str, default: str | None = None) -> Any:
        return self.get(key, (str,), "a string", default)

    def number(self, key: str, default: float | None = None) -> Any:
        return self.get(key, (int, float), "a number", default)

    def integer(self, key: str, default: int | None = None) -> Any:
        return self.get(key, (int,), "an integer", default)

    def share(self, key: str) -> float | None:
        value = self.number(key)
        if value is not None and not 0.0 <= value <= 1.0:
            raise self.fail(key, "a number between 0 and 1")
        return value

    def objects(self, key: str) -> list[Mapping[str, Any]]:
        items = self.get(key, (list,), "a list", [])
        if not all(isinstance(i, dict) for i in items):
            raise self.fail(key, "a list of objects")
        return items


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _previous(doc: _Doc) -> Previous | None:
    value = doc.get("previous", (dict,), "an object {accuracy, at, run_id} or null")
    if value is None:
        return None
    prev = _Doc(doc.source, value, f"{doc.where}previous.")
    accuracy = prev.share("accuracy")
    if accuracy is None:
        raise prev.fail("accuracy", "a number between 0 and 1")
    return Previous(accuracy, prev.text("at", ""), prev.text("run_id", ""))


def _test(doc: _Doc) -> ConsistencyTestResult:
    name = doc.text("name")
    if not name:
        raise doc.fail("name", "the test's name")
    status = doc.text("status", "scored")
    if status not in CONSISTENCY_STATUSES:
        *first, last = CONSISTENCY_STATUSES
        raise doc.fail("status", f"{', '.join(first)} or {last}")
    accuracy = doc.share("accuracy")
    error = doc.text("error")
    if status == "scored" and accuracy is None:
        raise doc.fail("accuracy", "a number between 0 and 1 for a scored test")
    if status == "error" and error is None:
        error = "not scored"  # keeps the test unscored, whatever its accuracy says
    outputs = [
        OutputRecord(
            run=int(o.get("run") or 0),
            text=o.get("text") if isinstance(o.get("text"), str) else None,
            error=o.get("error") if isinstance(o.get("error"), str) else None,
            consistency=_number(o.get("consistency")),
        )
        for o in doc.objects("outputs")
    ]
    if not outputs:  # an older or trimmed document: the run errors are all it has
        outputs = [
            OutputRecord(run=int(o.get("run") or 0), text=None, error=str(o.get("error")))
            for o in doc.objects("run_errors")
        ]
    comparisons = [dict(c) for c in doc.objects("comparisons")]
    if not comparisons:
        comparisons = [dict(c) for c in doc.objects("judge_errors")]
    given = doc.get("scores", (dict,), "an object of verdict scores", {}) or {}
    if not given:  # documents from before `scores` was written: what the verdicts scored
        given = {c.get("verdict"): c.get("score") for c in comparisons if c.get("verdict")}
    scores = {str(k): float(v) for k, v in given.items() if _number(v) is not None}
    selected = doc.get("selected", (dict,), "an object or null")
    result = ConsistencyTestResult(
        name=name,
        file=doc.text("file", ""),
        index=0,
        task_description=doc.text("task_description"),
        n=doc.integer("n", 0),
        pairing=doc.text("pairing", ""),
        agent_model=doc.text("model", ""),
        judge_model=doc.text("judge_model", ""),
        scores=scores or {"A": 1.0, "B": 0.0},
        accuracy=accuracy,
        error=error,
        pairs=doc.integer("pairs", 0),
        total_pairs=doc.integer("total_pairs", 0),
        min_judged=doc.number("min_judged", 0.0),
        judged_pairs=doc.integer("judged_pairs", 0),
        identical_pairs=doc.integer("identical_pairs", 0),
        judge_calls=doc.integer("judge_calls", 0),
        outputs=outputs,
        selected=None if selected is None else selected.get("run"),
        comparisons=comparisons,
        duration=doc.number("duration_s", 0.0),
        interrupted=status == "interrupted",
        previous=_previous(doc),
    )
    return result


def parse_saved_run(data: Any, source: str = "<json>") -> SavedRun:
    """A ConsistencyRun from an ``oxy test --format json`` document (already decoded)."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: not an `oxy test --format json` document (the top level is "
            f"{type(data).__name__}, not an object)"
        )
    if "executions" in data:
        raise ConfigError(
            f"{source}: this is an `oxy cases run` document; oxy report re-gates the "
            "documents `oxy test --format json` writes"
        )
    if "tests" not in data or "summary" not in data:
        missing = "tests" if "tests" not in data else "summary"
        raise ConfigError(
            f"{source}: not an `oxy test --format json` document (no {missing!r} key)"
        )
    top = _Doc(source, data, "")
    summary = _Doc(source, top.get("summary", (dict,), "an object", {}), "summary.")
    run = ConsistencyRun(
        interrupted=bool(summary.get("interrupted", (bool,), "true or false", False))
    )
    for k, item in enumerate(top.objects("tests")):
        test = _test(_Doc(source, item, f"tests[{k}]."))
        test.index = k
        run.tests.append(test)
    run.warnings = [w for w in top.get("warnings", (list,), "a list", []) if isinstance(w, str)]
    for entry in top.objects("history"):
        note = _Doc(source, entry, "history[].")
        error = note.text("error")
        run.history.append(
            StoredRun(
                note.text("db", ""),
                note.text("run_id"),
                note.integer("stored", 0),
                error,
                # Documents from before read_error: any history error meant not read.
                note.text("read_error") if "read_error" in entry else error,
            )
        )
    code = summary.integer("exit_code")
    error = top.text("error")
    return SavedRun(run, error=error, code=code)


def load_saved_run(path: str | Path, text: str | None = None) -> SavedRun:
    """Read and parse a saved document (``text``: its content, e.g. from stdin)."""
    source = str(path)
    if text is None:
        file = Path(path)
        try:
            if file.is_dir():
                raise ConfigError(f"{source}: is a folder, not a saved `oxy test` result")
            if file.stat().st_size > MAX_BYTES:
                raise ConfigError(f"{source}: over {MAX_BYTES // 2**20} MB, not a saved result")
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{source}: file not found") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{source}: not UTF-8 text, so not a JSON document") from None
        except OSError as exc:
            raise ConfigError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    try:  # bounded: a 5,000-digit number or 100,000 levels of [ are bad input, said where
        data = loads(text, source)
    except JSONProblem as exc:
        raise ConfigError(f"{exc.where(source)}: {exc} (not a saved `oxy test` result)") from None
    return parse_saved_run(data, source)
