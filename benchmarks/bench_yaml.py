"""How long a YAML file at the size limit takes to load, for each shape a hostile file can take.

A project file of up to 5 MB is read (``MAX_FILE_BYTES``); what it costs to load must grow
with its size alone, whatever it holds, since ``oxy validate`` in CI and the server's sync
both wait for it. Each shape below is built at ``--size`` bytes and parsed as a project file
is (:func:`oxyeval.project.document.parse_yaml`: positions, checks, construction); the
figure is CPU time (the machine may be shared), with what the parse answered. Shapes that
would hold more than ``MAX_YAML_NODES`` values stop there, with an error.

    python benchmarks/bench_yaml.py [--size 5000000] [--only flow_list,dup_keys]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from oxyeval.project.document import parse_yaml  # noqa: E402
from oxyeval.project.limits import MAX_FILE_BYTES, MAX_YAML_NODES  # noqa: E402


def _repeat(head: str, item: Callable[[int], str], size: int) -> str:
    parts, total, i = [head], len(head), 0
    while total < size:
        text = item(i)
        if total + len(text) > size:
            break
        parts.append(text)
        total += len(text)
        i += 1
    return "".join(parts)


def _case(i: int) -> str:
    return (
        f'  - name: case {i}\n    input: {{text: "hello world {i}", n: {i}}}\n'
        "    expected_output: positive\n"
    )


SHAPES: dict[str, Callable[[int], str]] = {
    # what real files look like, at a size no real file has
    "cases (a prompt file)": lambda n: _repeat(
        "name: s\nmodel: m\ntemplate: hi\ncases:\n", _case, n
    ),
    # as many values as bytes allow
    "flow list [1,1,...]": lambda n: "a: [" + ",".join("1" * (n // 2 - 4)) + "]\n",
    "block list - 1": lambda n: _repeat("a:\n", lambda i: "- 1\n", n),
    "distinct keys": lambda n: _repeat("", lambda i: f"k{i}: v\n", n),
    # one diagnostic per line: every key a duplicate, every value NaN
    "duplicate keys": lambda n: _repeat("", lambda i: "k: v\n", n),
    "a .nan per line": lambda n: _repeat("a:\n", lambda i: "- .nan\n", n),
    # one scalar as long as the file
    "one plain scalar": lambda n: "a: " + "x" * (n - 4) + "\n",
    "one quoted scalar": lambda n: 'a: "' + "x" * (n - 6) + '"\n',
    "one escaped scalar": lambda n: 'a: "' + "\\t" * ((n - 6) // 2) + '"\n',
    "one block scalar": lambda n: _repeat("a: |\n", lambda i: "  some text\n", n),
    "one folded plain scalar": lambda n: _repeat("a: x\n", lambda i: "  x\n", n),
    "one integer": lambda n: "a: " + "9" * (n - 4) + "\n",
    "one float": lambda n: "a: 1." + "0" * (n - 6) + "\n",
    "base 60 integer": lambda n: "a: 1" + ":59" * ((n - 5) // 3) + "\n",
    "base 60 float": lambda n: "a: 1" + ":59" * ((n - 8) // 3) + ".5\n",
    # structure
    "nesting 99 deep, repeated": lambda n: _repeat(
        "", lambda i: f"k{i}: " + "[" * 99 + "]" * 99 + "\n", n
    ),
    "anchors and aliases": lambda n: _repeat("base: &b {x: 1}\n", lambda i: f"k{i}: *b\n", n),
    "comments": lambda n: _repeat("a: 1\n", lambda i: "# " + "c" * 70 + "\n", n),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=MAX_FILE_BYTES)
    parser.add_argument("--only", default="", help="comma-separated words of shape names")
    args = parser.parse_args()
    words = [w for w in args.only.split(",") if w]
    print(f"YAML files of {args.size / 1e6:g} MB; at most {MAX_YAML_NODES:,} values a file")
    print(f"{'shape':28} {'MB':>5} {'CPU s':>7}  answer")
    worst = 0.0
    for name, make in SHAPES.items():
        if words and not any(w in name for w in words):
            continue
        text = make(args.size)
        start = time.process_time()
        _, problems = parse_yaml(text, Path("bench.yml"))
        took = time.process_time() - start
        worst = max(worst, took)
        answer = "loaded" if not problems else f"{len(problems):,} error(s): {problems[0].message}"
        print(f"{name:28} {len(text) / 1e6:5.2f} {took:7.2f}  {answer[:70]}", flush=True)
    print(f"worst: {worst:.2f} s CPU")


if __name__ == "__main__":
    main()
