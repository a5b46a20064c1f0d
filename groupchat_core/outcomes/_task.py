"""A task with an answer: what a chat is asked, what counts as right, and how to tell.

Why a model of its own: the engine runs plain strings; a `Task` adds the expected answer and
the scorer, validated once at the edge (a task-set file, a sweep, a Python caller), so the
scoring after the run never meets a half-specified task.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._records import AnswerFrom, ScorerKind

MAX_TASK_ID = 200
MAX_PROMPT = 100_000
CHOICE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class Task(BaseModel):
    """One scored task. `answer` is the expected answer (a number for `numeric`, a pattern for
    `regex`, a letter or an option's text for `choice`; none for `judge`, which has a rubric)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    id: str = Field(min_length=1, max_length=MAX_TASK_ID)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT)
    answer: str | None = None
    scorer: ScorerKind = "exact"
    tolerance: float = Field(default=0.0, ge=0.0)  # numeric: |got - expected| <= tolerance
    choices: list[str] | None = None  # choice: options, lettered A, B, C, ... in this order
    rubric: str | None = None  # judge: what a good answer is
    judge_model: str | None = Field(default=None, max_length=200)  # judge: a litellm model
    judge_api_base: str | None = Field(default=None, max_length=2000)  # judge: its endpoint
    pass_mark: float = Field(default=0.5, ge=0.0, le=1.0)  # judge: correct when score >= it
    answer_from: AnswerFrom = "final"

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_text(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("answer must be text or a number, not a boolean")
        if isinstance(v, int | float):
            if not math.isfinite(v):
                raise ValueError("answer must be a finite number")
            return repr(v) if isinstance(v, float) else str(v)
        return v

    @field_validator("id", "prompt")
    @classmethod
    def _not_blank(cls, v: str, info: Any) -> str:
        if not v.strip():
            raise ValueError(f"{info.field_name} must not be blank")
        return v

    @model_validator(mode="after")
    def _scorer_needs(self) -> Task:
        if self.scorer != "judge" and self.answer is None:
            raise ValueError(f"task {self.id!r}: scorer {self.scorer!r} needs an answer")
        if self.scorer == "numeric":
            try:
                float(str(self.answer))
            except ValueError:
                raise ValueError(f"task {self.id!r}: numeric answer {self.answer!r} is not a "
                                 "number") from None
        if self.scorer == "regex":
            try:
                re.compile(str(self.answer))
            except re.error as exc:
                raise ValueError(f"task {self.id!r}: answer {self.answer!r} is not a valid "
                                 f"regular expression ({exc})") from None
        if self.scorer == "choice":
            self._check_choices()
        if self.scorer == "judge":
            if not (self.rubric and self.rubric.strip()) or not self.judge_model:
                raise ValueError(f"task {self.id!r}: scorer 'judge' needs a rubric and a "
                                 "judge_model (any litellm model name)")
            if self.judge_model.startswith("sim/"):
                raise ValueError(f"task {self.id!r}: judge_model {self.judge_model!r} is a "
                                 "sim, which cannot grade; name a language model")
            if self.answer_from == "vote":
                raise ValueError(f"task {self.id!r}: a judge scores the final message; "
                                 "answer_from 'vote' needs a rule scorer")
        return self

    def _check_choices(self) -> None:
        options = self.choices or []
        if not 2 <= len(options) <= len(CHOICE_LETTERS):
            raise ValueError(f"task {self.id!r}: scorer 'choice' needs 2 to 26 choices")
        if self.expected_letter() is None:
            raise ValueError(f"task {self.id!r}: answer {self.answer!r} is neither a choice "
                             f"letter (A-{CHOICE_LETTERS[len(options) - 1]}) nor one of the "
                             "choices")

    def expected_letter(self) -> str | None:
        """For `choice`: the expected option's letter (the answer given as letter or text)."""
        options = self.choices or []
        answer = (self.answer or "").strip()
        letters = CHOICE_LETTERS[:len(options)]
        if len(answer) == 1 and answer.upper() in letters:
            return answer.upper()
        for letter, option in zip(letters, options, strict=False):
            if option.strip().casefold() == answer.casefold():
                return letter
        return None

    def answer_key(self) -> dict[str, Any]:
        """What an offline sim needs to state an answer (docs/engine.md §15): never sent to a
        real model."""
        expected = self.expected_letter() if self.scorer == "choice" else self.answer
        return {"scorer": self.scorer, "answer": expected,
                "choices": len(self.choices or []), "task_id": self.id}
