"""Model output in the dashboard: links other than http(s) and mailto stay text, and invisible
characters (bidi overrides, zero-width) show as the exports show them (issue 44, 4a and 4b).
Checked by parsing safe_markdown's output with a CommonMark parser, as tests/ui/test_components.py
does."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from groupchat_core import terminal_text, transcript_markdown
from groupchat_ui.kit.safety import escape_markdown, safe_markdown

MD = MarkdownIt("commonmark")
MD.validateLink = lambda url: True  # type: ignore[method-assign]  # a renderer that trusts any


def link_targets(text: str) -> list[str]:
    """Every href a renderer would make of `text` (links and their definitions)."""
    found = []
    for token in MD.parse(text):
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


def test_a_link_in_code_is_left_as_written():
    text = "`[x](javascript:alert(1))`\n\n```\n[y](data:x)\n```"
    assert safe_markdown(text) == text


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
