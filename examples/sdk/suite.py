"""An Autoblocks-style test suite, offline (the mock models of examples/config.yml):

cd examples && python sdk/suite.py      # exit status 1: one capital is wrong
"""

import sys
from dataclasses import dataclass

from oxyeval.testing import (
    BaseTestCase,
    HasAllSubstrings,
    IsEqual,
    LLMJudge,
    run_test_suite,
)


@dataclass
class Question(BaseTestCase):
    country: str
    capital: str

    def hash(self) -> str:
        return self.country


def app(case: Question) -> str:
    """The app under test: wrong about Italy on purpose."""
    known = {"France": "Paris", "Japan": "Tokyo", "Italy": "Lyon"}
    return known[case.country]


if __name__ == "__main__":
    result = run_test_suite(
        "capitals",
        [Question("France", "Paris"), Question("Japan", "Tokyo"), Question("Italy", "Rome")],
        app,
        [
            IsEqual("exact", lambda case: case.capital),
            HasAllSubstrings("mentions", lambda case: [case.capital]),
            LLMJudge(
                "judge",
                lambda case, output: f"The answer is the capital of {case.country}.",
                model="sdk_judge",
            ),
        ],
        max_test_case_concurrency=2,
    )
    sys.exit(0 if result.passed else 1)
