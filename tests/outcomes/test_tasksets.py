"""Task sets are files (issue 20 item 1): YAML or JSONL, each task with an id, read by the
project's safe-load rules, every problem one line; a sweep's `tasks:` may name one."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupchat_core import ConfigError
from groupchat_core.outcomes import Task, load_taskset
from groupchat_core.sweeps import load_sweep, load_sweep_text

YAML_SET = """\
- {id: q1, prompt: "What is 6*7?", answer: 42, scorer: numeric}
- id: q2
  prompt: Capital of France?
  answer: Paris
"""
SWEEP = """\
schema_version: 1
name: scored
base:
  max_loops: 3
  agents:
    - {agent_name: A, model_name: sim/balanced}
    - {agent_name: B, model_name: sim/reserved}
tasks: {tasks}
"""


def sweep_text(tasks: str) -> str:
    return SWEEP.replace("{tasks}", tasks)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_and_jsonl_sets_load(tmp_path: Path) -> None:
    tasks = load_taskset(write(tmp_path, "set.yaml", YAML_SET))
    assert tasks == [Task(id="q1", prompt="What is 6*7?", answer="42", scorer="numeric"),
                     Task(id="q2", prompt="Capital of France?", answer="Paris")]
    wrapped = load_taskset(write(tmp_path, "w.yml", "tasks:\n  - {id: q1, prompt: p, "
                                 "answer: '1'}\n  - {id: q2, prompt: q, answer: '2'}\n"))
    assert [t.id for t in wrapped] == ["q1", "q2"]
    lines = '{"id": "a", "prompt": "1+1?", "answer": 2, "scorer": "numeric"}\n\n' \
            '{"id": "b", "prompt": "Red planet?", "answer": "B", "scorer": "choice", ' \
            '"choices": ["Venus", "Mars"]}\n'
    assert [t.id for t in load_taskset(write(tmp_path, "s.jsonl", lines))] == ["a", "b"]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("s.jsonl", '{"id": "a", "prompt": "p", "answer": "1"}\n{"id": "a", "prompt": "q", '
     '"answer": "2"}\n', "task id 'a' appears twice (tasks 1 and 2)"),
    ("s.jsonl", '{"id": "a", "prompt": "p", "answer": "1"}\n{"id": "b", "prompt": \n',
     "task set s.jsonl line 2 is not valid JSON or YAML"),
    ("s.jsonl", '["a"]\n', "line 1 is not a JSON object"),
    ("s.jsonl", '{"id": "a", "prompt": "p", "answer": NaN}\n', "line 1 is not valid JSON"),
    ("s.jsonl", '{"id": "a", "prompt": "p", "answer": "1", "api_key": "sk-x"}\n',
     "secret-like field 'api_key'"),
    ("s.jsonl", "\n\n", "has no tasks; add at least one"),
    ("s.yaml", "- &x {id: a, prompt: p, answer: '1'}\n- *x\n", "YAML aliases are not allowed"),
    ("s.yaml", "id: a\nprompt: p\n", "must be a list of tasks"),
    ("s.yaml", "- {prompt: p, answer: '1'}\n", "task set s.yaml task 1: id: Field required"),
    ("s.yaml", "- {id: a, prompt: p, answer: .inf, scorer: numeric}\n", "not a finite number"),
    ("s.txt", "anything", "must be a .jsonl, .yaml, .yml or .json file"),
])
def test_a_bad_task_set_is_one_clear_line(tmp_path: Path, name: str, text: str,
                                          message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_taskset(write(tmp_path, name, text))
    assert message in str(err.value), str(err.value)
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read task set .*nope.jsonl"):
        load_taskset(tmp_path / "nope.jsonl")


def test_a_sweep_names_a_task_set_next_to_it(tmp_path: Path) -> None:
    write(tmp_path, "set.yaml", YAML_SET)
    spec = load_sweep(write(tmp_path, "sweep.yaml", sweep_text("set.yaml")))
    assert spec.tasks == ["What is 6*7?", "Capital of France?"]
    assert spec.scored_task(0) == {"id": "q1", "prompt": "What is 6*7?", "answer": "42",
                                   "scorer": "numeric"}
    limited = load_sweep(write(tmp_path, "one.yaml",
                               sweep_text("{file: set.yaml, limit: 1}")))
    assert limited.tasks == ["What is 6*7?"] and limited.cell_count() == 1
    # stored whole: the stored spec re-reads without the file (a resume elsewhere)
    again = load_sweep_text(__import__("json").dumps(limited.to_data()), "stored")
    assert again.same_cells(limited) and again.task_set == limited.task_set
    plain = load_sweep_text(sweep_text('["Plan it."]'), "plain")
    assert plain.task_set is None and plain.scored_task(0) is None


@pytest.mark.parametrize(("tasks", "message"), [
    ("missing.jsonl", "cannot read task set"),
    ("{file: set.yaml, limit: 0}", "tasks.limit must be a positive integer"),
    ("{file: set.yaml, every: 1}", "takes `file` (a task set) and an optional `limit`"),
    ('["plain", {id: a, prompt: p, answer: "1"}]', "mixes plain strings and task objects"),
])
def test_a_sweep_with_bad_tasks_is_one_line(tmp_path: Path, tasks: str, message: str) -> None:
    write(tmp_path, "set.yaml", YAML_SET)
    with pytest.raises(ConfigError) as err:
        load_sweep(write(tmp_path, "sweep.yaml", sweep_text(tasks)))
    assert message in str(err.value) and "\n" not in str(err.value)
