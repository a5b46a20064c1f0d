"""Every chat setting, declared once (issue 40 §4): what it means, how the CLI takes it and how
the dashboard's Run form draws it.

Why: the settings were listed four times (the dashboard's parameter list, its typed form, the
CLI's flags and the form loader) and their help three times, so a new setting needed four edits
and a forgotten one went unnoticed. The dashboard's form fields, labels and help texts, the
CLI's `run` flags and the table in docs/engine.md (§2, "Every chat setting") are built from
CHAT_SETTINGS; a test checks the docs table against `docs_table()`.

Defaults and bounds are not copied here: `default` reads ChatConfig's field (`chat_default`),
`bound` reads _bounds.CHAT_BOUNDS and `choices` the declared choices. This module imports no
pydantic model (the CLI builds its parser from it on every command, `list` included); the
defaults are read when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

from ._bidding import BID_PROMPT_PRESETS
from ._bounds import CHAT_BOUNDS, CHAT_CHOICES, OUTPUT_TYPES, STRATEGIES, Bound

Widget = Literal["text", "number", "select", "textarea", "checkbox"]
Kind = type[str] | type[int] | type[float] | type[bool] | type[list[str]]


@dataclass(frozen=True)
class FormHint:
    """How the Run page's form draws a setting: the widget and its label; `row` groups
    neighbours into columns (`width` is a column's share), `more` puts it under "More
    parameters"; `none_label` names an empty choice (a select whose first option is None)."""

    label: str
    widget: Widget
    row: str | None = None
    width: int = 1
    more: bool = False
    step: float | None = None
    placeholder: str | None = None
    none_label: str | None = None
    height: int | None = None


@dataclass(frozen=True)
class CliFlag:
    """How `groupchat-lab run` takes a setting: `--<name with dashes>` unless `flag` says
    otherwise; the help is "override the spec's <name> (<summary>)" unless `help` is given;
    `at` orders the flags in the parser (and its --help)."""

    at: int
    metavar: str | None = None
    flag: str | None = None
    help: str | None = None
    choices: tuple[str, ...] | None = None  # instead of the setting's own (a preset's name)


@dataclass(frozen=True)
class ChatSetting:
    """One chat setting: its name, value kind, a one-line summary (the docs table, the CLI's
    help), the dashboard's longer help, and how the form and the CLI take it (None: they do
    not). `engine` False: the setting is the dashboard's, not a ChatConfig field."""

    name: str
    kind: Kind
    summary: str
    help: str = ""
    form: FormHint | None = None
    cli: CliFlag | None = None
    engine: bool = True
    choices_none: bool = False  # the choices start with None (the engine's own default)

    @property
    def default(self) -> Any:
        """The engine's default (ChatConfig's field); None for a dashboard-only setting."""
        from ._config import chat_default

        return chat_default(self.name) if self.engine else None

    @property
    def bound(self) -> Bound | None:
        """The documented range (CHAT_BOUNDS), if the setting is a number with one."""
        return CHAT_BOUNDS.get(self.name)

    @property
    def choices(self) -> tuple[Any, ...] | None:
        """The values the setting may take, if it is a choice (None first when empty is one)."""
        found: tuple[Any, ...] | None = _CHOICES.get(self.name)
        if self.name == "selector_tool_choice_mode":
            from ._agent import TOOL_CHOICE_MODES  # a pydantic module: read when asked

            found = TOOL_CHOICE_MODES
        if found is None:
            return None
        return (None, *found) if self.choices_none else found

    @property
    def flag(self) -> str | None:
        """The CLI flag, e.g. '--recency-penalty' (None: not a flag)."""
        if self.cli is None:
            return None
        return self.cli.flag or "--" + self.name.replace("_", "-")

    def cli_help(self) -> str:
        """The flag's --help text."""
        assert self.cli is not None
        if self.cli.help is not None:
            return self.cli.help
        if self.name in CHAT_CHOICES:  # the first choice is the default (_bounds.py)
            return f"override the spec's {self.name} (default {CHAT_CHOICES[self.name][0]})"
        return f"override the spec's {self.name} ({self.summary})"

    def form_help(self, more: str = "") -> str:
        """The form's help text (then `more`, the dashboard's own words), ending in the
        engine's range and default where it has a range (read from the core, not copied)."""
        text = (self.help or self.summary).replace("{default}", str(self.default))
        text = f"{text} {more}" if more else text
        if self.bound is None:
            return text
        return f"{text} Allowed: {self.bound.text()}; the engine's default is {self.default:g}."


_CHOICES: Final[Mapping[str, tuple[Any, ...]]] = MappingProxyType({
    **CHAT_CHOICES,
    "output_type": OUTPUT_TYPES,
    "strategy": STRATEGIES,
    "bid_prompt_preset": tuple(BID_PROMPT_PRESETS),
})

# One line per rule of STRATEGIES (docs/engine.md §16), for the form's help.
RULES: Final[Mapping[str, str]] = MappingProxyType({
    "bidding": "every agent bids and the highest bid above threshold speaks",
    "round_robin": "agents speak in list order",
    "random": "one agent drawn by the seed",
    "selector": "the selector model names the next speaker",
    "bid_then_speak": "agents bid a score only, then the winner writes",
    "all_speak": "every agent speaks once a round, in list order",
    "vote": "every agent answers once, independently; the group's answer is the vote",
})

_S = ChatSetting
_SETTINGS: tuple[ChatSetting, ...] = (
    # The Run form's order: the name, three rows of numbers, who speaks, then "More parameters".
    _S("name", str, "the run's name in lists, charts and exports",
       "Optional. Names this run in the sidebar, the Runs table, Analysis and exports; "
       "left empty, the run is labelled by its task.",
       FormHint("Run name (optional)", "text",
                placeholder="left empty: the run is labelled by its task")),
    _S("max_loops", int, "messages before the chat ends",
       "Hard cap on the total number of messages posted, including the initial user "
       "task. When this many messages have been published the chat stops.",
       FormHint("max_loops", "number", row="room", step=1), CliFlag(5, "N")),
    _S("threshold", float, "a bid must exceed it to speak",
       "Minimum (recency-adjusted) bid a reply must exceed to take the floor. Raise it "
       "for a more selective room; lower it for livelier chatter. A turn where no "
       "agent clears it ends the chat.",
       FormHint("threshold", "number", row="room", step=0.05), CliFlag(2, "X")),
    _S("recency_penalty", float, "taken off a recent speaker's bid",
       "Amount subtracted from the bid of any agent that spoke within the last "
       "recency_window turns, so the floor rotates instead of one agent "
       "monologuing. Set to 0.0 to disable.",
       FormHint("recency_penalty", "number", row="room", step=0.05), CliFlag(3, "X")),
    _S("recency_window", int, "recent messages that are penalised",
       "How many of the most recent speakers are subject to recency_penalty.",
       FormHint("recency_window", "number", row="limits", step=1), CliFlag(4, "N")),
    _S("seed", int, "sim agents' noise",
       "Seed of the simulated (sim/) agents: the same seed replays the same chat.",
       FormHint("seed", "number", row="limits", step=1), CliFlag(6, "N")),
    _S("bid_timeout", float, "seconds one agent's whole bid may take each turn (None: §3)",
       "Seconds; 0 means empty.",
       FormHint("bid_timeout (s)", "number", row="limits", step=1.0)),
    _S("strategy", str, "who speaks each turn (§16)",
       "Who speaks each turn. " + "; ".join(
           f"{name}: {RULES[name]}" if name in RULES else name for name in STRATEGIES)
       + ". The engine's default is {default}; people in the room take "
         "part only under bidding.",
       FormHint("Who speaks", "select", row="who")),
    _S("selector_model", str, "the model the selector strategy asks",
       "The model the selector strategy asks to name the next speaker (any "
       "model an agent could use); other strategies ignore it. Left empty: the "
       "engine's default, {default}.",
       FormHint("Selector model", "text", row="who", width=2,
                placeholder="used by the selector strategy only")),
    _S("description", str, "what the chat is for",
       "What this chat is for; kept with the run's configuration.",
       FormHint("description", "text", more=True)),
    _S("selector_api_base", str, "the selector model's OpenAI-compatible server",
       "The OpenAI-compatible server the selector model is asked on, as an "
       "agent's api_base (e.g. a local llama.cpp server). Empty: the "
       "provider's own endpoint.",
       FormHint("Selector endpoint (api_base)", "text", row="selector", width=2, more=True,
                placeholder="the selector model's provider endpoint")),
    _S("selector_tool_choice_mode", str, "how the selector is asked for its pick",
       "How the selector is asked for its pick, as an agent's "
       "tool-choice mode: json_schema suits a small local model "
       "under a grammar. Empty: a forced respond call.",
       FormHint("Selector tool-choice mode", "select", row="selector", more=True,
                none_label="forced (default)"), choices_none=True),
    _S("output_type", str, "the shape run() returns (§8)",
       "Format of the value run() returns (list, dict, str, final, json, yaml, "
       "xml, ...). The dashboard always shows the full transcript; this is kept in "
       "the run's spec for scripts that re-run it.",
       FormHint("output_type", "select", more=True),
       CliFlag(1, help="override the spec's output_type")),
    _S("idle_timeout", float, "accepted and stored; never ends a chat",
       "Accepted for backward compatibility only. Not used to end the chat.",
       FormHint("idle_timeout (s)", "number", more=True, step=1.0)),
    _S("bid_prompt_preset", str, "a named bid prompt that replaces the template",
       "A named bid prompt that replaces the template below: swarms-14 is "
       "the default prompt (the reference's 14.0.0 rules), swarms-16 the "
       "reference's 16.0.3 prompt (five assessment steps, calibration "
       "bands). Empty: the template below.",
       FormHint("Bid prompt preset", "select", more=True, none_label="the template below"),
       engine=False, choices_none=True),
    _S("bid_prompt", str, "the template every agent bids with, or a preset's name (§4)",
       "The template every agent bids with; placeholders such as {threshold} are "
       "filled with this room's real numbers.",
       FormHint("bid_prompt", "textarea", more=True, height=200),
       CliFlag(8, choices=tuple(BID_PROMPT_PRESETS),
               help="override the spec's bid_prompt with a preset (swarms-14: the "
                    "default; swarms-16: the reference's 16.0.3 prompt)")),
    _S("history", str, "the conversation as one block or typed turns",
       "How a bidder reads the conversation: flattened (the default), one block in "
       "the bid prompt; typed, one message per post (its own as assistant turns, "
       "everyone else's as user turns), the bid instruction last.",
       FormHint("history", "select", row="sees", more=True), CliFlag(9)),
    _S("speaker_names", str, "real names or \"Participant 1..N\" for bidders",
       "shown (the default): bidders read the real names; anonymised: "
       "\"Participant 1..N\" by roster order in everything a bidder reads "
       "(the run keeps the real names).",
       FormHint("speaker_names", "select", row="sees", more=True), CliFlag(10)),
    _S("show_bids", str, "whether a bidder sees the others' latest scores",
       "hidden (the default, as the reference): a bidder never sees another's bid; "
       "shown: the bid prompt lists the other agents' latest scores.",
       FormHint("show_bids", "select", row="sees", more=True), CliFlag(11)),
    _S("show_tally", str, "whether a bidder sees the running vote",
       "hidden (the default); shown: for a task answered by vote, the bid prompt "
       "gives the running vote over each agent's latest stated answer.",
       FormHint("show_tally", "select", row="sees", more=True), CliFlag(12)),
    _S("verbose", bool, "log bids and print each message on the console",
       "Also log bids and print each message on the server's console.",
       FormHint("verbose", "checkbox", more=True)),
    _S("bid_cache", bool, "answer repeated deterministic bids from a cache (§3)",
       "Off by default here, so a live run shows each sim's simulated latency. "
       "On: the engine's default, answering repeated bid "
       "requests of deterministic agents (sim/ models, temperature 0) from this "
       "server's cache: the same results, at once. Off: every agent is asked afresh.",
       FormHint("reuse cached bids", "checkbox", more=True), engine=False),
    # Not in the Run form: the Settings page's toggle, the people panel, code and specs.
    _S("stream_bids", bool, "stream bids so observers watch them form (§3)",
       cli=CliFlag(7, flag="--stream",
                   help="stream bids, printing each candidate's reply as it forms (stderr); "
                        "default: the spec's stream_bids (off)")),
    _S("human_window", float, "seconds a person has to bid each turn",
       cli=CliFlag(13, "S", help="seconds a person has to bid each turn (default 20)")),
    _S("human_post_window", float, "seconds a winning person has to post"),
    _S("selector_top_k", int, "how many top bids a person choosing the speaker sees"),
    _S("batch_concurrency", int, "how many tasks of a batch run at once"),
    _S("auto_equip", bool, "give each agent the respond tool it lacks"),
    _S("distractors", list, "roster entries marked off-topic (recorded, never selected on)"),
)

CHAT_SETTINGS: Final[Mapping[str, ChatSetting]] = MappingProxyType(
    {s.name: s for s in _SETTINGS})

FORM_SETTINGS: Final[tuple[ChatSetting, ...]] = tuple(s for s in _SETTINGS if s.form)
"""The Run form's settings in the order it draws them."""

CLI_SETTINGS: Final[tuple[ChatSetting, ...]] = tuple(
    sorted((s for s in _SETTINGS if s.cli), key=lambda s: s.cli.at if s.cli else 0))
"""`groupchat-lab run`'s chat flags in the parser's order."""

def docs_table() -> str:
    """The table of docs/engine.md §2 "Every chat setting", generated from CHAT_SETTINGS."""
    rows = ["| setting | default | allowed | CLI flag | dashboard | what it is |",
            "|---|---|---|---|---|---|"]
    for s in sorted(_SETTINGS, key=lambda s: s.name):
        default = "(dashboard only)" if not s.engine else _shown(s.default)
        if s.bound is not None:
            allowed = s.bound.text() + (" (integer)" if s.bound.integer else "")
        elif s.choices is not None and len(s.choices) > 8:
            allowed = f"{len(s.choices)} shapes (§8)"
        elif s.choices is not None:
            allowed = ", ".join(_shown(c) for c in s.choices)
        else:
            allowed = ""
        flag = f"`{s.flag}`" if s.flag else ""
        form = f"{s.form.label}" + (" (More parameters)" if s.form.more else "") if s.form else ""
        rows.append(f"| `{s.name}` | {default} | {allowed} | {flag} | {form} | {s.summary} |")
    return "\n".join(rows)


def _shown(value: Any) -> str:
    if isinstance(value, str) and len(value) > 40:
        return "(text, §4)"
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"
