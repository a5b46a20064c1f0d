"""The Run page's New-run form as one typed value: what Start hands to the chat it builds.

Why: the form's widgets keep their values under loose session-state keys (`run_task`,
`run_roster`, `run_param_<name>`, the Settings page's `stream_bids`). Read in one place, here,
into a RunForm, the rest of the page (logic.start_run, build_chat) takes typed fields instead
of a dict whose keys and types are a convention. Defaults and bounds are not repeated here: a
field left None takes the engine's default, and the engine validates every value. The chat
parameters' fields are generated from the one settings schema (groupchat_core.CHAT_SETTINGS,
those with a form hint), so a new setting is declared once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from groupchat_core import CHAT_SETTINGS, ConfigError

PARAM_PREFIX = "run_param_"
TASK_KEY = "run_task"
ROSTER_KEY = "run_roster"
STREAM_KEY = "stream_bids"  # the Settings page's "Stream bids live" (this session; default on)


PARAMS = tuple(name for name, s in CHAT_SETTINGS.items() if s.form is not None)
"""The chat parameters of the form, each a widget keyed PARAM_PREFIX + name."""


class _RunForm(BaseModel):
    """The New-run form when Start is pressed: the task, the roster in speaking order, whether
    bids stream, and the chat parameters (None: the engine's default; their fields are added
    from the schema below). bid_timeout 0 means none; bid_cache on is the engine's policy, off
    asks every agent afresh; a bid_prompt_preset replaces bid_prompt's text."""

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)

    task: str = ""
    roster: list[str] = Field(default_factory=list)
    stream: bool | None = None  # stream_bids; None: the engine's default

    @classmethod
    def from_values(cls, values: Mapping[str, Any], **fields: Any) -> Self:
        """A form from chat parameter values by name (a preset's, a stored run's, a test's)."""
        data = {**values, **fields}
        if "stream_bids" in data:  # the engine's name for it
            data.setdefault("stream", data.pop("stream_bids"))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the form"
            raise ConfigError(f"run form: {where}: {first['msg']}") from None

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Self:
        """The form as the page's widgets hold it in session state."""
        params = {name: state[PARAM_PREFIX + name] for name in PARAMS
                  if state.get(PARAM_PREFIX + name) is not None}
        return cls.from_values(params, task=str(state.get(TASK_KEY) or ""),
                               roster=list(state.get(ROSTER_KEY) or []),
                               stream=bool(state.get(STREAM_KEY, True)))

    def chat_kwargs(self) -> dict[str, Any]:
        """GroupChat keyword arguments: unset fields dropped, so the engine's defaults apply;
        a blank name dropped (the run is labelled by its task), a blank selector model too (the
        engine's default); bid_timeout 0 is no timeout."""
        params = self.model_dump(include=set(PARAMS), exclude_none=True)
        preset = str(params.pop("bid_prompt_preset", "")).strip()
        if preset:  # the engine resolves the name (an unknown one is its one-line error)
            params["bid_prompt"] = preset
        for text in ("name", "selector_model", "selector_api_base"):  # blank: label / default
            value = str(params.pop(text, "")).strip()
            if value:
                params[text] = value
        if params.get("bid_timeout") == 0:
            params["bid_timeout"] = None
        if "bid_cache" in params:  # on: the engine's own policy (deterministic agents only)
            params["bid_cache"] = None if params["bid_cache"] else False
        if self.stream is not None:
            params["stream_bids"] = self.stream
        return params


if TYPE_CHECKING:
    RunForm = _RunForm
else:  # one optional field per form setting, typed by the schema (None: the engine's default)
    RunForm = create_model("RunForm", __base__=_RunForm, __module__=__name__, **{
        name: (CHAT_SETTINGS[name].kind | None, None) for name in PARAMS})
