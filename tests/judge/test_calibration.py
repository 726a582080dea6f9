"""oxy judge calibrate: a scripted judge against a labelled set whose agreement is known,
the history per judge and prompt version, and bad sets named by file, line and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oxyeval.cli import main

from ..conftest import MakeProject

#: The judge says B when the second answer says "no", else A: it agrees with the labels
#: below on 5 items and disagrees on 1 (labelled B, judged A).
CONFIG = r"""models:
  - name: judge
    vendor: mock
    rules:
      - match: '\[Submission 2\]\nno'
        output: "Answer: B"
      - match: "."
        output: "Answer: A"
"""

LABELLED = """\
- {question: "Total?", output_1: "42", output_2: "42 in all", label: A}
- {question: "Total?", output_1: "42", output_2: "forty-two", label: A}
- {question: "Open?", output_1: "yes", output_2: "yes, it is", label: A}
- {question: "Open?", output_1: "yes", output_2: "no", label: B}
- {question: "Open?", output_1: "yes", output_2: "no, closed", label: B}
- {question: "Total?", output_1: "42", output_2: "41", label: b}
"""


def _oxy(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture
def project(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_project(CONFIG, {"labels.yml": LABELLED})
    monkeypatch.chdir(root)
    return root


def test_kappa_and_the_confusion_table_against_the_labels(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = _oxy(capsys, "judge", "calibrate", "labels.yml", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["document"] == "judgeCalibration"
    assert doc["items"] == 6 and doc["judged"] == 6 and doc["judgeModel"] == "judge"
    agreement = doc["agreement"]
    # Human A A A B B B, judge A A A B B A: p_o = 5/6, p_e = (3*4 + 3*2)/36 = 1/2.
    assert agreement["observed"] == pytest.approx(5 / 6, abs=1e-6)
    assert agreement["kappa"] == pytest.approx(2 / 3, abs=1e-4)
    se = ((5 / 6) * (1 / 6) / 6) ** 0.5 / 0.5
    assert agreement["interval"]["low"] == pytest.approx(2 / 3 - 1.959964 * se, abs=1e-4)
    assert agreement["interval"]["high"] == 1.0  # cut to [-1, 1]
    assert {(c["first"], c["second"]): c["count"] for c in agreement["confusion"]} == {
        ("A", "A"): 3,
        ("B", "B"): 2,
        ("B", "A"): 1,
    }
    assert [v["where"] for v in doc["verdicts"] if v["human"] != v["judge"]] == ["labels.yml:6"]
    code, out, _err = _oxy(capsys, "judge", "calibrate", "labels.yml")
    assert code == 0 and "kappa 0.667" in out and "labels.yml:6: labelled B, judged A" in out


def test_the_history_keeps_each_judge_and_prompt_version(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "labels.csv").write_text(
        'question,output_1,output_2,label\nOpen?,yes,no,B\nOpen?,yes,"yes, open",A\n',
        encoding="utf-8",
    )
    assert _oxy(capsys, "judge", "calibrate", "labels.yml")[0] == 0
    assert _oxy(capsys, "judge", "calibrate", "labels.csv")[0] == 0
    code, out, _err = _oxy(capsys, "judge", "calibrate", "--history", "--format", "json")
    rows = json.loads(out)["calibrations"]
    assert code == 0 and [r["file"] for r in rows] == ["labels.csv", "labels.yml"]
    assert rows[0]["kappa"] == 1.0 and rows[1]["kappa"] == pytest.approx(2 / 3, abs=1e-6)
    assert len({r["promptVersion"] for r in rows}) == 1 and rows[0]["judgeModel"] == "judge"
    code, out, _err = _oxy(capsys, "judge", "calibrate", "--history")
    assert "labels.yml  6/6 judged  kappa 0.667" in out


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "bad.yml",
            "- {question: q, output_1: a, output_2: b, label: C}\n",
            "bad.yml:1: label: 'C'",
        ),
        ("bad.yml", "- {question: q, output_1: a, label: A}\n", "bad.yml:1: output_2: missing"),
        ("bad.yml", "- question: q\n  outputs: x\n", "bad.yml:2: outputs: unknown key"),
        ("bad.csv", "question,output_1,label\nq,a,A\n", "bad.csv:1: output_2: no such column"),
        ("bad.csv", "question,output_1,output_2,label\nq,a,b,A\nq,a,b,maybe\n", "bad.csv:3: label"),
    ],
)
def test_a_bad_set_is_named_by_file_line_and_key(
    project: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, said: str
) -> None:
    (project / name).write_text(text, encoding="utf-8")
    code, out, err = _oxy(capsys, "judge", "calibrate", name, "--format", "json")
    assert code == 2 and said in " ".join(err.split())
    assert json.loads(out)["exitCode"] == 2


def test_an_unknown_judge_is_bad_input(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = _oxy(capsys, "judge", "calibrate", "labels.yml", "--judge", "nope")
    assert code == 2 and "--judge nope: no model of that name" in err
