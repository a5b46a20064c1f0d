"""People in the room, the dashboard's side without a browser: seats and room-link tokens, the
people of the next run, and what the live room panel shows for a room snapshot."""

from __future__ import annotations

import pytest

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    Human,
    LiveBid,
    PersonState,
    RoomSnapshot,
)
from groupchat_ui.run import room_logic as logic
from groupchat_ui.run import room_seats as seats


def snap(**fields: object) -> RoomSnapshot:
    base: dict[str, object] = dict(
        version=1, run_id="r", turn=2, phase="bidding", deadline=10.0, time_left=12.4,
        bids=(), forming=(), hands=(), people=(), waiting_for=(), poster=None, candidates=(),
        rule_pick=None, picker=None, messages=())
    return RoomSnapshot(**{**base, **fields})  # type: ignore[arg-type]


def test_a_room_link_token_has_256_bits_and_only_its_hash_is_kept():
    token = seats.new_token()
    assert len(token) >= 43 and token != seats.new_token()
    seat = seats.Seat("Ann", None, seats.token_hash(token))
    assert token not in repr(seat) and seat.digest != token.encode()
    assert seat.matches(token)
    assert not seat.matches(token[:-1] + ("A" if token[-1] != "A" else "B"))
    assert not seat.matches("")


def test_a_seat_is_claimed_by_its_user_signed_in_or_by_its_link_token():
    table = seats.SeatTable()
    tok_ann, tok_bob = seats.new_token(), seats.new_token()
    table.register("job1", object(), [
        seats.Seat("Ann", "ann@example.org", seats.token_hash(tok_ann)),
        seats.Seat("Bob", None, seats.token_hash(tok_bob))])
    assert table.claim("job1", user="ann@example.org", signed_in=True, browser="b1") == ["Ann"]
    # without login every session is "local": the user field proves nothing, a token does
    assert table.claim("job1", user="ann@example.org", signed_in=False, browser="b9") == []
    assert table.claim("job1", user="local", signed_in=False, token=tok_bob,
                       browser="b2") == ["Bob"]
    assert table.claim("job1", user="eve@example.org", signed_in=True, token="guess",
                       browser="b3") == []
    assert table.claim("nojob", user="ann@example.org", signed_in=True, browser="b1") == []
    assert table.invitations("ann@example.org") == [("job1", "Ann")]
    assert table.forget(lambda job_id: False) == 1 and table.get("job1") is None


def test_a_link_seat_belongs_to_the_first_browser_and_another_browser_watches():
    """A link is a bearer token: before, a second browser opening it was seated as the same
    person. Now the first browser holds the seat (its reload too); any other is told why."""
    table = seats.SeatTable()
    tok = seats.new_token()
    table.register("j", object(), [seats.Seat("Bo", None, seats.token_hash(tok))])
    assert table.held_elsewhere("j", tok, "phone") is None  # nobody holds it yet
    assert table.claim("j", user="local", signed_in=False, token=tok, browser="phone") == ["Bo"]
    assert table.claim("j", user="local", signed_in=False, token=tok, browser="phone") == ["Bo"]
    assert table.claim("j", user="local", signed_in=False, token=tok, browser="laptop") == []
    assert table.held_elsewhere("j", tok, "laptop") == "Bo"
    # a reload of the holder's browser (same ?sid=), the link's seat= gone: still its seat
    assert table.claim("j", user="local", signed_in=False, browser="phone") == ["Bo"]
    assert table.claim("j", user="local", signed_in=False, browser="laptop") == []
    assert table.held_by("phone") == [("j", "Bo")] and table.held_by("laptop") == []
    assert table.held_elsewhere("j", tok, "phone") is None
    assert table.held_elsewhere("j", "wrong", "laptop") is None
    note = logic.watching_note(True, table.held_elsewhere("j", tok, "laptop"))
    assert note.startswith("You are watching: the seat of Bo is held by the browser that opened")
    assert "\n" not in note
    assert "opens no seat" in logic.watching_note(True, None)
    assert "not on this server" in logic.watching_note(False, None)


def test_the_starter_holds_their_own_seat_and_a_signed_in_user_theirs_in_any_browser():
    table = seats.SeatTable()
    tok_ann, tok_cy = seats.new_token(), seats.new_token()
    table.register("j", object(), [seats.Seat("Ann", None, seats.token_hash(tok_ann)),
                                   seats.Seat("Cy", "cy@example.org", seats.token_hash(tok_cy))])
    assert table.hold("j", "Ann", "starter") and table.hold("j", "Ann", "starter")
    assert not table.hold("j", "Ann", "other") and not table.hold("j", "Nobody", "starter")
    # Ann's own link, opened elsewhere, does not take her seat from the browser that started
    assert table.claim("j", user="local", signed_in=False, token=tok_ann, browser="other") == []
    assert table.claim("j", user="cy@example.org", signed_in=True, browser="cy1") == ["Cy"]
    assert table.claim("j", user="cy@example.org", signed_in=True, browser="cy2") == ["Cy"]
    assert table.claim("j", user="eve@example.org", signed_in=True, token=tok_cy,
                       browser="eve") == []  # Cy's link, once Cy holds the seat


def test_a_tab_silent_for_the_leave_time_is_reported_once_and_a_beat_brings_it_back():
    now = [100.0]
    table = seats.SeatTable(clock=lambda: now[0])
    table.register("j", object(), [seats.Seat("Ann", None, b"x"), seats.Seat("Bob", None, b"y")])
    table.beat("j", "Ann")
    now[0] += seats.LEAVE_AFTER_S - 0.1
    assert table.silent("j") == []  # Bob never had a tab open: the engine's window decides
    now[0] += 0.2
    assert table.silent("j") == ["Ann"]
    assert table.silent("j") == []  # reported once
    table.beat("j", "Ann")
    now[0] += 1.0
    assert table.silent("j") == []


def test_a_closed_tab_is_told_to_the_room_as_left_by_another_viewers_refresh():
    """seats.presence, what every open tab's refresh runs: Ann's tab beats; once it has been
    silent for the leave time (closed), a watcher's refresh tells the room she left (a pass,
    hand down); her tab's next refresh brings her back."""
    now = [100.0]
    table = seats.SeatTable(clock=lambda: now[0])
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"), Human("Ann")])
    room = chat.room
    assert room is not None
    table.register("j", chat, [seats.Seat("Ann", None, b"x")])
    assert seats.presence("j", room, "Ann", table) == []
    room.raise_hand("Ann")
    now[0] += seats.LEAVE_AFTER_S + 0.1  # the tab closed: no refresh beats for Ann
    assert seats.presence("j", room, None, table) == ["Ann"]
    ann = logic.person_state(room.snapshot(), "Ann")
    assert ann is not None and ann.left and not ann.hand_up
    assert seats.presence("j", room, None, table) == []  # told once
    assert seats.presence("j", room, "Ann", table) == []  # the tab is back
    ann = logic.person_state(room.snapshot(), "Ann")
    assert ann is not None and not ann.left


def test_people_of_the_next_run_are_checked_with_a_one_line_fix():
    people = logic.add_person([], "  Ann  ", "ann@example.org", picker=False, taken=["Sage"])
    assert people == [logic.Person("Ann", "ann@example.org", False)]
    with pytest.raises(ConfigError, match="taken"):
        logic.add_person(people, "Sage", None, picker=False, taken=["Sage"])
    with pytest.raises(ConfigError, match="taken"):
        logic.add_person(people, "Ann", None, picker=False, taken=[])
    with pytest.raises(ConfigError, match="1 to 60 characters"):
        logic.add_person(people, "   ", None, picker=False, taken=[])
    people = logic.add_person(people, "Judge", "", picker=True, taken=[])
    assert people[-1] == logic.Person("Judge", None, True)
    with pytest.raises(ConfigError, match="already has a person who picks"):
        logic.add_person(people, "Judge2", None, picker=True, taken=[])


def test_the_clock_line_the_hand_queue_and_the_room_link():
    assert logic.hand_queue(snap(hands=("Bob", "Ann"))) == ["1. Bob", "2. Ann"]  # as raised
    assert logic.room_link("http://h:1/", "abc", "tok") == "http://h:1/run?job=abc&seat=tok"
    assert logic.time_left_label(snap()) == "Turn 2 · bidding · 12 s left"
    assert logic.time_left_label(snap(phase="posting", time_left=40.0)) == \
        "Turn 2 · the winner is writing · 40 s left"
    assert logic.time_left_label(snap(turn=0, phase="idle", time_left=None)) == \
        "Room · waiting for the first turn"


def test_bid_rows_list_every_participant_in_roster_order_with_their_state():
    s = snap(bids=(LiveBid("Ann", "human", 0.8, hand=True), LiveBid("Sage", "agent", 0.61,
                                                                      "I think", 0.31)),
             forming=(LiveBid("Rex", "agent", None, "Well"),),
             people=(PersonState("Ann", None, True, True, False),
                     PersonState("Bob", None, False, False, False)))
    assert logic.bid_rows(s, ["Sage", "Rex", "Ann", "Bob"]) == [
        ("Sage", "agent", "score 0.61, adjusted 0.31", "I think"),
        ("Rex", "agent", "writing…", "Well"),
        ("Ann", "person", "score 0.80 (hand up)", ""),
        ("Bob", "person", "no bid yet", "")]
    assert logic.bid_status(LiveBid("Bob", "human", 0.0, passed=True)) == "passed"


def test_a_seat_gets_the_controls_of_its_phase_only():
    people = (PersonState("Ann", None, False, False, False),)
    assert logic.my_phase(snap(people=people), "Ann") == "bid"
    assert logic.my_phase(snap(people=people), None) is None
    assert logic.my_phase(snap(phase="posting", poster="Ann"), "Ann") == "post"
    assert logic.my_phase(snap(phase="posting", poster="Bob"), "Ann") is None
    assert logic.my_phase(snap(phase="picking", picker="Judge"), "Judge") == "pick"
    assert logic.my_phase(snap(phase="finished", people=people), "Ann") is None
