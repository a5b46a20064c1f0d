"""Runs with people in the room (issue 22) export and import back whole: a person's bids keep
their `kind`, a selector's turns keep `rule_winner` / `human_pick`, and the import check
re-runs those turns under the engine's rule (a person's seat in the roster comes with the
bundle, as the spec carries agents only). The bid CSV and the transcript say who was a person.

Private imports (`exports._bundles`): export_bundle/read_bundle have no public name.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import pytest

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    Human,
    HumanAction,
    HumanPrompt,
    Pick,
    Post,
    RaiseHand,
    SetBid,
    bids_csv,
    import_bundle,
    transcript_markdown,
)
from groupchat_core.exports._bundles import export_bundle, read_bundle
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids

pytestmark = pytest.mark.usefixtures("fresh_engines")

HOUR = 3600.0


def _player(answers: dict[tuple[str, int], HumanAction]):  # type: ignore[no-untyped-def]
    async def play(prompt: HumanPrompt) -> HumanAction | None:
        return answers.get((prompt.phase, prompt.turn))
    return play


def _recorded(store: RunStore, script: dict[str, list[object]], people: Sequence[Human],
              order: str, **config: object) -> str:
    fake = ScriptedBids(script, shared=False)
    try:
        by_name: dict[str, Agent | Human] = {
            n: Agent(agent_name=n, model_name=fake.model_name) for n in script}
        by_name.update({p.name: p for p in people})
        chat = GroupChat(name="people", agents=[by_name[n] for n in order.split()],
                         providers=fake.providers, bid_cache=False, human_window=HOUR,
                         human_post_window=HOUR, **config)  # type: ignore[arg-type]
        store.attach(chat)
        chat.run("Plan the trip.")
        assert chat.last_run is not None
        return chat.last_run.run_id
    finally:
        fake.close()


def _mixed_run(store: RunStore) -> str:
    """Ann sits between A and B: she raises her hand on turn 1 (loses to A's 0.9), wins turn 2
    with it and posts, bids 0.3 with a draft on turn 3 (the recency penalty zeroes it)."""
    ann = Human("Ann", callback=_player({("bid", 1): RaiseHand(), ("post", 2): Post("Go by train."),
                                         ("bid", 3): SetBid(0.3, "maybe later")}))
    script: dict[str, list[object]] = {"A": [(0.9, "a1"), (0.5, "a2"), (0.7, "a3")],
                                       "B": [(0.2, "b1"), (0.1, ""), (0.1, "")]}
    return _recorded(store, script, [ann], "A Ann B", max_loops=4)


def _selector_run(store: RunStore) -> str:
    async def judge(prompt: HumanPrompt) -> HumanAction | None:
        return Pick("B") if prompt.turn == 1 else Pick(None)

    script: dict[str, list[object]] = {"A": [(0.9, "a1"), (0.9, "a2")],
                                       "B": [(0.7, "b1"), (0.4, "b2")]}
    return _recorded(store, script, [], "A B", max_loops=3,
                     human_selector=Human("Judge", callback=judge), selector_top_k=2)


def test_a_run_with_a_person_exports_and_imports_back_whole(store, other_store):
    run_id = _mixed_run(store)
    data = export_bundle(store, run_id)
    assert data["people"] == [{"name": "Ann", "position": 1}]
    assert data["schema_version"] == 4
    assert import_bundle(other_store, data) == run_id
    before, after = store.load_run(run_id), other_store.load_run(run_id)
    assert after.bids == before.bids and after.turns == before.turns
    assert after.messages == before.messages
    assert [(b.agent, b.kind, b.path, b.calls) for b in after.bids if b.turn == 2] == [
        ("A", "agent", "scripted", 1), ("Ann", "human", "human", 0), ("B", "agent", "scripted", 1)]
    assert [t.winner for t in after.turns] == ["A", "Ann", "A"]


def test_a_selectors_picks_survive_the_round_trip(store, other_store):
    run_id = _selector_run(store)
    import_bundle(other_store, export_bundle(store, run_id))
    turns = other_store.load_run(run_id).turns
    assert [(t.winner, t.rule_winner, t.human_pick, t.reason) for t in turns] == [
        ("B", "A", "B", "human_pick"), ("A", "A", "A", "highest_bid")]
    assert turns == store.load_run(run_id).turns


def _edited(data: dict, edit) -> dict:  # type: ignore[no-untyped-def, type-arg]
    data = copy.deepcopy(data)
    edit(data)
    return data


def _bid(data: dict, turn: int, name: str) -> dict:  # type: ignore[type-arg]
    return next(b for b in data["bids"] if b["turn"] == turn and b["agent"] == name)


def test_a_tampered_person_is_one_clear_error(store, subtests):  # type: ignore[no-untyped-def]
    data = export_bundle(store, _mixed_run(store))  # one run, each edit a subtest on a copy
    for case, (edit, says) in enumerate([
        (lambda d: d.update(people=[]), "does not match an agent of the spec"),
        (lambda d: d.update(people=[{"name": "A", "position": 1}]), "duplicate name 'A'"),
        (lambda d: d.update(people=[{"name": "Ann", "position": 7}]), "position 7"),
        (lambda d: _bid(d, 1, "Ann").update(kind="agent"), "kind"),
        (lambda d: _bid(d, 1, "A").update(kind="human"), "kind"),
        (lambda d: _bid(d, 1, "Ann").update(calls=3), "person's bid"),
        (lambda d: _bid(d, 2, "Ann").update(message="not what was posted"), "winning bid"),
        (lambda d: d.update(people=[{"name": "Ann\x1b[2J", "position": 1}]),
         "control character"),
    ]):
        with subtests.test(f"edit {case}: {says}"):
            with pytest.raises(ConfigError) as caught:
                read_bundle(_edited(data, edit))
            assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_tampered_pick_is_one_clear_error(store):  # type: ignore[no-untyped-def]
    data = export_bundle(store, _selector_run(store))
    for edit, says in [(lambda d: d["turns"][0].update(rule_winner="B"), "rule_winner"),
                       (lambda d: d["turns"][0].update(human_pick="Z"), "human_pick"),
                       (lambda d: d["turns"][1].update(human_pick="B"), "winner")]:
        with pytest.raises(ConfigError) as caught:
            read_bundle(_edited(data, edit))
        assert says in str(caught.value)


def test_a_version_2_bundle_without_people_still_imports(store, other_store):
    """A bundle written before people existed (v2: no `people`, no bid kind, no pick columns)."""
    data = export_bundle(store, _recorded(store, {"A": [(0.9, "a1"), (0.1, "")],
                                                  "B": [(0.2, ""), (0.1, "")]}, [], "A B",
                                          max_loops=4))
    data["schema_version"] = 2
    del data["people"]
    for bid in data["bids"]:
        del bid["kind"]
    for turn in data["turns"]:
        del turn["rule_winner"], turn["human_pick"]
    run_id = import_bundle(other_store, data)
    assert {b.kind for b in other_store.load_run(run_id).bids} == {"agent"}


def test_the_bid_csv_and_transcript_mark_a_person(store):  # type: ignore[no-untyped-def]
    run_id = _mixed_run(store)
    csv = bids_csv(store, run_id)
    header, *rows = csv.splitlines()
    assert "kind" in header.split(",")
    kind = header.split(",").index("kind")
    assert {r.split(",")[kind] for r in rows if ",Ann," in f",{r},"} == {"human"}
    text = transcript_markdown(store, run_id)
    assert "### Turn 2: Ann (a person)" in text and "### Turn 1: A\n" in text
    assert "- People: Ann" in text


def test_the_transcript_says_when_a_person_picked_the_speaker(store):  # type: ignore[no-untyped-def]
    text = transcript_markdown(store, _selector_run(store))
    assert "### Turn 1: B\n" in text and "picked by a person over the rule's A" in text
    assert text.count("picked by a person") == 1  # turn 2: the person accepted the rule's pick


def test_a_persons_name_and_draft_are_inert_in_the_csv_and_transcript(  # type: ignore[no-untyped-def]
        store):
    """A person's name and words are untrusted like a model's: a formula-like name and draft
    are defused in the CSV, Markdown in the name is escaped in the transcript."""
    name = "=Eve*[x](http://e.vil)"
    eve = Human(name, callback=_player({("bid", 1): SetBid(0.95, "=SUM(A1) **loud**"),
                                        ("post", 1): Post("")}))
    run_id = _recorded(store, {"A": [(0.2, "a1")]}, [eve], f"A {name}", max_loops=2)
    csv = bids_csv(store, run_id)
    assert "\n=Eve" not in csv and ",=Eve" not in csv and ",=SUM" not in csv
    assert ",human," in csv
    text = transcript_markdown(store, run_id)
    escaped = r"=Eve\*\[x\]\(http://e.vil\)"
    assert f"### Turn 1: {escaped} (a person)" in text and f"- People: {escaped}" in text
    assert "[x](" not in text  # no live link from a person's name


def test_one_agent_and_one_person_make_a_room_that_imports(  # type: ignore[no-untyped-def]
        store, other_store):
    """The spec of a room of one agent and one person lists a single agent: the import check
    counts the person toward the two participants a chat needs."""
    ann = Human("Ann", callback=_player({("bid", 1): SetBid(0.1, "")}))
    run_id = _recorded(store, {"A": [(0.9, "a1")]}, [ann], "Ann A", max_loops=2)
    data = export_bundle(store, run_id)
    assert len(data["spec"]["agents"]) == 1 and data["people"] == [{"name": "Ann", "position": 0}]
    import_bundle(other_store, data)
    assert other_store.load_run(run_id).bids == store.load_run(run_id).bids
