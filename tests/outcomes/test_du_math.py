"""Du et al.'s arithmetic task set (issue 20 item 3), pinned.

Their math/gen_math.py (composable-models/llm_multiagent_debate) does, once:
    np.random.seed(0)
and then, for each of 100 rounds:
    a, b, c, d, e, f = np.random.randint(0, 30, size=6)
    answer = a + b * c + d - e * f
    question = "What is the result of {}+{}*{}+{}-{}*{}? Make sure to state your answer at
                the end of the response.".format(a, b, c, d, e, f)
The shipped file and the generator must be exactly that.
"""

from __future__ import annotations

import numpy as np

from groupchat_core.outcomes import (
    DU_QUESTION,
    du_math_operands,
    du_math_tasks,
    dump_jsonl,
    load_taskset,
)
from tests.helpers import ROOT

SHIPPED = ROOT / "examples" / "experiments" / "du_math_100.jsonl"


def _paper() -> list[tuple[tuple[int, ...], int, str]]:
    """gen_math.py's loop, with NumPy itself, as the paper's code runs it."""
    np.random.seed(0)
    rows = []
    for _ in range(100):
        a, b, c, d, e, f = np.random.randint(0, 30, size=6)
        answer = a + b * c + d - e * f
        template = ("What is the result of {}+{}*{}+{}-{}*{}? Make sure to state your answer "
                    "at the end of the response.")  # the paper's string, filled as it does
        question = template.format(a, b, c, d, e, f)
        rows.append(((int(a), int(b), int(c), int(d), int(e), int(f)), int(answer), question))
    return rows


def test_the_generator_replays_numpys_stream_exactly() -> None:
    paper = _paper()
    assert du_math_operands() == [ops for ops, _, _ in paper]
    tasks = du_math_tasks()
    assert len(tasks) == 100
    assert [(t.prompt, t.answer) for t in tasks] == [(q, str(ans)) for _, ans, q in paper]
    assert all(t.scorer == "numeric" and t.answer_from == "vote" for t in tasks)
    assert [t.id for t in tasks] == [f"du-math-{i:03d}" for i in range(100)]


def test_pinned_problems_from_reading_the_original() -> None:
    """Values worked out by hand from MT19937 seeded with 0 (NumPy's legacy seeding) and the
    paper's formula, so the pin does not rest on the generator alone."""
    tasks = du_math_tasks()
    assert tasks[0].prompt == DU_QUESTION.format(12, 15, 21, 0, 3, 27)
    assert tasks[0].answer == str(12 + 15 * 21 + 0 - 3 * 27) == "246"
    assert tasks[1].prompt.startswith("What is the result of 3+7*9+19-21*18?")
    assert tasks[1].answer == "-293"
    assert tasks[2].prompt.startswith("What is the result of 4+23*6+24-24*12?")
    assert tasks[2].answer == "-122"
    assert all(0 <= x < 30 for ops in du_math_operands() for x in ops)


def test_the_shipped_file_is_the_generated_set() -> None:
    assert SHIPPED.read_text(encoding="utf-8") == dump_jsonl(du_math_tasks())
    assert load_taskset(SHIPPED) == du_math_tasks()


def test_the_example_compares_one_agents_answer_with_a_debate_on_the_set() -> None:
    from groupchat_core.sweeps import load_sweep

    spec = load_sweep(ROOT / "examples" / "experiments" / "du_math_debate.yaml")
    assert spec.axes() == {"strategy": ["round_robin", "all_speak", "bidding", "bid_then_speak"],
                           "max_loops": [2, 3, 7]} and spec.cell_count() == 1200
    assert spec.task_set == [t.model_dump(exclude_defaults=True) for t in du_math_tasks()]
    assert len(spec.base.agents) == 3
