"""Tasks with answers from the Sweeps form (issue 41): a shipped task set or an uploaded file
starts a scored sweep; a file that cannot be read is one line and starts nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import ConfigError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import sweep_results
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.sweeps import task_sets
from tests.helpers.app_helpers import goto, new_app, poll, sweep_status

YAML_SET = b"""\
- {id: q1, prompt: "What is 2+2? State your answer at the end.", answer: "4", scorer: numeric}
- {id: q2, prompt: "What is 3*3? State your answer at the end.", answer: "9", scorer: numeric}
"""


@pytest.fixture
def at() -> Iterator[AppTest]:
    yield goto(new_app(), "sweeps")
    job_registry.registry().shutdown()


def one_cell_per_task(at: AppTest) -> None:
    at.text_input(key="sw_threshold").input("0.4")
    at.text_input(key="sw_recency_penalty").input("0.3")
    at.text_input(key="sw_recency_window").input("1")
    at.number_input(key="sw_repeats").set_value(1)
    at.number_input(key="sw_max_loops").set_value(4)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_a_shipped_task_set_starts_a_scored_sweep(at: AppTest):
    at.radio(key="sw_task_source").set_value(task_sets.DU_MATH).run()
    at.number_input(key="sw_task_limit").set_value(2).run()
    one_cell_per_task(at)
    assert any("2 tasks with answers (scorer numeric)" in c.value for c in at.caption)
    assert any("**2 cells**" in m.value for m in at.markdown)
    at.button(key="sw_start").click().run()
    poll(at, lambda a: sweep_status(a).startswith("sweep status: finished"),
         "the sweep to finish", deadline_s=60.0, shown=sweep_status)
    frame = sweep_results(RunStore(), at.selectbox(key="sw_pick").value)
    assert list(frame["task_id"]) == ["du-math-000", "du-math-001"]
    assert frame["scorer"].eq("numeric").all()
    assert frame["correct"].notna().all() and frame["answer"].notna().all()  # every run scored


def test_an_uploaded_task_set_is_checked_in_one_line(at: AppTest):
    at.radio(key="sw_task_source").set_value(task_sets.UPLOADED).run()
    errors = [e.value for e in at.error]
    assert errors == ["Fix the tasks: choose a task-set file (.jsonl, .yaml or .json), or type "
                      "the tasks"]
    assert at.button(key="sw_start").disabled


def test_task_sets_read_shipped_and_uploaded_tasks():
    assert task_sets.scored_tasks(task_sets.TYPED, 5) is None
    du = task_sets.scored_tasks(task_sets.DU_MATH, 3)
    assert du is not None and [t["id"] for t in du] == ["du-math-000", "du-math-001",
                                                        "du-math-002"]
    assert len(task_sets.scored_tasks(task_sets.DU_MATH, None) or []) == 100
    up = task_sets.scored_tasks(task_sets.UPLOADED, None, ("set.yaml", YAML_SET))
    assert up == [{"id": "q1", "prompt": "What is 2+2? State your answer at the end.",
                   "answer": "4", "scorer": "numeric"},
                  {"id": "q2", "prompt": "What is 3*3? State your answer at the end.",
                   "answer": "9", "scorer": "numeric"}]
    assert len(task_sets.scored_tasks(task_sets.UPLOADED, 1, ("set.yaml", YAML_SET)) or []) == 1
    assert task_sets.tasks_caption(up).startswith("2 tasks with answers (scorer numeric), first:")


@pytest.mark.parametrize(("upload", "line"), [
    (("set.txt", b"x"), "task set 'set.txt' must be a .jsonl, .yaml, .yml or .json file"),
    (("set.jsonl", b'{"id": "a", "prompt": "p", "answer": "1"}\nnot json\n'),
     "task set set.jsonl line 2"),
    (("set.yaml", b"- {id: a, prompt: p, answer: '1'}\n- {id: a, prompt: q, answer: '2'}\n"),
     "task set set.yaml: task id 'a' appears twice (tasks 1 and 2); give each task its own id"),
    (("set.json", b"\xff\xfe"), "task set set.json is not UTF-8 text"),
])
def test_a_bad_task_set_is_one_line_naming_the_file(upload: tuple[str, bytes], line: str):
    with pytest.raises(ConfigError) as caught:
        task_sets.scored_tasks(task_sets.UPLOADED, None, upload)
    message = str(caught.value)
    assert line in message and "\n" not in message
