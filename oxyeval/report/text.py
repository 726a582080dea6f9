"""Text a model wrote, made safe to show: secrets scrubbed, control characters visible.

Model answers, judge reasoning and error bodies are untrusted. On a terminal (or a CI
log viewer that renders ANSI) an escape sequence in them could clear the screen, set
the window title, recolour text or forge a "threshold met" line; in XML most control
characters are not even allowed. Every report that shows such text passes it through
here, and sees the sequence written out as ``\\x1b`` instead.
"""

from __future__ import annotations

import re

from ..redact import redact

__all__ = ["shown"]

#: C0 controls except tab and newline, DEL, C1 controls; lone surrogates and U+FFFE/FFFF
#: (not characters at all: XML refuses them, terminals print garbage).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown(value: object) -> str:
    """``value`` as text to print or write into a report: secrets scrubbed, and control
    characters (but tab and newline) written as visible escapes."""
    return _CONTROL.sub(_visible, redact(str(value)))
