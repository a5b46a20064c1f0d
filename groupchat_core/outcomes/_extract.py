"""Reading an answer out of free text, one rule per scorer, and the Du et al. majority vote.

Why these rules: a group's reply is prose; each scorer needs the one piece it compares. The
numeric rule takes the last number stated (Du et al.'s `parse_answer` takes the last
space-separated token that parses as a float; ours also reads "550." or "(550)" and drops
thousands separators, docs/outcomes.md says where they differ).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ._task import CHOICE_LETTERS, Task

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|"
                     r"(?<![\w.])[-−]?\d+(?:\.\d+)?(?![\d])")
_STATED = re.compile(r"(?:final answer|the answer|my answer|answer)\s*(?:is|:|=)\s*(.+)",
                     re.IGNORECASE)


def normalise(text: str) -> str:
    """For exact comparison: NFKC, case-folded, whitespace collapsed, outer punctuation off."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = " ".join(text.split())
    return text.strip(" .,;:!?\"'`*()[]")


def last_number(text: str) -> float | None:
    """The last number in the text ("12,000" is 12000; "−3" is -3), or None."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    return float(found[-1].replace(",", "").replace("−", "-"))


def _stated(text: str) -> str:
    """The part after the last "answer is/answer:", else the last non-empty line."""
    matches = list(_STATED.finditer(text))
    if matches:
        return matches[-1].group(1).strip().splitlines()[0] if matches[-1].group(1).strip() \
            else ""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


_EXPLICIT_CHOICE = re.compile(
    r"\(([A-Z])\)|\b(?i:answer|option|choice)\s*(?:(?i:is)\s*|:\s*)?\(?([A-Z])\b")
_BARE_LETTER = re.compile(r"\b([A-Z])\b(?! [a-z])")


def _choice(text: str, task: Task) -> str | None:
    """The option stated: the last "(B)" or "answer is B"; else the last option's text
    quoted; else the last bare capital letter of the options (not "A" or "I" before a word)."""
    letters = CHOICE_LETTERS[:len(task.choices or [])]
    explicit: list[str] = [str(a or b) for a, b in _EXPLICIT_CHOICE.findall(text)
                           if (a or b) in letters]
    if explicit:
        return explicit[-1]
    lowered = text.casefold()
    spots = [(lowered.rfind(o.strip().casefold()), letter)
             for letter, o in zip(letters, task.choices or [], strict=False) if o.strip()]
    spots = [s for s in spots if s[0] >= 0]
    if spots:
        return max(spots)[1]
    bare = [b for b in _BARE_LETTER.findall(text) if b in letters]
    return bare[-1] if bare else None


def extract(text: str, task: Task) -> str | None:
    """The answer `task`'s scorer reads from one message, as text; None when none is stated."""
    if task.scorer == "numeric":
        value = last_number(text)
        return None if value is None else _number_text(value)
    if task.scorer == "choice":
        return _choice(text, task)
    if task.scorer == "regex":
        found = [m.group(0) for m in re.finditer(str(task.answer), text)]
        return found[-1] if found else None
    if task.scorer == "judge":
        return text.strip() or None
    stated = _stated(text).strip()
    return stated or None


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def vote_key(answer: str, task: Task) -> str:
    """Answers that count as the same vote: equal numbers, equal normalised text."""
    if task.scorer == "numeric":
        return _number_text(float(answer))
    return normalise(answer)


def majority(answers: Sequence[str | None], task: Task) -> str | None:
    """Du et al.'s vote (`most_frequent`): the most frequent stated answer; a tie goes to the
    one stated by the earliest agent in list order; agents that stated none do not vote."""
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for answer in answers:
        if answer is None:
            continue
        key = vote_key(answer, task)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, answer)
    if not counts:
        return None
    best = max(counts.values())
    winner = next(k for k in first if counts[k] == best)  # dicts keep insertion order
    return first[winner]
