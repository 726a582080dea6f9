"""A saved run document of any kind read back, so ``oxy report`` can decide on it again
without a single model call.

Everything the decision needs is in the family's run document (:mod:`.documents`):
its ``kind``, each result (score, status, its own check, previous result, regressions,
run and judge errors), whether the run was interrupted (``summary.interrupted``),
whether earlier results could be read (``history[].readError``: a drop check needs to
know) and the gates it ran under (``decision.gates``). Documents of the earlier,
unversioned shapes are read too (:mod:`.saved_legacy`). Anything else (a file that is
not JSON, a result without a subject, a newer ``schemaVersion``) is bad input, said in
one sentence that names the file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..evaluation import Gates, Result, Score, result_kind
from ..inputs import JSONProblem, loads
from ..suites import StoredRun
from ..suites.consistency import ConsistencyRun
from .documents import DOCUMENTS, SCHEMA_VERSION, document, result_json
from .saved_reading import Doc, SavedRunError, consistency_test, history_notes, previous

__all__ = ["SAVED_KINDS", "SavedRun", "load_saved_run", "parse_saved_run"]

MAX_BYTES = 256 * 1024 * 1024  # a saved document larger than this is not ours

#: The kinds of run document ``oxy report`` decides on again, and their results' kind.
SAVED_KINDS = {
    "consistency": "consistency",
    "cases": "cases",
    "ab": "ab",
    "chattest": "passfail",
    "test-files": "passfail",
    "workflow": "workflow",
    "ask": "ask",
}


#: Each kind's run object in :mod:`oxyeval.suites`: loading it registers its results'
#: kind with the decision (an ``oxy report`` process has run nothing to register it).
_RUNS = {
    "consistency": "ConsistencyRun",
    "cases": "CaseRun",
    "ab": "ABRun",
    "chattest": "PassFailRun",
    "test-files": "PassFailRun",
    "workflow": "WorkflowOutcome",
    "ask": "AskOutcome",
}


def _register(run_kind: str) -> None:
    """Make the results of ``run_kind`` known to the decision."""
    from .. import suites

    getattr(suites, _RUNS[run_kind])


class SavedRun:
    """A saved run as the decision reads it (``kind``, ``interrupted``,
    ``as_results()``, ``history_unread``), with what the original run ended with and the
    document to answer again with the new decision (``doc``: in the family's shape,
    whatever shape was read). ``consistency``: a consistency run's tests, for its
    report."""

    def __init__(
        self,
        run_kind: str,
        results: list[Result],
        doc: dict[str, Any],
        *,
        interrupted: bool = False,
        history: list[StoredRun] | None = None,
        gates: Gates | None = None,
        error: str | None = None,
        code: int | None = None,
        warnings: list[str] | None = None,
        consistency: ConsistencyRun | None = None,
    ) -> None:
        _register(run_kind)
        self.run_kind = run_kind
        self.kind = SAVED_KINDS[run_kind]
        self.results = results
        self.doc = doc
        self.interrupted = interrupted
        self.history = history or []
        self.gates = gates  # the gates the run ran under (None: not recorded)
        self.error = error  # what stopped the original run
        self.code = code  # the exit code the original run ended with
        self.warnings = warnings or []
        self.consistency = consistency

    @property
    def run(self) -> ConsistencyRun | SavedRun:
        """A consistency run's tests as a ConsistencyRun; this saved run otherwise."""
        return self.consistency if self.consistency is not None else self

    @property
    def history_unread(self) -> list[str]:
        return [f"{h.db}: {h.read_error}" for h in self.history if h.read_error]

    def as_results(self) -> list[Result]:
        return list(self.results)

    def failure(self) -> SavedRunError:
        """The error that stopped the saved run, to decide on again."""
        return SavedRunError(self.error or "the saved run failed", self.code)


def _scores(doc: Doc) -> list[Score]:
    scores = []
    for k, item in enumerate(doc.objects("scores")):
        s = doc.at(item, f"scores[{k}].")
        scores.append(
            Score(
                s.text("metric", ""),
                s.number("value"),
                s.text("label"),
                s.get("passed", (bool,), "true, false or null"),
                s.number("threshold"),
                s.text("reason"),
            )
        )
    return scores


def _result(doc: Doc, kind: str) -> Result:
    """One result of the family's run document."""
    subject = doc.text("subject")
    if not subject:
        raise doc.fail("subject", "what the result is of (a non-empty string)")
    given = doc.text("kind", kind)
    if given != kind:
        raise doc.fail("kind", f"{kind!r}, the kind of its run")
    statuses = result_kind(kind).statuses
    status = doc.text("status")
    if status not in statuses:
        raise doc.fail("status", f"one of {', '.join(statuses)}")
    score = doc.number("score")
    if score is not None and not 0.0 <= score <= 1.0:
        raise doc.fail("score", "a number between 0 and 1")
    regressions = doc.get("regressions", (list,), "a list of strings", [])
    if not all(isinstance(r, str) for r in regressions):
        raise doc.fail("regressions", "a list of strings")
    details = doc.get("details", (dict,), "an object", {}) or {}
    return Result(
        kind=kind,
        subject=subject,
        status=status,
        passed=doc.get("passed", (bool,), "true, false or null"),
        score=score,
        case=doc.text("case_id"),
        branch=doc.text("branch"),
        repeat=doc.integer("repeat", 0),
        latency_ms=doc.number("latency_ms"),
        ttft_ms=doc.number("time_to_first_token_ms"),
        input_tokens=doc.integer("input_tokens"),
        output_tokens=doc.integer("output_tokens"),
        cost_usd=doc.number("cost_usd"),
        output=doc.text("output"),
        error=doc.text("error"),
        scores=_scores(doc),
        details=dict(details),
        previous=previous(doc),
        regressions=tuple(regressions),
        run_errors=doc.integer("runErrors", 0),  # a count here, not a test's list
        judge_errors=doc.integer("judgeErrors", 0),
    )


def _gates(decision: Doc) -> Gates | None:
    value = decision.get("gates", (dict,), "an object of the gates the run ran under")
    if value is None:
        return None
    g = decision.at(value, "gates.")
    mode = g.text("threshold_mode", "average")
    if mode not in ("average", "all"):
        raise g.fail("threshold_mode", "average or all")
    inconclusive = g.text("inconclusive", "pass")
    if inconclusive not in ("pass", "fail"):
        raise g.fail("inconclusive", "pass or fail")
    return Gates(
        min_accuracy=g.number("min_accuracy"),
        threshold_mode=mode,
        strict=bool(g.get("strict", (bool,), "true or false", False)),
        fail_on_drop=g.number("fail_on_drop"),
        fail_on_regression=bool(g.get("fail_on_regression", (bool,), "true or false", False)),
        allow_empty=bool(g.get("allow_empty", (bool,), "true or false", False)),
        min_pass_rate=g.number("min_pass_rate"),
        inconclusive=inconclusive,
    )


def _family(data: dict[str, Any], source: str) -> SavedRun:
    """A document of the family (it has ``schemaVersion``)."""
    top = Doc(source, data, camel=True)
    version = top.integer("schema_version")
    if version is None or not 1 <= version <= SCHEMA_VERSION:
        raise top.fail(
            "schema_version", f"a version up to {SCHEMA_VERSION} (a newer oxyeval wrote it)"
        )
    name = top.text("document")
    if name == "error":  # the run failed before anything finished: its code stands
        return SavedRun(
            "consistency",
            [],
            dict(data),
            error=top.text("error", ""),
            code=top.integer("exit_code"),
        )
    if name != "run":
        what = f"a {name!r} document" if name in DOCUMENTS else "not a document of the family"
        raise ConfigError(
            f"{source}: {what}; oxy report decides again on run documents (`oxy test`, "
            "`oxy cases run`, `oxy ab run`, `oxy chattest`, `oxy run` with --format json)"
        )
    run_kind = top.text("kind")
    if run_kind not in SAVED_KINDS:
        raise top.fail("kind", f"one of {', '.join(SAVED_KINDS)}")
    kind = SAVED_KINDS[run_kind]
    _register(run_kind)
    results = [
        _result(top.at(item, f"results[{k}]."), kind)
        for k, item in enumerate(top.objects("results"))
    ]
    summary = top.at(top.get("summary", (dict,), "an object", {}) or {}, "summary.")
    decision = top.at(top.get("decision", (dict,), "an object", {}) or {}, "decision.")
    warnings = [w for w in top.get("warnings", (list,), "a list", []) if isinstance(w, str)]
    saved = SavedRun(
        run_kind,
        results,
        dict(data),
        interrupted=bool(summary.get("interrupted", (bool,), "true or false", False)),
        history=history_notes(top),
        gates=_gates(decision),
        error=top.text("error"),
        code=summary.integer("exit_code"),
        warnings=warnings,
    )
    if run_kind == "consistency":  # its tests, for the report people read
        run = ConsistencyRun(interrupted=saved.interrupted, history=saved.history)
        for k, item in enumerate(top.objects("tests")):
            test = consistency_test(top.at(item, f"tests[{k}]."))
            test.index = k
            run.tests.append(test)
        run.warnings = list(warnings)
        saved.consistency = run
    return saved


def new_shape(saved: SavedRun, body: dict[str, Any], cached_calls: int = 0) -> dict[str, Any]:
    """The family's run document for a run read from an earlier shape, without its
    decision yet (:func:`~.documents.with_decision` adds it)."""
    from .documents import history_json

    return document(
        "run",
        {
            "kind": saved.run_kind,
            **body,
            "results": [result_json(r, None) for r in saved.results],
            "decision": None,
            "summary": {"interrupted": saved.interrupted, "cachedCalls": cached_calls},
            "history": history_json(saved.history),
            "warnings": list(saved.warnings),
            "error": saved.error,
        },
    )


def parse_saved_run(data: Any, source: str = "<json>") -> SavedRun:
    """A saved run from a run document of any kind (already decoded): the family's, or
    one of the earlier shapes."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: not a saved run document (the top level is {type(data).__name__}, "
            "not an object)"
        )
    if "schemaVersion" in data:
        return _family(data, source)
    from .saved_legacy import parse_legacy

    return parse_legacy(data, source)


def load_saved_run(path: str | Path, text: str | None = None) -> SavedRun:
    """Read and parse a saved document (``text``: its content, e.g. from stdin)."""
    source = str(path)
    if text is None:
        file = Path(path)
        try:
            if file.is_dir():
                raise ConfigError(f"{source}: is a folder, not a saved run document")
            if file.stat().st_size > MAX_BYTES:
                raise ConfigError(f"{source}: over {MAX_BYTES // 2**20} MB, not a saved result")
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            from ..project import not_found

            raise ConfigError(f"{source}: {not_found(source)}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{source}: not UTF-8 text, so not a JSON document") from None
        except OSError as exc:
            raise ConfigError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    try:  # bounded: a 5,000-digit number or 100,000 levels of [ are bad input, said where
        data = loads(text, source)
    except JSONProblem as exc:
        raise ConfigError(f"{exc.where(source)}: {exc} (not a saved run document)") from None
    return parse_saved_run(data, source)
