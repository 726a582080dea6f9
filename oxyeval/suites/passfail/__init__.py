"""Judged pass/fail tests over repeated runs: chattest's prompt files and oxy's
``*.test.yml`` files on one engine.

``engine`` runs subjects x runs x criteria and judges them (PASS/FAIL rubric, identical
answers judged once, a ``tool`` checked without the judge, ``--adaptive`` stopping);
``run`` wraps it in a suite run that stores each subject's results; ``results`` holds
what it returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS = {
    "load_test_files": "testfiles",
    "run_test_files": "testfiles",
    "run_test_files_async": "testfiles",
    "test_file_subjects": "testfiles",
    "PASSFAIL": "results",
    "Check": "results",
    "Criterion": "results",
    "CriterionResult": "results",
    "PassFailRun": "results",
    "Sample": "results",
    "SubjectResult": "results",
    "Subject": "engine",
    "run_subjects": "engine",
    "pass_fail_judge": "run",
    "chattest_subjects": "chattest",
    "run_chattest": "chattest",
    "run_chattest_async": "chattest",
    "run_passfail": "run",
}
__all__ = [
    "PASSFAIL",
    "Check",
    "Criterion",
    "CriterionResult",
    "PassFailRun",
    "Sample",
    "Subject",
    "SubjectResult",
    "chattest_subjects",
    "load_test_files",
    "pass_fail_judge",
    "run_chattest",
    "run_chattest_async",
    "run_passfail",
    "run_subjects",
    "run_test_files",
    "run_test_files_async",
    "test_file_subjects",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .chattest import chattest_subjects, run_chattest, run_chattest_async
    from .engine import Subject, run_subjects
    from .results import (
        PASSFAIL,
        Check,
        Criterion,
        CriterionResult,
        PassFailRun,
        Sample,
        SubjectResult,
    )
    from .run import pass_fail_judge, run_passfail
    from .testfiles import (
        load_test_files,
        run_test_files,
        run_test_files_async,
        test_file_subjects,
    )
