"""The store's exceptions: each carries the exit code the CLI must use, and names the database."""

from __future__ import annotations

from ..errors import EXIT_INFRA, EXIT_INPUT, OxyError

__all__ = [
    "AlreadyExistsError",
    "BranchRuleError",
    "EmptyHistoryError",
    "LocationError",
    "NameTakenError",
    "NotFoundError",
    "StoreError",
]


class StoreError(OxyError):
    """The history database cannot be used (locked, corrupt, unreachable, too new).

    An infrastructure problem the user must be able to act on, so the message always names
    the database (a path, or a URL whose password is shown as ``***``).
    """

    exit_code = EXIT_INFRA
    #: The server cannot be reached or stopped answering: opening it again in the same
    #: command (read-only, say) would only wait out the same timeouts again.
    unreachable: bool = False

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class NotFoundError(StoreError):
    """An id the caller passed does not exist: bad input, not broken infrastructure."""

    exit_code = EXIT_INPUT


class AlreadyExistsError(StoreError):
    """Creating a test case with an id already taken (``upsert`` is the sync path)."""

    exit_code = EXIT_INPUT


class NameTakenError(AlreadyExistsError):
    """A test case name already used by another live case of the prompt: a name is used
    once per prompt (``taken`` is that case's id), so the file, the CLI and the API all
    find one case by it."""

    def __init__(
        self, message: str, *, path: str | None = None, taken: str = "", wanted: str = ""
    ) -> None:
        super().__init__(message, path=path)
        self.taken = taken
        self.wanted = wanted  # the id of the case that wanted the name, when known


class LocationError(StoreError):
    """Where the history should be is wrong: a bad URL, a folder, a missing driver or password.

    ``key`` is the config.yml key path when the location came from ``history:`` there, so the
    caller can point at the line.
    """

    exit_code = EXIT_INPUT

    def __init__(
        self, message: str, *, path: str | None = None, key: tuple[str | int, ...] = ()
    ) -> None:
        super().__init__(message, path=path)
        self.key = key


class EmptyHistoryError(StoreError):
    """A read-only open found no history there (no file, or a database without our tables).

    Read commands turn it into "no runs yet"; they never create a database to read from it.
    """

    exit_code = EXIT_INPUT


class OldSchemaError(StoreError):
    """A read-only open found an older schema in an SQLite file too large to upgrade in a
    private in-memory copy (what reading an old history does without writing it). A
    writing command upgrades it in place; one about to write catches this and opens the
    history for writing instead."""


class BranchRuleError(StoreError, ValueError):
    """An A/B branch that breaks a rule every caller (CLI, Python API, GraphQL) is held to:
    at most 5 live branches and one control per test case, a name used once per case,
    settings in range. Bad input, so exit 2; a ValueError too, for callers that validate.
    The message names the branch and the rule."""

    exit_code = EXIT_INPUT
