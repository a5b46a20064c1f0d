"""Rendering untrusted text: agent messages are model output, so they must stay inert.

Why a module of its own (pure, no streamlit): a prompt-injected reply can carry raw HTML or a
markdown image (`![](http://host/x)`) that phones home the moment it is displayed. Every page
renders agent text through `safe_markdown`, and labels built from names through
`escape_markdown`; both are unit-tested without a browser.

Layers, so that security never depends on parsing markdown exactly like the browser does:
- images: every `![` gets an escaped `!` (everywhere, code included), so no image can load;
- raw HTML: `st.markdown` is never called with `unsafe_allow_html`, and `<` outside code is
  also written as `&lt;`;
- math: `$` outside code is escaped (Streamlit renders `$...$` as LaTeX; prices should not);
- links: only http(s):// and mailto: targets stay links; any other (`data:text/html;base64,`,
  `javascript:`, `vbscript:`, `file:`, relative) has its `]` escaped, so it shows as text;
- invisible characters: bidi overrides and isolates, zero-width spaces, control characters
  become visible escapes (`\\u202e`) through the core's `terminal_text`, as in the exports.
"""

from __future__ import annotations

import re

from groupchat_core import terminal_text

_IMAGE = re.compile(r"(\\*)!\[")
_DOLLAR = re.compile(r"(\\*)\$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_INLINE = re.compile(r"([\\`*_\[\]<$~|]|!(?=\[)|:(?=[A-Za-z]))")
_MD_LINE_START = re.compile(r"^(\s*\d*)([#>+\-=]|(?<=\d)[.)])")
_LINK_END = re.compile(r"(\\*)\]([(:])")  # the `](` of an inline link, the `]:` of a definition
_LINK_TARGET = re.compile(r"[ \t]*(?:\n[ \t]*)?([^\s)]*)")  # blanks and one line end first
_SAFE_TARGET = re.compile(r"https?://|mailto:", re.IGNORECASE)


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


def _inert_links(text: str) -> str:
    """Escape the `]` of every link or link definition whose target is not http(s):// or
    mailto:, so `[x](data:text/html;base64,...)` and `[x]: javascript:...` stay text. An allow
    list, so an entity or escape the browser would decode still fails closed."""

    def fix(match: re.Match[str]) -> str:
        slashes, opener = match.group(1), match.group(2)
        target = _LINK_TARGET.match(text, match.end())
        where = target.group(1).replace("\\", "") if target else ""
        if len(slashes) % 2 or _SAFE_TARGET.match(where):
            return match.group(0)  # an escaped `]` is text already; a web or mail link stays
        return slashes + "\\]" + opener

    return _LINK_END.sub(fix, text)


def safe_markdown(text: str) -> str:
    """Model output as inert markdown: no image loads, no raw HTML, no LaTeX, no link but
    http(s) and mailto, no invisible or control characters; formatting stays."""
    text = terminal_text(text, multiline=True)
    pieces = []
    for is_code, segment in _split_code(text):
        if not is_code:
            segment = segment.replace("<", "&lt;")
            segment = _escape_unescaped(_DOLLAR, segment, "$")
            segment = _inert_links(segment)
        pieces.append(segment)
    return _escape_unescaped(_IMAGE, "".join(pieces), "![")


def escape_markdown(text: str) -> str:
    """A plain label (an agent name, a task) shown literally: one line, nothing interpreted.

    Escapes what starts inline markup (emphasis, code, links, images, HTML, math, strikethrough,
    tables, `:red[...]` directives) and a block marker at the start (heading, quote, list).
    """
    flat = terminal_text(" ".join(str(text).split()))  # bidi and zero-width made visible
    flat = _MD_INLINE.sub(r"\\\1", flat)
    return _MD_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), flat)
