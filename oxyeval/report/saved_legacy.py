"""The run documents written before the family (:mod:`.documents`) had a version, read
back so ``oxy report`` decides on them as the run did.

Each shape is told by its keys: ``oxy test`` (``tests`` and ``summary``, snake_case),
``oxy cases run`` (``executions``), ``oxy ab run`` (``results`` of cases with
``criteria``), ``oxy chattest`` (``prompts``), ``oxy test FILE.test.yml`` (``cases`` and
``overall``), and the error document (``error`` and ``exit_code``). Their results are
rebuilt as the run made them; the gates a shape recorded (``oxy test``'s threshold and
drop check, a test file's minimum) are the run's.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..evaluation import Gates, Result, Score
from ..suites.consistency import ConsistencyRun
from .json import consistency_body
from .saved import SavedRun, new_shape
from .saved_reading import Doc, consistency_test, history_notes

__all__ = ["parse_legacy"]

#: Each earlier shape, by the key that tells it.
_SHAPES = ("tests", "executions", "prompts", "cases", "results")


def _code(summary: Doc, top: Doc) -> int | None:
    for doc in (summary, top):
        for key in ("exit_code", "exitCode"):
            value = doc.get(key, (int,), "an integer")
            if value is not None:
                return int(value)
    return None


def _warnings(top: Doc) -> list[str]:
    return [w for w in top.get("warnings", (list,), "a list", []) if isinstance(w, str)]


def _consistency(top: Doc) -> SavedRun:
    summary = top.at(top.get("summary", (dict,), "an object", {}) or {}, "summary.")
    run = ConsistencyRun(
        interrupted=bool(summary.get("interrupted", (bool,), "true or false", False))
    )
    for k, item in enumerate(top.objects("tests")):
        test = consistency_test(top.at(item, f"tests[{k}]."))
        test.index = k
        run.tests.append(test)
    run.warnings = _warnings(top)
    run.history = history_notes(top)
    threshold = top.get("threshold", (dict,), "an object or null")
    drop = top.get("fail_on_drop", (dict,), "an object or null")
    gates = Gates(
        min_accuracy=None
        if threshold is None
        else top.at(threshold, "threshold.").number("min_accuracy"),
        threshold_mode="average" if threshold is None else str(threshold.get("mode") or "average"),
        fail_on_drop=None if drop is None else top.at(drop, "fail_on_drop.").number("max_drop"),
    )
    saved = SavedRun(
        "consistency",
        run.as_results(),
        {},
        interrupted=run.interrupted,
        history=run.history,
        gates=gates,
        error=top.text("error"),
        code=_code(summary, top),
        warnings=run.warnings,
        consistency=run,
    )
    saved.doc = new_shape(saved, consistency_body(run), summary.integer("cached_calls", 0))
    return saved


def _execution(doc: Doc) -> Result:
    """One ``oxy cases run`` execution, as :meth:`CaseResult.as_result` made it."""
    case = doc.text("testCaseId")
    if not case:
        raise doc.fail("testCaseId", "the case's id")
    status = doc.text("status")
    if status not in ("passed", "failed", "pending", "error"):
        raise doc.fail("status", "passed, failed, pending or error")
    threshold = doc.number("threshold")
    if status == "failed" and threshold is None:
        raise doc.fail("threshold", "the score that passes the case, for a failed case")
    judged = status in ("passed", "failed")
    reasons = doc.get("regressionReasons", (list,), "a list of strings", []) or []
    types = doc.get("regressionTypes", (list,), "a list of strings", []) or []
    regressed = bool(doc.get("isRegression", (bool,), "true or false", False))
    return Result(
        kind="cases",
        subject=case,
        case=case,
        status=status,
        passed=status == "passed" if judged else None,
        score=doc.number("score"),
        error=doc.text("error"),
        regressions=(tuple(map(str, reasons)) or (", ".join(map(str, types)),))
        if regressed
        else (),
        details={"threshold": threshold},
        scores=[Score("score", doc.number("score"), passed=status == "passed", threshold=threshold)]
        if judged
        else [],
        latency_ms=doc.number("latencyMs"),
        cost_usd=doc.number("costUsd"),
        input_tokens=doc.integer("inputTokens"),
        output_tokens=doc.integer("outputTokens"),
        output=doc.text("actualOutput"),
    )


def _cases(top: Doc) -> SavedRun:
    summary = top.at(top.get("summary", (dict,), "an object", {}) or {}, "summary.")
    items = top.objects("executions")
    results = [_execution(top.at(e, f"executions[{k}].")) for k, e in enumerate(items)]
    saved = SavedRun(
        "cases",
        results,
        {},
        interrupted=bool(summary.get("interrupted", (bool,), "true or false", False)),
        code=_code(summary, top),
        warnings=_warnings(top),
    )
    body = {
        "executions": list(items),
        "planned": summary.integer("planned", len(items)),
        "regressions": sum(bool(r.regressions) for r in results),
        "promptVersions": dict(summary.get("versions", (dict,), "an object", {}) or {}),
        "runIds": dict(summary.get("runs", (dict,), "an object", {}) or {}),
    }
    saved.doc = new_shape(saved, body, summary.integer("cachedCalls", 0))
    return saved


def _ab(top: Doc) -> SavedRun:
    """``oxy ab run``: each branch's runs (its last execution and how many erred)."""
    results: list[Result] = []
    cases = top.objects("results")
    for k, item in enumerate(cases):
        case = top.at(item, f"results[{k}].")
        for j, entry in enumerate(case.objects("branches")):
            branch = case.at(entry, f"branches[{j}].")
            name = branch.text("branchId")
            if not name:
                raise branch.fail("branchId", "the branch's id")
            runs, errors = branch.integer("runs", 0), branch.integer("errors", 0)
            last = branch.get("execution", (dict,), "an object or null") or {}
            for n in range(max(runs, errors)):
                failed = n < errors
                results.append(
                    Result(
                        kind="ab",
                        subject=name,
                        case=case.text("testCaseId"),
                        branch=name,
                        status="error" if failed else "success",
                        score=None if failed else branch.number("qualityScore"),
                        error=(str(last.get("error") or "error")) if failed else None,
                        repeat=n,
                    )
                )
    saved = SavedRun(
        "ab",
        results,
        {},
        interrupted=bool(top.get("interrupted", (bool,), "true or false", False)),
        code=_code(top, top),
        warnings=_warnings(top),
    )
    body = {
        "criteria": top.text("criteria", ""),
        "iterations": top.integer("iterations", 1),
        "cases": list(cases),
        "judgeCalls": top.integer("judgeCalls", 0),
        "judgeCostUsd": top.number("judgeCostUsd"),
    }
    saved.doc = new_shape(saved, body, top.integer("cachedCalls", 0))
    return saved


def _pass_fail(doc: Doc, subject: str, label: str, key: str, own_check: bool) -> Result:
    """One judged (subject, criterion), as :meth:`CriterionResult.as_result` made it."""
    runs = doc.integer("runs", 0)
    rate = doc.number("passRate")
    if rate is not None and not 0.0 <= rate <= 1.0:
        raise doc.fail("passRate", "a number between 0 and 1")
    threshold = doc.number("threshold")
    passed = doc.get("passed", (bool,), "true, false or null")
    return Result(
        kind="passfail",
        subject=subject,
        status="scored" if runs else "error",
        passed=passed if own_check and runs else None,
        score=rate,
        error=None if runs else "no run could be judged",
        scores=[Score("pass_rate", rate, passed=passed, threshold=threshold)],
        details={"label": label, "criterionKey": key, "threshold": threshold},
        run_errors=doc.integer("runErrors", 0),
        judge_errors=doc.integer("judgeErrors", 0),
    )


def _calls(summary: Doc) -> dict[str, int]:
    return {
        "modelCalls": summary.integer("modelCalls", 0),
        "judgeCalls": summary.integer("judgeCalls", 0),
        "savedCalls": summary.integer("savedCalls", 0),
    }


def _chattest(top: Doc) -> SavedRun:
    summary = top.at(top.get("summary", (dict,), "an object", {}) or {}, "summary.")
    results = []
    prompts = top.objects("prompts")
    for k, item in enumerate(prompts):
        prompt = top.at(item, f"prompts[{k}].")
        key = prompt.text("key", "")
        for j, entry in enumerate(prompt.objects("results")):
            r = prompt.at(entry, f"results[{j}].")
            test, model = r.text("test", ""), r.text("model", "")
            results.append(
                _pass_fail(r, f"{key}::{model}::{test}", f"{key} on {model}", test, True)
            )
    saved = SavedRun(
        "chattest",
        results,
        {},
        interrupted=bool(summary.get("interrupted", (bool,), "true or false", False)),
        code=_code(summary, top),
        warnings=_warnings(top),
    )
    saved.doc = new_shape(saved, {"prompts": list(prompts), **_calls(summary)})
    return saved


def _test_files(top: Doc) -> SavedRun:
    summary = top.at(top.get("summary", (dict,), "an object", {}) or {}, "summary.")
    results = []
    cases = top.objects("cases")
    for k, item in enumerate(cases):
        case = top.at(item, f"cases[{k}].")
        file, name = case.text("file", ""), case.text("name", "")
        results.append(_pass_fail(case, f"{file}::{name}", name, "expected", False))
    overall = top.get("overall", (dict,), "an object", {}) or {}
    saved = SavedRun(
        "test-files",
        results,
        {},
        interrupted=bool(summary.get("interrupted", (bool,), "true or false", False)),
        gates=Gates(min_accuracy=top.number("threshold")),
        code=_code(summary, top),
        warnings=_warnings(top),
    )
    saved.doc = new_shape(
        saved, {"cases": list(cases), "overall": dict(overall), **_calls(summary)}
    )
    return saved


def parse_legacy(data: dict[str, Any], source: str) -> SavedRun:
    """A run document of an earlier, unversioned shape."""
    top = Doc(source, data)
    if "tests" in data and "summary" in data:
        return _consistency(top)
    if "executions" in data:
        return _cases(top)
    if "prompts" in data:
        return _chattest(top)
    if "cases" in data and "overall" in data:
        return _test_files(top)
    if "results" in data and "criteria" in data:
        return _ab(top)
    if "error" in data and ("exit_code" in data or "exitCode" in data) and len(data) <= 3:
        return SavedRun("consistency", [], {}, error=top.text("error", ""), code=_code(top, top))
    missing = "tests" if "tests" not in data else "summary"
    raise ConfigError(
        f"{source}: not a saved run document: no 'schemaVersion', and not an earlier "
        f"document either (no {missing!r} key, nor any of "
        f"{', '.join(repr(k) for k in _SHAPES if k != missing)})"
    )
