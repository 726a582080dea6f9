"""Sharding a run across machines: ``--shard i/N`` runs one N-th of the selected tests,
``--run-group ID`` keeps each shard's outcome in the shared history so that ``oxy report
--run-group ID`` decides on all of them together.

Why a split by hash and not by position: every runner of a CI matrix loads the same
files and must agree, without talking to the others, on which tests are its own. Each
test is named by its file (relative to its project, so the same on every machine) and
its name; the split sorts the tests longest first (by their declared runs, the work
they cost), ties by a SHA-256 of that name, and deals each to the shard with the least
work so far (ties: the lowest shard). The result depends only on the selection, never on
the machine, the process or the order files were found in.

A kind applies the split in its plan (:meth:`Sharding.select`), on the units whose
results its report lists: a consistency test, a test case, an A/B case, a pass/fail
subject. The run then records, under the run group, what it selected (a fingerprint of
the whole split, so shards that selected differently are told apart) and, once decided,
its run document (:meth:`Sharding.record`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..project.config import Project
    from ..store import Location

__all__ = [
    "MAX_SHARDS",
    "RUN_GROUP_PATTERN",
    "Shard",
    "ShardKey",
    "Sharding",
    "parse_shard",
    "sharding_problem",
    "split",
]

T = TypeVar("T")

#: More shards than a CI matrix holds is a typo, not a plan (GitHub allows 256 jobs).
MAX_SHARDS = 1024
#: A run group id: what CI systems give (a run id and attempt, a pipeline id), and
#: readable in a log; no spaces or quotes.
RUN_GROUP_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,199}")
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (numbered from 1, as CI matrices count)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/8"`` as a :class:`Shard`; anything else is bad input, said with an example."""
    m = _SHARD.fullmatch(text)
    if m is None:
        raise ConfigError(
            f"--shard {text!r}: expected I/N, this runner's shard I of N shards, numbered "
            "from 1 (e.g. --shard 2/4)"
        )
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or count > MAX_SHARDS:
        raise ConfigError(f"--shard {text}: the number of shards must be 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise ConfigError(
            f"--shard {text}: shards are numbered from 1 to {count}, so {index} is not one "
            f"(a CI matrix index that starts at 0 needs +1)"
        )
    return Shard(index, count)


def sharding_problem(
    shard: str | None, run_group: str | None, *, history: bool = True
) -> str | None:
    """Why ``--shard`` and ``--run-group`` cannot run as given (exit 2), or None.

    A shard's results count only once merged with the other shards', which needs the
    shared history and a group to find them by: a shard without ``--run-group`` is bad
    input unless ``--no-history`` says each shard is decided alone; a run group without
    a history to keep it in is bad input too."""
    if shard is not None:
        try:
            parse_shard(shard)
        except ConfigError as exc:
            return str(exc)
    if run_group is not None and RUN_GROUP_PATTERN.fullmatch(run_group) is None:
        return (
            f"--run-group {run_group!r}: expected an id of letters, digits and . _ : / @ + = - "
            "(at most 200), such as the CI pipeline's id"
        )
    if run_group is not None and not history:
        return "--run-group keeps the shards' results in the history, which --no-history turns off"
    if shard is not None and run_group is None and history:
        return (
            f"--shard {shard} needs --run-group ID (the same on every shard, e.g. the CI "
            "pipeline's id) so that `oxy report --run-group ID` can decide on all the "
            "shards together; with --no-history each shard is decided alone"
        )
    return None


@dataclass(frozen=True)
class ShardKey:
    """How the split names one test: its file (relative to its project) and its name;
    ``runs`` is the work it declares (runs, branches x iterations), what balances the
    shards."""

    file: str
    name: str
    runs: int = 1

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.file}\0{self.name}".encode()).hexdigest()


def split(keys: Sequence[ShardKey], count: int) -> list[int]:
    """The shard (1..``count``) of each key, in order: longest first (by ``runs``), ties
    by the hash of file and name, each to the shard with the least work so far (ties:
    the lowest). Deterministic: the same keys give the same shards anywhere."""
    order = sorted(
        range(len(keys)),
        key=lambda k: (-max(1, keys[k].runs), keys[k].digest, keys[k].file, keys[k].name, k),
    )
    load = [0] * count
    shards = [0] * len(keys)
    for k in order:
        lightest = min(range(count), key=lambda s: (load[s], s))
        shards[k] = lightest + 1
        load[lightest] += max(1, keys[k].runs)
    return shards


@dataclass(eq=False)
class Sharding:
    """One shard's part in a sharded run: which shard, under which run group (None: the
    shard is decided alone), and what its run selected once planned (filled by
    :meth:`select`): the fingerprint of the whole split, how many tests the whole
    selection and this shard hold, and the histories the shard's outcome goes to."""

    shard: Shard = Shard(1, 1)
    group: str | None = None
    kind: str = ""
    plan: str = ""
    total: int = 0
    selected: int = 0
    runs: int = 0
    locations: list[Location] = field(default_factory=list)

    @classmethod
    def parse(cls, shard: str | None, run_group: str | None) -> Sharding | None:
        """The sharding the options ask for (None: an unsharded run outside any group);
        the options were checked (:func:`sharding_problem`)."""
        if shard is None and run_group is None:
            return None
        return cls(parse_shard(shard) if shard is not None else Shard(1, 1), run_group)

    def select(
        self,
        items: Sequence[T],
        key: Callable[[T], ShardKey],
        projects: Sequence[Project] = (),
        *,
        histories: Any = None,
    ) -> list[T]:
        """The items of this shard, in their order; remembers the split's fingerprint
        and where each project keeps its history (``histories``: the run's)."""
        keys = [key(item) for item in items]
        shards = split(keys, self.shard.count)
        digest = hashlib.sha256(str(self.shard.count).encode())
        for k, s in sorted(zip(keys, shards, strict=True), key=lambda p: (p[0].file, p[0].name)):
            digest.update(f"{k.file}\0{k.name}\0{k.runs}\0{s}\n".encode())
        self.plan = digest.hexdigest()
        self.total = len(items)
        mine = [item for item, s in zip(items, shards, strict=True) if s == self.shard.index]
        self.selected = len(mine)
        self.runs = sum(
            max(1, k.runs) for k, s in zip(keys, shards, strict=True) if s == self.shard.index
        )
        if histories is not None:
            for project in projects:
                location = histories.location(project)
                if location is not None and location not in self.locations:
                    self.locations.append(location)
            if self.group is not None and not self.locations:
                raise ConfigError(
                    f"--run-group {self.group} keeps the shard's outcome in the history, and "
                    "this run keeps none (chattest files outside a project): run them in a "
                    "project (a folder with a config.yml)"
                )
        return mine

    def record(self, document: dict[str, Any], code: int) -> str | None:
        """Keep this shard's run document and exit code under its run group in each
        history the run used; returns why it could not (None: kept, or no group).
        Blocking: a command calls it once the run is decided."""
        if self.group is None:
            return None
        if not self.locations:
            return "the run opened no history to keep the shard's outcome in"
        from ..store import open_store

        for location in self.locations:
            try:
                with open_store(location) as store:
                    store.run_groups.record(
                        self.group,
                        self.shard.index,
                        self.shard.count,
                        kind=self.kind or str(document.get("kind") or ""),
                        plan=self.plan,
                        tests=self.selected,
                        total=self.total,
                        code=code,
                        document=document,
                    )
            except Exception as exc:
                return f"{location.display}: {exc}"
        return None
