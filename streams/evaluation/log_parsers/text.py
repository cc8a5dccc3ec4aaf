"""Text helpers every log parser shares."""

from __future__ import annotations

import re

# CSI (colours, cursor), OSC (pytest 9's terminal progress, ``ESC ] 9;4;... ESC \``), charset
# selection and the other two-byte escapes
_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_])"
)


def strip_ansi(text: str) -> str:
    """``text`` without its ANSI escape sequences (colours, cursor moves, OSC sequences)."""
    return _ANSI.sub("", text)
