"""Datasets of goldens (DeepEval's ``deepeval.dataset``): the inputs and expectations
a test runs the app on, from code, CSV, JSON or JSON Lines files, and the loop that
runs the app on each and scores what it did (:meth:`EvaluationDataset.evals_iterator`).

A :class:`Golden` is a test case before the app answered it (its ``actual_output``
comes from the run); a :class:`ConversationalGolden` a conversation's scenario. Files
are read with the standard library (DeepEval reads CSV with pandas): the same column
and key names, lists in a CSV cell split on ``|`` (tools on ``;``, or a JSON list),
and a bad file is a ValueError naming it, the row and the column.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ._cases import ConversationalTestCase, LLMTestCase, ToolCall, Turn

__all__ = ["ConversationalGolden", "EvaluationDataset", "Golden"]

#: How DeepEval's files split a list in one CSV cell.
DELIMITER = "|"
TOOLS_DELIMITER = ";"


@dataclass
class Golden:
    """One input the app is run on, with what is expected of it."""

    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    additional_metadata: dict[str, Any] | None = None
    comments: str | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    source_file: str | None = None
    name: str | None = None
    custom_column_key_values: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.input, str):
            raise TypeError(f"Golden.input must be a str, got {type(self.input).__name__}")

    def to_test_case(self, actual_output: str | None = None, **extra: Any) -> LLMTestCase:
        """The test case of this golden once the app answered ``actual_output``."""
        return LLMTestCase(
            input=self.input,
            actual_output=actual_output if actual_output is not None else self.actual_output,
            expected_output=self.expected_output,
            context=self.context,
            retrieval_context=extra.pop("retrieval_context", self.retrieval_context),
            tools_called=extra.pop("tools_called", self.tools_called),
            expected_tools=self.expected_tools,
            metadata=self.additional_metadata,
            comments=self.comments,
            name=self.name,
            **extra,
        )


@dataclass
class ConversationalGolden:
    """A conversation to simulate or replay: its scenario, what should come of it, and
    the turns so far."""

    scenario: str
    expected_outcome: str | None = None
    user_description: str | None = None
    context: list[str] | None = None
    additional_metadata: dict[str, Any] | None = None
    comments: str | None = None
    name: str | None = None
    custom_column_key_values: dict[str, str] | None = None
    turns: list[Turn] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scenario, str):
            raise TypeError(
                f"ConversationalGolden.scenario must be a str, got {type(self.scenario).__name__}"
            )

    def to_test_case(
        self, turns: Sequence[Turn] | None = None, **extra: Any
    ) -> ConversationalTestCase:
        """The conversational test case of this golden with the ``turns`` it had."""
        return ConversationalTestCase(
            turns=list(turns if turns is not None else self.turns or []),
            scenario=self.scenario,
            expected_outcome=self.expected_outcome,
            user_description=self.user_description,
            context=self.context,
            metadata=self.additional_metadata,
            comments=self.comments,
            name=self.name,
            **extra,
        )


def _problem(path: Path, where: str, message: str) -> ValueError:
    return ValueError(f"{path}: {where}: {message}")


def _tools(value: Any, path: Path, where: str) -> list[ToolCall] | None:
    """Tool calls from a JSON list of objects, or names split on ``;``."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _problem(path, where, f"not a JSON list of tool calls: {exc.msg}") from None
        else:
            return [ToolCall(name=n.strip()) for n in text.split(TOOLS_DELIMITER) if n.strip()]
    if not isinstance(value, list):
        raise _problem(path, where, "must be a list of tool calls")
    calls = []
    for item in value:
        if isinstance(item, str):
            calls.append(ToolCall(name=item))
        elif isinstance(item, Mapping):
            data = dict(item)
            if "inputParameters" in data:
                data["input_parameters"] = data.pop("inputParameters")
            allowed = {f.name for f in fields(ToolCall)}
            unknown = sorted(set(data) - allowed)
            if unknown:
                raise _problem(path, where, f"unknown tool call key(s): {', '.join(unknown)}")
            try:
                calls.append(ToolCall(**data))
            except (TypeError, ValueError) as exc:
                raise _problem(path, where, str(exc)) from None
        else:
            raise _problem(path, where, "a tool call must be an object or a name")
    return calls


def _texts(value: Any, path: Path, where: str, delimiter: str) -> list[str] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.split(delimiter)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise _problem(path, where, "must be a list of strings")


def _mapping(value: Any, path: Path, where: str) -> dict[str, Any] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _problem(path, where, f"not a JSON object: {exc.msg}") from None
    if not isinstance(value, dict):
        raise _problem(path, where, "must be an object")
    return value


def _turns(value: Any, path: Path, where: str) -> list[Turn] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _problem(path, where, f"not a JSON list of turns: {exc.msg}") from None
    if not isinstance(value, list):
        raise _problem(path, where, "must be a list of turns")
    turns = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise _problem(path, f"{where}[{i}]", "a turn must be an object")
        try:
            turns.append(Turn(role=item.get("role"), content=item.get("content")))  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise _problem(path, f"{where}[{i}]", str(exc)) from None
    return turns


class EvaluationDataset:
    """Goldens (all single-turn or all conversational) and the test cases made of them.

    ``for golden in dataset.evals_iterator(metrics=[...]):`` runs the body (the app,
    decorated with ``@observe``) on each golden and, when the loop ends, scores what was
    traced: the trace of each golden by ``metrics``, and every span observed with
    metrics of its own, as one run (its results kept in the project's history)."""

    def __init__(
        self,
        goldens: Sequence[Golden | ConversationalGolden] | None = None,
        test_cases: Sequence[LLMTestCase | ConversationalTestCase] | None = None,
    ) -> None:
        self._goldens: list[Golden | ConversationalGolden] = []
        self._test_cases: list[LLMTestCase | ConversationalTestCase] = []
        #: What the last ``evals_iterator`` loop's run gave (None before one ended).
        self.last_result: Any = None
        for golden in goldens or []:
            self.add_golden(golden)
        for case in test_cases or []:
            self.add_test_case(case)

    def __repr__(self) -> str:
        return (
            f"EvaluationDataset(goldens={len(self._goldens)}, test_cases={len(self._test_cases)})"
        )

    def __len__(self) -> int:
        return len(self._goldens)

    def __iter__(self) -> Iterator[Golden | ConversationalGolden]:
        return iter(list(self._goldens))

    @property
    def goldens(self) -> list[Golden | ConversationalGolden]:
        return list(self._goldens)

    @goldens.setter
    def goldens(self, goldens: Sequence[Golden | ConversationalGolden]) -> None:
        self._goldens = []
        for golden in goldens:
            self.add_golden(golden)

    @property
    def test_cases(self) -> list[LLMTestCase | ConversationalTestCase]:
        return list(self._test_cases)

    @test_cases.setter
    def test_cases(self, cases: Sequence[LLMTestCase | ConversationalTestCase]) -> None:
        self._test_cases = []
        for case in cases:
            self.add_test_case(case)

    @property
    def _multi_turn(self) -> bool:
        return bool(self._goldens) and isinstance(self._goldens[0], ConversationalGolden)

    def add_golden(self, golden: Golden | ConversationalGolden) -> None:
        if not isinstance(golden, (Golden, ConversationalGolden)):
            raise TypeError(
                f"a golden must be a Golden or ConversationalGolden, got {type(golden).__name__}"
            )
        if self._goldens and type(golden) is not type(self._goldens[0]):
            raise TypeError(
                "a dataset holds single-turn goldens or conversational goldens, not both"
            )
        self._goldens.append(golden)

    def add_test_case(self, test_case: LLMTestCase | ConversationalTestCase) -> None:
        if not isinstance(test_case, (LLMTestCase, ConversationalTestCase)):
            raise TypeError(
                f"a test case must be an LLMTestCase or ConversationalTestCase, got "
                f"{type(test_case).__name__}"
            )
        self._test_cases.append(test_case)

    # -- files

    def _row(
        self, row: Mapping[str, Any], path: Path, where: str, names: Mapping[str, str]
    ) -> None:
        """One golden from a row (CSV) or object (JSON), its keys named by ``names``."""

        def get(key: str) -> Any:
            column = names.get(key, key)
            value = row.get(column) if column else None
            return None if value == "" else value

        def text(key: str) -> str | None:
            value = get(key)
            if value is None or isinstance(value, str):
                return value
            raise _problem(path, f"{where}, {names.get(key, key)}", "must be a string")

        scenario = text("scenario")
        if scenario is not None and get("input") is None:
            self.add_golden(
                ConversationalGolden(
                    scenario=scenario,
                    expected_outcome=text("expected_outcome"),
                    user_description=text("user_description"),
                    context=_texts(get("context"), path, f"{where}, context", DELIMITER),
                    additional_metadata=_mapping(
                        get("additional_metadata"), path, f"{where}, additional_metadata"
                    ),
                    comments=text("comments"),
                    name=text("name"),
                    turns=_turns(get("turns"), path, f"{where}, turns"),
                )
            )
            return
        value = text("input")
        if value is None:
            raise _problem(
                path, where, f"no {names.get('input', 'input')!r} (every golden needs an input)"
            )
        self.add_golden(
            Golden(
                input=value,
                actual_output=text("actual_output"),
                expected_output=text("expected_output"),
                context=_texts(
                    get("context"), path, f"{where}, context", names.get("|context", DELIMITER)
                ),
                retrieval_context=_texts(
                    get("retrieval_context"),
                    path,
                    f"{where}, retrieval_context",
                    names.get("|retrieval_context", DELIMITER),
                ),
                additional_metadata=_mapping(
                    get("additional_metadata"), path, f"{where}, additional_metadata"
                ),
                comments=text("comments"),
                tools_called=_tools(get("tools_called"), path, f"{where}, tools_called"),
                expected_tools=_tools(get("expected_tools"), path, f"{where}, expected_tools"),
                source_file=text("source_file"),
                name=text("name"),
            )
        )

    def add_goldens_from_csv_file(
        self,
        file_path: str,
        input_col_name: str = "input",
        actual_output_col_name: str | None = "actual_output",
        expected_output_col_name: str | None = "expected_output",
        context_col_name: str | None = "context",
        context_col_delimiter: str = DELIMITER,
        retrieval_context_col_name: str | None = "retrieval_context",
        retrieval_context_col_delimiter: str = DELIMITER,
        tools_called_col_name: str | None = "tools_called",
        expected_tools_col_name: str | None = "expected_tools",
        comments_key_name: str = "comments",
        name_key_name: str = "name",
        source_file_col_name: str | None = "source_file",
        additional_metadata_col_name: str | None = "additional_metadata",
        scenario_col_name: str | None = "scenario",
        turns_col_name: str | None = "turns",
        expected_outcome_col_name: str | None = "expected_outcome",
        user_description_col_name: str | None = "user_description",
        **ignored: Any,
    ) -> None:
        """Add a golden per row of a CSV file (a header row names the columns)."""
        path = Path(file_path)
        names = {
            "input": input_col_name,
            "actual_output": actual_output_col_name or "",
            "expected_output": expected_output_col_name or "",
            "context": context_col_name or "",
            "|context": context_col_delimiter,
            "retrieval_context": retrieval_context_col_name or "",
            "|retrieval_context": retrieval_context_col_delimiter,
            "tools_called": tools_called_col_name or "",
            "expected_tools": expected_tools_col_name or "",
            "comments": comments_key_name,
            "name": name_key_name,
            "source_file": source_file_col_name or "",
            "additional_metadata": additional_metadata_col_name or "",
            "scenario": scenario_col_name or "",
            "turns": turns_col_name or "",
            "expected_outcome": expected_outcome_col_name or "",
            "user_description": user_description_col_name or "",
        }
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise ValueError(f"{path}: the file is empty (a header row names the columns)")
            for row in reader:
                self._row(row, path, f"line {reader.line_num}", names)

    def _json_names(self, kwargs: Mapping[str, Any]) -> dict[str, str]:
        names = {}
        for key, value in kwargs.items():
            if key.endswith("_key_name"):
                names[key[: -len("_key_name")]] = value or ""
        return names

    def add_goldens_from_json_file(self, file_path: str, **key_names: Any) -> None:
        """Add a golden per object of a JSON file holding a list of objects (keys
        renamed with ``input_key_name=``... as DeepEval's)."""
        path = Path(file_path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {exc.lineno}: not JSON: {exc.msg}") from None
        if not isinstance(data, list):
            raise ValueError(f"{path}: must hold a list of objects, one per golden")
        names = self._json_names(key_names)
        for i, item in enumerate(data):
            if not isinstance(item, Mapping):
                raise ValueError(f"{path}: item {i}: must be an object")
            self._row(item, path, f"item {i}", names)

    def add_goldens_from_jsonl_file(self, file_path: str, **key_names: Any) -> None:
        """Add a golden per line of a JSON Lines file."""
        path = Path(file_path)
        names = self._json_names(key_names)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number}: not JSON: {exc.msg}") from None
            if not isinstance(item, Mapping):
                raise ValueError(f"{path}: line {number}: must be an object")
            self._row(item, path, f"line {number}", names)

    def _add_cases_from(self, loaded: EvaluationDataset, file_path: str) -> None:
        for i, golden in enumerate(loaded.goldens):
            if not isinstance(golden, Golden) or golden.actual_output is None:
                raise ValueError(f"{file_path}: test case {i + 1} has no actual output")
            self.add_test_case(golden.to_test_case())

    def add_test_cases_from_csv_file(self, file_path: str, *args: Any, **names: Any) -> None:
        """Add a test case per row of a CSV file, named as
        :meth:`add_goldens_from_csv_file`'s columns (its ``actual_output`` needed)."""
        loaded = EvaluationDataset()
        loaded.add_goldens_from_csv_file(file_path, *args, **names)
        self._add_cases_from(loaded, file_path)

    def add_test_cases_from_json_file(
        self, file_path: str, *args: str | None, **names: Any
    ) -> None:
        """Add a test case per object of a JSON file (``input_key_name``,
        ``actual_output_key_name``... as DeepEval names the keys)."""
        keys = ("input", "actual_output", "expected_output", "context", "retrieval_context")
        if len(args) > len(keys):
            raise TypeError(f"at most {len(keys)} key names may be given by position")
        for key, value in zip(keys, args, strict=False):
            names[f"{key}_key_name"] = value
        names.pop("encoding_type", None)
        if "addtional_metadata_key_name" in names:  # DeepEval's own spelling
            names["additional_metadata_key_name"] = names.pop("addtional_metadata_key_name")
        loaded = EvaluationDataset()
        loaded.add_goldens_from_json_file(file_path, **names)
        self._add_cases_from(loaded, file_path)

    def save_as(
        self,
        file_type: str,
        directory: str,
        file_name: str | None = None,
        include_test_cases: bool = False,
    ) -> str:
        """Write the goldens to ``directory/file_name.<file_type>`` (json, jsonl or
        csv); the path written."""
        if file_type not in ("json", "jsonl", "csv"):
            raise ValueError("file_type must be json, jsonl or csv")
        items: list[dict[str, Any]] = [_plain(g) for g in self._goldens]
        if include_test_cases:
            items += [_plain(c) for c in self._test_cases]
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{file_name or 'dataset'}.{file_type}"
        if file_type == "json":
            path.write_text(json.dumps(items, ensure_ascii=False, indent=2), encoding="utf-8")
        elif file_type == "jsonl":
            path.write_text(
                "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8"
            )
        else:
            columns = sorted({k for item in items for k in item})
            with path.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.DictWriter(handle, columns)
                writer.writeheader()
                for item in items:
                    writer.writerow({k: _cell(v) for k, v in item.items()})
        return str(path)

    # -- running

    def evals_iterator(
        self,
        metrics: Sequence[Any] | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        identifier: str | None = None,
        display_config: Any = None,
        cache_config: Any = None,
        error_config: Any = None,
        async_config: Any = None,
    ) -> Iterator[Golden | ConversationalGolden]:
        """Yield each golden; the body runs the app on it (``@observe`` traces it).
        When the loop ends, every trace is scored (see the class docstring) in one run,
        printed, and kept as :attr:`last_result`; a golden the body traced nothing for
        is reported and left out."""
        from ._evaluate import evaluate_pairs
        from ._tracing import collecting, trace_cases

        if not self._goldens:
            raise ValueError("the dataset has no goldens to iterate over")
        with collecting() as collector:
            for golden in list(self._goldens):
                collector.begin(golden)
                yield golden
        pairs = []
        untraced = 0
        for golden, traces in collector.by_golden:
            if not traces:
                untraced += 1
            for trace in traces:
                pairs += trace_cases(trace, list(metrics or []), golden)
        if untraced:
            import warnings

            warnings.warn(
                f"{untraced} golden(s) ran no @observe-decorated call: nothing of them was scored",
                stacklevel=2,
            )
        self.last_result = evaluate_pairs(
            pairs,
            identifier=identifier or "evals_iterator",
            hyperparameters=hyperparameters,
            display_config=display_config,
            cache_config=cache_config,
            error_config=error_config,
            async_config=async_config,
        )


def _plain(item: Any) -> dict[str, Any]:
    data = asdict(item)
    return {k: v for k, v in data.items() if v is not None and v is not False}


def _cell(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return DELIMITER.join(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)
