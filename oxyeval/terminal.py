"""What a terminal shows of a text, and what it does not.

A terminal shows nothing of an ANSI escape sequence (a colour code, a title, a link), of
most control characters or of a zero-width character, so a text can read as something it
does not contain: a key with a colour code in its middle reads whole. :mod:`oxyeval.redact`
matches secrets against what a terminal would show (:func:`visible`), and holds back the
end of a streamed piece that is an escape sequence still to be completed.
"""

from __future__ import annotations

import re

__all__ = ["INVISIBLE", "has_invisible", "open_escape_start", "visible"]

#: What a terminal shows nothing of: ANSI escape sequences (CSI ``ESC [ ... m`` colour
#: codes and the like, OSC ``ESC ] ... BEL`` titles and links, ``ESC ( B`` and the other
#: short escapes), the other C0 control characters but tab and line ends, DEL, the C1
#: controls, and the zero-width and direction-mark characters.
INVISIBLE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2060-\u2064\ufeff]"
)


def visible(text: str) -> tuple[str, list[int]]:
    """``text`` as a terminal shows it (:data:`INVISIBLE` left out), and for each of its
    characters the index of that character in ``text``."""
    shown: list[str] = []
    where: list[int] = []
    last = 0
    for match in INVISIBLE.finditer(text):
        shown.append(text[last : match.start()])
        where.extend(range(last, match.start()))
        last = match.end()
    shown.append(text[last:])
    where.extend(range(last, len(text)))
    return "".join(shown), where


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds anything a terminal does not show."""
    return INVISIBLE.search(text) is not None


#: The start of an escape sequence whose end has not arrived yet.
_OPEN_ESCAPE = re.compile(r"(?:\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*)?|\x9b[0-?]*[ -/]*)\Z")


def open_escape_start(text: str) -> int:
    """Where an escape sequence that ``text`` ends in the middle of starts (its end is
    still to come); ``len(text)`` when there is none."""
    tail = _OPEN_ESCAPE.search(text)
    return len(text) if tail is None else tail.start()
