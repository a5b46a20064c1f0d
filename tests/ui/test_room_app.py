"""People in the room through AppTest: the people of the next run, a signed-in user joining the
seat that is theirs, a person picking who speaks, and a seat's controls clicked (Raise and Lower
hand, a slider score with a draft, Pass) as the room records them."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.run import room_logic as logic
from groupchat_ui.run import room_seats as seats
from tests.helpers.app_helpers import fill, goto, new_app, poll, session, status, texts


def add_person(at: AppTest, name: str, *, me: bool = False, picker: bool = False,
               user: str | None = None) -> None:
    at.text_input(key="room_person_name").set_value(name)
    at.checkbox(key="room_person_me").set_value(me)
    at.checkbox(key="room_person_picker").set_value(picker)
    if user is not None:
        at.text_input(key="room_person_user").set_value(user)
    at.button(key="room_add_person").click().run()
    assert not at.exception, [e.value for e in at.exception]


def prepare(at: AppTest) -> None:
    goto(at, "agents")
    at.button(key="load_preset").click().run()
    goto(at, "run")
    at.number_input(key="room_window").set_value(120.0)  # nothing expires during the test
    at.number_input(key="run_param_max_loops").set_value(4)


def markdown(at: AppTest) -> str:
    return texts(at.markdown) + " " + texts(at.caption)


def test_people_join_the_next_run_and_a_taken_name_is_refused(app: AppTest):
    prepare(app)
    add_person(app, "Ann", me=True)
    assert "**Ann** · person, bids · you" in markdown(app)
    add_person(app, "Ann")
    assert "Not added: the name 'Ann' is taken in this room: pick another" in texts(app.error)
    add_person(app, "Judge", picker=True)
    assert "**Judge** · person, picks who speaks" in markdown(app)
    app.button(key="room_remove_Judge").click().run()
    assert "Judge" not in markdown(app)


def test_a_signed_in_user_joins_the_seat_that_is_theirs(signed_in):
    alice = signed_in("alice")
    prepare(alice)
    add_person(alice, "Alice", me=True)
    add_person(alice, "Bobby", user="bob@example.org")
    alice.button(key="start_run").click().run()
    job_id = session(alice).current_job
    assert "You are **Alice** in this room." in markdown(alice)
    bob = signed_in("bob")
    joins = [b for b in bob.button if b.key == f"room_join_{job_id}"]
    assert joins, "bob is not invited"
    joins[0].click().run()
    assert "You are **Bobby** in this room." in markdown(bob)
    assert session(bob).current_job == job_id


def test_a_person_picks_who_speaks_and_analysis_shows_the_agreement_rate(app: AppTest):
    prepare(app)
    app.number_input(key="run_param_threshold").set_value(0.0)  # every sim bid can speak
    app.number_input(key="run_param_max_loops").set_value(3)
    add_person(app, "Judge", me=True, picker=True)
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    job_id = session(app).current_job
    picks = agreed = 0
    while not status(app).startswith(("status: finished", "status: error")):
        poll(app, lambda at: _rule_pick(at) is not None
             or status(at).startswith("status: finished"), "the picking phase")
        if status(app).startswith("status: finished"):
            break
        rule = next(m.value for m in app.info if "The bidding rule would pick" in m.value)
        cands = [b for b in app.button if (b.key or "").startswith("room_pick_")
                 and not (b.key or "").endswith("_rule")]
        assert len(cands) >= 2, [b.label for b in cands]  # the top bids, each with a button
        # the first pick goes against the rule, every later one names the rule's pick (a
        # turn the rule gives nobody is accepted as such: no pick recorded)
        if "**nobody**" in rule:
            choice = _rule_pick(app)
        else:
            against = picks == 0
            choice = next(b for b in cands if (f"**{b.label[4:-6]}**" in rule) != against)
            picks, agreed = picks + 1, agreed + (not against)
        turn_now = status(app)
        choice.click().run()
        poll(app, lambda at, before=turn_now: status(at) != before or not any(
            (b.key or "").endswith("_rule") for b in at.button), "the pick to be taken")
    run_id = job_registry.registry().snapshot(job_id).run_id
    RunStore().flush()
    goto(app, "analysis", run=str(run_id))
    line = texts(app.info)
    s = "s" if picks != 1 else ""
    assert f"A person picked who speaks on {picks} turn{s}; the bidding rule would have picked "\
        f"the same speaker on {agreed} (agreement {agreed / picks:.0%})." in line, line
    assert picks >= 2 and agreed == picks - 1


@pytest.mark.parametrize(("widget", "value", "said"), [
    ("room_window", 0.0, "must be a number above 0"),
    ("run_param_strategy", "round_robin",
     "people take part only with strategy 'bidding', not 'round_robin'")])
def test_a_room_start_refused_says_why_in_one_line(app: AppTest, widget: str, value: object,
                                                   said: str):
    prepare(app)
    add_person(app, "Ann", me=True)
    fill(app, **{widget: value})
    app.button(key="start_run").click().run()
    assert not app.exception, [e.value for e in app.exception]
    shown = texts(app.error).replace("\\_", "_")  # shown as markdown
    assert shown.startswith("The run did not start:") and said in shown, shown
    assert "\n" not in shown and "Traceback" not in shown
    assert session(app).current_job is None


def seat_controls(at: AppTest, turn: int = 1) -> bool:
    """The seat's bid controls for `turn` are drawn (that turn's bid window is open)."""
    return any(b.key == f"room_pass_{turn}" for b in at.button)


def _rule_pick(at: AppTest) -> Any:
    """This turn's "Accept the rule's pick" button (its key carries the turn), or None."""
    return next((b for b in at.button if (b.key or "").startswith("room_pick_")
                 and (b.key or "").endswith("_rule")), None)


def test_a_seat_raises_and_lowers_its_hand_bids_with_a_draft_and_passes(app: AppTest):
    """The seat's controls as clicked: Raise then Lower hand (down, out of the queue, no
    standing bid next window), a slider score with a draft (the bid the room takes), and Pass
    (score 0), for the starter and for a second seat held by its room link."""
    prepare(app)
    app.number_input(key="run_param_max_loops").set_value(3)  # the task and two turns
    add_person(app, "Ann", me=True)
    add_person(app, "Bob")
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    job_id = session(app).current_job
    room = seats.table().get(job_id).room
    bob = new_app(job=job_id, seat=app.session_state["room_tokens"][job_id]["Bob"])
    poll(app, seat_controls, "Ann's first bid window")
    assert room.snapshot().turn == 1

    app.button(key="room_raise").click().run()
    assert "1\\. Ann" in markdown(app) and room.snapshot().hands == ("Ann",)
    app.button(key="room_lower").click().run()
    ann = logic.person_state(room.snapshot(), "Ann")
    assert ann is not None and not ann.hand_up and not ann.bid_in  # the hand's bid went too
    assert "No hand up." in markdown(app) and room.snapshot().hands == ()

    app.slider(key=f"room_score_{job_id}").set_value(0.35)  # under the 0.5 threshold: no post
    app.text_area(key=f"room_draft_{job_id}_1").set_value("  Costs first, then scope.  ")
    app.button(key="room_bid").click().run()
    mine = next(b for b in room.snapshot().bids if b.name == "Ann")
    assert (mine.score, mine.message, mine.hand, mine.passed) == (
        0.35, "Costs first, then scope.", False, False)
    assert "Your bid this turn: score 0.35" in markdown(app)

    poll(bob, seat_controls, "Bob's first bid window")
    bob.button(key="room_pass_1").click().run()  # everyone has bid: the window closes early
    poll(app, lambda at: room.snapshot().turn == 2 and seat_controls(at, 2),
         "Ann's second bid window")
    snap = room.snapshot()
    ann = logic.person_state(snap, "Ann")
    assert ann is not None and not ann.hand_up and not ann.bid_in  # no standing hand bid
    assert snap.hands == () and "Ann" in snap.waiting_for
    app.button(key="room_pass_2").click().run()
    poll(bob, lambda at: seat_controls(at, 2), "Bob's second bid window")
    bob.button(key="room_pass_2").click().run()
    poll(app, lambda at: room.snapshot().turn > 2 or status(at).startswith("status: "
                                                                          "finished"),
         "turn 2 to be recorded")
    assert not status(app).startswith("status: error"), status(app)
    job_registry.registry().cancel(job_id)  # a lull would open turn 3: not needed here

    RunStore().flush()
    bids = RunStore().bids(job_registry.registry().snapshot(job_id).run_id)
    people = bids[(bids["kind"] == "human") & (bids["turn"] <= 2)]
    got = {(r.turn, r.agent): (r.score, r.message) for r in people.itertuples()}
    assert got == {(1, "Ann"): (0.35, "Costs first, then scope."), (1, "Bob"): (0.0, ""),
                   (2, "Ann"): (0.0, ""), (2, "Bob"): (0.0, "")}
    assert not people[people["score"] == 0.0]["eligible"].any()  # a pass can never speak
