"""Tasks with answers, and whether a group got them right (docs/outcomes.md).

    from groupchat_core.outcomes import Task, load_taskset, score_run
    chat.run(Task(id="q1", prompt="What is 6*7?", answer="42", scorer="numeric"))
    chat.last_run.outcome          # Outcome(answer="42", correct=True, score=1.0, ...)

Scorers: exact, numeric (with tolerance), regex, choice, and an LLM judge with a rubric. The
group's answer is the final message or a majority vote over each agent's last stated answer.
"""

from __future__ import annotations

from .._records import JudgeCall, Outcome
from ._du_math import DU_QUESTION, du_math_operands, du_math_tasks
from ._extract import extract, last_number, majority, normalise
from ._judge import JUDGE_PROMPT, judge_agent, judge_prompt
from ._run import score_run
from ._score import is_correct, rule_outcome
from ._task import Task
from ._tasksets import dump_jsonl, load_taskset, parse_taskset, task_from, tasks_from

__all__ = [
    "DU_QUESTION",
    "JUDGE_PROMPT",
    "JudgeCall",
    "Outcome",
    "Task",
    "du_math_operands",
    "du_math_tasks",
    "dump_jsonl",
    "extract",
    "is_correct",
    "judge_agent",
    "judge_prompt",
    "last_number",
    "load_taskset",
    "majority",
    "normalise",
    "parse_taskset",
    "rule_outcome",
    "score_run",
    "task_from",
    "tasks_from",
]
