"""Scoring a finished run: take the group's answer (final message or vote), compare it.

Why apart from extraction: the rule scorers are pure functions of (answer, task), so they are
tested on known answers alone; taking the group's answer from a record is the other half.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .._records import Outcome, RunRecord
from ._extract import extract, last_number, majority, normalise
from ._task import Task


def is_correct(answer: str | None, task: Task) -> bool:
    """Whether an extracted answer is right under the task's rule scorer (not the judge)."""
    if answer is None:
        return False
    if task.scorer == "numeric":
        got = last_number(answer)
        expected = float(str(task.answer))
        return got is not None and math.isclose(got, expected, rel_tol=0.0,
                                                abs_tol=task.tolerance + 1e-12)
    if task.scorer == "choice":
        return answer.strip().upper() == task.expected_letter()
    if task.scorer == "regex":
        return re.search(str(task.answer), answer) is not None
    if task.scorer == "exact":
        return normalise(answer) == normalise(str(task.answer))
    raise ValueError(f"scorer {task.scorer!r} is not a rule scorer")


def last_words(record: RunRecord, agents: Sequence[str]) -> dict[str, str | None]:
    """Each agent's last posted message (None if it never spoke), in agent list order."""
    last: dict[str, str | None] = dict.fromkeys(agents)
    for message in record.messages[1:]:
        if message.role in last:
            last[message.role] = message.content
    return last


def final_text(record: RunRecord) -> str | None:
    """The last posted agent message; None when nobody spoke (the task is not an answer)."""
    return record.messages[-1].content if len(record.messages) > 1 else None


def rule_outcome(record: RunRecord, task: Task, agents: Sequence[str]) -> Outcome:
    """The outcome under a rule scorer: final message or vote, then exact/numeric/regex/
    choice."""
    votes: dict[str, str | None] = {}
    if task.answer_from == "vote":
        votes = {name: None if text is None else extract(text, task)
                 for name, text in last_words(record, agents).items()}
        answer = majority(list(votes.values()), task)
    else:
        text = final_text(record)
        answer = None if text is None else extract(text, task)
    correct = is_correct(answer, task)
    return Outcome(task_id=task.id, scorer=task.scorer, answer_from=task.answer_from,
                   expected=task.answer, answer=answer, correct=correct,
                   score=1.0 if correct else 0.0, votes=votes)
