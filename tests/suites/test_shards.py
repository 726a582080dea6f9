"""The split of a sharded run: every test in exactly one shard, the shards balanced by
the runs their tests declare, the same split whatever the order the tests were found in
or the process that computes it; and the options' bad input said the one way."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from oxyeval.errors import ConfigError
from oxyeval.suites import Sharding, ShardKey, parse_shard, sharding_problem, split


def keys(n: int, seed: int = 7) -> list[ShardKey]:
    rng = random.Random(seed)
    return [
        ShardKey(f"agents/a{k % 13}.agent.yml", f"test {k}", rng.choice([1, 1, 2, 3, 5, 10]))
        for k in range(n)
    ]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8, 50])
def test_every_test_is_in_exactly_one_shard(count: int) -> None:
    tests = keys(40)
    shards = split(tests, count)
    assert all(1 <= s <= count for s in shards)
    chosen = []
    for index in range(1, count + 1):
        sharding = Sharding(parse_shard(f"{index}/{count}"), "g")
        chosen += sharding.select(tests, lambda k: k)
    assert sorted(chosen, key=lambda k: k.name) == sorted(tests, key=lambda k: k.name)
    assert len(chosen) == len(set(chosen))


def test_the_shards_are_balanced_by_declared_runs() -> None:
    tests = keys(200)
    for count in (2, 4, 7):
        shards = split(tests, count)
        load = [
            sum(k.runs for k, s in zip(tests, shards, strict=True) if s == i)
            for i in range(1, count + 1)
        ]
        # Longest first into the lightest shard: no shard exceeds another by more than
        # the largest single test.
        assert max(load) - min(load) <= max(k.runs for k in tests), (count, load)
    # Runs, not counts: one heavy test weighs as much as ten light ones.
    heavy = [ShardKey("f", "heavy", 10)] + [ShardKey("f", f"light {k}", 1) for k in range(10)]
    shards = split(heavy, 2)
    assert shards.count(shards[0]) == 1  # the heavy test is alone in its shard


def test_the_split_does_not_depend_on_order_or_process() -> None:
    tests = keys(60)
    shards = dict(zip(tests, split(tests, 4), strict=True))
    shuffled = tests[:]
    random.Random(1).shuffle(shuffled)
    assert dict(zip(shuffled, split(shuffled, 4), strict=True)) == shards
    # Another interpreter (another hash seed) computes the same split.
    code = (
        "from oxyeval.suites import ShardKey, split;"
        "print(split([ShardKey(f'f{k%5}', f't{k}', k%4+1) for k in range(30)], 4))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    expected = str(split([ShardKey(f"f{k % 5}", f"t{k}", k % 4 + 1) for k in range(30)], 4))
    assert runs == {expected + "\n"}


def test_the_fingerprint_names_the_whole_split() -> None:
    tests = keys(20)
    one, two = Sharding(parse_shard("1/4"), "g"), Sharding(parse_shard("3/4"), "g")
    one.select(tests, lambda k: k)
    two.select(list(reversed(tests)), lambda k: k)
    assert one.plan == two.plan and one.total == two.total == 20
    other = Sharding(parse_shard("1/4"), "g")
    other.select(tests[:-1], lambda k: k)  # a runner that found one test fewer
    assert other.plan != one.plan


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0/4", "numbered from 1 to 4"),
        ("5/4", "numbered from 1 to 4"),
        ("x/y", "expected I/N"),
        ("2", "expected I/N"),
        ("1/0", "must be 1 to"),
    ],
)
def test_a_bad_shard_is_bad_input(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_shard(text)
    assert words in (sharding_problem(text, "g") or "")


def test_a_shard_needs_a_run_group_unless_nothing_is_kept() -> None:
    assert "needs --run-group" in (sharding_problem("2/4", None) or "")
    assert sharding_problem("2/4", None, history=False) is None
    assert "--no-history" in (sharding_problem("2/4", "g", history=False) or "")
    assert "expected an id" in (sharding_problem("1/2", "two words") or "")
    assert sharding_problem("2/4", "ci-1234.1") is None
    assert parse_shard(" 2 / 4 ") == parse_shard("2/4")
