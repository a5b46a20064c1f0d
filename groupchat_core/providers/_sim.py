"""Offline, seeded, deterministic simulation of bidding group-chat agents.

Why: the lab must run with no API key and no network, reproducibly and fast, so the default
"model" is a cheap heuristic that bids through the same respond(score, message) contract as a
real LLM. This module never imports litellm; the sim provider litellm itself can call
(model="sim/<persona>" through litellm.completion) is _sim_litellm.py.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Bump when what a sim bids or says changes (personas, tuning, answers): a sweep export records
# it, since the same spec and seeds give other numbers under other sims. 1: the sims of app
# 0.2.0; 2: text-sensitive sims that answer scored tasks with their persona's accuracy (issue 20);
# 3: the `offtopic` persona, an eager distractor that never states an answer (issue 43.4).
SIMS_VERSION = 3
DEFAULT_SIM_MODEL = "sim/balanced"
SIM_PREFIX = "sim/"
SILENT_BELOW = 0.25  # bids under this are silent ("" message)

# Tuning constants (chosen with a 200-seed loop: 3 agents, threshold 0.5, recency penalty 0.3).
RELEVANCE_WEIGHT = 0.25
FULL_RELEVANCE = 0.4  # a trigram cosine this high counts as fully on-topic (docs/engine.md §15)
DECAY_PER_MESSAGE = 0.02
NOISE_SCALE = 0.4  # noise amplitude = NOISE_SCALE * temperature
CONTRARIAN_BOOST = 0.25
RECENT_WINDOW = 3


@dataclass(frozen=True)
class Persona:
    """How a simulated agent bids: a few knobs instead of a language model."""

    name: str
    description: str
    eagerness: float  # base bid before context effects
    fatigue: float  # penalty for having spoken the last message
    contrarian: bool = False  # boosted by assertive / agreeing messages
    expertise: float = 0.0  # weight of prompt/transcript similarity (experts speak on-topic)
    accuracy: float = 0.5  # on a scored task: chance its stated answer is right (seeded)


_PERSONA_TABLE = (  # name, eagerness, fatigue, contrarian, expertise, accuracy, description
    ("balanced", 0.66, 0.2, False, 0.0, 0.7, "a moderate participant who joins when relevant."),
    ("eager", 0.78, 0.12, False, 0.0, 0.6, "keen to speak, jumps in often and tires slowly."),
    ("reserved", 0.44, 0.3, False, 0.0, 0.8, "quiet, speaks only when clearly relevant."),
    ("contrarian", 0.54, 0.2, True, 0.0, 0.5, "pushes back on confident or agreeing messages."),
    ("expert", 0.36, 0.2, False, 0.5, 0.9, "speaks up strongly only on its role's keywords."),
    ("offtopic", 0.8, 0.1, False, 0.0, 0.0, "bids high and talks about something else."),
)
# Personas whose posts never state an answer to a scored task (a distractor adds no vote).
NO_ANSWER = frozenset({"offtopic"})
PERSONAS: dict[str, Persona] = {
    n: Persona(n, "Simulated: " + d, e, f, c, x, a) for n, e, f, c, x, a, d in _PERSONA_TABLE
}

_STOPWORDS = frozenset(
    "the and for are but not you your yours with this that these those from into onto about "
    "was were has have had will would can could our ours their theirs its it's what which who "
    "whom how why when where there here them they then than also just very too some any all "
    "each other such only own same both more most much many should shall may might being "
    "been does did doing done i'm i'd i'll we're you're let's".split()
)
_ASSERTIVE = frozenset(
    "yes agree agreed exactly absolutely definitely clearly obviously certainly always never "
    "must undeniably indeed right great".split()
)
_WORD_RE = re.compile(r"[a-z][a-z'-]+")
_LETTERS_RE = re.compile(r"[a-z]+")

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "balanced": (
        "{speaker} raises {echo}; thinking about {role}, I'd weigh both sides first.",
        "Fair point on {echo}, {speaker}. With {role} in mind, the trade-offs need a closer look.",
        "I partly agree with {speaker} about {echo}, but my focus on {role} shifts the picture.",
    ),
    "eager": (
        "Yes! Building on what {speaker} said about {echo}, this is where {role} comes in.",
        "Great point, {speaker}! The bit about {echo} ties straight into {role}.",
        "Absolutely, {speaker} — and thinking about {role} makes {echo} even more important!",
    ),
    "reserved": (
        "Briefly: on {echo}, the question of {role} deserves a careful look.",
        "I'll keep it short, {speaker}: keep {role} in mind here.",
        "One small note on {echo}: consider {role}.",
    ),
    "contrarian": (
        "I disagree with {speaker} on {echo}; looking at {role}, it points the other way.",
        "Not so fast, {speaker}. The case on {echo} is overstated once you factor in {role}.",
        "Let me push back: with {role} in view, {speaker} has {echo} backwards.",
    ),
    "expert": (
        "Speaking with {role} in mind, {speaker}'s point on {echo} needs precise handling.",
        "On {echo}, the details of {role} matter more than {speaker} suggests.",
        "From experience with {role}, {echo} works only with the right safeguards.",
    ),
    "offtopic": (
        "Speaking of which, has anyone tried the new ramen place near the station?",
        "Random thought: the weather this weekend looks perfect for a long hike.",
        "Off topic, but I finally finished that thousand-piece puzzle last night.",
    ),
}


@lru_cache(maxsize=8192)
def _tokens(text: str) -> frozenset[str]:
    """Content words of a text; cached so a long history is not re-tokenised every bid."""
    return frozenset(w for w in _WORD_RE.findall(text.lower()) if len(w) > 2) - _STOPWORDS


# (offtopic's words left out: adding that persona changed no other sim's reply)
_TEMPLATE_WORDS = frozenset().union(*(_tokens(t) for name, ts in _TEMPLATES.items()
                                      if name not in NO_ANSWER for t in ts))


@lru_cache(maxsize=4096)
def _salient_words(text: str) -> tuple[str, ...]:
    """Content words of a message, most salient (longest) first, template words excluded."""
    return tuple(sorted(_tokens(text) - _TEMPLATE_WORDS, key=lambda w: (-len(w), w)))


def _echo_word(text: str, exclude: frozenset[str]) -> str:
    """The most salient word of the answered message that is not the agent's own role/names."""
    return next((w for w in _salient_words(text) if w not in exclude), "that")


@lru_cache(maxsize=1024)
def _role_phrase(system_prompt: str) -> str:
    """A short noun phrase for the agent's role: the last one or two content words."""
    words = _WORD_RE.findall(system_prompt.lower())
    content = [i for i, w in enumerate(words) if len(w) > 2 and w not in _STOPWORDS]
    if not content:
        return "my perspective"
    last = content[-1]
    if len(content) > 1 and content[-2] == last - 1:
        return f"{words[last - 1]} {words[last]}"
    return str(words[last])


# The one sim disclaimer: the dashboard's agent and sweep pages and the CLI's note say this.
SIM_NOTE = ("sim/ agents are offline simulations, not language models: scripted bidders with "
            "seeded randomness that react only to word overlap between the chat and their "
            "system prompt, so unrelated tasks can get byte-identical bids. Their results "
            "describe the simulator, not how LLMs behave.")


def is_sim_model(model_name: str) -> bool:
    """True for "sim/<persona>" model names, which never touch the network."""
    return model_name.startswith(SIM_PREFIX)


def run_is_simulated(model_names: Iterable[str | None]) -> bool:
    """The one rule for "these results are simulated": any agent of the run (or sweep cell)
    is a sim. Results shown anywhere (CLI, exports, sweeps) say "simulated" by this."""
    return any(is_sim_model(str(m)) for m in model_names if m)


def cell_is_simulated(model_names: Iterable[str | None]) -> bool:
    """A sweep cell's agents' models, after its model axis is applied: as run_is_simulated."""
    return run_is_simulated(model_names)


@lru_cache(maxsize=8192)
def _trigrams(text: str) -> tuple[Counter[str], float]:
    """Character trigrams of a text's words (lower case, letters only) and their vector's
    norm, cached: a turn's agents all compare against the same recent transcript."""
    joined = " " + " ".join(_LETTERS_RE.findall(text.lower())) + " "
    grams = Counter(joined[i:i + 3] for i in range(len(joined) - 2))
    return grams, math.sqrt(sum(c * c for c in grams.values()))


def text_similarity(a: str, b: str) -> float:
    """Cosine similarity (0..1) of two texts' character-trigram counts: a real, cheap
    measure of how much they talk about the same things, which works on short texts and
    inflections ("diagnosis", "diagnostic") where shared whole words are rare."""
    (x, x_norm), (y, y_norm) = _trigrams(a), _trigrams(b)
    if not x or not y:
        return 0.0
    if len(x) > len(y):
        x, y = y, x
    dot = sum(count * y[g] for g, count in x.items() if g in y)
    return min(1.0, dot / (x_norm * y_norm)) if dot else 0.0


def persona_for(model_name: str) -> Persona:
    """Resolve "sim/<persona>" (or a bare persona name) with a helpful error."""
    name = model_name[len(SIM_PREFIX) :] if is_sim_model(model_name) else model_name
    try:
        return PERSONAS[name]
    except KeyError:
        valid = ", ".join(sorted(PERSONAS))
        raise ValueError(f"unknown sim persona {name!r}; choose one of: {valid}") from None


@dataclass(frozen=True)
class SimContext:
    """Everything a simulated bid depends on (so equal contexts give equal bids)."""

    agent_name: str
    system_prompt: str
    persona: str
    history: Sequence[tuple[str, str]]  # (role, content), oldest first; task first as "User"
    turn: int  # 1-based
    seed: int = 0
    temperature: float = 0.5  # scales the noise amplitude
    answer_key: Mapping[str, Any] | None = None  # a scored task's answer (docs/engine.md §15)
    accuracy: float | None = None  # overrides the persona's accuracy (sim_accuracy)


@dataclass(frozen=True)
class SimBid:
    """What the respond(score, message) tool call carries."""

    score: float
    message: str


@dataclass(frozen=True)
class SimOptions:
    """Test/benchmark knobs that mimic a slow or flaky provider."""

    latency_s: float = 0.0
    failure_rate: float = 0.0
    accuracy: float | None = None  # sim_accuracy: overrides the persona's on scored tasks


class SimulatedFailure(RuntimeError):
    """Raised on purpose to exercise the engine's provider-error handling."""


def _rng(ctx: SimContext, salt: str = "") -> random.Random:
    """Seeded from a string (never the salted builtin hash) so runs are reproducible."""
    return random.Random(f"{salt}{ctx.seed}|{ctx.agent_name}|{ctx.turn}|{len(ctx.history)}")


def relevance(ctx: SimContext) -> float:
    """How on-topic the recent transcript is for this agent: the trigram similarity of its
    system prompt and the last RECENT_WINDOW messages, scaled so FULL_RELEVANCE counts as 1."""
    recent = " ".join(text for _, text in ctx.history[-RECENT_WINDOW:])
    return min(1.0, text_similarity(ctx.system_prompt, recent) / FULL_RELEVANCE)


def _persona_effects(ctx: SimContext, persona: Persona, closeness: float) -> float:
    """Relevance, expertise, contrarianism and fatigue for this context."""
    effect = RELEVANCE_WEIGHT * closeness + persona.expertise * closeness
    if not ctx.history:
        return effect
    last_role, last_text = ctx.history[-1]
    if persona.contrarian and (_tokens(last_text) & _ASSERTIVE or last_text.endswith("!")):
        effect += CONTRARIAN_BOOST
    if last_role == ctx.agent_name:
        effect -= persona.fatigue
    elif any(role == ctx.agent_name for role, _ in ctx.history[-RECENT_WINDOW:]):
        effect -= persona.fatigue * 0.4
    return effect


def _compose(ctx: SimContext, persona: Persona, rng: random.Random) -> str:
    """A short templated reply naming the message it answers and the agent's role."""
    fallback = ctx.history[-1] if ctx.history else ("", "")
    answered = (m for m in reversed(ctx.history) if m[0] != ctx.agent_name)
    speaker, text = next(answered, fallback)
    speaker = speaker or "everyone"
    exclude = _tokens(ctx.system_prompt).union(r.lower() for r, _ in ctx.history)
    template = rng.choice(_TEMPLATES[persona.name])
    message = template.format(
        speaker=speaker, echo=_echo_word(text, exclude), role=_role_phrase(ctx.system_prompt)
    )
    return message[0].upper() + message[1:]


def simulate_bid(ctx: SimContext) -> SimBid:
    """Pure, deterministic bid: eagerness + context effects - decay + seeded noise."""
    persona = persona_for(ctx.persona)
    rng = _rng(ctx)
    agent_messages = max(len(ctx.history) - 1, 0)
    noise = rng.uniform(-1.0, 1.0) * NOISE_SCALE * max(ctx.temperature, 0.0)
    raw = (
        persona.eagerness
        + _persona_effects(ctx, persona, relevance(ctx))
        - DECAY_PER_MESSAGE * agent_messages
        + noise
    )
    score = round(min(1.0, max(0.0, raw)), 4)
    message = _compose(ctx, persona, rng) if score >= SILENT_BELOW else ""
    if message and ctx.answer_key is not None and persona.name not in NO_ANSWER:
        message += " " + stated_answer(ctx, persona)
    return SimBid(score=score, message=message)


def knows_answer(ctx: SimContext, persona: Persona) -> bool:
    """Whether this agent is right on this task in this run: a seeded draw per (seed, agent,
    task), the same on every turn, true with the persona's (or sim_accuracy's) probability."""
    key = ctx.answer_key or {}
    accuracy = persona.accuracy if ctx.accuracy is None else ctx.accuracy
    draw = random.Random(f"answer|{ctx.seed}|{ctx.agent_name}|{key.get('task_id')}|"
                         f"{key.get('answer')}").random()
    return draw < accuracy


def stated_answer(ctx: SimContext, persona: Persona) -> str:
    """The sentence a sim ends with on a scored task: the right answer, or a seeded wrong
    one of the same kind (another number, another letter), so every scorer can read it."""
    key = ctx.answer_key or {}
    answer = str(key.get("answer") or "")
    if knows_answer(ctx, persona):
        return f"My answer is {answer}."
    rng = random.Random(f"wrong|{ctx.seed}|{ctx.agent_name}|{key.get('task_id')}")
    if key.get("scorer") == "numeric":
        try:
            value = float(answer)
        except ValueError:
            value = 0.0
        offset = rng.choice((-1, 1)) * rng.randint(1, 10)
        wrong = value + offset
        return f"My answer is {int(wrong) if wrong.is_integer() else wrong}."
    choices = int(key.get("choices") or 0)
    if key.get("scorer") == "choice" and choices >= 2:
        letters = [chr(65 + i) for i in range(choices) if chr(65 + i) != answer]
        return f"My answer is ({rng.choice(letters)})."
    return "My answer is unknown."


def maybe_fail(ctx: SimContext, options: SimOptions) -> None:
    """Raise SimulatedFailure with seeded probability (deterministic per context)."""
    if options.failure_rate > 0 and _rng(ctx, "fail|").random() < options.failure_rate:
        raise SimulatedFailure(f"simulated provider failure (failure_rate={options.failure_rate})")


async def asimulate_bid(ctx: SimContext, options: SimOptions = SimOptions()) -> SimBid:
    """Async bid with optional fake latency and seeded failures, like a real provider."""
    if options.latency_s > 0:
        await asyncio.sleep(options.latency_s)
    maybe_fail(ctx, options)
    return simulate_bid(ctx)


def sim_options_from(kwargs: Mapping[str, Any]) -> SimOptions:
    """Read sim_latency / sim_failure_rate from an agent's extra kwargs, validating ranges."""
    latency = float(kwargs.get("sim_latency", 0.0) or 0.0)
    failure = float(kwargs.get("sim_failure_rate", 0.0) or 0.0)
    accuracy = kwargs.get("sim_accuracy")
    if accuracy is not None and not (isinstance(accuracy, int | float)
                                     and 0.0 <= float(accuracy) <= 1.0):
        raise ValueError(f"sim_accuracy must be a number from 0 to 1, got {accuracy!r}")
    if not 0.0 <= latency <= 60.0:
        raise ValueError(f"sim_latency must be between 0 and 60 seconds, got {latency}")
    if not 0.0 <= failure <= 1.0:
        raise ValueError(f"sim_failure_rate must be between 0 and 1, got {failure}")
    return SimOptions(latency_s=latency, failure_rate=failure,
                      accuracy=None if accuracy is None else float(accuracy))
