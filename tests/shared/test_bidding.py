"""Specification tests for groupchat_core._bidding (docs/engine.md §4, §5, §6).

Private imports (`_bidding`, `engine._selection`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

import pytest

from groupchat_core import DEFAULT_BID_PROMPT, RESPOND_TOOL, format_decimal, select_speaker
from groupchat_core._bidding import (
    MAX_MESSAGE_CHARS,
    ParsedBid,
    PromptRoom,
    build_bid_prompt,
    is_unreadable,
    parse_arguments,
    parse_message,
    parse_score,
    parse_text_reply,
    parse_tool_calls,
    validate_bid_prompt,
)
from groupchat_core.engine._selection import Candidate

# --- docs/engine.md §4: the respond tool ----------------------------------------------------------

# The JSON of docs/engine.md §4, verbatim (split into string pieces only to respect line length).
SPEC_RESPOND_TOOL_TEXT = (
    '{"type": "function",\n'
    ' "function": {\n'
    '  "name": "respond",\n'
    '  "description": "Decide whether to reply in the groupchat. Set score 0..1 for how much '
    "you want to speak. If you don't want to speak, set message to empty string.\",\n"
    '  "parameters": {\n'
    '   "type": "object",\n'
    '   "properties": {\n'
    '    "score": {"type": "number", "description": "How much you want to respond '
    '(0 = silent, 1 = strongly want to).", "minimum": 0, "maximum": 1},\n'
    '    "message": {"type": "string", "description": "Your reply to the group, or empty '
    "string if you don't want to speak.\"}\n"
    "   },\n"
    '   "required": ["score", "message"]}}}\n'
)


def test_respond_tool_is_the_spec_json_with_its_key_order() -> None:
    expected = json.loads(SPEC_RESPOND_TOOL_TEXT)
    assert RESPOND_TOOL == expected
    # Same keys in the same order at every depth, same texts, same value types.
    assert json.dumps(RESPOND_TOOL) == json.dumps(expected)


# --- docs/engine.md §6: selection -----------------------------------------------------------------


def C(agent: str, score: float, message: str = "msg", failed: bool = False,
      unreadable: bool = False) -> Candidate:
    return Candidate(agent=agent, score=score, message=message, failed=failed,
                     unreadable=unreadable)


# name: (bids, recent speakers, threshold, penalty, the Selection's expected fields)
SELECTIONS: dict[str, tuple[list[Candidate], list[str], float, float, dict[str, Any]]] = {
    "highest adjusted score wins": (
        [C("A", 0.6), C("B", 0.9), C("C", 0.7)], [], 0.5, 0.3,
        {"winner": 1, "winning_adjusted": 0.9, "reason": "highest_bid",
         "penalty_changed_winner": False, "eligible": (True, True, True),
         "runner_up_adjusted": 0.7, "margin": 0.9 - 0.7, "penalized": (False,) * 3,
         "adjusted": (0.6, 0.9, 0.7)}),
    "a score equal to the threshold is no candidate": (
        [C("A", 0.5), C("B", 0.5)], [], 0.5, 0.3,
        {"winner": None, "eligible": (False, False), "reason": "lull"}),
    "a score just above the threshold is a candidate": (
        [C("A", 0.5), C("B", 0.5000001)], [], 0.5, 0.3, {"winner": 1, "eligible": (False, True)}),
    "adjusted exactly the threshold is no candidate (0.9-0.4)": (
        [C("A", 0.9)], ["A"], 0.5, 0.4,
        {"adjusted": (0.9 - 0.4,), "eligible": (False,), "winner": None}),
    "adjusted exactly the threshold is no candidate (0.8-0.3)": (
        [C("A", 0.8)], ["A"], 0.5, 0.3,
        {"adjusted": (0.8 - 0.3,), "eligible": (False,), "winner": None}),
    "float subtraction just above the threshold is a candidate": (  # 0.6000000000000001
        [C("A", 0.9), C("B", 0.2)], ["A"], 0.6, 0.3,
        {"adjusted": (0.9 - 0.3, 0.2), "eligible": (True, False), "winner": 0,
         "winning_adjusted": 0.9 - 0.3}),
    "float subtraction just below the threshold is no candidate": (  # 0.49999999999999994
        [C("A", 0.7), C("B", 0.2)], ["A"], 0.5, 0.2,
        {"adjusted": (0.7 - 0.2, 0.2), "eligible": (False, False), "winner": None,
         "reason": "lull"}),
    "adjusted is not clamped": (
        [C("A", 0.1), C("B", 0.0)], ["A"], 0.5, 0.3, {"adjusted": (0.1 - 0.3, 0.0)}),
    "a tie goes to the earlier agent in list order, not by name": (
        [C("zed", 0.3), C("yan", 0.8), C("amy", 0.8)], [], 0.5, 0.3,
        {"winner": 1, "reason": "tie_by_order", "winning_adjusted": 0.8,
         "runner_up_adjusted": 0.8, "margin": 0.0}),
    "a tie after the penalty goes to the earlier agent": (  # 1.0 - 0.25 is exact
        [C("B", 0.75), C("A", 1.0)], ["A"], 0.5, 0.25,
        {"adjusted": (0.75, 0.75), "winner": 0, "reason": "tie_by_order"}),
    "an ineligible equal score is no tie": (
        [C("A", 0.8), C("B", 0.8, "")], [], 0.5, 0.3, {"winner": 0, "reason": "highest_bid"}),
    "an empty message is skipped even with a full score": (
        [C("A", 1.0, ""), C("B", 0.6, "hello")], [], 0.5, 0.3,
        {"eligible": (False, True), "winner": 1, "winning_adjusted": 0.6}),
    "only empty messages is a lull": (
        [C("A", 1.0, ""), C("B", 0.9, "")], [], 0.5, 0.3,
        {"winner": None, "reason": "lull", "winning_adjusted": None, "margin": None}),
    "failed bids are skipped": (
        [C("A", 0.95, "boom", failed=True), C("B", 0.6)], [], 0.5, 0.3,
        {"eligible": (False, True), "winner": 1}),
    "all failed is no lull": (
        [C("A", 0.0, "", failed=True), C("B", 0.0, "", failed=True)], [], 0.5, 0.3,
        {"winner": None, "reason": "all_failed"}),
    "some failed, the rest silent, is a lull": (
        [C("A", 0.0, "", failed=True), C("B", 0.2, "")], [], 0.5, 0.3,
        {"winner": None, "reason": "lull"}),
    "no bid above the threshold is a lull": (
        [C("A", 0.3), C("B", 0.4)], [], 0.5, 0.3,
        {"winner": None, "reason": "lull", "penalty_changed_winner": False}),
    "the penalty changes the winner": (
        [C("A", 0.9), C("B", 0.7)], ["A"], 0.5, 0.3,
        {"penalized": (True, False), "adjusted": (0.9 - 0.3, 0.7), "winner": 1,
         "penalty_changed_winner": True, "reason": "penalty_changed_winner",
         "runner_up_adjusted": 0.9 - 0.3, "margin": 0.7 - (0.9 - 0.3)}),
    "a penalty that does not change the winner": (
        [C("A", 0.95), C("B", 0.6)], ["A"], 0.5, 0.3,
        {"winner": 0, "winning_adjusted": 0.95 - 0.3, "penalty_changed_winner": False,
         "reason": "highest_bid"}),
    "the penalty can cause a lull": (
        [C("A", 0.7), C("B", 0.4)], ["A"], 0.5, 0.3, {"winner": None, "reason": "lull"}),
    "every recent speaker is penalized": (
        [C("A", 0.9), C("B", 0.85), C("C", 0.6)], ["A", "B"], 0.5, 0.3,
        {"penalized": (True, True, False), "adjusted": (0.9 - 0.3, 0.85 - 0.3, 0.6),
         "winner": 0}),
    "a recent speaker not bidding has no effect": (
        [C("A", 0.9), C("B", 0.7)], ["Z"], 0.5, 0.3,
        {"penalized": (False, False), "adjusted": (0.9, 0.7), "winner": 0}),
    "a zero penalty leaves scores unchanged": (
        [C("A", 0.9), C("B", 0.7)], ["A"], 0.5, 0.0,
        {"adjusted": (0.9, 0.7), "winner": 0, "penalty_changed_winner": False}),
    "the runner-up ignores empty and failed bids": (
        [C("A", 0.9), C("B", 1.0, ""), C("C", 0.95, "x", failed=True)], [], 0.5, 0.3,
        {"winner": 0, "runner_up_adjusted": None, "margin": None}),
    "a zero score cannot speak at threshold 0": ([C("A", 0.0)], [], 0.0, 0.3, {"winner": None}),
    "a negative threshold lets a zero score speak": ([C("A", 0.0)], [], -0.1, 0.3, {"winner": 0}),
    # issue 9 §2: readability decides lull versus error
    "no readable bid is no lull": (
        [C("A", 0.0, "hi", unreadable=True), C("B", 0.0, "", unreadable=True)], [], 0.5, 0.3,
        {"winner": None, "reason": "no_readable_bid"}),
    "failed and unreadable bids are no readable bid": (
        [C("A", 0.0, "", failed=True), C("B", 0.0, "", unreadable=True)], [], 0.5, 0.3,
        {"reason": "no_readable_bid"}),
    "one read silent bid among unreadable ones is a lull": (
        [C("A", 0.0, "", unreadable=True), C("B", 0.2, ""), C("C", 0.0, "", failed=True)],
        [], 0.5, 0.3, {"reason": "lull"}),
    # An invalid score does not erase a valid message (docs/engine.md §5): with a negative
    # threshold such a bid at 0.0 may still speak.
    "an unreadable bid with a message keeps its standing": (
        [C("A", 0.0, "still here", unreadable=True), C("B", 0.0, "")], [], -0.5, 0.3,
        {"winner": 0, "reason": "highest_bid"}),
}


@pytest.mark.parametrize(("bids", "recent", "threshold", "penalty", "expected"),
                         list(SELECTIONS.values()), ids=list(SELECTIONS))
def test_selection(bids: list[Candidate], recent: list[str], threshold: float, penalty: float,
                   expected: dict[str, Any]) -> None:
    sel = select_speaker(bids, recent, threshold, penalty)
    assert {key: getattr(sel, key) for key in expected} == expected


def test_the_float_cases_hold_in_ieee_doubles() -> None:
    """The preconditions the boundary cases of SELECTIONS rely on."""
    assert 0.9 - 0.4 == 0.5 and 0.8 - 0.3 == 0.5
    assert 0.9 - 0.3 > 0.6 and 0.7 - 0.2 < 0.5
    assert 0.1 - 0.3 < 0


# --- docs/engine.md §5: parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(0.7, 0.7), (0, 0.0), (1, 1.0), ("0.7", 0.7), (" 0.7 ", 0.7), ("1", 1.0), ("1e-1", 0.1),
     (0.0, 0.0),
     # clamped without an error
     (-0.5, 0.0), (1.5, 1.0), ("2", 1.0), ("-3", 0.0), (1e300, 1.0), (-1e300, 0.0)],
)
def test_valid_scores(raw: object, expected: float) -> None:
    score, error = parse_score(raw)
    assert score == expected
    assert isinstance(score, float)
    assert error is None


@pytest.mark.parametrize(
    "raw",
    [True, False, None, [0.5], [], {"v": 1}, "high", "", "0.5 please", "0x10",
     float("nan"), float("inf"), float("-inf"), "nan", "inf", "-inf", "NaN", "Infinity", " inf "],
)
def test_invalid_and_non_finite_scores_count_as_zero_with_a_reason(raw: object) -> None:
    score, error = parse_score(raw)
    assert score == 0.0
    assert isinstance(error, str) and "score" in error


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("  hi  ", "hi"), ("\n\thi there\n", "hi there"), ("", ""), ("   ", ""), (None, ""),
     (42, "42"), (1.5, "1.5")],
)
def test_valid_messages(raw: object, expected: str) -> None:
    assert parse_message(raw) == (expected, None)


@pytest.mark.parametrize("raw", [True, False, [1], ["hi"], {"text": "hi"}])
def test_invalid_messages_count_as_empty_with_a_reason(raw: object) -> None:
    message, error = parse_message(raw)
    assert message == ""
    assert isinstance(error, str) and "message" in error


@pytest.mark.parametrize(("arguments", "expected"), [
    ('{"score": 0.8, "message": "  Hello  "}', ParsedBid(0.8, "Hello")),
    ({"score": "0.6", "message": "x"}, ParsedBid(0.6, "x")),
    (OrderedDict(score=0.6, message="x"), ParsedBid(0.6, "x")),
    ('{"score": 1.5, "message": "x"}', ParsedBid(1.0, "x")),  # the record holds the clamped score
    ('{"score": -0.5, "message": "x"}', ParsedBid(0.0, "x")),
    ('{"score": 0.4}', ParsedBid(0.4, "")),  # a missing message is empty, without an error
    ({"score": 0.9, "message": "x", "mood": "keen"}, ParsedBid(0.9, "x")),  # extra keys ignored
    ('{"score": 0.5, "message": "two\tcolumns\nand lines"}',  # raw control characters are read
     ParsedBid(0.5, "two\tcolumns\nand lines")),
])
def test_arguments(arguments: object, expected: ParsedBid) -> None:
    assert parse_arguments(arguments) == expected


@pytest.mark.parametrize(("arguments", "message", "errors"), [
    ('{"message": "hi"}', "hi", ["score"]),  # a missing score
    ('{"score": ' + "1" + "0" * 400 + ', "message": "hi"}', "hi", ["score"]),  # int > float
    ({"score": "lots", "message": "hi"}, "hi", ["score"]),  # keeps the valid message
    ({"score": True, "message": False}, "", ["score", "message"]),  # both reasons recorded
])
def test_invalid_scores_in_arguments_are_zero_with_reasons(arguments: object, message: str,
                                                           errors: list[str]) -> None:
    parsed = parse_arguments(arguments)
    assert (parsed.score, parsed.message) == (0.0, message)
    assert parsed.error is not None and all(e in parsed.error for e in errors)


@pytest.mark.parametrize(
    "arguments",
    ["not json", "{score: 0.9}", "", "[1,2]", "3", '"text"', "null", "true", [1, 2], 3, None],
)
def test_arguments_that_are_not_an_object_are_silent(arguments: object) -> None:
    parsed = parse_arguments(arguments)
    assert (parsed.score, parsed.message) == (0.0, "")
    assert isinstance(parsed.error, str) and parsed.error


def test_tool_calls_use_the_first_respond_call() -> None:
    assert parse_tool_calls([
        ("respond", '{"score": 0.9, "message": "first"}'),
        ("respond", '{"score": 0.1, "message": "second"}'),
    ]) == ParsedBid(0.9, "first")
    assert parse_tool_calls([  # other calls before it are skipped
        ("search", '{"score": 1.0, "message": "not me"}'),
        ("respond", '{"score": 0.7, "message": "me"}'),
    ]) == ParsedBid(0.7, "me")
    invalid_first = parse_tool_calls([  # an invalid first call is not replaced by a later one
        ("respond", "not json"),
        ("respond", '{"score": 0.7, "message": "later"}'),
    ])
    assert invalid_first is not None
    assert (invalid_first.score, invalid_first.message) == (0.0, "")
    assert invalid_first.error is not None


@pytest.mark.parametrize(
    "calls", [[], [("search", '{"score": 0.9, "message": "x"}')], [("Respond", "{}")]])
def test_no_respond_call_gives_none(calls: list[tuple[str, object]]) -> None:
    assert parse_tool_calls(calls) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"score": 0.8, "message": "hi"}',
        'Sure! Here is my bid: {"score": 0.8, "message": "hi"} Thanks.',
        '```json\n{"score": 0.8, "message": "hi"}\n```',
        '```\n{\n  "score": "0.8",\n  "message": "  hi "\n}\n```\n',
        'I use {braces} in prose. {"score": 0.8, "message": "hi"}',
    ],
)
def test_text_reply_with_a_json_bid_is_parsed(text: str) -> None:
    assert parse_text_reply(text) == ParsedBid(0.8, "hi")


def test_a_raw_newline_inside_a_json_string_is_read_not_refused() -> None:
    """What SmolLM2 wrote under llama.cpp's JSON grammar (bench.constrained_bids: all 5 of 60
    unreadable constrained bids): a valid object but for raw newlines inside the message."""
    text = '{ "score": 0.2, "message" : "Adopt it? </json object>\n}\n\nYou can do it now:" }'
    assert "\n" in text and "\\n" not in text  # a real newline character, not an escape
    assert parse_text_reply(text) == ParsedBid(0.2, "Adopt it? </json object>\n}\n\nYou can "
                                                    "do it now:")


def test_text_reply_json_follows_the_same_rules() -> None:
    parsed = parse_text_reply('{"score": "high", "message": "hi"}')
    assert (parsed.score, parsed.message) == (0.0, "hi")
    assert parsed.error is not None and "score" in parsed.error
    assert parse_text_reply('{"score": 3, "message": "x"}') == ParsedBid(1.0, "x")


@pytest.mark.parametrize(
    "text",
    [None, "", "I'd really like to speak now.", '{"foo": 1}', "[0.9, \"hi\"]", "{not json}"],
)
def test_other_text_replies_are_silent_with_a_reason(text: str | None) -> None:
    parsed = parse_text_reply(text)
    assert (parsed.score, parsed.message) == (0.0, "")
    assert isinstance(parsed.error, str) and parsed.error


# --- docs/engine.md §4: the bid prompt ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.35, "0.35"), (0.5, "0.5"), (0.3, "0.3"), (1, "1.0"), (0, "0.0"), (1e-05, "0.00001"),
     (0.125, "0.125"), (2.5, "2.5")],
)
def test_format_decimal(value: float, text: str) -> None:
    assert format_decimal(value) == text


def _prompt(
    threshold: float = 0.35,
    penalty: float = 0.25,
    window: int = 1,
    template: str = DEFAULT_BID_PROMPT,
    **overrides: object,
) -> str:
    kwargs: dict[str, object] = {
        "agent_name": "Alice",
        "others": ["Bob", "Carol"],
        "conversation": "User: Plan a picnic\nBob: Saturday works for me",
        "omitted_note": "",
        "last_speaker": "Bob",
        "last_message": "Saturday works for me",
        "task": "Plan a picnic",
        "turn": 2,
    }
    kwargs.update(overrides)
    room = PromptRoom(template, threshold, penalty, window)
    return build_bid_prompt(room, **kwargs)  # type: ignore[arg-type]


def test_default_template_is_valid_with_no_hard_coded_numbers() -> None:
    assert re.search(r"\d\.\d", DEFAULT_BID_PROMPT) is None
    assert "{threshold}" in DEFAULT_BID_PROMPT
    assert validate_bid_prompt(DEFAULT_BID_PROMPT) == DEFAULT_BID_PROMPT


def test_default_prompt_tells_the_agent_everything() -> None:
    prompt = _prompt(threshold=0.35, penalty=0.25)
    assert "Alice" in prompt
    assert "Bob" in prompt and "Carol" in prompt
    assert "User: Plan a picnic\nBob: Saturday works for me" in prompt
    assert "respond" in prompt
    assert "0.35" in prompt and "0.5" not in prompt  # the actual threshold
    assert "0.25" in prompt  # the penalty, as a decimal
    assert "There is no penalty for speaking again." not in prompt


@pytest.mark.parametrize("threshold", [0.2, 0.7, 0.05])
def test_default_prompt_threshold_follows_setting(threshold: float) -> None:
    prompt = _prompt(threshold=threshold, penalty=0.25)
    assert format_decimal(threshold) in prompt
    assert "0.5" not in prompt


@pytest.mark.parametrize(("penalty", "window"), [(0.3, 0), (0.0, 1), (0.0, 0)])
def test_no_penalty_sentence(penalty: float, window: int) -> None:
    prompt = _prompt(threshold=0.6, penalty=penalty, window=window)
    assert "There is no penalty for speaking again." in prompt
    assert "subtracted" not in prompt


def test_prompt_fields_hold_exact_values_and_keep_braces_in_the_conversation() -> None:
    template = "{threshold}|{recency_penalty}|{recency_window}|{participants}|{last_speaker}|{turn}"
    assert _prompt(0.35, 0.3, 2, template) == "0.35|0.3|2|Bob, Carol|Bob|2"
    text = "use {agent_name} and {} and {{x}}"
    prompt = _prompt(conversation=f"User: {text}", last_message=text)
    assert f"User: {text}" in prompt
    assert prompt.count(text) == 2


@pytest.mark.parametrize(
    ("template", "named"),
    [("Hello {bogus}", "{bogus}"), ("{agent_name} says {}", "{}"), ("{0}", "{0}"),
     ("{threshold:{width}}", "{width}"), ("{Agent_Name}", "{Agent_Name}"),
     ("{nope.x}", "{nope.x}")],
)
def test_validate_rejects_unknown_placeholders(template: str, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        validate_bid_prompt(template)


@pytest.mark.parametrize("template", ["", "   ", "{agent_name", "agent_name}"])
def test_validate_rejects_empty_or_malformed(template: str) -> None:
    with pytest.raises(ValueError):
        validate_bid_prompt(template)


def test_validate_accepts_literal_braces() -> None:
    template = 'Reply as {{"score": x, "message": y}}, {agent_name}. Threshold {threshold}.'
    assert validate_bid_prompt(template) == template
    prompt = _prompt(threshold=0.35, template=template)
    assert prompt == 'Reply as {"score": x, "message": y}, Alice. Threshold 0.35.'


# --- issue 9 §2: readable and unreadable bids ---------------------------------------------


@pytest.mark.parametrize("arguments", [
    '{"score": 0.8, "message": "We should bo',  # truncated by max_tokens
    "",  # empty arguments
    "   ",
    '{"score": NaN, "message": "hi"}',
    '{"score": Infinity, "message": "hi"}',
    '{"score": 1e999, "message": "hi"}',
    '{"score": "very high", "message": "hi"}',
    '{"message": "no score"}',
    "[0.9]",
])
def test_replies_without_a_readable_score_are_unreadable(arguments: str) -> None:
    bid = parse_arguments(arguments)
    assert not bid.readable and bid.score == 0.0
    assert bid.error is not None and bid.error.startswith("unreadable: ")
    assert is_unreadable(bid.error)


@pytest.mark.parametrize(("arguments", "score", "message"), [
    ('{"score": 7, "message": "clamped"}', 1.0, "clamped"),
    ('{"score": -2, "message": ""}', 0.0, ""),
    ('{"score": 0.4}', 0.4, ""),  # a missing message with a valid score: silent, read
    ('{"score": "0.6", "message": null}', 0.6, ""),
])
def test_clamped_scores_and_missing_messages_are_read(arguments: str, score: float,
                                                      message: str) -> None:
    bid = parse_arguments(arguments)
    assert (bid.readable, bid.score, bid.message, bid.error) == (True, score, message, None)


def test_notes_that_leave_a_bid_readable() -> None:
    wrong_type = parse_arguments({"score": 0.3, "message": True})
    assert wrong_type.readable and wrong_type.score == 0.3 and wrong_type.message == ""
    assert wrong_type.error == "invalid message of type bool"
    assert not is_unreadable(wrong_type.error)
    long = parse_arguments({"score": 0.9, "message": "m" * (MAX_MESSAGE_CHARS + 5)})
    assert long.readable and len(long.message) == MAX_MESSAGE_CHARS
    assert long.error == "message cut to 20,000 characters (5 characters cut)"


def test_text_replies_without_a_findable_json_bid_are_unreadable() -> None:
    bid = parse_text_reply("I would love to weigh in on this.")
    assert not bid.readable
    assert bid.error == "unreadable: reply had no respond call and no JSON bid in its text"
    late = "x" * (5 * MAX_MESSAGE_CHARS) + '{"score": 0.9, "message": "too late"}'
    assert not parse_text_reply(late).readable  # the search is bounded
    assert not parse_text_reply('{"a": ' * 5000).readable  # deep nesting: no RecursionError


# --- issue 9 §4: plain placeholders only ---------------------------------------------------


@pytest.mark.parametrize(("template", "plain"), [
    ("{turn:>20000000}", "{turn}"),
    ("Hi {task.__class__.__mro__}", "{task}"),
    ("{agent_name[0]}", "{agent_name}"),
    ("{task!r}", "{task}"),
    ("{threshold:.2f}", "{threshold}"),
])
def test_placeholders_take_no_formatting(template: str, plain: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_bid_prompt(template)
    text = str(info.value)
    shown = template.removeprefix("Hi ")
    assert shown in text and f"write the plain {plain}" in text and "\n" not in text
