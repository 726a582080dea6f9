"""The shards of a run group read back and merged into one saved run, so ``oxy report
--run-group ID`` decides on them with the one decision, as if one machine had run the
whole selection.

Each shard kept its run document (:mod:`oxyeval.suites.shards`). Merged: the results of
every shard in shard order (each shard's in its own plan order), the kind's own lists
joined and its counts added, what stopped any shard (an error, an interruption) kept,
and the gates of the first shard that ran tests (the command's own gate options replace
them, as for any saved run).

What cannot be merged is said, never guessed: shards that disagree on the number of
shards, the kind of run or the split itself (different files or options on different
runners) are bad input (exit 2); a shard missing from the group is an unknown outcome
(exit 3): it may still be running, or its runner died, and a merged decision without it
would pass tests nobody ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import EXIT_INFRA, ConfigError, OxyError
from .saved import SAVED_KINDS, SavedRun, parse_saved_run
from .saved_reading import SavedRunError

if TYPE_CHECKING:
    from ..store import ShardRow

__all__ = ["MergedGroup", "MissingShardsError", "merge_shards"]


class MissingShardsError(OxyError):
    """Shards of a run group that never kept an outcome: the merged outcome is unknown."""

    exit_code = EXIT_INFRA


@dataclass
class MergedGroup:
    """A run group's shards as one saved run (``run``; None: no shard kept anything),
    the shards found and missing, and what stops a merged decision (``error``)."""

    group: str
    shards: int
    found: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    run: SavedRun | None = None
    error: OxyError | None = None


def _check_agree(rows: Sequence[ShardRow], group: str, where: str) -> None:
    first = rows[0]
    for row in rows[1:]:
        if row.shards != first.shards:
            raise ConfigError(
                f"run group {group} in {where}: shard {first.shard} ran as {first.shard}/"
                f"{first.shards} but shard {row.shard} as {row.shard}/{row.shards}; every "
                "shard of a group takes the same N in --shard I/N"
            )
        if row.kind != first.kind:
            raise ConfigError(
                f"run group {group} in {where}: shard {first.shard} is a {first.kind} run "
                f"but shard {row.shard} a {row.kind} run; a run group holds one command's "
                "shards (give each command its own --run-group)"
            )
        if row.plan != first.plan:
            raise ConfigError(
                f"run group {group} in {where}: shard {row.shard} selected other tests than "
                f"shard {first.shard} ({row.total} against {first.total} in the whole "
                "selection, or the same number split otherwise): the shards ran on different "
                "files or options; run every shard from the same commit with the same options"
            )


def merge_shards(
    rows: Sequence[ShardRow], group: str, where: str, *, gates_given: bool = False
) -> MergedGroup:
    """The shards kept under ``group`` (read from ``where``, named in messages) merged.
    Shards that disagree raise ConfigError; missing ones are ``error`` on the result.
    ``gates_given``: the report's own gates replace the shards', so theirs may differ."""
    if not rows:
        return MergedGroup(
            group,
            0,
            error=MissingShardsError(
                f"run group {group}: no shard has kept its outcome in {where}; every shard "
                "stores into the same history (--db postgresql://..., OXY_DB or config.yml's "
                "history:) with --run-group "
                f"{group}, and this report runs after all of them"
            ),
        )
    rows = sorted(rows, key=lambda r: r.shard)
    _check_agree(rows, group, where)
    if rows[0].kind not in SAVED_KINDS:
        raise ConfigError(
            f"run group {group} in {where}: its shards are runs of kind {rows[0].kind!r}, "
            f"which oxy report does not read (it reads {', '.join(SAVED_KINDS)})"
        )
    count = rows[0].shards
    merged = MergedGroup(group, count, found=[r.shard for r in rows])
    merged.missing = [k for k in range(1, count + 1) if k not in merged.found]
    saved = [
        parse_saved_run(r.document, f"run group {group}, shard {r.shard}/{count}") for r in rows
    ]
    if not gates_given:
        _check_gates(rows, saved, group, where)
    merged.run = _merge(rows, saved)
    errors: list[OxyError] = []
    for row, run in zip(rows, saved, strict=True):
        if run.error is not None:
            # The shard's own category: bad input stays bad input, anything else is unknown.
            why = f"shard {row.shard}/{count} stopped: {run.error}"
            errors.append(SavedRunError(why, run.code))
        elif run.interrupted:  # its unrun tests leave the outcome unknown: say whose
            why = f"shard {row.shard}/{count} was interrupted before all its tests ran"
            errors.append(SavedRunError(why, None))
    if merged.missing:
        names = ", ".join(str(k) for k in merged.missing)
        errors.insert(
            0,
            MissingShardsError(
                f"run group {group}: shard(s) {names} of {count} have not kept their outcome "
                f"in {where} (still running, or their runner stopped before the end); the "
                "merged decision needs every shard"
            ),
        )
    if errors:
        merged.error = errors[0]
    return merged


def _check_gates(
    rows: Sequence[ShardRow], saved: Sequence[SavedRun], group: str, where: str
) -> None:
    """Refuse shards that ran under different gate options: the merged decision would
    take one shard's, and so pass or fail by which shard had them."""
    from .documents import gates_json

    # A shard with no test ran with --allow-empty added (an empty share is no failure).
    ran = [
        (r.shard, gates_json(s.gates))
        for r, s in zip(rows, saved, strict=True)
        if r.tests and s.gates is not None
    ]
    for shard, gates in ran[1:]:
        first, theirs = ran[0]
        if gates != theirs:
            options = ", ".join(k for k in theirs if theirs[k] != gates.get(k))
            raise ConfigError(
                f"run group {group} in {where}: shard {first} and shard {shard} ran under "
                f"different gate options ({options}); run every shard with the same options, "
                "or give the gate options to oxy report, where they replace the shards'"
            )


def _merge(rows: Sequence[ShardRow], saved: Sequence[SavedRun]) -> SavedRun:
    """The shards' saved runs as one (the first shard's kind of run)."""
    from ..suites.consistency import ConsistencyRun

    run_kind = rows[0].kind
    ran = [s for s in saved if s.doc.get("document") == "run"]
    with_tests = [s for r, s in zip(rows, saved, strict=True) if r.tests and s.gates is not None]
    gates = with_tests[0].gates if with_tests else next((s.gates for s in saved), None)
    results = [r for s in ran for r in s.results]
    warnings = list(dict.fromkeys(w for s in ran for w in s.warnings))
    history = [h for s in ran for h in s.history]
    interrupted = any(s.interrupted for s in ran)
    docs = [s.doc for s in ran]
    doc = _merged_document(run_kind, docs, interrupted, warnings)
    errors = [s.error for s in saved if s.error is not None]
    run = SavedRun(
        run_kind,
        results,
        doc,
        interrupted=interrupted,
        history=history,
        gates=gates,
        error=errors[0] if errors else None,
        warnings=warnings,
    )
    if run_kind == "consistency":
        tests = ConsistencyRun(interrupted=interrupted, history=history)
        merged = [t for s in ran if s.consistency is not None for t in s.consistency.tests]
        for k, test in enumerate(merged):
            test.index = k  # its place in the merged run, as a saved run numbers them
        tests.tests.extend(merged)  # numbered first: what it holds may be a copy on disk
        tests.warnings = list(warnings)
        run.consistency = tests
        _relabel(run, tests)
    return run


def _relabel(run: SavedRun, tests: Any) -> None:
    """A consistency run names its results by test name alone when one file ran, by file
    and name when several did: each shard named its own, the merged run names them all
    as the whole selection would."""
    if len(tests.tests) != len(run.results):
        return
    shown = run.doc.get("results", [])
    for k, (test, result) in enumerate(zip(tests.tests, run.results, strict=True)):
        result.subject = tests.label(test)
        if k < len(shown):
            shown[k] = {**shown[k], "subject": result.subject}


#: Keys of a kind's body that every shard has the same value of (not added up).
_SAME = {"criteria", "iterations"}


def _join(values: list[Any], key: str) -> Any:
    """One body key of several shards: lists joined, objects merged, counts added."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    first = present[0]
    if key in _SAME or isinstance(first, (str, bool)):
        return first
    if isinstance(first, list):
        return [item for v in present if isinstance(v, list) for item in v]
    if isinstance(first, dict):
        out: dict[str, Any] = {}
        for v in present:
            if isinstance(v, dict):
                out.update(v)
        return out
    if isinstance(first, (int, float)):
        return sum(v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool))
    return first


def _merged_document(
    run_kind: str, docs: list[dict[str, Any]], interrupted: bool, warnings: list[str]
) -> dict[str, Any]:
    """The family's run document of the merged shards, without its decision yet (the
    report adds it): the kind's body joined key by key, then the envelope's."""
    from .documents import ENVELOPE, document

    skip = {"schemaVersion", "document", "kind", *ENVELOPE}
    keys = list(dict.fromkeys(k for d in docs for k in d if k not in skip))
    body = {k: _join([d.get(k) for d in docs], k) for k in keys}
    _fix_derived(run_kind, body, docs)
    summaries = [d.get("summary") or {} for d in docs]
    return document(
        "run",
        {
            "kind": run_kind,
            **body,
            "results": [r for d in docs for r in d.get("results", [])],
            "decision": None,
            "summary": {
                "interrupted": interrupted,
                "cachedCalls": sum(int(s.get("cachedCalls") or 0) for s in summaries),
            },
            "history": [h for d in docs for h in d.get("history", [])],
            "warnings": warnings,
            "error": next((d["error"] for d in docs if d.get("error")), None),
        },
    )


def _fix_derived(run_kind: str, body: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    """The body keys that are not sums or lists of the shards' own."""
    if run_kind == "consistency":
        accuracies = [t.get("accuracy") for t in body.get("tests") or []]
        body["accuracy"] = accuracies[0] if len(accuracies) == 1 else accuracies
    elif run_kind == "chattest":
        prompts: dict[str, dict[str, Any]] = {}
        for prompt in body.get("prompts") or []:
            found = prompts.setdefault(
                prompt["key"], {"key": prompt["key"], "results": [], "outputs": {}}
            )
            found["results"].extend(prompt.get("results", []))
            found["outputs"].update(prompt.get("outputs", {}))
        body["prompts"] = list(prompts.values())
    elif run_kind == "test-files":
        body["overall"] = _overall([d.get("overall") or {} for d in docs], docs)


def _overall(parts: list[dict[str, Any]], docs: list[dict[str, Any]]) -> dict[str, Any]:
    """``oxy test``'s overall numbers for *.test.yml files: the shards' means weighted by
    their cases, tokens added, the longest shard's duration (they ran side by side)."""
    weights = [len(d.get("cases") or []) for d in docs]

    def mean(key: str) -> float | None:
        pairs = [(p.get(key), w) for p, w in zip(parts, weights, strict=True)]
        pairs = [(v, w) for v, w in pairs if v is not None and w]
        total = sum(w for _v, w in pairs)
        return round(sum(v * w for v, w in pairs) / total, 6) if total else None

    return {
        "score": mean("score"),
        "consistency": mean("consistency"),
        "answerRate": mean("answerRate"),
        "tokens": sum(int(p.get("tokens") or 0) for p in parts),
        "durationS": max((float(p.get("durationS") or 0.0) for p in parts), default=0.0),
    }
