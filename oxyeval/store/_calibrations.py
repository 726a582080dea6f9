"""Judge calibrations: each ``oxy judge calibrate`` kept per judge model and prompt
version, so the agreement of a judge with people can be followed as the judge changes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._tables import judge_calibrations
from ._util import new_id, utc_timestamp

if TYPE_CHECKING:
    from ._core import Store

__all__ = ["CalibrationRow", "Calibrations"]

_C = judge_calibrations.c


@dataclass(frozen=True)
class CalibrationRow:
    """One calibration as kept: its judge, the labelled set, and the agreement found."""

    id: str
    judge_model: str
    prompt_version: str
    file: str
    items: int
    judged: int
    observed: float | None
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    #: [{"first": human label, "second": judge label, "count": n}, ...]
    confusion: list[dict[str, Any]]
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "judgeModel": self.judge_model,
            "promptVersion": self.prompt_version,
            "file": self.file,
            "items": self.items,
            "judged": self.judged,
            "observed": self.observed,
            "kappa": self.kappa,
            "interval": None
            if self.kappa_low is None or self.kappa_high is None
            else {"low": self.kappa_low, "high": self.kappa_high},
            "confusion": list(self.confusion),
            "createdAt": self.created_at,
        }


class Calibrations:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(
        self,
        *,
        judge_model: str,
        prompt_version: str,
        file: str,
        items: int,
        judged: int,
        agreement: dict[str, Any] | None,
    ) -> CalibrationRow:
        """Keep one calibration; ``agreement`` is :meth:`Kappa.to_dict` (None: nothing
        was judged)."""
        interval = (agreement or {}).get("interval") or {}
        values = {
            "id": new_id(),
            "judge_model": judge_model,
            "prompt_version": prompt_version,
            "file": file,
            "items": int(items),
            "judged": int(judged),
            "observed": None if agreement is None else agreement.get("observed"),
            "kappa": None if agreement is None else agreement.get("kappa"),
            "kappa_low": interval.get("low"),
            "kappa_high": interval.get("high"),
            "confusion": json.dumps((agreement or {}).get("confusion") or [], sort_keys=True),
            "created_at": utc_timestamp(),
        }
        with self._store.write("recording a judge calibration") as conn:
            conn.execute(judge_calibrations.insert().values(**values))
        return _row(values)

    def history(self, judge_model: str | None = None, limit: int = 50) -> list[CalibrationRow]:
        """Calibrations, newest first (of one judge model when given)."""
        q = sa.select(judge_calibrations)
        if judge_model is not None:
            q = q.where(_C.judge_model == judge_model)
        q = q.order_by(_C.created_at.desc(), _C.seq.desc()).limit(max(1, min(int(limit), 1000)))
        with self._store.read("reading judge calibrations") as conn:
            return [_row(r._mapping) for r in conn.execute(q).all()]


def _row(v: Any) -> CalibrationRow:
    return CalibrationRow(
        id=v["id"],
        judge_model=v["judge_model"],
        prompt_version=v["prompt_version"],
        file=v["file"],
        items=v["items"],
        judged=v["judged"],
        observed=v["observed"],
        kappa=v["kappa"],
        kappa_low=v["kappa_low"],
        kappa_high=v["kappa_high"],
        confusion=json.loads(v["confusion"] or "[]"),
        created_at=v["created_at"],
    )
