"""Untrusted text stays inert: what safe_markdown and escape_markdown produce, checked by parsing
it with a CommonMark parser (markdown-it, HTML enabled: stricter than Streamlit's renderer). Links
other than http(s) and mailto stay text, and invisible characters (bidi overrides, zero-width)
show as the exports show them (issue 44, 4a and 4b)."""

from __future__ import annotations

import html
import itertools
import re

import pytest
from markdown_it import MarkdownIt

from groupchat_core import mask_secrets, terminal_text, transcript_markdown
from groupchat_ui.kit.safety import escape_markdown, safe_markdown

MD = MarkdownIt("commonmark").enable("strikethrough")
TRUSTING = MarkdownIt("commonmark")
TRUSTING.validateLink = lambda url: True  # type: ignore[method-assign]  # a renderer that trusts any


def tokens(text: str) -> list[str]:
    """Every token type, inline children included."""
    out = []
    for token in MD.parse(text):
        out.append(token.type)
        out.extend(child.type for child in token.children or [])
    return out


def assert_inert(source: str) -> str:
    rendered = safe_markdown(source)
    kinds = tokens(rendered)
    assert "image" not in kinds, (source, rendered)
    assert "html_inline" not in kinds and "html_block" not in kinds, (source, rendered)
    assert "<img" not in MD.render(rendered)
    return rendered


ATTACKS = [
    "![](http://attacker.example/pixel.png)",
    "Look: ![tracking pixel](http://127.0.0.1:9/x.png \"title\") and more",
    "![ref image][r]\n\n[r]: http://attacker.example/r.png",
    "![shortcut]\n\n[shortcut]: http://attacker.example/s.png",
    "[![nested](http://attacker.example/n.png)](http://attacker.example/link)",
    "\\![already escaped](http://a/e.png)",
    "\\\\![escaped backslash, live image](http://a/b.png)",
    "<img src=http://attacker.example/raw.png>",
    "<p onclick=alert(1)>hi</p>",
    "<script>alert(1)</script>",
    "text\n\n<div>\n<img src=http://a/block.png>\n</div>",
    "```\ncode ![in](http://a/code.png) <img src=x>\n```\n![after](http://a/after.png)",
    "`code` ![x](http://a/x.png) `more`",
    "lone ` backtick ![x](http://a/x.png)",
    "<x y=\"`\">![x](http://a/prec.png)`\"",
    "~~~\nunclosed fence ![x](http://a/u.png)",
]


@pytest.mark.parametrize("source", ATTACKS)
def test_safe_markdown_never_loads_an_image_or_renders_html(source: str):
    assert_inert(source)


def test_safe_markdown_inertness_holds_for_combinations_of_tricky_pieces():
    pieces = ["![a](http://h/i.png)", "`", "``", "\\", "<img src=x>", "```\n", "\n", "[r]: u",
              "![b][r]", "$", "<"]
    for combo in itertools.product(pieces, repeat=3):
        assert_inert("".join(combo))


def test_safe_markdown_keeps_ordinary_formatting_and_code_links_in_code_too():
    text = "**Bold** and _italic_, a [link](https://example.org), a list:\n\n- one\n- two"
    assert safe_markdown(text) == text
    assert safe_markdown("use `a<b` here") == "use `a<b` here"  # code is literal anyway
    fenced = "```python\nif a < b:\n    print('$x')\n```"
    assert safe_markdown(fenced) == fenced
    assert safe_markdown(42) == "42"  # type: ignore[arg-type]
    in_code = "`[x](javascript:alert(1))`\n\n```\n[y](data:x)\n```"  # a link in code: as written
    assert safe_markdown(in_code) == in_code


def test_safe_markdown_escapes_math_and_html_outside_code():
    assert safe_markdown("costs $5 and $6") == "costs \\$5 and \\$6"
    assert safe_markdown("\\$5") == "\\$5"  # already escaped: left alone
    assert safe_markdown("a <b>bold</b> tag") == "a &lt;b>bold&lt;/b> tag"
    rendered = MD.render(safe_markdown("a <b>bold</b>"))
    assert "&lt;b&gt;bold&lt;/b&gt;" in rendered  # shown as text, not as markup


@pytest.mark.parametrize("label", [
    "**Bob**", "[x](http://y)", ":red[alarm]", "![i](http://h/i.png)", "<b>hi</b>", "$x$",
    "~~gone~~", "a|b", "# Heading", "1. first", "- item", "> quote", "snake_case_name",
    "`code`", "back\\slash",
])
def test_escape_markdown_shows_a_label_literally(label: str):
    escaped = escape_markdown(label)
    rendered = MD.renderInline(escaped) if not escaped.startswith("\\") else MD.render(escaped)
    assert not re.search(r"<(?!/?p>)[a-z]", rendered), (label, escaped, rendered)
    assert html.unescape(re.sub(r"</?p>\n?", "", rendered)).strip() == label


def test_escape_markdown_flattens_to_one_line():
    assert escape_markdown("two\nlines\t here") == "two lines here"


def test_the_dashboard_masks_with_the_engines_one_function_longest_first():
    secrets = ["key-abcdefgh", "key-abcdefgh-longer"]
    assert mask_secrets("k key-abcdefgh-longer and key-abcdefgh", secrets) == "k *** and ***"
    assert mask_secrets(None, secrets) == ""
    # one minimum length (8) everywhere: shorter values are no keys, masking them mauls text
    assert mask_secrets("tiny a key1234", ["a", "", "key1234"]) == "tiny a key1234"


def link_targets(text: str) -> list[str]:
    """Every href a renderer would make of `text` (links and their definitions)."""
    found = []
    for token in TRUSTING.parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs.get("href", "")))
    return found


BAD = [
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](javascript:alert(1))",
    "[x](JavaScript:alert(1))",
    "[x](vbscript:msgbox)",
    "[x](file:///etc/passwd)",
    "[x]( \n data:text/html,hi)",
    "[x](\\data:text/html,hi)",
    "[x](&#106;avascript:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[ref][r]\n\n[r]: data:text/html;base64,PHNjcmlwdD4=",
    "[r]\n\n[r]:\n  javascript:alert(1)",
    "[`code` text](data:text/html,hi)",
    "[x](relative/path)",
]


@pytest.mark.parametrize("source", BAD)
def test_a_link_that_is_not_web_or_mail_shows_as_text(source: str):
    assert link_targets(source), "the attack is a real link before safe_markdown"
    assert link_targets(safe_markdown(source)) == [], safe_markdown(source)


@pytest.mark.parametrize("source", [
    "[site](https://example.org/a?b=1)", "[site](HTTP://example.org)",
    "[mail me](mailto:someone@example.org)", "[r]\n\n[r]: https://example.org",
])
def test_web_and_mail_links_stay_links(source: str):
    assert link_targets(safe_markdown(source)) == link_targets(source) != []


INVISIBLE = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
             "\u2069", "\u200b", "\u200e", "\u200f", "\u2060", "\ufeff"]


@pytest.mark.parametrize("char", INVISIBLE)
def test_bidi_and_zero_width_characters_show_as_the_export_shows_them(char: str):
    text = f"pay {char}1000 to alice"
    shown = safe_markdown(text)
    assert char not in shown
    assert f"\\u{ord(char):04x}" in shown
    assert terminal_text(text, multiline=True) in shown  # the exports' own function
    assert char not in escape_markdown(text) and f"\\u{ord(char):04x}" in escape_markdown(text)


def test_the_page_and_the_markdown_export_escape_the_same_characters(sqlite_store):
    from groupchat_core import Agent, GroupChat
    from groupchat_core.testing import ScriptedBids

    body = "a\u202eb\u200bc\u2066d \u200d joiner kept"
    fake = ScriptedBids({"A": [(0.9, body), (0.1, "")], "B": [(0.2, ""), (0.1, "")]})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in "AB"],
                     max_loops=3, providers=fake.providers)
    sqlite_store.attach(chat)
    chat.run("t")
    exported = transcript_markdown(sqlite_store, chat.last_run.run_id)
    shown = "a\\u202eb\\u200bc\\u2066d \u200d joiner kept"  # ZWJ kept: emoji need it
    assert shown in exported
    assert shown in safe_markdown(body)
