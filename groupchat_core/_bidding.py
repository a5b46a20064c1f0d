"""The pure rules of bidding: the respond tool, the bid prompt and parsing a bid.

Nothing here does I/O, so every rule of docs/engine.md §4–§5 can be tested in isolation. Picking the
speaker (docs/engine.md §6) lives in `_selection.py`.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ._records import UNREADABLE

RESPOND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "respond",
        "description": (
            "Decide whether to reply in the groupchat. Set score 0..1 for how much you want to "
            "speak. If you don't want to speak, set message to empty string."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "score": {
                    "type": "number",
                    "description": (
                        "How much you want to respond (0 = silent, 1 = strongly want to)."
                    ),
                    "minimum": 0,
                    "maximum": 1,
                },
                "message": {
                    "type": "string",
                    "description": (
                        "Your reply to the group, or empty string if you don't want to speak."
                    ),
                },
            },
            "required": ["score", "message"],
        },
    },
}

# The tool_choice that forces a call of RESPOND_TOOL (the first rung of the fallback ladder).
FORCED_RESPOND_CHOICE: dict[str, Any] = {"type": "function", "function": {"name": "respond"}}

# What every bid prompt opens with: the room, its rule and the conversation.
_ROOM_AND_CONVERSATION = """\
You are {agent_name}, taking part in a group conversation with {participants}.

How the floor works: every turn, each participant privately bids for the chance to speak \
next by calling the `respond` function with a score from 0 to 1 and the exact message they \
would post. Only the single highest bid is posted, and only a score above {threshold} can take \
the floor. {recency_rule}

Conversation so far, oldest first:{omitted_note}
{conversation}

The latest message is from {last_speaker}:
{last_message}

"""

DEFAULT_BID_PROMPT = _ROOM_AND_CONVERSATION + """\
Call `respond` now. If you have something worth adding, give a score that reflects how much \
the group needs to hear from you and write your message. Leave the message empty only if you \
do not want to speak."""

# swarms 16.0.3 (2026-10; swarms PR #2141) rewrote the reference's bid prompt: no "silence is
# the default", no "below 0.5 return an empty message"; five assessment steps, calibration
# bands, "do not inflate it to keep the conversation active", "call respond exactly once".
# Written here from that description (docs/engine.md §4, "Bid prompt presets"), with this
# engine's placeholders, so the rules and numbers it states are the room's own.
SWARMS_16_BID_PROMPT = _ROOM_AND_CONVERSATION + """\
Assess the conversation in five steps before you bid:
1. What is the conversation trying to achieve, and where does it stand now?
2. Is the latest message addressed to you, or does it touch what you know?
3. What could you add that has not been said yet?
4. How much would the group lose if you stayed quiet this turn?
5. Score that need on this scale:
   - 0.0: nothing to add
   - 0.1-0.3: a minor point
   - 0.4-0.6: a useful contribution
   - 0.7-0.8: highly relevant
   - 0.9-1.0: urgent
Score what you would add, not how much you want to talk: do not inflate it to keep the \
conversation active.

Call `respond` exactly once, with your score and the message you would post."""

# Named bid prompts (`bid_prompt: swarms-16` in a spec, a sweep grid or the CLI); the first is
# the default. A name is resolved to its text at the edge, so records keep the text sent.
BID_PROMPT_PRESETS: Mapping[str, str] = {
    "swarms-14": DEFAULT_BID_PROMPT,
    "swarms-16": SWARMS_16_BID_PROMPT,
}


def resolve_bid_prompt(value: str) -> str:
    """A preset's name as its template (swarms-14, swarms-16), any other text as given."""
    if isinstance(value, str) and value.strip() in BID_PROMPT_PRESETS:
        return BID_PROMPT_PRESETS[value.strip()]
    return value


def bid_prompt_preset(template: str) -> str | None:
    """The preset a template is, by its exact text (None: a custom template)."""
    return next((name for name, text in BID_PROMPT_PRESETS.items() if text == template), None)


BID_PROMPT_FIELDS: tuple[str, ...] = (
    "agent_name",
    "participants",
    "threshold",
    "recency_penalty",
    "recency_window",
    "recency_rule",
    "conversation",
    "omitted_note",
    "last_speaker",
    "last_message",
    "task",
    "turn",
)


def format_decimal(value: float) -> str:
    """A number as a plain decimal, as the user typed it: 0.35 -> "0.35", 1e-05 -> "0.00001"."""
    text = format(Decimal(repr(float(value))), "f")
    return text if "." in text else text + ".0"


def _placeholder_text(field: str, conversion: str | None, spec: str) -> str:
    """A placeholder as the user wrote it, for error messages."""
    return "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") \
        + "}"


def validate_bid_prompt(template: str) -> str:
    """Accept plain placeholders only, before any model call.

    A format spec (`{turn:>20000000}`) can blow a prompt up to megabytes on every bid, and
    attribute or index access (`{task.__class__}`) reaches into Python objects: neither has a
    use in a prompt, so both are refused, as are conversions, positional and unknown names.
    """
    if not isinstance(template, str) or not template.strip():
        raise ValueError("bid_prompt must be a non-empty string template or a preset name ("
                         + ", ".join(BID_PROMPT_PRESETS) + ").")
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"bid_prompt is not a valid format string: {exc}; write {{{{ and }}}} for literal "
            "braces."
        ) from None
    allowed = ", ".join("{" + f + "}" for f in BID_PROMPT_FIELDS)
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        shown = _placeholder_text(field, conversion, spec or "")
        name = re.split(r"[.\[]", field, maxsplit=1)[0]
        if name in BID_PROMPT_FIELDS and (spec or conversion or name != field):
            what = ("a format spec" if spec else "a conversion" if conversion
                    else "attribute or index access")
            raise ValueError(
                f"bid_prompt placeholder {shown} uses {what}; write the plain {{{name}}} "
                "(placeholders take no formatting)."
            )
        if field not in BID_PROMPT_FIELDS:
            raise ValueError(
                f"bid_prompt has unknown placeholder {shown}; use only {allowed} "
                "(write {{ and }} for literal braces)."
            )
    return template


def recency_rule(recency_penalty: float, recency_window: int) -> str:
    """The recency sentence of the prompt, with the real numbers, or why there is none."""
    if recency_window <= 0 or recency_penalty == 0:
        return "There is no penalty for speaking again."
    who = (
        "the last message" if recency_window == 1 else f"one of the last {recency_window} messages"
    )
    return (
        f"A participant who wrote {who} has {format_decimal(recency_penalty)} "
        "subtracted from their score."
    )


MAX_DESCRIPTION_CHARS = 200  # a roster entry, not a second system prompt


def describe_participant(name: str, description: str = "") -> str:
    """One entry of the {participants} roster: "Bob (a cautious risk analyst)", or the bare
    name when the agent has no description (Agent.description, the reference's
    agent_description)."""
    text = " ".join(description.split())
    if not text:
        return name
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return f"{name} ({text})"


@dataclass(frozen=True)
class PromptRoom:
    """Per-chat values of the prompt that do not change between turns."""

    template: str
    threshold: float
    recency_penalty: float
    recency_window: int


def build_bid_prompt(
    room: PromptRoom,
    *,
    agent_name: str,
    others: Sequence[str],
    conversation: str,
    omitted_note: str,
    last_speaker: str,
    last_message: str,
    task: str,
    turn: int,
) -> str:
    """Fill the (user-replaceable) template for one agent."""
    return room.template.format(
        agent_name=agent_name,
        participants=", ".join(others) if others else "no one else",
        threshold=format_decimal(room.threshold),
        recency_penalty=format_decimal(room.recency_penalty),
        recency_window=room.recency_window,
        recency_rule=recency_rule(room.recency_penalty, room.recency_window),
        conversation=conversation,
        omitted_note=omitted_note,
        last_speaker=last_speaker,
        last_message=last_message,
        task=task,
        turn=turn,
    )


# --- parsing ------------------------------------------------------------------------------


MAX_MESSAGE_CHARS = 20_000
"""Longest message a bid may carry; longer ones are cut (a bid message is one chat turn, and a
hostile or runaway reply must not put megabytes into every later prompt and the store)."""

MAX_TEXT_SCAN_CHARS = 4 * MAX_MESSAGE_CHARS
"""How much of a text reply is searched for a JSON bid."""

# UNREADABLE (imported above) prefixes the error of a reply no score came out of: the note for
# people. Whether a bid was read is its `outcome` field (_records.py), set by the turn loop.


@dataclass(frozen=True)
class ParsedBid:
    """A bid as parsed from a reply; `error` says why it was read as silent or changed.

    `readable` is False when no score could be read from the reply (arguments not JSON, an
    invalid score, no respond call and no JSON bid): such a bid cannot make a turn a lull.
    A clamped score, a missing or cut message are readable.
    """

    score: float
    message: str
    error: str | None = None
    readable: bool = True


def is_unreadable(error: str | None) -> bool:
    """Whether an error text is an unreadable reply's note (a bid's own answer: its outcome)."""
    return bool(error) and str(error).startswith(UNREADABLE)


def parse_score(raw: Any) -> tuple[float, str | None]:
    """docs/engine.md §5 score rules: numbers and numeric strings, finite, clamped into [0, 1]."""
    if isinstance(raw, bool) or raw is None:
        return 0.0, f"invalid score {raw!r}: not a number"
    if isinstance(raw, int | float):
        try:
            value = float(raw)
        except OverflowError:  # a JSON integer too large for a float: not finite
            value = math.inf
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            return 0.0, f"invalid score {raw!r:.80}: not a number"
    else:
        return 0.0, f"invalid score {raw!r:.80}: not a number"
    if not math.isfinite(value):
        return 0.0, f"invalid score {raw!r:.80}: not finite"
    return min(1.0, max(0.0, value)), None


def parse_message(raw: Any) -> tuple[str, str | None]:
    """docs/engine.md §5 message rules: strings stripped, null is empty, numbers via str, else
    invalid; longer than MAX_MESSAGE_CHARS is cut, with a note."""
    if raw is None:
        return "", None
    if isinstance(raw, str):
        # NUL fits no database text type (PostgreSQL rejects it); keep the message, mark the spot
        text = raw.strip().replace("\x00", "\ufffd")
        if len(text) > MAX_MESSAGE_CHARS:
            cut = len(text) - MAX_MESSAGE_CHARS
            return text[:MAX_MESSAGE_CHARS], (
                f"message cut to {MAX_MESSAGE_CHARS:,} characters ({cut:,} characters cut)")
        return text, None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return str(raw), None
    return "", f"invalid message of type {type(raw).__name__}"


def _unreadable(reason: str) -> ParsedBid:
    return ParsedBid(0.0, "", UNREADABLE + reason, readable=False)


def parse_arguments(arguments: Any) -> ParsedBid:
    """Turn the arguments of a respond call (JSON text or dict) into a bid."""
    if isinstance(arguments, str):
        if not arguments.strip():
            return _unreadable("respond arguments are empty")
        try:
            arguments = json.loads(arguments, strict=False)  # raw newlines in a string: read
        except (ValueError, RecursionError) as exc:
            return _unreadable(f"respond arguments are not JSON: {exc}")
    if not isinstance(arguments, Mapping):
        return _unreadable(f"respond arguments are not a JSON object: {arguments!r:.80}")
    score, score_error = parse_score(arguments.get("score"))
    message, message_error = parse_message(arguments.get("message"))
    errors = "; ".join(e for e in (score_error, message_error) if e) or None
    if score_error:
        return ParsedBid(score, message, UNREADABLE + str(errors), readable=False)
    return ParsedBid(score, message, errors)


def parse_tool_calls(tool_calls: Sequence[tuple[str, Any]]) -> ParsedBid | None:
    """Parse the first call named respond; None when there is no such call."""
    for name, arguments in tool_calls:
        if name == "respond":
            return parse_arguments(arguments)
    return None


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in free text that has a score or message key, if any."""
    # strict=False: a raw newline or tab inside a string is read, not refused. Small models
    # under llama.cpp's JSON grammar write them (BENCHMARKS.md, constrained bids: all 5 of 60
    # unreadable constrained bids were objects whose message held a raw newline).
    decoder = json.JSONDecoder(strict=False)
    text = text[:MAX_TEXT_SCAN_CHARS]  # bounded work on a runaway or hostile reply
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and ("score" in value or "message" in value):
            return value
        start = text.find("{", start + 1)
    return None


def parse_text_reply(text: str | None) -> ParsedBid:
    """A reply without a respond call: a JSON object in the text counts, anything else is silent."""
    found = find_json_object(text or "")
    if found is None:
        return _unreadable("reply had no respond call and no JSON bid in its text")
    return parse_arguments(found)
