"""Du et al.'s arithmetic task set (2023, "Improving Factuality and Reasoning in Language Models
through Multiagent Debate"), regenerated exactly as their code does it.

Their `math/gen_math.py` (github.com/composable-models/llm_multiagent_debate) calls
`np.random.seed(0)` once, then for each of 100 rounds draws
`a, b, c, d, e, f = np.random.randint(0, 30, size=6)`, asks
"What is the result of {a}+{b}*{c}+{d}-{e}*{f}? Make sure to state your answer at the end of
the response." and scores against `a + b * c + d - e * f`, with a majority vote over the
agents' last answers (`most_frequent`).

Why no numpy here: NumPy's legacy `seed(0)` is MT19937's `init_genrand(0)`, and its
`randint(0, 30)` takes 32-bit outputs masked to 5 bits, rejecting values over 29. Python's own
`random.Random` is the same MT19937, so loading that state into it and drawing
`getrandbits(32) & 31` replays NumPy's stream bit for bit (tests/outcomes/test_du_math.py checks it
against NumPy itself).
"""

from __future__ import annotations

import random

from ._task import Task

DU_SEED = 0
DU_PROBLEMS = 100
DU_QUESTION = ("What is the result of {}+{}*{}+{}-{}*{}? Make sure to state your answer at the "
               "end of the response.")


def _numpy_legacy_stream(seed: int) -> random.Random:
    """A random.Random in the state NumPy's `np.random.seed(seed)` leaves MT19937 in."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    rng = random.Random()
    rng.setstate((3, (*mt, 624), None))
    return rng


def _randint_0_30(rng: random.Random) -> int:
    """NumPy legacy `randint(0, 30)`: masked rejection sampling on 32-bit outputs."""
    while True:
        value = rng.getrandbits(32) & 31
        if value <= 29:
            return value


def du_math_operands(count: int = DU_PROBLEMS, seed: int = DU_SEED) -> list[tuple[int, ...]]:
    """The (a, b, c, d, e, f) of each problem, in the paper's order."""
    rng = _numpy_legacy_stream(seed)
    return [tuple(_randint_0_30(rng) for _ in range(6)) for _ in range(count)]


def du_math_tasks(count: int = DU_PROBLEMS, seed: int = DU_SEED) -> list[Task]:
    """The task set: ids du-math-000 ..., the paper's question and answer, numeric scorer,
    answer by majority vote (the paper's)."""
    tasks = []
    for i, (a, b, c, d, e, f) in enumerate(du_math_operands(count, seed)):
        tasks.append(Task(id=f"du-math-{i:03d}", prompt=DU_QUESTION.format(a, b, c, d, e, f),
                          answer=str(a + b * c + d - e * f), scorer="numeric",
                          answer_from="vote"))
    return tasks
