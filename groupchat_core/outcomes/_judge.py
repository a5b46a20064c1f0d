"""The LLM judge: a model scores the group's final answer against a rubric.

Why through the bid seam (`call_litellm`): the judge's call then obeys every rule a bid does
(keys bound to endpoints, the blocked-remote-calls switch, bounded bodies, retries, deadlines,
the tool-choice fallback ladder, scrubbed errors). The judge answers with the respond tool,
re-described as a verdict: `score` is how well the answer meets the rubric, `message` the reason.
Its prompt, model, calls, tokens and cost are kept on the outcome (JudgeCall).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._agent import Agent
from .._records import JudgeCall, Outcome, RunRecord
from .._secrets import scrub
from ._score import final_text
from ._task import Task

JUDGE_TIMEOUT_S = 120.0


def verdict_tool(verdict_on: str, score_means: str) -> dict[str, Any]:
    """The `respond` tool a judge calls: a score from 0 to 1 and a one-sentence reason (the
    outcome judge's and the selection judge's, which differ only in their words)."""
    return {"type": "function", "function": {
        "name": "respond", "description": f"Give your verdict on {verdict_on}.",
        "parameters": {"type": "object", "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1, "description": score_means},
            "message": {"type": "string", "description": "One sentence: why."}},
            "required": ["score", "message"]}}}


JUDGE_TOOL = verdict_tool("the answer",
                          "How well the answer meets the rubric (0 = not at all, 1 = fully).")
JUDGE_PROMPT = (
    "You are a strict grader. Score the answer against the rubric by calling `respond` with "
    "a score from 0 to 1 and a one-sentence reason.\n\nRubric:\n{rubric}\n\nTask:\n{task}\n\n"
    "Answer to grade:\n{answer}"
)


def judge_prompt(task: Task, answer: str) -> str:
    """The whole prompt the judge is sent (recorded on the outcome as is)."""
    return JUDGE_PROMPT.format(rubric=task.rubric, task=task.prompt, answer=answer)


def judge_agent(task: Task) -> Agent:
    """The judge as an Agent, so its call takes the engine's model-call path unchanged."""
    return Agent(agent_name="judge", model_name=str(task.judge_model), temperature=0.0,
                 max_tokens=256, api_base=task.judge_api_base, num_retries=2,
                 tools_list_dictionary=[JUDGE_TOOL])


async def judge_outcome(record: RunRecord, task: Task) -> Outcome:
    """Ask the judge about the final message; a failed call is an outcome with no score."""
    from ..providers._model_calls import call_litellm
    from ..providers._replies import ModelCallFailed

    answer = final_text(record)
    base = Outcome(task_id=task.id, scorer="judge", answer_from="final", expected=None,
                   answer=answer, correct=None, score=None)
    if answer is None:  # nobody spoke: nothing to grade, and nothing spent
        return base.model_copy(update={"correct": False, "score": 0.0})
    prompt = judge_prompt(task, answer)
    agent = judge_agent(task)
    call = JudgeCall(model=agent.model_name, prompt=prompt)
    deadline = asyncio.get_running_loop().time() + JUDGE_TIMEOUT_S
    try:
        reply = await call_litellm(agent, [{"role": "user", "content": prompt}],
                                   deadline=deadline, sink=None)
    except ModelCallFailed as exc:
        call.calls, call.error = exc.calls, scrub(str(exc), [agent])[:2000]
        return base.model_copy(update={"judge": call})
    call.calls, call.reply = reply.calls, scrub(reply.bid.message, [agent])[:20_000]
    call.prompt_tokens, call.completion_tokens = reply.prompt_tokens, reply.completion_tokens
    call.cost_usd = reply.cost_usd
    if not reply.bid.readable:
        call.error = scrub(reply.bid.error or "unreadable verdict", [agent])[:2000]
        return base.model_copy(update={"judge": call})
    score = reply.bid.score
    return base.model_copy(update={"judge": call, "score": score,
                                   "correct": score >= task.pass_mark})
