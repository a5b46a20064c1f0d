"""Specification tests for groupchat_core._config and groupchat_core._agent (docs/engine.md §2).

Private imports (`_config`): units or test hooks with no public name; everything public comes from
the public API.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pytest
import yaml

from groupchat_core import (
    RESPOND_TOOL,
    Agent,
    ChatConfig,
    ChatSpec,
    ConfigError,
    dump_spec,
    load_spec,
    load_spec_text,
)
from groupchat_core._config import MAX_SPEC_BYTES, parse_spec
from tests.helpers import ROOT

REFERENCE_DEFAULTS = {
    "name": "dynamic-groupchat",
    "description": "Agents take turns; one speaker per turn.",
    "max_loops": 20,
    "threshold": 0.5,
    "recency_penalty": 0.3,
    "recency_window": 1,
    "idle_timeout": 8.0,
    "output_type": "str-all-except-first",
    "verbose": False,
    "auto_equip": True,
}

SECRET = "sk-test-SECRET-0123456789abcdef"
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


# --- ChatConfig ------------------------------------------------------------------------------


def test_chat_config_defaults_equal_reference_signature() -> None:
    config = ChatConfig()
    for key, value in REFERENCE_DEFAULTS.items():
        got = getattr(config, key)
        assert got == value, key
        assert type(got) is type(value), key


def test_group_chat_signature_defaults_match_config() -> None:
    from groupchat_core import GroupChat

    params = inspect.signature(GroupChat.__init__).parameters
    for key, value in REFERENCE_DEFAULTS.items():
        assert params[key].default == value, key
    assert params["agents"].default is None
    positional = [
        p.name for p in params.values()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name != "self"
    ]
    assert positional == [
        "name", "description", "agents", "max_loops", "threshold", "recency_penalty",
        "recency_window", "idle_timeout", "output_type", "verbose", "auto_equip",
    ]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("max_loops", 0, "0"),
        ("max_loops", -3, "-3"),
        ("max_loops", True, "True"),
        ("max_loops", 1.5, "1.5"),
        ("max_loops", "3", "'3'"),
        ("max_loops", None, "None"),
        ("threshold", float("nan"), "nan"),
        ("threshold", float("inf"), "inf"),
        ("threshold", float("-inf"), "-inf"),
        ("threshold", "x", "'x'"),
        ("threshold", True, "True"),
        ("recency_penalty", float("nan"), "nan"),
        ("recency_penalty", "0.3", "'0.3'"),
        ("recency_window", -1, "-1"),
        ("recency_window", True, "True"),
        ("recency_window", 1.0, "1.0"),
        ("output_type", "bogus", "bogus"),
        ("max_loops", 10_001, "10001"),
        ("max_loops", 10**20, "100000000000000000000"),
        ("recency_window", 10_001, "10001"),
        ("batch_concurrency", 1_001, "1001"),
        ("seed", 2**53 + 1, "9007199254740993"),
        ("seed", 1e20, "1e+20"),
        ("idle_timeout", float("nan"), "nan"),
        ("idle_timeout", -1.0, "-1.0"),
        ("idle_timeout", 86_401.0, "86401.0"),
        ("bid_timeout", float("inf"), "inf"),
        ("bid_timeout", 86_401.0, "86401.0"),
    ],
)
def test_invalid_config_values_name_the_value(field: str, value: object, named: str) -> None:
    with pytest.raises(ValueError) as info:
        ChatConfig(**{field: value})
    message = str(info.value)
    assert field in message
    assert named in message


def test_assignment_is_validated_too() -> None:
    config = ChatConfig()
    with pytest.raises(ValueError, match="nan"):
        config.threshold = float("nan")
    with pytest.raises(ValueError, match="max_loops"):
        config.max_loops = 0
    assert config.threshold == 0.5
    assert config.max_loops == 20


@pytest.mark.parametrize(
    ("field", "value", "stored"),
    [
        ("max_loops", 1, 1),
        ("recency_window", 0, 0),
        ("threshold", 1, 1.0),
        ("threshold", -0.25, -0.25),
        ("threshold", 0.35, 0.35),
        ("recency_penalty", 0, 0.0),
        ("output_type", "basemodel", "basemodel"),
        ("max_loops", 10_000, 10_000),
        ("recency_window", 10_000, 10_000),
        ("batch_concurrency", 1_000, 1_000),
        ("seed", -(2**53), -(2**53)),
        ("idle_timeout", 0.0, 0.0),
        ("bid_timeout", 86_400.0, 86_400.0),
    ],
)
def test_valid_edge_values_are_accepted(field: str, value: object, stored: object) -> None:
    got = getattr(ChatConfig(**{field: value}), field)
    assert got == stored
    assert type(got) is type(stored)


def test_bid_prompt_and_field_names_are_validated() -> None:
    with pytest.raises(ValueError, match="nope"):
        ChatConfig(bid_prompt="Hi {nope}")
    assert ChatConfig(bid_prompt="Hi {agent_name}").bid_prompt == "Hi {agent_name}"
    with pytest.raises(ValueError, match="treshold"):
        ChatConfig(treshold=0.4)  # type: ignore[call-arg]


# --- specs: JSON / YAML round trip -----------------------------------------------------------


def _spec() -> ChatSpec:
    return ChatSpec(
        name="picnic-room",
        description="Plan a picnic.",
        max_loops=7,
        threshold=0.35,
        recency_penalty=0.25,
        recency_window=2,
        output_type="json",
        agents=[
            Agent(agent_name="Alice", system_prompt="You plan food.", model_name="sim/planner",
                  temperature=0.2, max_tokens=256),
            Agent(agent_name="Bob", system_prompt="", model_name="openai/llama-3",
                  api_base="http://127.0.0.1:8000/v1", tools_list_dictionary=[SEARCH_TOOL],
                  timeout=30.0, num_retries=0, litellm_kwargs={"top_p": 0.9}),
        ],
    )


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_spec_round_trip(fmt: str) -> None:
    spec = _spec()
    text = dump_spec(spec, fmt)
    loaded = load_spec_text(text)
    assert loaded == spec
    assert loaded.agents[1].tools_list_dictionary == [SEARCH_TOOL]
    assert loaded.threshold == 0.35
    assert dump_spec(loaded, fmt) == text


def test_spec_layout_is_flat() -> None:
    data = json.loads(dump_spec(_spec(), "json"))
    for key in ("name", "description", "max_loops", "threshold", "recency_penalty",
                "recency_window", "idle_timeout", "output_type", "verbose", "auto_equip",
                "schema_version", "agents"):
        assert key in data, key
    assert data["threshold"] == 0.35
    assert data["max_loops"] == 7
    assert [a["agent_name"] for a in data["agents"]] == ["Alice", "Bob"]
    for key in ("agent_name", "system_prompt", "model_name", "api_base", "temperature"):
        assert key in data["agents"][0], key
    assert data["agents"][1]["api_base"] == "http://127.0.0.1:8000/v1"
    assert yaml.safe_load(dump_spec(_spec(), "yaml")) == data


def test_spec_leaves_out_the_respond_tool_it_re_equips() -> None:
    spec = _spec()
    for agent in spec.agents:
        agent.equip()
    data = json.loads(dump_spec(spec, "json"))
    assert data["agents"][0]["tools_list_dictionary"] == []
    assert data["agents"][1]["tools_list_dictionary"] == [SEARCH_TOOL]


def test_missing_keys_take_defaults() -> None:
    assert load_spec_text("{}") == ChatSpec()
    spec = load_spec_text("threshold: 0.4\nagents:\n  - agent_name: A\n")
    assert spec.threshold == 0.4
    assert spec.max_loops == 20
    assert spec.agents == [Agent(agent_name="A")]
    assert issubclass(ConfigError, ValueError)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"treshold": 0.4}', r"treshold: unknown key \(did you mean 'threshold'\?\)"),
        ("agents:\n  - agent_name: A\n    colour: red\n", "colour"),
        ('{"max_loops": 0}', "max_loops"),
        ("output_type: bogus\n", "output_type"),
        ('{"schema_version": 99}', "schema_version"),
        # not a mapping, malformed, oversized
        *[(text, "") for text in ["[1, 2]", "- a\n- b\n", "just a sentence", "42", "", "null",
                                  '{"name": ', "name: [unclosed\n", "a: b: c\n",
                                  "name: x\n" + "#" * MAX_SPEC_BYTES + "\n"]],
    ],
)
def test_a_bad_spec_is_a_config_error_naming_what(text: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_spec_text(text)


@pytest.mark.parametrize(
    "text",
    [
        f'{{"agents": [{{"agent_name": "A", "api_key": "{SECRET}"}}]}}',
        f"agents:\n  - agent_name: A\n    api_key: {SECRET}\n",
    ],
)
def test_api_key_in_a_spec_is_rejected_without_echoing_it(text: str) -> None:
    with pytest.raises(ConfigError, match="api_key") as info:
        load_spec_text(text)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    "template",
    [
        '!!python/object/apply:os.system ["touch {marker}"]',
        'name: !!python/object/apply:os.system ["touch {marker}"]\n',
        "agents:\n  - !!python/object/apply:os.system ['touch {marker}']\n",
    ],
)
def test_yaml_object_tags_are_rejected_and_never_run(
    template: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pwned"
    ran: list[object] = []
    monkeypatch.setattr(os, "system", lambda *a, **k: ran.append(a) or 0)
    with pytest.raises(ConfigError):
        load_spec_text(template.format(marker=marker))
    assert ran == []
    assert not marker.exists()


def test_load_spec_from_file(tmp_path: Path) -> None:
    path = tmp_path / "room.yaml"
    path.write_text(dump_spec(_spec(), "yaml"), encoding="utf-8")
    assert load_spec(path) == _spec()
    with pytest.raises(ConfigError):
        load_spec(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="toml"):
        dump_spec(_spec(), "toml")


# --- Agent -----------------------------------------------------------------------------------


def test_agent_is_keyword_compatible_with_the_reference() -> None:
    agent = Agent(agent_name="Alice", system_prompt="You plan.", model_name="gpt-4o-mini",
                  max_loops=1, persistent_memory=True)
    assert agent.agent_name == "Alice"
    assert agent.model_name == "gpt-4o-mini"
    assert agent.tools_list_dictionary == []


@pytest.mark.parametrize(
    "kwargs",
    [{"api_key": "x"}, {"OPENAI_API_KEY": "x"}, {"tools": []}, {"tool_choice": "auto"},
     {"messages": []}, {"model": "other"}],
)
def test_litellm_kwargs_cannot_smuggle_keys_or_engine_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError) as info:
        Agent(agent_name="A", litellm_kwargs=kwargs)
    assert next(iter(kwargs)) in str(info.value)


def test_rejected_secrets_are_not_echoed_in_errors() -> None:
    with pytest.raises(ValueError) as info:
        Agent(agent_name="A", litellm_kwargs={"api_key": SECRET})
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError) as info:
        ChatSpec(agents=[{"agent_name": "A", "litellm_kwargs": {"api_key": SECRET}}])
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError) as info:
        ChatSpec(agents=[{"agent_name": "A", "api_key": SECRET}])
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError) as info:
        load_spec_text(f"agents:\n  - agent_name: A\n    litellm_kwargs: {{my_key: {SECRET}}}\n")
    assert SECRET not in str(info.value)


def test_harmless_litellm_kwargs_are_kept() -> None:
    agent = Agent(agent_name="A", litellm_kwargs={"top_p": 0.9, "seed": 3})
    assert agent.litellm_kwargs == {"top_p": 0.9, "seed": 3}


def test_equip_adds_the_respond_tool_once_after_other_tools_never_replacing_one() -> None:
    agent = Agent(agent_name="A", tools_list_dictionary=[SEARCH_TOOL])
    assert not agent.has_respond_tool()
    agent.equip()
    agent.equip()
    assert agent.has_respond_tool()
    assert agent.tools_list_dictionary == [SEARCH_TOOL, RESPOND_TOOL]
    own = {"type": "function", "function": {"name": "respond", "description": "mine"}}
    agent = Agent(agent_name="A", tools_list_dictionary=[own])
    agent.equip()
    assert agent.tools_list_dictionary == [own]


@pytest.mark.parametrize(
    "kwargs",
    [{"agent_name": ""}, {"agent_name": "   "}, {"agent_name": "A", "model_name": " "},
     {"agent_name": "A", "temperature": float("nan")}, {"agent_name": "A", "timeout": 0},
     {"agent_name": "A", "unknown_field": 1}],
)
def test_invalid_agent_fields_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Agent(**kwargs)


def test_a_chat_spec_read_as_an_agents_file_says_so_not_did_you_mean_itself() -> None:
    """`agents import examples/debate.yaml` said "name: unknown key (did you mean 'name'?)"."""
    from groupchat_core import load_agents_text

    text = (ROOT / "examples" / "debate.yaml").read_text()
    with pytest.raises(ConfigError) as caught:
        load_agents_text(text, "debate.yaml")
    message = str(caught.value)
    assert "name: not a key here" in message and "right kind of file" in message
    assert "did you mean 'name'" not in message and "\n" not in message


def test_spec_data_with_litellm_kwargs_credentials_is_rejected_naming_where() -> None:
    """Not only files: spec data from sweeps, bundles or the dashboard goes through ChatSpec
    (the other credential places: tests/shared/test_secrets.py)."""
    with pytest.raises(ConfigError, match="litellm_kwargs") as info:
        parse_spec({"agents": [{"agent_name": "A",
                                "litellm_kwargs": {"aws_session_token": SECRET}}]})
    assert SECRET not in str(info.value) and "aws_session_token" in str(info.value)


def test_every_integer_setting_has_a_documented_maximum() -> None:
    """A new int field without a bound would let 1e20 through again (issue 10 §2)."""
    ints = [name for name, value in ChatConfig().model_dump().items()
            if isinstance(value, int) and not isinstance(value, bool)]
    assert {"max_loops", "recency_window", "batch_concurrency", "seed"} <= set(ints)
    for name in ints:
        with pytest.raises(ValueError, match=f"{name} must be an integer <= .*documented maximum"):
            ChatConfig(**{name: 10**20})
    doc = (ROOT / "docs" / "engine.md").read_text()
    for limit in ("10,000", "2^53", "8 MB", "86,400", "2,147,483,647", "1,000,000"):
        assert limit in doc, limit


def test_every_float_setting_refuses_nan() -> None:
    floats = [name for name, value in ChatConfig().model_dump().items()
              if isinstance(value, float)]
    assert {"threshold", "recency_penalty", "idle_timeout", "bid_timeout"} <= set(floats)
    for name in floats:
        with pytest.raises(ValueError, match=name):
            ChatConfig(**{name: float("nan")})
