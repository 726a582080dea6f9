"""The YAML loader behind :func:`oxyeval.project.document.parse_yaml`: PyYAML's safe loader
with every dimension of a file bounded while it is composed.

A project file may come from anyone and a command (or the server's sync) waits for it to
load, so what loading costs must grow with the file's size alone: nesting, alias
expansion and the number of values are counted node by node, before any Python object
exists, and the two places where PyYAML itself is worse than linear are replaced (base-60
numbers, and the scanner's look at every open flow level before each token).

A file is composed by libyaml when PyYAML has it (:func:`compose_fast`): the pure-Python
scanner spends about 25 microseconds per value, so a prompt file of 10,000 test cases took
seconds before a command could start. libyaml's nodes carry the same line, column and
offset marks. Its events are first counted against the same bounds (libyaml composes
recursively in C, so nothing deeper or larger than a project file may reach it); a file
that breaks a bound, is not valid YAML or holds characters a project file may not have
is left to :class:`ProjectLoader`, whose messages say what and where.
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any

import yaml

from ..inputs import MAX_INT_DIGITS, valid_text
from .limits import MAX_ALIAS_NODES, MAX_YAML_DEPTH, MAX_YAML_NODES

__all__ = [
    "FLOAT_TAG",
    "INT_TAG",
    "STR_TAG",
    "LimitError",
    "ProjectLoader",
    "build_fast",
    "compose_fast",
    "finite_yaml_float",
    "int_too_long",
]


def _too_deep() -> str:
    return (
        f"YAML nested more than {MAX_YAML_DEPTH} levels deep (lists and mappings inside "
        "each other); no project file needs that"
    )


class LimitError(yaml.MarkedYAMLError):
    """A file that is valid YAML but too deep, with too many values, or too large once its
    aliases are expanded."""


INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
STR_TAG = "tag:yaml.org,2002:str"

# YAML 1.1's implicit int and float forms, less base 60 (``1:30`` read as 90): YAML 1.2
# dropped it, and so does oxy's own loader (serde_yaml), which reads ``1:30`` as text. It
# is also the form that escapes every bound: PyYAML computes ``59:59:...`` by repeated
# big-integer multiplication (quadratic in its length, with no digit limit), and a float
# written so raises OverflowError. Here it is plain text, as oxy reads it.
_INT = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


def _without_base_60(
    resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]],
) -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    """PyYAML's implicit resolvers, in their order, with the int and float patterns above."""
    patterns = {INT_TAG: _INT, FLOAT_TAG: _FLOAT}
    return {
        first: [(tag, patterns.get(tag, regexp)) for tag, regexp in pairs]
        for first, pairs in resolvers.items()
    }


class _SimpleKeys(dict):  # type: ignore[type-arg]
    """PyYAML's possible simple keys, by flow level, knowing their lowest level cheaply.

    A key is saved at the current flow level and every key of a deeper level is gone
    before one is saved at a shallower level, so the lowest level holds the oldest key
    (smallest index and token number). PyYAML looks at every key before each token to find
    the oldest or the stale: quadratic in flow nesting (100 levels of ``[`` made each
    token 100 times dearer); this answers from the lowest level instead."""

    _low: int | None = None

    def __setitem__(self, level: int, key: Any) -> None:
        super().__setitem__(level, key)
        if len(self) == 1 or (self._low is not None and level < self._low):
            self._low = level

    def __delitem__(self, level: int) -> None:
        super().__delitem__(level)
        if level == self._low:
            self._low = None

    def oldest(self) -> Any:
        if self._low is None:
            self._low = min(self)
        return self[self._low]


class ProjectLoader(yaml.SafeLoader):
    """SafeLoader that bounds nesting depth, node count and alias expansion while composing.

    PyYAML composes recursively (5,000 levels of ``[[[...]]]`` end in RecursionError)
    and expands aliases by sharing nodes, so a "billion laughs" file loads in
    microseconds and explodes later, when a template prints it or a report copies it.
    Both are measured here, node by node, before any Python object exists: a node's
    size and depth count its aliased parts in full. Nodes are counted too: PyYAML spends
    some 10 microseconds on each, so 5 MB of ``[1,1,1,...]`` (2.5 million of them)
    would hold a command, or the server's sync, for most of a minute.
    """

    yaml_implicit_resolvers = _without_base_60(yaml.SafeLoader.yaml_implicit_resolvers)

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = 0  # nodes composed so far (an alias is counted by its expansion)
        self._depth = 0  # collections open around the node being composed
        self._alias_nodes = 0  # nodes that the aliases seen so far expand to
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, depth), expanded

    @property  # type: ignore[override]
    def possible_simple_keys(self) -> _SimpleKeys:
        return self._simple_keys

    @possible_simple_keys.setter
    def possible_simple_keys(self, keys: dict[int, Any]) -> None:
        self._simple_keys = _SimpleKeys(keys)

    def next_possible_simple_key(self) -> int | None:
        keys = self._simple_keys
        return keys.oldest().token_number if keys else None

    def stale_possible_simple_keys(self) -> None:
        keys = self._simple_keys
        if not keys:
            return
        oldest = keys.oldest()
        if oldest.line == self.line and self.index - oldest.index <= 1024:
            return  # the oldest is still a possible key, so is every newer one
        super().stale_possible_simple_keys()

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # The scanner is quadratic in flow nesting (5,000 levels of '[' take a second before
        # the composer sees the first node): stop it at the same depth.
        if self.flow_level >= MAX_YAML_DEPTH:
            raise LimitError(None, None, _too_deep(), self.get_mark())
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            size = self._sizes.get(id(node))
            if size is None:  # the anchor's own node is still open: it would contain itself
                raise LimitError(
                    None,
                    None,
                    f"YAML alias *{event.anchor} is used inside the node it names; "
                    "a structure that contains itself cannot be loaded",
                    event.start_mark,
                )
            nodes, depth = size
            self._alias_nodes += nodes
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise LimitError(
                    None,
                    None,
                    f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes (an alias bomb?); "
                    f"this one adds {nodes:,}",
                    event.start_mark,
                )
            if self._depth + depth > MAX_YAML_DEPTH:
                raise LimitError(
                    None,
                    None,
                    f"YAML alias *{event.anchor} nests the data more than {MAX_YAML_DEPTH} levels deep",
                    event.start_mark,
                )
            return node
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise LimitError(
                None,
                None,
                f"YAML file has more than {MAX_YAML_NODES:,} values (keys, items and "
                "scalars); split it, or keep large data in a file the project reads",
                event.start_mark,
            )
        opens = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        if opens:
            self._depth += 1
            if self._depth > MAX_YAML_DEPTH:
                raise LimitError(None, None, _too_deep(), event.start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            if opens:
                self._depth -= 1
        self._sizes[id(node)] = self._measure(node)
        return node

    def _measure(self, node: yaml.Node) -> tuple[int, int]:
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            return 1, 0
        nodes, depth = 1, 0
        for child in children:
            c_nodes, c_depth = self._sizes.get(id(child), (1, 0))
            nodes += c_nodes
            depth = max(depth, c_depth)
        return nodes, depth + 1


_CLoader: Any = getattr(yaml, "CSafeLoader", None)


def _within_bounds(text: str) -> bool:
    """Whether ``text``'s events stay within the bounds :class:`ProjectLoader` checks
    (values, nesting, alias expansion, an alias inside its own anchor), counted the same
    way on libyaml's event stream, without composing anything."""
    assert _CLoader is not None
    events = _CLoader(text)
    get = events.get_event
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    opening = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    closing = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    nodes = alias_nodes = 0
    # per open collection: [its anchor, nodes in it so far, the depth of its deepest child]
    stack: list[list[Any]] = [[None, 0, 0]]  # the bottom one: the document
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, depth), expanded
    try:
        while True:
            event = get()
            kind = type(event)
            if kind is scalar:
                nodes += 1
                stack[-1][1] += 1
                if event.anchor is not None:
                    sizes[event.anchor] = (1, 0)
            elif kind in opening:
                nodes += 1
                if event.anchor is not None:
                    sizes.pop(event.anchor, None)  # open: an alias to it now is an error
                stack.append([event.anchor, 1, 0])
                if len(stack) - 1 > MAX_YAML_DEPTH:
                    return False
            elif kind in closing:
                anchor, inside, deepest = stack.pop()
                size = (inside, deepest + 1)
                if anchor is not None:
                    sizes[anchor] = size
                parent = stack[-1]
                parent[1] += inside
                parent[2] = max(parent[2], size[1])
            elif kind is alias:
                size = sizes.get(event.anchor)
                if size is None:
                    return False  # unknown, or used inside the node it names
                alias_nodes += size[0]
                if alias_nodes > MAX_ALIAS_NODES or len(stack) - 1 + size[1] > MAX_YAML_DEPTH:
                    return False
                stack[-1][1] += size[0]
                stack[-1][2] = max(stack[-1][2], size[1])
            elif event is None or kind is yaml.DocumentEndEvent:
                return True
            if nodes > MAX_YAML_NODES:
                return False
    finally:
        events.dispose()


if _CLoader is not None:

    class _FastLoader(_CLoader):  # type: ignore[misc, valid-type]
        """libyaml's composer with this module's implicit types (no base 60)."""

        yaml_implicit_resolvers = ProjectLoader.yaml_implicit_resolvers


_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


def compose_fast(text: str) -> tuple[Any, yaml.Node | None] | None:
    """``text`` composed by libyaml: (the loader, to construct the data with; the root
    node, None for an empty file); None when the file must go through
    :class:`ProjectLoader` instead (no libyaml, a bound broken, a character a project
    file may not hold, more than one document, or not valid YAML): its checks and
    messages are the ones users see."""
    if _CLoader is None or _NON_PRINTABLE.search(text):
        return None
    try:
        if not _within_bounds(text):
            return None
        loader = _FastLoader(text)
        try:
            node = loader.get_single_node()
        except BaseException:
            loader.dispose()
            raise
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    return loader, node


def finite_yaml_float(text: str) -> bool:
    """A YAML 1.1 float as PyYAML reads it (``_`` separators, ``.inf``) is finite."""
    value = text.replace("_", "").lower().lstrip("+-")
    if value in (".inf", ".nan"):
        return False
    try:
        return math.isfinite(float(value))
    except ValueError:
        return True  # not what PyYAML reads as a float either: its own error, if any


#: Digits past which no base's integer can be within MAX_INT_DIGITS decimal digits
#: (10**308 has 1,024 binary digits): longer ones are refused without being converted.
_MAX_INT_CHARS = 1_100


def int_too_long(text: str) -> bool:
    """A YAML int (``0b``, ``0x``, octal ``0..``, decimal, ``_`` separators) of more than
    MAX_INT_DIGITS decimal digits. Linear in the text, whatever its length."""
    value = text.replace("_", "").lstrip("+-")
    base = 10
    if value[:2] in ("0b", "0x"):
        base, value = (2 if value[1] == "b" else 16), value[2:]
    elif value.startswith("0") and len(value) > 1:
        base, value = 8, value[1:]
    value = value.lstrip("0")
    if len(value) > _MAX_INT_CHARS:
        return True
    try:
        return abs(int(value or "0", base)) >= 10**MAX_INT_DIGITS
    except ValueError:
        return False  # not what PyYAML reads as an int either: its own error, if any


_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_RESOLVERS = ProjectLoader.yaml_implicit_resolvers
_ANY_FIRST = _RESOLVERS.get(None, [])
_CONSTRUCT = yaml.constructor.SafeConstructor()
_NOT_SIMPLE = object()  # a value only the composer path may build (or report on)


#: The implicit resolvers that may match a plain scalar, by its first character: most
#: begin with a letter no resolver looks at (a key, a word), and are text at once.
_BY_FIRST = {
    first: tuple(pairs + _ANY_FIRST) for first, pairs in _RESOLVERS.items() if first is not None
}
_NO_FIRST = tuple(_ANY_FIRST)
_DECIMAL = re.compile(r"[1-9][0-9]{0,17}|0")  # an int YAML and int() read alike

#: Short scalars are built once per file and shared: a list of 10,000 cases repeats its
#: keys and many of its values (a bound keeps a file of distinct values from growing it).
_SHARED_LENGTH = 64
_SHARED_COUNT = 20_000


def _plain_scalar(value: str) -> Any:
    """A plain (unquoted) scalar as :class:`ProjectLoader` constructs it: its type by
    the same implicit resolvers, its value by the same safe constructors;
    ``_NOT_SIMPLE`` for a type or a value that needs the composer (a date, a merge key,
    a non-finite float, an integer too long to read)."""
    candidates = _BY_FIRST.get(value[:1], _NO_FIRST)
    if not candidates:
        return value
    tag = next((tag for tag, pattern in candidates if pattern.match(value)), STR_TAG)
    if tag == _NULL_TAG:
        return None
    if tag == _BOOL_TAG:
        return _CONSTRUCT.bool_values[value.lower()]
    if tag == INT_TAG and _DECIMAL.fullmatch(value):
        return int(value)
    if tag == INT_TAG and not int_too_long(value):
        return _CONSTRUCT.construct_yaml_int(yaml.ScalarNode(tag, value))
    if tag == FLOAT_TAG and finite_yaml_float(value):
        return _CONSTRUCT.construct_yaml_float(yaml.ScalarNode(tag, value))
    if tag == STR_TAG:
        return value
    return _NOT_SIMPLE


def build_fast(text: str) -> tuple[Any] | None:
    """The data of a file built straight from libyaml's events, in one pass that counts
    the same bounds: (the data,), or None when the file must be composed instead.

    A file of plain mappings, lists and scalars (what a list of 10,000 test cases is)
    needs no node tree: composing it and walking it took four times as long as reading
    its events. Anything else goes the composed way, which is then what decides the data
    and the messages: a tag, an anchor or alias, a merge key, a mapping or list as a key,
    a duplicate key, a date, a value :func:`_check_scalar` warns or errs on, a bound
    broken, more than one document, invalid YAML, no libyaml."""
    if _CLoader is None or _NON_PRINTABLE.search(text):
        return None
    events = _CLoader(text)
    get = events.get_event
    scalar, mapping, sequence = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    # per open collection: [the dict or list, a dict's pending key (or _NOT_SIMPLE) and
    # the names of its keys so far]
    stack: list[list[Any]] = []
    root: list[Any] = []
    nodes = documents = 0
    shared_plain: dict[str, Any] = {}  # a short plain scalar's text -> what it was built as
    shared_quoted: dict[str, str] = {}
    try:
        while True:
            event = get()
            kind = type(event)
            if kind is scalar:
                if event.anchor is not None or event.tag not in (None, "!"):
                    return None
                text = event.value
                plain = event.implicit[0]
                short = len(text) <= _SHARED_LENGTH
                made: Any = (shared_plain if plain else shared_quoted).get(text, _NOT_SIMPLE)
                if made is _NOT_SIMPLE:
                    made = _plain_scalar(text) if plain else text
                    if made is _NOT_SIMPLE:
                        return None
                    if type(made) is str and not made.isascii() and valid_text(made) is not made:
                        return None
                    if short and len(shared_plain) + len(shared_quoted) < _SHARED_COUNT:
                        (shared_plain if plain else shared_quoted)[text] = made
            elif kind is mapping or kind is sequence:
                if event.anchor is not None or event.tag not in (None, "!"):
                    return None
                nodes += 1
                if nodes > MAX_YAML_NODES or len(stack) >= MAX_YAML_DEPTH:
                    return None
                if stack and type(stack[-1][0]) is dict and stack[-1][1] is _NOT_SIMPLE:
                    return None  # a mapping or list as a key
                stack.append([{}, _NOT_SIMPLE, set()] if kind is mapping else [[], None, None])
                continue
            elif kind in ends:
                made = stack.pop()[0]
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    return None
                continue
            elif kind is yaml.StreamEndEvent or event is None:
                return (root[0] if root else None,)
            elif kind is yaml.AliasEvent:
                return None
            else:  # stream start, document end
                continue
            if kind is scalar:
                nodes += 1
                if nodes > MAX_YAML_NODES:
                    return None
            if not stack:
                root.append(made)
                continue
            top = stack[-1]
            into = top[0]
            if type(into) is list:
                into.append(made)
            elif top[1] is _NOT_SIMPLE:
                # a key as _walk names it: its text, an integer's number
                name = event.value
                if type(made) is int:
                    with contextlib.suppress(ValueError):
                        name = int(name)
                if name in top[2]:
                    return None  # a duplicate key: the composed way names both lines
                top[2].add(name)
                top[1] = made
            else:
                into[top[1]] = made
                top[1] = _NOT_SIMPLE
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    finally:
        events.dispose()
