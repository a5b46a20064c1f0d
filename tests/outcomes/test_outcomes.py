"""Tasks with answers (issue 20 item 1): scorers on known answers, the final and voted
answer, Du et al.'s tie rule, the run's recorded outcome, and the LLM judge against the
package's fake OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from groupchat_core import Agent, ConfigError, GroupChat, Message, RunRecord
from groupchat_core.outcomes import (
    JUDGE_PROMPT,
    Task,
    extract,
    is_correct,
    last_number,
    majority,
    rule_outcome,
    task_from,
)
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, error, tool_call
from tests.helpers import ROOT

NUMERIC = Task(id="n", prompt="What is 12+28*19+6?", answer="550", scorer="numeric")


def record_of(*posts: tuple[str, str]) -> RunRecord:
    """A finished run's record with the task first, then these (agent, message) posts."""
    messages = [Message(role="User", content="the task")]
    messages += [Message(role=a, content=c, score=0.9) for a, c in posts]
    return RunRecord(run_id="r", config={}, task="the task", messages=messages,
                     stop_reason="max_loops")


# --- scorers on known answers -----------------------------------------------------------

@pytest.mark.parametrize(("text", "right"), [
    ("My answer is the same as the other agents: the result of 12+28*19+6 is 550.", True),
    ("So the total is 550", True),
    ("The answer is (550).", True),
    ("It comes to 551.", False),
    ("I cannot tell.", False),
    ("550 at first, but on reflection it is 560.", False),  # the last number stated counts
])
def test_numeric_scorer_reads_the_last_number(text: str, right: bool) -> None:
    assert is_correct(extract(text, NUMERIC), NUMERIC) is right


def test_numeric_tolerance_thousands_and_signs() -> None:
    task = Task(id="t", prompt="p", answer=3.14159, scorer="numeric", tolerance=0.01)
    assert task.answer == "3.14159"
    assert is_correct(extract("about 3.14", task), task)
    assert not is_correct(extract("about 3.1", task), task)
    assert last_number("it is 12,000 dollars") == 12000.0
    assert last_number("minus: −293") == -293.0
    assert last_number("the result is -293.") == -293.0
    assert last_number("27-3") == 3.0  # a minus after a digit is an operator
    assert last_number("no digits") is None


@pytest.mark.parametrize(("text", "answer", "right"), [
    ("The answer is Paris.", "paris", True),
    ("Final answer: PARIS", "Paris", True),
    ("Hmm.\nParis", "Paris", True),
    ("The answer is Lyon.", "Paris", False),
])
def test_exact_scorer_compares_the_stated_answer_normalised(text: str, answer: str,
                                                            right: bool) -> None:
    task = Task(id="e", prompt="Capital of France?", answer=answer)
    assert is_correct(extract(text, task), task) is right


def test_regex_scorer_matches_the_pattern() -> None:
    task = Task(id="r", prompt="A date?", answer=r"\b(19|20)\d{2}-\d{2}-\d{2}\b",
                scorer="regex")
    assert extract("It was 1969-07-20, I think.", task) == "1969-07-20"
    assert is_correct(extract("It was 1969-07-20, I think.", task), task)
    assert not is_correct(extract("It was July 1969.", task), task)


@pytest.mark.parametrize(("text", "letter"), [
    ("I pick (B).", "B"),
    ("The answer is C", "C"),
    ("Answer: a", None),  # a lower-case article is not a choice
    ("A good point, but Mars is right.", "B"),  # the option's own text
    ("I think the best is D", "D"),
    ("Nothing fits.", None),
])
def test_choice_scorer_reads_a_letter_or_the_option(text: str, letter: str | None) -> None:
    task = Task(id="c", prompt="Red planet?", answer="Mars", scorer="choice",
                choices=["Venus", "Mars", "Jupiter", "Saturn"])
    assert task.expected_letter() == "B"
    assert extract(text, task) == letter
    assert is_correct(letter, task) is (letter == "B")


# --- the group's answer: final message or Du et al.'s vote -----------------------------

def test_final_answer_is_the_last_posted_message() -> None:
    record = record_of(("A", "It is 550."), ("B", "No, it is 551."))
    outcome = rule_outcome(record, NUMERIC, ["A", "B"])
    assert (outcome.answer, outcome.correct, outcome.score, outcome.votes) == (
        "551", False, 0.0, {})
    assert rule_outcome(record_of(), NUMERIC, ["A", "B"]).answer is None  # nobody spoke


def test_vote_takes_each_agents_last_stated_answer() -> None:
    task = NUMERIC.model_copy(update={"answer_from": "vote"})
    record = record_of(("A", "It is 540."), ("B", "It is 550."), ("C", "550, surely."),
                       ("A", "I now say 550."), ("B", "Hmm, 551."))
    outcome = rule_outcome(record, task, ["A", "B", "C", "D"])
    assert outcome.votes == {"A": "550", "B": "551", "C": "550", "D": None}
    assert (outcome.answer, outcome.correct) == ("550", True)


def test_a_tie_goes_to_the_earliest_agent_in_list_order_as_du_et_al() -> None:
    """Du et al.'s most_frequent keeps the first answer reaching the top count, scanning the
    agents in order; speaking order does not matter."""
    task = NUMERIC.model_copy(update={"answer_from": "vote"})
    record = record_of(("B", "It is 551."), ("A", "It is 550."))
    assert rule_outcome(record, task, ["A", "B"]).answer == "550"
    assert rule_outcome(record, task, ["B", "A"]).answer == "551"
    assert majority(["7", "8", "8", "7"], task) == "7"
    assert majority([None, None], task) is None
    assert majority(["7.0", "7"], task) == "7.0"  # equal numbers are one vote


# --- validation of tasks ------------------------------------------------------------------

@pytest.mark.parametrize(("data", "message"), [
    ({"id": "x", "prompt": "p"}, "scorer 'exact' needs an answer"),
    ({"id": "x", "prompt": "p", "answer": "ten", "scorer": "numeric"}, "is not a number"),
    ({"id": "x", "prompt": "p", "answer": "(", "scorer": "regex"}, "not a valid regular"),
    ({"id": "x", "prompt": "p", "answer": "Z", "scorer": "choice", "choices": ["a", "b"]},
     "neither a choice letter (A-B)"),
    ({"id": "x", "prompt": "p", "scorer": "judge"}, "needs a rubric and a judge_model"),
    ({"id": "x", "prompt": "p", "scorer": "judge", "rubric": "r", "judge_model": "sim/eager"},
     "is a sim, which cannot grade"),
    ({"id": "x", "prompt": "p", "answer": "1", "answr": "1"}, "answr: unknown key"),
    ({"id": " ", "prompt": "p", "answer": "1"}, "id: id must not be blank"),
    ({"id": "x", "prompt": "p", "answer": True}, "not a boolean"),
])
def test_a_bad_task_is_one_line_naming_the_problem(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        task_from(data, "tasks.yaml task 3")
    text = str(err.value)
    assert message in text and "\n" not in text and text.startswith("invalid tasks.yaml task 3")


# --- a run records its outcome -------------------------------------------------------------

def _scripted_chat(script: ScriptedBids, **settings: object) -> GroupChat:
    agents = [Agent(agent_name=n, model_name=script.model_name) for n in ("A", "B")]
    return GroupChat(agents=agents, **settings)  # type: ignore[arg-type]


def test_a_run_of_a_task_records_its_outcome() -> None:
    script = ScriptedBids({"A": [(0.9, "I say 550."), (0.1, "")], "B": [(0.2, ""), (0.8, "551")]})
    chat = _scripted_chat(script, max_loops=3)
    chat.run(NUMERIC)
    script.close()
    record = chat.last_run
    assert record is not None and record.task == NUMERIC.prompt
    assert record.outcome is not None
    assert (record.outcome.task_id, record.outcome.answer, record.outcome.correct) == (
        "n", "551", False)
    plain = ScriptedBids({"A": [(0.1, "")], "B": [(0.1, "")]})
    _scripted_chat(plain, max_loops=3).run("a plain task")
    plain.close()
    assert plain.calls and RunRecord.model_fields["outcome"].default is None


# --- the LLM judge, against the fake OpenAI-compatible server -----------------------------

@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def _judged(server: FakeOpenAIServer) -> Task:
    return Task(id="essay", prompt="Explain why the sky is blue.", scorer="judge",
                rubric="Mentions Rayleigh scattering of shorter wavelengths.",
                judge_model="openai/judge", judge_api_base=server.base_url)


def test_the_judge_scores_the_final_answer_and_its_call_is_recorded(server) -> None:
    server.script("judge", [tool_call(0.8, "Names Rayleigh scattering.")])
    task = _judged(server)
    script = ScriptedBids({"A": [(0.9, "Rayleigh scattering: blue light scatters more.")],
                           "B": [(0.1, "")]})
    chat = _scripted_chat(script, max_loops=2)
    chat.run(task)
    script.close()
    outcome = chat.last_run.outcome
    assert outcome is not None and outcome.judge is not None
    assert (outcome.scorer, outcome.score, outcome.correct) == ("judge", 0.8, True)
    judge = outcome.judge
    assert (judge.model, judge.calls, judge.reply, judge.error) == (
        "openai/judge", 1, "Names Rayleigh scattering.", None)
    assert judge.prompt == JUDGE_PROMPT.format(rubric=task.rubric, task=task.prompt,
                                               answer="Rayleigh scattering: blue light "
                                               "scatters more.")
    assert judge.prompt_tokens and judge.completion_tokens
    sent = server.requests_for("judge")
    assert len(sent) == 1 and sent[0].body["messages"] == [
        {"role": "user", "content": judge.prompt}]
    assert sent[0].body["tool_choice"] == {"type": "function", "function": {"name": "respond"}}
    # the untrusted loopback judge gets the placeholder key, never the environment's
    assert sent[0].headers.get("authorization") == "Bearer no-key"


def test_a_low_verdict_is_wrong_and_a_failed_judge_leaves_no_score(server) -> None:
    server.script("judge", [tool_call(0.2, "Misses the point."), error(400, "bad request")])
    task = _judged(server)
    outcomes = []
    for _ in range(2):
        script = ScriptedBids({"A": [(0.9, "Because it reflects the ocean.")], "B": [(0.1, "")]})
        chat = _scripted_chat(script, max_loops=2)
        chat.run(task)
        script.close()
        outcomes.append(chat.last_run.outcome)
    low, failed = outcomes
    assert (low.score, low.correct) == (0.2, False)
    assert (failed.score, failed.correct) == (None, None)
    assert failed.judge is not None and "BadRequestError" in (failed.judge.error or "")
    assert json.loads(failed.model_dump_json())["judge"]["calls"] >= 1


def test_the_readmes_tasks_with_answers_example_runs_as_written() -> None:
    """README "Tasks with answers": its code block, run as is."""

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Tasks with answers"):readme.index("## The Python API")]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own example
    chat = scope["chat"]
    assert isinstance(chat, GroupChat) and chat.last_run is not None
    outcome = chat.last_run.outcome
    assert outcome is not None and outcome.correct in (True, False)
    assert outcome.scorer == "numeric" and set(outcome.votes) == {"A", "B"}
    assert "du_math_debate.yaml" in section and "du_math_100.jsonl" in section


def test_a_judge_without_its_key_is_refused_before_any_bid() -> None:
    """The test environment has no OPENAI_API_KEY: the run would spend every bid and then
    fail to judge, so it is refused at the start with the engine's credentials line."""
    script = ScriptedBids({"A": [(0.9, "x")], "B": [(0.1, "")]})
    task = Task(id="j", prompt="Explain.", scorer="judge", rubric="Clear.",
                judge_model="gpt-4o-mini")
    with pytest.raises(ConfigError) as err:
        _scripted_chat(script, max_loops=2).run(task)
    script.close()
    assert "agent 'judge' uses gpt-4o-mini but OPENAI_API_KEY is not set" in str(err.value)
    assert script.calls == []
