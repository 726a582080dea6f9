"""The metric base: one ``measure`` contract for deterministic and judged metrics.

A metric scores one test case 0..1 and keeps the outcome on itself (``score``,
``reason``, ``success``, ``error``), as DeepEval's metrics do, so test code written for
them reads the same attributes. ``evaluate`` measures a copy per test case, so one
metric object can be listed for many cases.

``measure`` is synchronous but the work is async (judge calls share one pool per loop):
from a plain script it runs its own loop; called where a loop is already running
(pytest-asyncio, a notebook) it runs that loop's work in a worker thread with a loop of
its own, because a running loop cannot be re-entered. That blocks the caller's loop
while it waits: inside async code, ``await metric.a_measure(case)`` instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from ..errors import OxyError
from ._cases import ConversationalTestCase, LLMTestCase, LLMTestCaseParams
from ._judge import JudgeError

__all__ = [
    "BaseConversationalMetric",
    "BaseMetric",
    "MetricError",
    "MissingTestCaseParamsError",
    "run_sync",
]

T = TypeVar("T")


class MetricError(OxyError):
    """A metric could not score its test case (its judge failed): never a pass."""


class MissingTestCaseParamsError(ValueError):
    """The test case lacks a field this metric reads."""


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end from synchronous code, whether or not a loop is running
    in this thread (see the module docstring)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="oxyeval-measure") as pool:
        return pool.submit(asyncio.run, coro).result()


def _judge_object(model: Any) -> bool:
    """A judge the test code made: a ``DeepEvalBaseLLM``-like object (``generate`` /
    ``a_generate``), or a ``GPTModel``-like one naming a vendor's model."""
    return any(callable(getattr(model, m, None)) for m in ("a_generate", "generate", "model_spec"))


class _Measured:
    """What both bases share: settings, the outcome attributes and the measure flow.

    The settings and outcome attributes have class-level defaults, so a metric written
    the DeepEval way whose ``__init__`` never calls ``super().__init__()`` still reads
    ``reason``, ``error``, ``strict_mode``... as DeepEval's own base gives them.
    """

    #: The test-case type this kind of metric reads.
    case_type: type = LLMTestCase
    #: Fields a test case must have (not None) for this metric; checked before scoring.
    required_params: Sequence[LLMTestCaseParams] = ()

    threshold: float = 0.5
    model: Any = None
    include_reason: bool = True
    strict_mode: bool = False
    async_mode: bool = True
    verbose_mode: bool = False
    evaluation_template: Any = None
    score: float | None = None
    reason: str | None = None
    success: bool | None = None
    error: str | None = None
    skipped: bool = False
    evaluation_cost: float | None = None
    verbose_logs: str | None = None
    score_breakdown: dict[str, Any] | None = None

    def __init__(
        self,
        threshold: float = 0.5,
        model: Any = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        *,
        async_mode: bool = True,
        verbose_mode: bool = False,
        evaluation_template: Any = None,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise TypeError(f"threshold must be a number, got {type(threshold).__name__}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")
        if model is not None and not isinstance(model, str) and not _judge_object(model):
            raise TypeError(
                "model must be a model name (a config.yml model, or a vendor's model id such "
                "as 'gpt-4.1') or a judge object with generate/a_generate, got "
                f"{type(model).__name__}"
            )
        #: strict mode: pass only on a perfect score, and report the score as 0 or 1
        self.strict_mode = bool(strict_mode)
        self.threshold = 1.0 if self.strict_mode else float(threshold)
        self.model = model
        self.include_reason = bool(include_reason)
        #: DeepEval's settings, kept so code reading them runs: a metric's judge calls
        #: are always concurrent here, and its reasons are its log.
        self.async_mode = bool(async_mode)
        self.verbose_mode = bool(verbose_mode)
        self.evaluation_template = evaluation_template
        self.score = None
        self.reason = None
        self.success = None
        self.error = None

    # -- what a metric defines

    @property
    def __name__(self) -> str:  # type: ignore[override]
        """The metric's name in reports and assertion messages."""
        return getattr(self, "name", None) or type(self).__name__

    @property
    def evaluation_model(self) -> str | None:
        """The judge model's name (None: the project's default judge, or no judge); a
        custom metric may set it, as DeepEval's own metrics do in ``__init__``."""
        given = self.__dict__.get("_evaluation_model")
        if given is not None:
            return str(given)
        from ._judge import model_label

        return model_label(self.model)

    @evaluation_model.setter
    def evaluation_model(self, value: str | None) -> None:
        self.__dict__["_evaluation_model"] = value

    async def _a_score(self, test_case: Any) -> tuple[float, str | None]:
        """Score ``test_case`` 0..1 with a reason; a judge failure raises JudgeError."""
        raise NotImplementedError(f"{self.__name__} does not define _a_score or measure")

    # -- the contract

    def is_successful(self) -> bool:
        if self.error is not None:
            return False
        if self.success is None and self.score is not None:  # set by a hand-written measure
            return self.score >= self.threshold
        return bool(self.success)

    def _check(self, test_case: Any) -> None:
        if not isinstance(test_case, self.case_type):
            raise TypeError(
                f"{self.__name__} measures a {self.case_type.__name__}, got "
                f"{type(test_case).__name__}"
            )
        for param in self.required_params:
            if getattr(test_case, param.value, None) is None:
                raise MissingTestCaseParamsError(
                    f"{self.__name__} needs the test case's {param.value}, which is None"
                )

    def _overrides_measure_only(self) -> bool:
        cls = type(self)
        return cls._a_score is _Measured._a_score and cls.measure is not _Measured.measure

    async def a_measure(self, test_case: Any) -> float:
        """Score ``test_case``: sets and returns ``score``, sets ``reason``, ``success``
        and ``error``. A judge failure sets ``error`` and raises MetricError."""
        if self._overrides_measure_only():  # a metric written the synchronous way
            return await asyncio.to_thread(self.measure, test_case)
        self._check(test_case)
        self.score = self.reason = self.success = self.error = None
        try:
            score, reason = await self._a_score(test_case)
        except (JudgeError, OxyError) as exc:
            self.error = str(exc)
            self.success = False
            raise MetricError(f"{self.__name__}: {exc}") from None
        score = min(1.0, max(0.0, float(score)))
        if self.strict_mode:
            score = 1.0 if score >= self.threshold else 0.0
        self.score = score
        self.reason = reason if self.include_reason else None
        self.success = score >= self.threshold
        return score

    def measure(self, test_case: Any) -> float:
        """:meth:`a_measure` from synchronous code (works inside a running loop too)."""
        return run_sync(self.a_measure(test_case))


class BaseMetric(_Measured):
    """A metric of one :class:`LLMTestCase`. Subclass it and define
    ``async def _a_score(self, test_case) -> (score 0..1, reason)``, or override
    ``measure`` (and optionally ``a_measure``) the DeepEval way, setting ``score``,
    ``reason`` and ``success`` yourself.

    ``threshold`` (default 0.5): ``success`` is ``score >= threshold``. ``strict_mode``:
    the threshold becomes 1.0 and the score is reported as 1 (perfect) or 0. ``model``:
    a config.yml model name for judged metrics (None: the project's judge, i.e.
    ``defaults.judge_model``, else its default model). ``include_reason``: keep the
    reason (a judged metric still asks for one; it is dropped when False).
    """

    case_type = LLMTestCase


class BaseConversationalMetric(_Measured):
    """A metric of a whole :class:`ConversationalTestCase`; as :class:`BaseMetric`."""

    case_type = ConversationalTestCase
