"""Reading a saved document back, one typed key at a time: every mistake is bad input
said where it is (``results[3].score: expected a number``), never a traceback.

Shared by the readers of both shapes (:mod:`.saved`: the family's run documents;
:mod:`.saved_legacy`: the unversioned documents written before it), which name keys
by the earlier snake_case names and let :class:`Doc` find them in either shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import EXIT_INFRA, EXIT_INPUT, ConfigError, OxyError
from ..evaluation import Previous
from ..redact import clip
from ..store import CONSISTENCY_STATUSES
from ..suites import StoredRun
from ..suites.consistency import ConsistencyTestResult, OutputRecord
from .documents import camel

__all__ = ["Doc", "SavedRunError", "consistency_test", "history_notes", "number", "previous"]

#: Keys of the family's documents whose names are not the camelCase of the earlier ones.
_RENAMED = {
    "run_errors": "failedRuns",
    "judge_errors": "failedJudgements",
    "scores": "verdictScores",
    "exit_code": "exitCode",
}


class SavedRunError(OxyError):
    """What stopped a saved run before any test finished, with the category the run
    gave it: bad input stays bad input; anything else left the outcome unknown."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.exit_code = EXIT_INPUT if code == EXIT_INPUT else EXIT_INFRA


class Doc:
    """Typed access to one JSON object, with errors naming where in the file. ``camel``:
    the object is the family's (camelCase keys); a key is asked for by its earlier
    snake_case name either way, so one reader reads both shapes."""

    def __init__(
        self, source: str, data: Mapping[str, Any], where: str = "", *, camel: bool = False
    ) -> None:
        self.source, self.data, self.where, self.camel = source, data, where, camel

    def key(self, name: str) -> str:
        """The name of ``name`` in this object's shape."""
        return _RENAMED.get(name, camel(name)) if self.camel else name

    def at(self, data: Mapping[str, Any], where: str) -> Doc:
        """An object inside this one (``where``: its path, e.g. ``results[3].``)."""
        return Doc(self.source, data, f"{self.where}{where}", camel=self.camel)

    def fail(self, key: str, expected: str) -> ConfigError:
        key = self.key(key)
        return ConfigError(
            f"{self.source}: {self.where}{key}: expected {expected}, got "
            f"{clip(json.dumps(self.data.get(key), default=str), 60, '')}; oxy report reads "
            "the run documents `--format json` writes"
        )

    def has(self, name: str) -> bool:
        return self.key(name) in self.data

    def get(self, key: str, kinds: tuple[type, ...], expected: str, default: Any = None) -> Any:
        value = self.data.get(self.key(key), default)
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


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def previous(doc: Doc) -> Previous | None:
    value = doc.get("previous", (dict,), "an object {accuracy, at, runId} or null")
    if value is None:
        return None
    prev = doc.at(value, "previous.")
    accuracy = prev.share("accuracy")
    if accuracy is None:
        raise prev.fail("accuracy", "a number between 0 and 1")
    tally = prev.get("tally", (list,), "a [passes, samples] pair or null")
    if tally is not None and not (
        len(tally) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in tally)
        and 0 <= tally[0] <= tally[1]
    ):
        raise prev.fail("tally", "a [passes, samples] pair of counts or null")
    return Previous(
        accuracy,
        prev.text("at", ""),
        prev.text("run_id", ""),
        None if tally is None else (tally[0], tally[1]),
    )


def consistency_test(doc: Doc) -> ConsistencyTestResult:
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
            consistency=number(o.get("consistency")),
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
    scores = {str(k): float(v) for k, v in given.items() if number(v) is not None}
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
        previous=previous(doc),
        pairing_check=doc.get("pairing_check", (dict,), "an object or null"),
        judge_swap=doc.get("judge_swap", (dict,), "an object or null"),
        judge_agreement=doc.get("judge_agreement", (dict,), "an object or null"),
    )
    return result


def history_notes(top: Doc) -> list[StoredRun]:
    """Where the saved run's results went, and whether earlier results could be read
    (a drop check needs to know)."""
    notes = []
    for k, entry in enumerate(top.objects("history")):
        note = top.at(entry, f"history[{k}].")
        error = note.text("error")
        notes.append(
            StoredRun(
                note.text("db", ""),
                note.text("run_id"),
                note.integer("stored", 0),
                error,
                # Documents from before read_error: any history error meant not read.
                note.text("read_error") if note.has("read_error") else error,
            )
        )
    return notes
