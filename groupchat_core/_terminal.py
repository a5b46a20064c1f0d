"""Untrusted text made safe to print: control characters become visible escapes.

Why: model output, run names, tasks and agent names are untrusted. Printed raw, an agent's
reply holding `ESC]0;...BEL` retitles the terminal, `ESC[2J` clears it, a C1 CSI (U+009B)
starts an escape sequence on terminals that honour 8-bit controls, and a right-to-left
override (U+202E) makes a line read differently from what it is. Every CLI print of untrusted
text goes through `terminal_text`, which turns such characters into `\\x1b`-style text.

What counts as unsafe: every control character (C0, DEL, C1), format characters (bidi
overrides and isolates, zero-width space, tag characters...), line and paragraph separators
and lone surrogates. A transcript (`multiline=True`) keeps newlines and tabs, and the zero-width
joiners that emoji and some scripts need; a one-line field keeps nothing of the sort.
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_KEEP_MULTILINE = frozenset("\n\t\u200c\u200d")  # ZWNJ, ZWJ: emoji sequences, Persian, Indic
_NAMES = {  # control characters have no name in unicodedata
    0x00: "NULL", 0x07: "BELL", 0x08: "BACKSPACE", 0x09: "CHARACTER TABULATION",
    0x0A: "LINE FEED", 0x0B: "LINE TABULATION", 0x0C: "FORM FEED", 0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE", 0x7F: "DELETE", 0x85: "NEXT LINE", 0x90: "DEVICE CONTROL STRING",
    0x9B: "CONTROL SEQUENCE INTRODUCER", 0x9C: "STRING TERMINATOR",
    0x9D: "OPERATING SYSTEM COMMAND",
}
# Fast path: plain printable text (the common case) needs no per-character look.
_PLAIN = re.compile(r"[ -~\u00a0-\u00ac\u00ae-\u05ff]*")


def is_unsafe(char: str, *, multiline: bool = False) -> bool:
    """Whether printing `char` raw could move the cursor, change the terminal or hide text."""
    if multiline and char in _KEEP_MULTILINE:
        return False
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_text(text: object, *, multiline: bool = False) -> str:
    """`text` with every unsafe character written as a visible escape (`\\x1b`, `\\u202e`).

    multiline=True keeps newlines and tabs (a transcript, a table); otherwise the result is
    one line whatever the input holds."""
    text = str(text)
    if _PLAIN.fullmatch(text):
        return text
    if multiline:
        text = text.replace("\r\n", "\n")  # Windows line ends are line ends, not a CR
    return "".join(_escape(c) if is_unsafe(c, multiline=multiline) else c for c in text)


def char_name(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`: a character as an error message should name it."""
    code = ord(char)
    name = _NAMES.get(code) or unicodedata.name(char, "") or (
        "a control character" if unicodedata.category(char) == "Cc" else "an unnamed character")
    return f"U+{code:04X} {name}"


def first_unsafe(text: str) -> str | None:
    """The first character of `text` that has no place in a one-line name, else None."""
    if _PLAIN.fullmatch(text):
        return None
    return next((c for c in text if is_unsafe(c)), None)
