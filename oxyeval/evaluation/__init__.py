"""Stage 4, the evaluation core: what every kind of test shares once it has outputs.

A :class:`Result` per subject with named :class:`Score`s, the registry of result kinds,
and the one :func:`decide` that turns results and gates into an exit code and its
reasons, the :class:`OutputScorer` and :class:`SetScorer` protocols every measurement
goes through, and the :class:`Event` stream a run tells its subscribers (progress bars, the
history, a dashboard, a pytest plugin). Consistency tests, test cases and workflow runs
are kinds on it; a new kind of test registers itself (:func:`register_kind`) instead of
adding a sixth place that decides pass or fail. Beside them, pure measurements any
kind may reuse: answer clusters from a judge's pairwise verdicts (``clusters``), confidence
intervals and normalisation (``stats``: :func:`bootstrap_interval`, :func:`clustered_interval`,
:func:`wilson_interval`, :func:`min_max_normalise`) and text metrics of one output
(``text``: :func:`clarity_score`, :func:`consistency_hash`, :func:`valid_json`), and pass
rates over repeated judged runs with when to stop running them (``sequential``:
:class:`PassRate`, :func:`pass_at_k`, :func:`pass_hat_k`, :class:`AdaptiveTest`), and
what a statistical CI gate needs: a paired change against a baseline with three
outcomes (``regression``: :func:`paired_change`; ``regression_gate``: each kind's
tallies and ``--fail-on-regression``'s :func:`check_regression`) and agreement between raters
(``agreement``: :func:`cohens_kappa`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "DecidableRun": "decision",
    "Previous": "result",
    "Result": "result",
    "Score": "result",
    "ResultKind": "kinds",
    "kind_names": "kinds",
    "register_kind": "kinds",
    "result_kind": "kinds",
    "Decision": "decision",
    "DropResult": "gates",
    "Gates": "gates",
    "Outcome": "decision",
    "ThresholdResult": "gates",
    "PassRateResult": "gates",
    "check_pass_rate": "gates",
    "check_drop": "gates",
    "check_threshold": "gates",
    "interval_dict": "gates",
    "decide": "decision",
    "decide_run": "decision",
    "error_code": "decision",
    "interrupted_code": "decision",
    "usage_code": "decision",
    "with_artifact_failure": "decision",
    "gate_option_error": "decision",
    "gated_code": "decision",
    "moment": "gates",
    "percent": "gates",
    "Consistency": "scorers",
    "ExactMatch": "scorers",
    "Expected": "scorers",
    "Judged": "scorers",
    "OutputScorer": "scorers",
    "SetScore": "scorers",
    "SetScorer": "scorers",
    "Similarity": "scorers",
    "LENGTH_TOLERANCE": "similarity",
    "lexical_similarity": "similarity",
    "CacheServed": "events",
    "Event": "events",
    "EventSink": "events",
    "EventStream": "events",
    "ResultRecorded": "events",
    "RunFinished": "events",
    "RunStarted": "events",
    "SampleFinished": "events",
    "ScoreRecorded": "events",
    "StepsPlanned": "events",
    "SubjectStarted": "events",
    "Warned": "events",
    "AnswerClusters": "clusters",
    "Cluster": "clusters",
    "answer_clusters": "clusters",
    "Kappa": "agreement",
    "cohens_kappa": "agreement",
    "PairedChange": "regression",
    "paired_change": "regression",
    "Tally": "regression",
    "RegressionCheck": "regression_gate",
    "add_tallies": "regression_gate",
    "check_regression": "regression_gate",
    "subject_tallies": "regression_gate",
    "tally_of": "regression_gate",
    "tally_of_row": "regression_gate",
    "clustered_interval": "stats",
    "Interval": "stats",
    "bootstrap_interval": "stats",
    "min_max_normalise": "stats",
    "wilson_interval": "stats",
    "AdaptiveTest": "sequential",
    "PassRate": "sequential",
    "pass_at_k": "sequential",
    "pass_hat_k": "sequential",
    "clarity_score": "text",
    "consistency_hash": "text",
    "modal_share": "text",
    "normalise_whitespace": "text",
    "valid_json": "text",
}
__all__ = [
    "LENGTH_TOLERANCE",
    "AdaptiveTest",
    "AnswerClusters",
    "CacheServed",
    "Cluster",
    "Consistency",
    "DecidableRun",
    "Decision",
    "DropResult",
    "Event",
    "EventSink",
    "EventStream",
    "ExactMatch",
    "Expected",
    "Gates",
    "Interval",
    "Judged",
    "Kappa",
    "Outcome",
    "OutputScorer",
    "PairedChange",
    "PassRate",
    "PassRateResult",
    "Previous",
    "RegressionCheck",
    "Result",
    "ResultKind",
    "ResultRecorded",
    "RunFinished",
    "RunStarted",
    "SampleFinished",
    "Score",
    "ScoreRecorded",
    "SetScore",
    "SetScorer",
    "Similarity",
    "StepsPlanned",
    "SubjectStarted",
    "Tally",
    "ThresholdResult",
    "Warned",
    "add_tallies",
    "answer_clusters",
    "bootstrap_interval",
    "check_drop",
    "check_pass_rate",
    "check_regression",
    "check_threshold",
    "clarity_score",
    "clustered_interval",
    "cohens_kappa",
    "consistency_hash",
    "decide",
    "decide_run",
    "error_code",
    "gate_option_error",
    "gated_code",
    "interrupted_code",
    "interval_dict",
    "kind_names",
    "lexical_similarity",
    "min_max_normalise",
    "modal_share",
    "moment",
    "normalise_whitespace",
    "paired_change",
    "pass_at_k",
    "pass_hat_k",
    "percent",
    "register_kind",
    "result_kind",
    "subject_tallies",
    "tally_of",
    "tally_of_row",
    "usage_code",
    "valid_json",
    "wilson_interval",
    "with_artifact_failure",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agreement import Kappa, cohens_kappa
    from .clusters import AnswerClusters, Cluster, answer_clusters
    from .decision import (
        DecidableRun,
        Decision,
        Outcome,
        decide,
        decide_run,
        error_code,
        gate_option_error,
        gated_code,
        interrupted_code,
        usage_code,
        with_artifact_failure,
    )
    from .events import (
        CacheServed,
        Event,
        EventSink,
        EventStream,
        ResultRecorded,
        RunFinished,
        RunStarted,
        SampleFinished,
        ScoreRecorded,
        StepsPlanned,
        SubjectStarted,
        Warned,
    )
    from .gates import (
        DropResult,
        Gates,
        PassRateResult,
        ThresholdResult,
        check_drop,
        check_pass_rate,
        check_threshold,
        interval_dict,
        moment,
        percent,
    )
    from .kinds import ResultKind, kind_names, register_kind, result_kind
    from .regression import PairedChange, Tally, paired_change
    from .regression_gate import (
        RegressionCheck,
        add_tallies,
        check_regression,
        subject_tallies,
        tally_of,
        tally_of_row,
    )
    from .result import Previous, Result, Score
    from .scorers import (
        Consistency,
        ExactMatch,
        Expected,
        Judged,
        OutputScorer,
        SetScore,
        SetScorer,
        Similarity,
    )
    from .sequential import AdaptiveTest, PassRate, pass_at_k, pass_hat_k
    from .similarity import LENGTH_TOLERANCE, lexical_similarity
    from .stats import (
        Interval,
        bootstrap_interval,
        clustered_interval,
        min_max_normalise,
        wilson_interval,
    )
    from .text import (
        clarity_score,
        consistency_hash,
        modal_share,
        normalise_whitespace,
        valid_json,
    )
