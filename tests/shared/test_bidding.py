"""Specification tests for groupchat_core._bidding (docs/engine.md §4, §5, §6).

Private imports (`_bidding`, `engine._selection`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict

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


def _key_orders(value: object) -> list[list[str]]:
    """Key order of every dict in a nested structure, depth first."""
    if isinstance(value, dict):
        out = [list(value.keys())]
        for v in value.values():
            out.extend(_key_orders(v))
        return out
    if isinstance(value, list):
        out = []
        for v in value:
            out.extend(_key_orders(v))
        return out
    return []


def test_respond_tool_equals_spec_json() -> None:
    expected = json.loads(SPEC_RESPOND_TOOL_TEXT)
    assert RESPOND_TOOL == expected


def test_respond_tool_key_order_matches_spec() -> None:
    expected = json.loads(SPEC_RESPOND_TOOL_TEXT)
    assert list(RESPOND_TOOL.keys()) == ["type", "function"]
    assert list(RESPOND_TOOL["function"].keys()) == ["name", "description", "parameters"]
    params = RESPOND_TOOL["function"]["parameters"]
    assert list(params.keys()) == ["type", "properties", "required"]
    assert list(params["properties"].keys()) == ["score", "message"]
    assert list(params["properties"]["score"].keys()) == [
        "type", "description", "minimum", "maximum"]
    assert _key_orders(RESPOND_TOOL) == _key_orders(expected)


def test_respond_tool_serializes_like_spec() -> None:
    # Same keys, same order, same texts, same value types: identical canonical JSON.
    expected = json.loads(SPEC_RESPOND_TOOL_TEXT)
    assert json.dumps(RESPOND_TOOL) == json.dumps(expected)


# --- docs/engine.md §6: selection -----------------------------------------------------------------


def C(agent: str, score: float, message: str = "msg", failed: bool = False,
      unreadable: bool = False) -> Candidate:
    return Candidate(agent=agent, score=score, message=message, failed=failed,
                     unreadable=unreadable)


def test_highest_adjusted_score_wins() -> None:
    sel = select_speaker([C("A", 0.6), C("B", 0.9), C("C", 0.7)], [], 0.5, 0.3)
    assert sel.winner == 1
    assert sel.winning_adjusted == 0.9
    assert sel.reason == "highest_bid"
    assert sel.penalty_changed_winner is False
    assert sel.eligible == (True, True, True)


def test_score_equal_to_threshold_is_not_a_candidate() -> None:
    sel = select_speaker([C("A", 0.5), C("B", 0.5)], [], 0.5, 0.3)
    assert sel.winner is None
    assert sel.eligible == (False, False)
    assert sel.reason == "lull"


def test_score_just_above_threshold_is_a_candidate() -> None:
    sel = select_speaker([C("A", 0.5), C("B", 0.5000001)], [], 0.5, 0.3)
    assert sel.winner == 1
    assert sel.eligible == (False, True)


@pytest.mark.parametrize(("score", "penalty", "threshold"), [(0.9, 0.4, 0.5), (0.8, 0.3, 0.5)])
def test_adjusted_exactly_equal_to_threshold_is_not_a_candidate(
    score: float, penalty: float, threshold: float
) -> None:
    assert score - penalty == threshold  # precondition, computed in floating point
    sel = select_speaker([C("A", score)], ["A"], threshold, penalty)
    assert sel.adjusted == (score - penalty,)
    assert sel.eligible == (False,)
    assert sel.winner is None


def test_float_subtraction_landing_just_above_threshold_is_a_candidate() -> None:
    score, penalty, threshold = 0.9, 0.3, 0.6
    assert score - penalty > threshold  # 0.6000000000000001 in IEEE doubles
    sel = select_speaker([C("A", score), C("B", 0.2)], ["A"], threshold, penalty)
    assert sel.adjusted[0] == score - penalty
    assert sel.eligible == (True, False)
    assert sel.winner == 0
    assert sel.winning_adjusted == score - penalty


def test_float_subtraction_landing_just_below_threshold_is_not_a_candidate() -> None:
    score, penalty, threshold = 0.7, 0.2, 0.5
    assert score - penalty < threshold  # 0.49999999999999994 in IEEE doubles
    sel = select_speaker([C("A", score), C("B", 0.2)], ["A"], threshold, penalty)
    assert sel.adjusted[0] == score - penalty
    assert sel.eligible == (False, False)
    assert sel.winner is None
    assert sel.reason == "lull"


def test_adjusted_is_not_clamped() -> None:
    sel = select_speaker([C("A", 0.1), C("B", 0.0)], ["A"], 0.5, 0.3)
    assert sel.adjusted == (0.1 - 0.3, 0.0)
    assert sel.adjusted[0] < 0


def test_tie_goes_to_earlier_agent_in_list_order() -> None:
    # Names deliberately out of alphabetical order: list position decides, not the name.
    sel = select_speaker([C("zed", 0.3), C("yan", 0.8), C("amy", 0.8)], [], 0.5, 0.3)
    assert sel.winner == 1
    assert sel.reason == "tie_by_order"
    assert sel.winning_adjusted == 0.8
    assert sel.runner_up_adjusted == 0.8
    assert sel.margin == 0.0


def test_tie_after_penalty_goes_to_earlier_agent() -> None:
    assert 1.0 - 0.25 == 0.75  # exact in binary floating point
    sel = select_speaker([C("B", 0.75), C("A", 1.0)], ["A"], 0.5, 0.25)
    assert sel.adjusted == (0.75, 0.75)
    assert sel.winner == 0
    assert sel.reason == "tie_by_order"


def test_ineligible_equal_score_is_not_a_tie() -> None:
    # The later agent has the same adjusted score but an empty message: no tie.
    sel = select_speaker([C("A", 0.8), C("B", 0.8, "")], [], 0.5, 0.3)
    assert sel.winner == 0
    assert sel.reason == "highest_bid"


def test_empty_message_is_skipped_even_with_full_score() -> None:
    sel = select_speaker([C("A", 1.0, ""), C("B", 0.6, "hello")], [], 0.5, 0.3)
    assert sel.eligible == (False, True)
    assert sel.winner == 1
    assert sel.winning_adjusted == 0.6


def test_only_empty_messages_is_a_lull() -> None:
    sel = select_speaker([C("A", 1.0, ""), C("B", 0.9, "")], [], 0.5, 0.3)
    assert sel.winner is None
    assert sel.reason == "lull"
    assert sel.winning_adjusted is None
    assert sel.margin is None


def test_failed_bids_are_skipped() -> None:
    sel = select_speaker([C("A", 0.95, "boom", failed=True), C("B", 0.6)], [], 0.5, 0.3)
    assert sel.eligible == (False, True)
    assert sel.winner == 1


def test_all_failed_is_not_a_lull() -> None:
    sel = select_speaker(
        [C("A", 0.0, "", failed=True), C("B", 0.0, "", failed=True)], [], 0.5, 0.3)
    assert sel.winner is None
    assert sel.reason == "all_failed"


def test_some_failed_rest_silent_is_a_lull() -> None:
    sel = select_speaker([C("A", 0.0, "", failed=True), C("B", 0.2, "")], [], 0.5, 0.3)
    assert sel.winner is None
    assert sel.reason == "lull"


def test_no_bid_above_threshold_is_a_lull() -> None:
    sel = select_speaker([C("A", 0.3), C("B", 0.4)], [], 0.5, 0.3)
    assert sel.winner is None
    assert sel.reason == "lull"
    assert sel.penalty_changed_winner is False


def test_penalty_changes_the_winner() -> None:
    sel = select_speaker([C("A", 0.9), C("B", 0.7)], ["A"], 0.5, 0.3)
    assert sel.penalized == (True, False)
    assert sel.adjusted == (0.9 - 0.3, 0.7)
    assert sel.winner == 1
    assert sel.penalty_changed_winner is True
    assert sel.reason == "penalty_changed_winner"


def test_penalty_that_does_not_change_the_winner() -> None:
    sel = select_speaker([C("A", 0.95), C("B", 0.6)], ["A"], 0.5, 0.3)
    assert sel.winner == 0
    assert sel.winning_adjusted == 0.95 - 0.3
    assert sel.penalty_changed_winner is False
    assert sel.reason == "highest_bid"


def test_penalty_can_cause_a_lull() -> None:
    sel = select_speaker([C("A", 0.7), C("B", 0.4)], ["A"], 0.5, 0.3)
    assert sel.winner is None
    assert sel.reason == "lull"


def test_every_recent_speaker_is_penalized() -> None:
    sel = select_speaker([C("A", 0.9), C("B", 0.85), C("C", 0.6)], ["A", "B"], 0.5, 0.3)
    assert sel.penalized == (True, True, False)
    assert sel.adjusted == (0.9 - 0.3, 0.85 - 0.3, 0.6)
    assert sel.winner == 0


def test_recent_speaker_not_bidding_has_no_effect() -> None:
    sel = select_speaker([C("A", 0.9), C("B", 0.7)], ["Z"], 0.5, 0.3)
    assert sel.penalized == (False, False)
    assert sel.adjusted == (0.9, 0.7)
    assert sel.winner == 0


def test_zero_recency_penalty_leaves_scores_unchanged() -> None:
    sel = select_speaker([C("A", 0.9), C("B", 0.7)], ["A"], 0.5, 0.0)
    assert sel.adjusted == (0.9, 0.7)
    assert sel.winner == 0
    assert sel.penalty_changed_winner is False


def test_empty_recent_list_penalizes_nobody() -> None:
    sel = select_speaker([C("A", 0.9), C("B", 0.7)], [], 0.5, 0.3)
    assert sel.penalized == (False, False)
    assert sel.adjusted == (0.9, 0.7)


def test_runner_up_and_margin() -> None:
    sel = select_speaker([C("A", 0.6), C("B", 0.9), C("C", 0.7)], [], 0.5, 0.3)
    assert sel.winner == 1
    assert sel.runner_up_adjusted == 0.7
    assert sel.margin == 0.9 - 0.7


def test_runner_up_uses_adjusted_scores() -> None:
    sel = select_speaker([C("A", 0.9), C("B", 0.8)], ["A"], 0.5, 0.3)
    assert sel.winner == 1
    assert sel.runner_up_adjusted == 0.9 - 0.3
    assert sel.margin == 0.8 - (0.9 - 0.3)


def test_runner_up_ignores_empty_and_failed_bids() -> None:
    bids = [C("A", 0.9), C("B", 1.0, ""), C("C", 0.95, "x", failed=True)]
    sel = select_speaker(bids, [], 0.5, 0.3)
    assert sel.winner == 0
    assert sel.runner_up_adjusted is None
    assert sel.margin is None


def test_negative_threshold_lets_zero_scores_speak() -> None:
    assert select_speaker([C("A", 0.0)], [], 0.0, 0.3).winner is None
    assert select_speaker([C("A", 0.0)], [], -0.1, 0.3).winner == 0


# --- docs/engine.md §5: parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0.7, 0.7),
        (0, 0.0),
        (1, 1.0),
        ("0.7", 0.7),
        (" 0.7 ", 0.7),
        ("1", 1.0),
        ("1e-1", 0.1),
        (0.0, 0.0),
    ],
)
def test_valid_scores(raw: object, expected: float) -> None:
    score, error = parse_score(raw)
    assert score == expected
    assert isinstance(score, float)
    assert error is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(-0.5, 0.0), (1.5, 1.0), ("2", 1.0), ("-3", 0.0), (1e300, 1.0), (-1e300, 0.0)],
)
def test_scores_are_clamped_without_error(raw: object, expected: float) -> None:
    assert parse_score(raw) == (expected, None)


@pytest.mark.parametrize(
    "raw",
    [True, False, None, [0.5], [], {"v": 1}, "high", "", "0.5 please", "0x10"],
)
def test_invalid_scores_count_as_zero_with_a_reason(raw: object) -> None:
    score, error = parse_score(raw)
    assert score == 0.0
    assert isinstance(error, str) and "score" in error


@pytest.mark.parametrize(
    "raw",
    [float("nan"), float("inf"), float("-inf"), "nan", "inf", "-inf", "NaN", "Infinity", " inf "],
)
def test_non_finite_scores_are_invalid(raw: object) -> None:
    score, error = parse_score(raw)
    assert score == 0.0
    assert isinstance(error, str) and "score" in error


def test_integer_too_large_for_a_float_is_invalid_not_a_crash() -> None:
    huge = "1" + "0" * 400  # valid JSON number; Python parses it as an int
    parsed = parse_arguments('{"score": ' + huge + ', "message": "hi"}')
    assert parsed.score == 0.0
    assert parsed.message == "hi"
    assert parsed.error is not None and "score" in parsed.error


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  hi  ", "hi"),
        ("\n\thi there\n", "hi there"),
        ("", ""),
        ("   ", ""),
        (None, ""),
        (42, "42"),
        (1.5, "1.5"),
    ],
)
def test_valid_messages(raw: object, expected: str) -> None:
    assert parse_message(raw) == (expected, None)


@pytest.mark.parametrize("raw", [True, False, [1], ["hi"], {"text": "hi"}])
def test_invalid_messages_count_as_empty_with_a_reason(raw: object) -> None:
    message, error = parse_message(raw)
    assert message == ""
    assert isinstance(error, str) and "message" in error


def test_arguments_as_json_text() -> None:
    assert parse_arguments('{"score": 0.8, "message": "  Hello  "}') == ParsedBid(0.8, "Hello")


def test_arguments_as_dict_and_mapping() -> None:
    assert parse_arguments({"score": "0.6", "message": "x"}) == ParsedBid(0.6, "x")
    assert parse_arguments(OrderedDict(score=0.6, message="x")) == ParsedBid(0.6, "x")


def test_arguments_record_holds_clamped_score() -> None:
    assert parse_arguments('{"score": 1.5, "message": "x"}') == ParsedBid(1.0, "x")
    assert parse_arguments('{"score": -0.5, "message": "x"}') == ParsedBid(0.0, "x")


def test_missing_message_is_empty_without_error() -> None:
    assert parse_arguments('{"score": 0.4}') == ParsedBid(0.4, "")


def test_missing_score_is_invalid() -> None:
    parsed = parse_arguments('{"message": "hi"}')
    assert parsed.score == 0.0
    assert parsed.message == "hi"
    assert parsed.error is not None and "score" in parsed.error


def test_invalid_score_keeps_valid_message() -> None:
    parsed = parse_arguments({"score": "lots", "message": "hi"})
    assert (parsed.score, parsed.message) == (0.0, "hi")
    assert parsed.error is not None


def test_both_fields_invalid_records_both_reasons() -> None:
    parsed = parse_arguments({"score": True, "message": False})
    assert (parsed.score, parsed.message) == (0.0, "")
    assert parsed.error is not None
    assert "score" in parsed.error and "message" in parsed.error


def test_extra_argument_keys_are_ignored() -> None:
    assert parse_arguments({"score": 0.9, "message": "x", "mood": "keen"}) == ParsedBid(0.9, "x")


@pytest.mark.parametrize(
    "arguments",
    ["not json", "{score: 0.9}", "", "[1,2]", "3", '"text"', "null", "true", [1, 2], 3, None],
)
def test_arguments_that_are_not_an_object_are_silent(arguments: object) -> None:
    parsed = parse_arguments(arguments)
    assert (parsed.score, parsed.message) == (0.0, "")
    assert isinstance(parsed.error, str) and parsed.error


def test_first_respond_call_is_used() -> None:
    parsed = parse_tool_calls([
        ("respond", '{"score": 0.9, "message": "first"}'),
        ("respond", '{"score": 0.1, "message": "second"}'),
    ])
    assert parsed == ParsedBid(0.9, "first")


def test_non_respond_calls_before_respond_are_skipped() -> None:
    parsed = parse_tool_calls([
        ("search", '{"score": 1.0, "message": "not me"}'),
        ("respond", '{"score": 0.7, "message": "me"}'),
    ])
    assert parsed == ParsedBid(0.7, "me")


def test_invalid_first_respond_call_is_not_replaced_by_a_later_one() -> None:
    parsed = parse_tool_calls([
        ("respond", "not json"),
        ("respond", '{"score": 0.7, "message": "later"}'),
    ])
    assert parsed is not None
    assert (parsed.score, parsed.message) == (0.0, "")
    assert parsed.error is not None


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
    assert parse_arguments('{"score": 0.5, "message": "two\tcolumns\nand lines"}') == \
        ParsedBid(0.5, "two\tcolumns\nand lines")


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
    [
        (0.35, "0.35"),
        (0.5, "0.5"),
        (0.3, "0.3"),
        (1, "1.0"),
        (0, "0.0"),
        (1e-05, "0.00001"),
        (0.125, "0.125"),
        (2.5, "2.5"),
    ],
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


def test_default_template_has_no_hard_coded_numbers() -> None:
    assert re.search(r"\d\.\d", DEFAULT_BID_PROMPT) is None
    assert "{threshold}" in DEFAULT_BID_PROMPT


def test_default_prompt_tells_the_agent_everything() -> None:
    prompt = _prompt()
    assert "Alice" in prompt
    assert "Bob" in prompt and "Carol" in prompt
    assert "User: Plan a picnic\nBob: Saturday works for me" in prompt
    assert "Saturday works for me" in prompt
    assert "respond" in prompt


def test_default_prompt_uses_the_actual_threshold() -> None:
    prompt = _prompt(threshold=0.35, penalty=0.25)
    assert "0.35" in prompt
    assert "0.5" not in prompt


@pytest.mark.parametrize("threshold", [0.2, 0.7, 0.05])
def test_default_prompt_threshold_follows_setting(threshold: float) -> None:
    prompt = _prompt(threshold=threshold, penalty=0.25)
    assert format_decimal(threshold) in prompt
    assert "0.5" not in prompt


def test_default_prompt_states_the_penalty_as_a_decimal() -> None:
    prompt = _prompt(threshold=0.6, penalty=0.25, window=1)
    assert "0.25" in prompt
    assert "There is no penalty for speaking again." not in prompt


@pytest.mark.parametrize(("penalty", "window"), [(0.3, 0), (0.0, 1), (0.0, 0)])
def test_no_penalty_sentence(penalty: float, window: int) -> None:
    prompt = _prompt(threshold=0.6, penalty=penalty, window=window)
    assert "There is no penalty for speaking again." in prompt
    assert "subtracted" not in prompt


def test_prompt_fields_hold_exact_values() -> None:
    template = "{threshold}|{recency_penalty}|{recency_window}|{participants}|{last_speaker}|{turn}"
    assert _prompt(0.35, 0.3, 2, template) == "0.35|0.3|2|Bob, Carol|Bob|2"


def test_prompt_does_not_reinterpret_braces_in_the_conversation() -> None:
    text = "use {agent_name} and {} and {{x}}"
    prompt = _prompt(conversation=f"User: {text}", last_message=text)
    assert f"User: {text}" in prompt
    assert prompt.count(text) == 2


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("Hello {bogus}", "{bogus}"),
        ("{agent_name} says {}", "{}"),
        ("{0}", "{0}"),
        ("{threshold:{width}}", "{width}"),
        ("{Agent_Name}", "{Agent_Name}"),
    ],
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


def test_default_template_is_valid() -> None:
    assert validate_bid_prompt(DEFAULT_BID_PROMPT) == DEFAULT_BID_PROMPT


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


def test_a_wrong_message_type_with_a_valid_score_is_read_with_a_note() -> None:
    bid = parse_arguments({"score": 0.3, "message": True})
    assert bid.readable and bid.score == 0.3 and bid.message == ""
    assert bid.error == "invalid message of type bool" and not is_unreadable(bid.error)


def test_prose_without_json_is_unreadable() -> None:
    bid = parse_text_reply("I would love to weigh in on this.")
    assert not bid.readable
    assert bid.error == "unreadable: reply had no respond call and no JSON bid in its text"


def test_a_long_message_is_cut_and_noted_but_read() -> None:
    bid = parse_arguments({"score": 0.9, "message": "m" * (MAX_MESSAGE_CHARS + 5)})
    assert bid.readable and len(bid.message) == MAX_MESSAGE_CHARS
    assert bid.error == "message cut to 20,000 characters (5 characters cut)"


def test_json_search_in_text_is_bounded() -> None:
    late = "x" * (5 * MAX_MESSAGE_CHARS) + '{"score": 0.9, "message": "too late"}'
    assert not parse_text_reply(late).readable
    assert not parse_text_reply('{"a": ' * 5000).readable  # deep nesting: no RecursionError


def test_no_readable_bid_is_not_a_lull() -> None:
    sel = select_speaker([C("A", 0.0, "hi", unreadable=True), C("B", 0.0, "", unreadable=True)],
                         [], 0.5, 0.3)
    assert sel.winner is None and sel.reason == "no_readable_bid"


def test_failed_and_unreadable_bids_are_no_readable_bid() -> None:
    sel = select_speaker([C("A", 0.0, "", failed=True), C("B", 0.0, "", unreadable=True)],
                         [], 0.5, 0.3)
    assert sel.reason == "no_readable_bid"


def test_one_read_silent_bid_among_unreadable_ones_is_a_lull() -> None:
    sel = select_speaker([C("A", 0.0, "", unreadable=True), C("B", 0.2, ""),
                          C("C", 0.0, "", failed=True)], [], 0.5, 0.3)
    assert sel.reason == "lull"


def test_an_unreadable_bid_with_a_message_keeps_its_standing() -> None:
    # An invalid score does not erase a valid message (docs/engine.md §5): with a negative threshold
    # such a bid at 0.0 may still speak; readability only decides lull versus error.
    sel = select_speaker([C("A", 0.0, "still here", unreadable=True), C("B", 0.0, "")],
                         [], -0.5, 0.3)
    assert sel.winner == 0 and sel.reason == "highest_bid"


# --- issue 9 §4: plain placeholders only ---------------------------------------------------


@pytest.mark.parametrize(("template", "shown", "plain"), [
    ("{turn:>20000000}", "{turn:>20000000}", "{turn}"),
    ("Hi {task.__class__.__mro__}", "{task.__class__.__mro__}", "{task}"),
    ("{agent_name[0]}", "{agent_name[0]}", "{agent_name}"),
    ("{task!r}", "{task!r}", "{task}"),
    ("{threshold:.2f}", "{threshold:.2f}", "{threshold}"),
])
def test_placeholders_take_no_formatting(template: str, shown: str, plain: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_bid_prompt(template)
    text = str(info.value)
    assert shown in text and f"write the plain {plain}" in text and "\n" not in text


def test_unknown_attribute_access_names_the_placeholder() -> None:
    with pytest.raises(ValueError, match=re.escape("{nope.x}")):
        validate_bid_prompt("{nope.x}")
