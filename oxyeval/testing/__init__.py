"""Stage 9, the Python SDK: test an LLM app from Python code, DeepEval-style.

Test code builds test cases from its app's outputs (``LLMTestCase``,
``ConversationalTestCase``), scores them with metrics (deterministic ones, and judged
ones asking the project's judge model through the judge package) and runs them with
``evaluate`` or ``assert_test``, in plain scripts or pytest, or sends test cases through
its app with ``run_test_suite``. Each of those is a run of kind ``sdk`` on the pipeline
every kind of test shares (its history, cache, events and one decision). Moving a
DeepEval test here means changing its import line to ``from oxyeval.testing import ...``.
Nothing is sent anywhere but the models config.yml configures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "MetricEvaluator": "_evaluators",
    "LLMJudge": "_evaluators",
    "BaseTestCase": "_evaluators",
    "BaseTestEvaluator": "_evaluators",
    "CaseOutcome": "_suites",
    "Evaluation": "_evaluators",
    "HasAllSubstrings": "_evaluators",
    "IsEqual": "_evaluators",
    "IsValidJson": "_evaluators",
    "SuiteResult": "_suites",
    "Threshold": "_evaluators",
    "run_test_suite": "_suites",
    "run_test_suite_async": "_suites",
    "GridSearchResult": "_suites",
    "grid_search_ctx": "_grid",
    "md5": "_evaluators",
    "Assertion": "_suite_models",
    "BaseEvaluator": "_suite_models",
    "BaseEventEvaluator": "_suite_models",
    "ScoreChoice": "_suite_models",
    "TestCaseConfig": "_suite_models",
    "TracerEvent": "_suite_models",
    "render_suite": "_suites",
    "ConversationalTestCase": "_cases",
    "LLMTestCase": "_cases",
    "LLMTestCaseParams": "_cases",
    "MAX_ITEMS": "_cases",
    "MAX_TEXT": "_cases",
    "ToolCall": "_cases",
    "ExactMatchMetric": "_deterministic",
    "JsonCorrectnessMetric": "_deterministic",
    "ToolCallParams": "_deterministic",
    "ToolCorrectnessMetric": "_deterministic",
    "tool_correctness": "_deterministic",
    "EvaluationResult": "_evaluate",
    "MetricData": "_evaluate",
    "TestResult": "_evaluate",
    "a_evaluate": "_evaluate",
    "assert_test": "_evaluate",
    "evaluate": "_evaluate",
    "render_results": "_evaluate",
    "AnswerRelevancyMetric": "_rag",
    "ContextualRelevancyMetric": "_rag",
    "FaithfulnessMetric": "_rag",
    "ConversationRelevancyMetric": "_conversation",
    "RoleAdherenceMetric": "_conversation",
    "ConsistencyMetric": "_consistency",
    "GEVAL_SCHEMA": "_geval",
    "GEval": "_geval",
    "JudgeError": "_judge",
    "ask_json": "_judge",
    "close_judges": "_judge",
    "parse_json_object": "_judge",
    "BaseConversationalMetric": "_metric",
    "BaseMetric": "_metric",
    "MetricError": "_metric",
    "MissingTestCaseParamsError": "_metric",
    "run_sync": "_metric",
}
__all__ = [
    "GEVAL_SCHEMA",
    "MAX_ITEMS",
    "MAX_TEXT",
    "AnswerRelevancyMetric",
    "Assertion",
    "BaseConversationalMetric",
    "BaseEvaluator",
    "BaseEventEvaluator",
    "BaseMetric",
    "BaseTestCase",
    "BaseTestEvaluator",
    "CaseOutcome",
    "ConsistencyMetric",
    "ContextualRelevancyMetric",
    "ConversationRelevancyMetric",
    "ConversationalTestCase",
    "Evaluation",
    "EvaluationResult",
    "ExactMatchMetric",
    "FaithfulnessMetric",
    "GEval",
    "GridSearchResult",
    "HasAllSubstrings",
    "IsEqual",
    "IsValidJson",
    "JsonCorrectnessMetric",
    "JudgeError",
    "LLMJudge",
    "LLMTestCase",
    "LLMTestCaseParams",
    "MetricData",
    "MetricError",
    "MetricEvaluator",
    "MissingTestCaseParamsError",
    "RoleAdherenceMetric",
    "ScoreChoice",
    "SuiteResult",
    "TestCaseConfig",
    "TestResult",
    "Threshold",
    "ToolCall",
    "ToolCallParams",
    "ToolCorrectnessMetric",
    "TracerEvent",
    "a_evaluate",
    "ask_json",
    "assert_test",
    "close_judges",
    "evaluate",
    "grid_search_ctx",
    "md5",
    "parse_json_object",
    "render_results",
    "render_suite",
    "run_sync",
    "run_test_suite",
    "run_test_suite_async",
    "tool_correctness",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ._cases import (
        MAX_ITEMS,
        MAX_TEXT,
        ConversationalTestCase,
        LLMTestCase,
        LLMTestCaseParams,
        ToolCall,
    )
    from ._consistency import ConsistencyMetric
    from ._conversation import ConversationRelevancyMetric, RoleAdherenceMetric
    from ._deterministic import (
        ExactMatchMetric,
        JsonCorrectnessMetric,
        ToolCallParams,
        ToolCorrectnessMetric,
        tool_correctness,
    )
    from ._evaluate import (
        EvaluationResult,
        MetricData,
        TestResult,
        a_evaluate,
        assert_test,
        evaluate,
        render_results,
    )
    from ._evaluators import (
        BaseTestCase,
        BaseTestEvaluator,
        Evaluation,
        HasAllSubstrings,
        IsEqual,
        IsValidJson,
        LLMJudge,
        MetricEvaluator,
        Threshold,
        md5,
    )
    from ._geval import GEVAL_SCHEMA, GEval
    from ._grid import grid_search_ctx
    from ._judge import JudgeError, ask_json, close_judges, parse_json_object
    from ._metric import (
        BaseConversationalMetric,
        BaseMetric,
        MetricError,
        MissingTestCaseParamsError,
        run_sync,
    )
    from ._rag import AnswerRelevancyMetric, ContextualRelevancyMetric, FaithfulnessMetric
    from ._suite_models import (
        Assertion,
        BaseEvaluator,
        BaseEventEvaluator,
        ScoreChoice,
        TestCaseConfig,
        TracerEvent,
    )
    from ._suites import (
        CaseOutcome,
        GridSearchResult,
        SuiteResult,
        render_suite,
        run_test_suite,
        run_test_suite_async,
    )
