"""How far a judge agrees with people: a small human-labelled set, judged and compared.

A consistency judge is only trusted as far as it agrees with a person on the same pairs.
A project keeps a few dozen labelled pairs (a CSV or a YAML list whose items have
``question``, ``output_1``, ``output_2`` and the human's ``label``: A consistent, B not);
the judge labels them too, and Cohen's kappa (:func:`oxyeval.evaluation.cohens_kappa`)
with its interval and the confusion table say how far they agree beyond chance. Each
calibration is kept per judge model and prompt version (a hash of the prompt template),
so a new judge or a reworded prompt that agrees less is seen before it gates CI.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..errors import ConfigError
from ..evaluation import Kappa, cohens_kappa

if TYPE_CHECKING:
    from ..judge import Judge

__all__ = [
    "LABELS",
    "Calibration",
    "LabelledPair",
    "calibrate",
    "load_labelled",
    "prompt_version",
]

#: The consistency rubric's labels a person gives: A consistent, B not.
LABELS = ("A", "B")
_KEYS = ("question", "output_1", "output_2", "label")


@dataclass(frozen=True)
class LabelledPair:
    """One pair a person labelled; ``where`` is ``file:line`` for messages."""

    question: str
    output_1: str
    output_2: str
    label: str
    where: str


def _bad(where: str, key: str | None, why: str) -> ConfigError:
    at = f"{where}: {key}: " if key else f"{where}: "
    return ConfigError(
        f"{at}{why} (a labelled set is a CSV with the columns question, output_1, output_2, "
        "label, or a YAML list of items with those keys; label is A for consistent, B for not)"
    )


def _item(values: dict[str, Any], where: str) -> LabelledPair:
    for key in _KEYS:
        value = values.get(key)
        if value is None or (isinstance(value, str) and not value.strip() and key != "question"):
            raise _bad(where, key, "missing")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise _bad(where, key, f"must be text, not {type(value).__name__}")
    label = str(values["label"]).strip().upper()
    if label not in LABELS:
        raise _bad(where, "label", f"{values['label']!r} is not one of {', '.join(LABELS)}")
    return LabelledPair(
        str(values["question"]), str(values["output_1"]), str(values["output_2"]), label, where
    )


def _yaml_items(text: str, name: str) -> list[LabelledPair]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise _bad(
            f"{name}{line}", None, f"not valid YAML ({getattr(exc, 'problem', exc)})"
        ) from None
    if not isinstance(root, yaml.SequenceNode):
        line = f":{root.start_mark.line + 1}" if root is not None else ""
        raise _bad(f"{name}{line}", None, "must be a list of items")
    out = []
    for node in root.value:
        where = f"{name}:{node.start_mark.line + 1}"
        if not isinstance(node, yaml.MappingNode):
            raise _bad(where, None, "each item must be a mapping")
        values: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key not in _KEYS:
                raise _bad(f"{name}:{key_node.start_mark.line + 1}", key, f"unknown key {key!r}")
            values[key] = yaml.safe_load(yaml.serialize(value_node))
        out.append(_item(values, where))
    return out


def _csv_items(text: str, name: str) -> list[LabelledPair]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [k for k in _KEYS if k not in (reader.fieldnames or [])]
    if missing:
        raise _bad(f"{name}:1", missing[0], "no such column")
    out = []
    for row in reader:
        # line_num counts physical lines: a quoted newline inside a cell moves it on.
        out.append(_item(dict(row), f"{name}:{reader.line_num}"))
    return out


def load_labelled(path: Path, display: str | None = None) -> list[LabelledPair]:
    """The labelled pairs of a CSV (``.csv``) or YAML file; a ConfigError naming the file,
    line and key of the first problem."""
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read the labelled set: {exc.strerror or exc}") from None
    items = _csv_items(text, name) if path.suffix.lower() == ".csv" else _yaml_items(text, name)
    if not items:
        raise _bad(name, None, "has no labelled items")
    return items


def prompt_version(judge: Judge) -> str:
    """The judge prompt's version: a hash of its template, so a rewording is a new one."""
    return hashlib.sha256(judge.prompt.source.encode("utf-8")).hexdigest()[:12]


@dataclass
class Calibration:
    """A judge's labels of a labelled set against the person's, and their agreement."""

    judge_model: str
    prompt_version: str
    file: str
    items: int
    #: Per item: the person's label, the judge's (None: no verdict) and any judge error.
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    kappa: Kappa | None = None

    @property
    def judged(self) -> int:
        return sum(1 for v in self.verdicts if v["judge"] is not None)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [v for v in self.verdicts if v["error"]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "judgeModel": self.judge_model,
            "promptVersion": self.prompt_version,
            "file": self.file,
            "items": self.items,
            "judged": self.judged,
            "agreement": None if self.kappa is None else self.kappa.to_dict(),
            "verdicts": list(self.verdicts),
        }


async def calibrate(
    judge: Judge, pairs: Sequence[LabelledPair], *, file: str, model: str, concurrency: int = 8
) -> Calibration:
    """Judge every pair (in the order labelled) and compare with the person's labels;
    items the judge gave no verdict on are reported and left out of the agreement."""
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(pair: LabelledPair) -> dict[str, Any]:
        async with semaphore:
            r = await judge.compare(pair.question, pair.output_1, pair.output_2)
        return {
            "where": pair.where,
            "human": pair.label,
            "judge": r.choice if r.error is None else None,
            "error": r.error,
        }

    verdicts = list(await asyncio.gather(*(one(p) for p in pairs)))
    judged = [v for v in verdicts if v["judge"] is not None]
    return Calibration(
        judge_model=model,
        prompt_version=prompt_version(judge),
        file=file,
        items=len(pairs),
        verdicts=verdicts,
        kappa=cohens_kappa([v["human"] for v in judged], [v["judge"] for v in judged]),
    )
