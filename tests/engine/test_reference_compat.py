"""Code written for the reference runs with only its import changed (issue 9, §6): its examples
as written (but the import and a sim `model_name`); its Agent keywords mapped or warned once.
Private imports (`_agent`, `_bidding`): units with no public name."""

from __future__ import annotations

import json
import pickle
import warnings

import pytest
from pydantic import SecretStr

from groupchat_core import RESPOND_TOOL, Agent, ConfigError, GroupChat, dump_spec, load_spec_text
from groupchat_core._agent import (
    REFERENCE_ALIASES,
    REFERENCE_IGNORED,
    ReferenceCompatibilityWarning,
)
from groupchat_core._bidding import describe_participant
from tests.helpers import ROOT

MODELS = ["sim/balanced", "sim/eager"]


def _warned(record: pytest.WarningsRecorder) -> list[str]:
    """The keyword each ReferenceCompatibilityWarning names, in order."""
    names = []
    for w in record:
        if issubclass(w.category, ReferenceCompatibilityWarning):
            names.append(str(w.message).split("(", 1)[1].split("=", 1)[0])
    return names


# --- the reference's own examples (groupchat-reference-docs.md), only the import changed ------


@pytest.mark.parametrize("model", MODELS)
def test_reference_basic_example_runs_unchanged(model: str) -> None:
    optimist = Agent(
        agent_name="Optimist",
        system_prompt="You argue for the benefits.",
        model_name=model,
        max_loops=1,
        persistent_memory=False,
    )
    pessimist = Agent(
        agent_name="Pessimist",
        system_prompt="You argue for the risks.",
        model_name=model,
        max_loops=1,
        persistent_memory=False,
    )
    realist = Agent(
        agent_name="Realist",
        system_prompt="You seek a balanced analysis.",
        model_name=model,
        max_loops=1,
        persistent_memory=False,
    )

    chat = GroupChat(
        agents=[optimist, pessimist, realist],
        max_loops=10,      # stop after 10 total messages
        threshold=0.5,     # only the single highest bid above 0.5 wins each turn
    )

    result = chat.run("Should we adopt AI for medical diagnosis?")
    print(result)

    record = chat.last_run
    assert isinstance(result, str) and record is not None
    assert record.stop_reason in ("lull", "max_loops") and len(record.messages) >= 2
    assert all(a.has_respond_tool() for a in (optimist, pessimist, realist))  # auto_equip

    # "A more selective room", reusing the same agents
    chat = GroupChat(
        agents=[optimist, pessimist, realist],
        max_loops=20,
        threshold=0.7,
        recency_penalty=0.4,
        recency_window=2,
    )

    result = chat.run("Design the architecture for a real-time fraud-detection system.")
    assert isinstance(result, str) and chat.last_run is not None
    assert chat.last_run.stop_reason in ("lull", "max_loops")


@pytest.mark.parametrize("model", MODELS)
def test_reference_equipping_the_tool_yourself_runs_unchanged(model: str) -> None:
    agents = [
        Agent(
            agent_name=name,
            system_prompt=prompt,
            model_name=model,
            max_loops=1,
            persistent_memory=False,
            tools_list_dictionary=[RESPOND_TOOL],
        )
        for name, prompt in [
            ("Researcher", "You contribute research and evidence."),
            ("Critic", "You stress-test claims and find weaknesses."),
        ]
    ]

    chat = GroupChat(agents=agents, auto_equip=False, max_loops=8)
    result = chat.run("Discuss the tradeoffs of autonomous multi-agent systems.")
    assert isinstance(result, str) and chat.last_run is not None
    assert [len(a.tools_list_dictionary) for a in agents] == [1, 1]


@pytest.mark.parametrize("model", MODELS)
def test_readme_basic_example_runs_unchanged(model: str) -> None:
    optimist = Agent(agent_name="Optimist", system_prompt="You argue for the benefits.",
                     model_name=model, max_loops=1, persistent_memory=False)
    pessimist = Agent(agent_name="Pessimist", system_prompt="You argue for the risks.",
                      model_name=model, max_loops=1, persistent_memory=False)
    realist = Agent(agent_name="Realist", system_prompt="You seek a balanced analysis.",
                    model_name=model, max_loops=1, persistent_memory=False)

    chat = GroupChat(agents=[optimist, pessimist, realist], max_loops=10, threshold=0.5)
    print(chat.run("Should we adopt AI for medical diagnosis?"))
    record = chat.last_run            # typed record: messages, bids, turns, stop_reason, totals
    print(record.bids_frame())        # the bid log as a pandas DataFrame
    assert len(record.bids_frame()) == len(record.bids) > 0
    # offline and reproducible: every bid simulated, and the same transcript again, as "all" gives
    assert all(b.path == "simulation" for b in record.bids)
    again = GroupChat(agents=[optimist, pessimist, realist], max_loops=10, threshold=0.5)
    assert again.run("Should we adopt AI for medical diagnosis?") == "\n\n".join(
        f"{m.role}: {m.content}" for m in record.messages[1:])


# --- the reference's examples that pass its other Agent keywords -------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_reference_investment_example_with_extra_keywords_runs(model: str) -> None:
    """The reference's groupchat_example.py: description, autosave, dashboard, verbose,
    dynamic_temperature_enabled, user_name, retry_attempts, context_length."""
    with pytest.warns(ReferenceCompatibilityWarning) as record:
        agent1 = Agent(
            agent_name="Financial-Analysis-Agent",
            description="You are a financial analyst specializing in investment strategies.",
            model_name=model,
            max_loops=1,
            persistent_memory=False,
            autosave=False,
            dashboard=False,
            verbose=True,
            dynamic_temperature_enabled=True,
            user_name="swarms_corp",
            retry_attempts=1,
            context_length=200000,
            max_tokens=15000,
            tools_list_dictionary=[RESPOND_TOOL],
        )

        agent2 = Agent(
            agent_name="Tax-Adviser-Agent",
            description="You are a tax adviser who provides clear and concise guidance on "
                        "tax-related queries.",
            model_name=model,
            max_loops=1,
            persistent_memory=False,
            autosave=False,
            dashboard=False,
            verbose=True,
            dynamic_temperature_enabled=True,
            user_name="swarms_corp",
            retry_attempts=1,
            context_length=200000,
            max_tokens=15000,
            tools_list_dictionary=[RESPOND_TOOL],
        )
    ignored = ["autosave", "dashboard", "verbose", "dynamic_temperature_enabled", "user_name"]
    assert sorted(_warned(record)) == sorted(ignored * 2)  # one warning per keyword per Agent
    assert (agent1.num_retries, agent1.context_window) == (1, 200000)
    assert agent2.description.startswith("You are a tax adviser")

    agents = [agent1, agent2]

    chat = GroupChat(
        name="Investment Advisory",
        description="Financial and tax analysis group",
        agents=agents,
        max_loops=12,
        threshold=0.5,
        idle_timeout=10.0,
        output_type="all",
    )

    history = chat.run(
        "What are the best Japanese business methodologies to take over a market say like "
        "minerals and mining?. I need a 4,000 word report. Work together to write the report."
    )
    print(history)
    assert chat.last_run is not None and chat.last_run.stop_reason in ("lull", "max_loops")


@pytest.mark.parametrize("model", MODELS)
def test_reference_streaming_example_with_agent_output_type_runs(model: str) -> None:
    """The reference's dynamic/streaming examples pass output_type="final" to each Agent."""
    chunks: list[tuple[str, str, bool]] = []

    def streaming_callback(sender: str, content: str, is_final: bool) -> None:
        chunks.append((sender, content, is_final))

    with pytest.warns(ReferenceCompatibilityWarning, match=r"output_type.*GroupChat"):
        a1 = Agent(
            agent_name="Researcher",
            system_prompt="You are a research-minded agent who values evidence.",
            model_name=model,
            max_loops=1,
            persistent_memory=False,
            tools_list_dictionary=[RESPOND_TOOL],
            output_type="final",
        )
    with pytest.warns(ReferenceCompatibilityWarning):
        a2 = Agent(
            agent_name="Skeptic",
            system_prompt="You push back on weak claims and ask sharp questions.",
            model_name=model,
            max_loops=1,
            tools_list_dictionary=[RESPOND_TOOL],
            persistent_memory=False,
            output_type="final",
        )

    chat = GroupChat(
        agents=[a1, a2],
        max_loops=4,
        threshold=0.6,
        output_type="dict",
        auto_equip=False,
    )

    result = chat.run(
        "Should we use vector databases or knowledge graphs for agent memory?",
        streaming_callback=streaming_callback,
    )

    print(json.dumps(result, indent=4))
    assert chunks and chunks[0][0] == "User" and any(final for *_, final in chunks)


# --- every keyword: mapped, warned, or a ConfigError ------------------------------------------


@pytest.mark.parametrize("name", sorted(REFERENCE_IGNORED))
def test_each_ignored_keyword_is_accepted_with_one_clear_warning(name: str) -> None:
    with pytest.warns(ReferenceCompatibilityWarning) as record:
        agent = Agent(agent_name="A", **{name: True})
    assert _warned(record) == [name]
    message = str(record[0].message)
    assert f"Agent({name}=...)" in message and "no effect here" in message
    assert record[0].filename == __file__  # points at the caller's line, not the engine
    spec = agent.to_spec()
    assert name not in spec and name not in json.dumps(spec)


def test_the_brief_keywords_are_all_accepted() -> None:
    required = {"output_type", "dynamic_temperature_enabled", "user_name", "print_on",
                "agent_description", "description", "autosave", "dashboard", "verbose",
                "retry_attempts", "retry_interval", "context_length", "streaming_on",
                "llm_base_url", "llm_api_key", "saved_state_path"}
    accepted = set(REFERENCE_ALIASES) | set(REFERENCE_IGNORED) | set(Agent.model_fields)
    assert required <= accepted


def test_mapped_keywords_set_our_fields() -> None:
    key = "sk-mapped-key-0123456789abcdef"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mapped keywords warn about nothing
        agent = Agent(agent_name="A", retry_attempts=5, context_length=4096,
                      llm_base_url="http://127.0.0.1:9/v1", llm_api_key=key,
                      agent_description="a cautious risk analyst")
    assert agent.num_retries == 5
    assert agent.context_window == 4096
    assert agent.api_base == "http://127.0.0.1:9/v1"
    assert isinstance(agent.api_key, SecretStr) and agent.secret_key() == key
    assert agent.description == "a cautious risk analyst"
    assert Agent(agent_name="B", description="d").description == "d"
    spec = agent.to_spec()
    assert not set(REFERENCE_ALIASES) & set(spec)
    assert (spec["num_retries"], spec["context_window"]) == (5, 4096)
    assert spec["description"] == "a cautious risk analyst"
    dumped = json.dumps(spec) + repr(agent) + agent.model_dump_json() + str(pickle.dumps(agent))
    assert key not in dumped and "api_key" not in spec


def test_a_mapped_keyword_must_agree_with_its_field_and_is_validated_like_it() -> None:
    with pytest.raises(ConfigError, match="retry_attempts.*num_retries"):
        Agent(agent_name="A", retry_attempts=1, num_retries=3)
    assert Agent(agent_name="A", retry_attempts=3, num_retries=3).num_retries == 3
    with pytest.raises(ValueError, match="context_window"):
        Agent(agent_name="A", context_length=0)
    with pytest.raises(ValueError, match="num_retries|>= 0"):
        Agent(agent_name="A", retry_attempts=-1)


@pytest.mark.parametrize(("typo", "suggestion"), [
    ("temprature", "temperature"), ("context_lenght", "context_length"),
    ("agent_descripton", "agent_description"), ("systemprompt", "system_prompt"),
    ("zzz_qqq", None),  # no close name: still named, nothing suggested
])
def test_an_unknown_keyword_is_a_config_error_with_the_closest_name(typo: str,
                                                                    suggestion: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        Agent(agent_name="A", **{typo: 1})
    message = str(info.value)
    assert repr(typo) in message and "Extra inputs" not in message
    if suggestion is None:
        assert "did you mean" not in message
    else:
        assert f"did you mean {suggestion!r}" in message
        assert "llm_base_url" in message  # lists the accepted names itself


def test_round_trip_through_a_spec_keeps_mapped_values_and_warns_nothing() -> None:
    with pytest.warns(ReferenceCompatibilityWarning):
        agents = [Agent(agent_name=n, model_name="sim/balanced", context_length=3000,
                        agent_description=f"{n} the bold", verbose=True, retry_attempts=0)
                  for n in ("A", "B")]
    chat = GroupChat(agents=agents)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = dump_spec(chat.to_spec())
        again = load_spec_text(text)
    assert "verbose: true" not in text and "context_length" not in text
    assert [(a.context_window, a.description, a.num_retries) for a in again.agents] == [
        (3000, "A the bold", 0), (3000, "B the bold", 0)]


def test_reference_keywords_in_a_spec_file_are_mapped_or_warned() -> None:
    text = ("agents:\n  - agent_name: A\n    context_length: 2048\n    print_on: true\n"
            "  - agent_name: B\n    agent_description: the skeptic\n")
    with pytest.warns(ReferenceCompatibilityWarning, match="print_on"):
        spec = load_spec_text(text)
    assert spec.agents[0].context_window == 2048
    assert spec.agents[1].description == "the skeptic"


def test_a_typo_in_a_spec_file_suggests_the_name() -> None:
    with pytest.raises(ConfigError, match=r"agents\.0: .*'temprature' \(did you mean "
                                          r"'temperature'\?\)"):
        load_spec_text("agents:\n  - agent_name: A\n    temprature: 0.2\n")


def test_llm_api_key_in_a_spec_file_is_rejected() -> None:
    with pytest.raises(ConfigError, match="llm_api_key|api_key") as info:
        load_spec_text("agents:\n  - agent_name: A\n    llm_api_key: sk-file-secret-123456\n")
    assert "sk-file-secret-123456" not in str(info.value)


# --- the description in the roster ---------------------------------------------------------------


def test_describe_participant() -> None:
    assert describe_participant("Bob", "") == "Bob"
    assert describe_participant("Bob", "  a cautious\n risk analyst ") == (
        "Bob (a cautious risk analyst)")
    long = describe_participant("Bob", "x" * 500)
    assert len(long) < 220 and long.endswith("…)")


# --- the README's list -----------------------------------------------------------------------


def test_readme_lists_every_reference_keyword_and_its_filter_silences_the_warnings() -> None:
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Code written for the reference")
    section = text[start:text.index("\n## ", start + 1)]
    for name in [*REFERENCE_ALIASES, *REFERENCE_IGNORED, "description"]:
        assert f"`{name}`" in section, name
    line = next(t for t in section.splitlines() if "filterwarnings" in t)
    pattern = re.search(r'message=r"([^"]+)"', line)
    assert pattern is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=pattern.group(1))
        Agent(agent_name="A", verbose=True, autosave=True)  # would raise if not silenced
