"""The API's writes of prompts, cases and branches: checked, then the store's, with the
rules a network API adds (a name used once per prompt in the API's own wording, a new
case never given an old one's id and history, a YAML-declared case or branch changed only
where its file stays the truth).

A mixin of :class:`~oxyeval.server.service.TestingService`, apart so that a write's rules
read in one place; it uses the service's store, project and ``_read``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import LoadError
from ..project.templates import TemplateRef, render
from ..report import case_json
from ..store import BRANCH_PROVIDERS, AlreadyExistsError, NameTakenError
from ..store import branch_id as make_branch_id
from ..store import case_id as make_case_id
from ..suites import accept_baseline, create_prompt
from .errors import BAD_USER_INPUT, NOT_FOUND, ApiError
from .inputs import check_branch_input, check_case_input, check_output, check_prompt_input
from .shapes import prompt_doc

__all__ = ["Edits"]


class Edits:
    if TYPE_CHECKING:  # what it uses of the service it is mixed into
        store: Any
        _sync_lock: Any

        def project(self) -> Any: ...
        async def _read(self, fn: Any) -> Any: ...
        def _case(self, case_id: str) -> Any: ...
        def _branch_doc(self, branch: Any) -> dict[str, Any]: ...

    # -- mutations: prompts and cases

    async def create_prompt(self, data: Mapping[str, Any]) -> dict[str, Any]:
        fields = check_prompt_input(data)
        project = self.project()

        def write() -> dict[str, Any]:
            prompt, _ = create_prompt(self.store, project, **fields)
            return prompt_doc(self.store, prompt)

        return await self._read(write)

    async def create_test_case(self, data: Mapping[str, Any]) -> dict[str, Any]:
        fields = check_case_input(data)

        def write() -> Any:
            if self.store.prompts.get(fields["prompt_id"]) is None:
                raise ApiError(
                    NOT_FOUND,
                    f"no prompt {fields['prompt_id']!r}; create it with createPrompt, or "
                    "declare it in a *.prompt.yml file",
                )
            self._name_free(fields["prompt_id"], fields["name"])
            self._fits(fields["prompt_id"], fields["input"])
            # A case deleted (or renamed) earlier keeps its id and its history: a new case
            # of that name is another case, under an id of its own, with no history.
            base = make_case_id(fields["prompt_id"], fields["name"])
            for n in range(1, 1000):
                new = base if n == 1 else f"{base}~{n}"
                if self.store.cases.get(new, include_deleted=True) is not None:
                    continue
                try:
                    return self.store.cases.create(**fields, id=new)
                except NameTakenError as exc:  # another request made the name meanwhile
                    raise self._taken(fields["prompt_id"], fields["name"], exc.taken) from None
                except AlreadyExistsError:
                    continue  # another request took the id meanwhile
            raise ApiError(BAD_USER_INPUT, f"too many cases were named {fields['name']!r}")

        return case_json(await self._read(write))

    def _fits(self, prompt_id: str, values: Mapping[str, Any]) -> None:
        """Refuse an input the prompt's latest version cannot render (a variable it does
        not give), now rather than as an error on every run. An agent renders its own
        system prompt with defaults: only a plain prompt's templates are tried."""
        version = self.store.prompts.latest_version(prompt_id)
        content = self.store.prompts.get_version(prompt_id, version) if version else None
        if not content or content.get("kind", "prompt") != "prompt":
            return
        try:
            for key in ("template", "system"):
                if content.get(key):
                    render(TemplateRef(str(content[key])), dict(values))
        except LoadError as exc:
            raise ApiError(
                BAD_USER_INPUT,
                f"input does not fit prompt {prompt_id!r} version {version}: "
                f"{exc.diagnostics[0].message}",
            ) from None

    def _name_free(self, prompt_id: str, name: str, keep: str | None = None) -> None:
        """Said early, in the API's words; the store holds the rule (a request that
        checked here at the same moment as another is stopped there)."""
        taken = next(
            (c for c in self.store.cases.list(prompt_id) if c.name == name and c.id != keep),
            None,
        )
        if taken is not None:
            raise self._taken(prompt_id, name, taken.id)

    @staticmethod
    def _taken(prompt_id: str, name: str, taken: str) -> ApiError:
        return ApiError(
            BAD_USER_INPUT,
            f"prompt {prompt_id!r} already has a test case named {name!r} (id "
            f"{taken!r}); a name is used once per prompt: change that case with "
            f'updateTestCase(id: "{taken}", ...)',
        )

    def _declared(self, case: Any, what: str) -> ApiError:
        return ApiError(
            BAD_USER_INPUT,
            f"test case {case.id!r} is declared in {case.source_file}: {what} there (the file "
            "is the source of truth; a change made here would be undone by its next run). "
            "Only its expected output can be set here (updateExpectedOutput), which "
            "rewrites the file as `oxy cases accept` does",
        )

    async def update_test_case(self, case_id: str, data: Mapping[str, Any]) -> dict[str, Any]:
        fields = check_case_input(data)

        def write() -> Any:
            case = self._case(case_id)
            if case.source_file is not None:
                same = (
                    case.prompt_id == fields["prompt_id"]
                    and case.name == fields["name"]
                    and (case.description or None) == fields["description"]
                    and case.input == fields["input"]
                )
                if not same:
                    raise self._declared(case, "change its name, description or input")
                if fields["expected_output"] == case.expected_output:
                    return case
                if fields["expected_output"] is None:
                    raise self._declared(case, "remove its expected output")
                return self._accept(case.id, fields["expected_output"])
            if fields["prompt_id"] != case.prompt_id:
                raise ApiError(
                    BAD_USER_INPUT,
                    f"test case {case.id!r} belongs to prompt {case.prompt_id!r}; a case "
                    "cannot move to another prompt (its history was scored against this "
                    "one): create it there with createTestCase",
                )
            if fields["name"] != case.name:
                self._name_free(case.prompt_id, fields["name"], keep=case.id)
            try:
                return self.store.cases.update(case_id, **fields)
            except NameTakenError as exc:
                raise self._taken(case.prompt_id, fields["name"], exc.taken) from None

        return case_json(await self._read(write))

    async def delete_test_case(self, case_id: str) -> bool:
        def write() -> bool:
            case = self.store.cases.get(case_id)
            if case is None:
                return False
            if case.source_file is not None:
                raise self._declared(case, "remove it from the file")
            return self.store.cases.delete(case_id)

        return await self._read(write)

    async def update_expected_output(self, case_id: str, output: str) -> dict[str, Any]:
        output = check_output(output, "output")

        def write() -> Any:
            return self._accept(self._case(case_id).id, output)

        return case_json(await self._read(write))

    def _accept(self, case_id: str, output: str) -> Any:
        """A new expected output, in the case's file and the store. Under the lock of the
        service's syncs: an accept syncs the files first, and a sync that read a file
        before another accept rewrote it would put the old value back in the store."""
        with self._sync_lock:
            return accept_baseline(self.store, self.project(), case_id, output)[0]

    # -- mutations: branches

    async def create_test_branch(self, data: Mapping[str, Any]) -> dict[str, Any]:
        project = self.project()
        fields = check_branch_input(data, project, BRANCH_PROVIDERS)

        def write() -> Any:
            self._case(fields["test_case_id"])
            case_id = fields.pop("test_case_id")
            name = fields.pop("name")
            try:
                return self.store.branches.create(case_id, name, **fields)
            except AlreadyExistsError:
                taken = make_branch_id(case_id, name)
                raise ApiError(
                    BAD_USER_INPUT,
                    f"test case {case_id!r} already has a branch named {name!r}; change it "
                    f'with updateTestBranch(id: "{taken}", ...)',
                ) from None

        return self._branch_doc(await self._read(write))

    async def update_test_branch(self, branch_id: str, data: Mapping[str, Any]) -> dict[str, Any]:
        project = self.project()
        fields = check_branch_input(data, project, BRANCH_PROVIDERS)

        def write() -> Any:
            branch = self.store.branches.get(branch_id)
            if branch is None:
                raise ApiError(NOT_FOUND, f"no branch {branch_id!r}")
            if fields.pop("test_case_id") != branch.test_case_id:
                raise ApiError(
                    BAD_USER_INPUT,
                    f"branch {branch_id!r} belongs to test case {branch.test_case_id!r}; a "
                    "branch cannot move to another case (create one there)",
                )
            if branch.source_file is not None:
                raise ApiError(
                    BAD_USER_INPUT,
                    f"branch {branch_id!r} is declared in {branch.source_file}; change it "
                    "there (a change made here would be undone by its next run)",
                )
            return self.store.branches.update(branch_id, **fields)

        return self._branch_doc(await self._read(write))

    async def delete_test_branch(self, branch_id: str) -> bool:
        def write() -> bool:
            branch = self.store.branches.get(branch_id)
            if branch is None:
                return False
            if branch.source_file is not None:
                raise ApiError(
                    BAD_USER_INPUT,
                    f"branch {branch_id!r} is declared in {branch.source_file}; remove it there",
                )
            return self.store.branches.delete(branch_id)

        return await self._read(write)
