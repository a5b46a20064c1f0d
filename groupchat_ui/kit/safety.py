"""Rendering untrusted text: agent messages are model output, so they must stay inert.

Why a module of its own (pure, no streamlit): a prompt-injected reply can carry raw HTML or a
markdown image (`![](http://host/x)`) that phones home the moment it is displayed. Every page
renders agent text through `safe_markdown`, and labels built from names through
`escape_markdown`; both are unit-tested without a browser.

Layers, so that security never depends on parsing markdown exactly like the browser does:
- images: every `![` gets an escaped `!` (everywhere, code included), so no image can load;
- raw HTML: `st.markdown` is never called with `unsafe_allow_html`, and `<` outside code is
  also written as `&lt;`;
- math: `$` outside code is escaped (Streamlit renders `$...$` as LaTeX; prices should not).
"""

from __future__ import annotations

import re

_IMAGE = re.compile(r"(\\*)!\[")
_DOLLAR = re.compile(r"(\\*)\$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_INLINE = re.compile(r"([\\`*_\[\]<$~|]|!(?=\[)|:(?=[A-Za-z]))")
_MD_LINE_START = re.compile(r"^(\s*\d*)([#>+\-=]|(?<=\d)[.)])")


def _escape_unescaped(pattern: re.Pattern[str], text: str, literal: str) -> str:
    """Add one backslash before `literal` unless an odd run of backslashes already escapes it."""

    def fix(match: re.Match[str]) -> str:
        slashes = match.group(1)
        return slashes + ("\\" if len(slashes) % 2 == 0 else "") + literal

    return pattern.sub(fix, text)


def _split_code(text: str) -> list[tuple[bool, str]]:
    """(is_code, segment) pairs: fenced blocks and matched inline backtick spans are code."""
    parts: list[tuple[bool, str]] = []
    prose: list[str] = []
    fence: str | None = None
    block: list[str] = []
    for line in text.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if fence is None and opened:
            parts.append((False, "".join(prose)))
            prose, fence, block = [], opened.group(1), [line]
        elif fence is not None:
            block.append(line)
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(
                    fence) and not line.strip().strip(fence[0]):
                parts.append((True, "".join(block)))
                fence, block = None, []
        else:
            prose.append(line)
    parts.append((False, "".join(prose)))
    if block:
        parts.append((True, "".join(block)))  # an unclosed fence runs to the end
    out: list[tuple[bool, str]] = []
    for is_code, segment in parts:
        out.extend([(True, segment)] if is_code else _split_inline(segment))
    return [(c, s) for c, s in out if s]


def _split_inline(text: str) -> list[tuple[bool, str]]:
    """Inline code spans: a run of n backticks closed by the next run of exactly n."""
    out: list[tuple[bool, str]] = []
    runs = list(re.finditer(r"`+", text))
    start = i = 0
    while i < len(runs):
        size = len(runs[i].group())
        j = next((k for k in range(i + 1, len(runs)) if len(runs[k].group()) == size), None)
        if j is None:
            i += 1
            continue
        out += [(False, text[start:runs[i].start()]), (True, text[runs[i].start():runs[j].end()])]
        start, i = runs[j].end(), j + 1
    out.append((False, text[start:]))
    return out


def safe_markdown(text: str) -> str:
    """Model output as inert markdown: no image loads, no raw HTML, no LaTeX; formatting stays."""
    if not isinstance(text, str):
        text = str(text)
    pieces = []
    for is_code, segment in _split_code(text):
        if not is_code:
            segment = segment.replace("<", "&lt;")
            segment = _escape_unescaped(_DOLLAR, segment, "$")
        pieces.append(segment)
    return _escape_unescaped(_IMAGE, "".join(pieces), "![")


def escape_markdown(text: str) -> str:
    """A plain label (an agent name, a task) shown literally: one line, nothing interpreted.

    Escapes what starts inline markup (emphasis, code, links, images, HTML, math, strikethrough,
    tables, `:red[...]` directives) and a block marker at the start (heading, quote, list).
    """
    flat = " ".join(str(text).split())
    flat = _MD_INLINE.sub(r"\\\1", flat)
    return _MD_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), flat)
