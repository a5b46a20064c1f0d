"""Run and sweep ids as people type them (issue 38): the full id or a unique prefix names one
item; unknown, ambiguous, too short and empty ids are errors naming what was asked and the
closest ids, never another item.

Private imports (`store._ids`, `store._sweeps`): the one resolver the store's `resolve` and
`resolve_sweep` call, tested as a pure function; `store._sweeps.uuid` is replaced to give
sweeps chosen ids.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from groupchat_core import StoreError
from groupchat_core.store import RunStore
from groupchat_core.store import _sweeps as sweeps_module
from groupchat_core.store._ids import MIN_PREFIX, UnknownId, closest, resolve_id
from tests.helpers.chats import scripted_chat

pytestmark = pytest.mark.usefixtures("fresh_engines")

IDS = ["37f8d78b9a12c0de", "37f8e000aaaa0000", "6e88a4da9a76ffff", "abcdef0123456789"]


def _never() -> list[str]:
    raise AssertionError("all ids were read although a prefix matched")


def _matching(wanted: str) -> list[str]:
    return [i for i in IDS if i.startswith(wanted)]


def test_a_full_id_or_a_unique_prefix_names_its_item():
    assert resolve_id("run", IDS[0], _matching(IDS[0]), _never) == IDS[0]
    assert resolve_id("run", "37f8d78b", _matching("37f8d78b"), _never) == IDS[0]
    assert resolve_id("sweep", "6e88a4da9a76", _matching("6e88a4da9a76"), _never) == IDS[2]


def test_a_full_id_wins_over_the_longer_ids_it_starts():
    assert resolve_id("sweep", "old", ["old", "old-sweep"], _never) == "old"


def test_an_ambiguous_prefix_is_an_error_listing_what_it_starts():
    with pytest.raises(UnknownId, match=r"run id '37f8' is ambiguous: it starts "
                                        r"37f8d78b9a12…, 37f8e000aaaa…; give more") as caught:
        resolve_id("run", "37f8", _matching("37f8"), _never)
    assert caught.value.closest == (IDS[0], IDS[1])


def test_an_unknown_id_is_an_error_naming_it_and_the_closest_ids():
    with pytest.raises(UnknownId) as caught:
        resolve_id("run", "37f9d78b", [], lambda: IDS, " in sqlite:///x.db")
    assert str(caught.value) == ("no run '37f9d78b' in sqlite:///x.db; closest: 37f8d78b9a12…, "
                                 "37f8e000aaaa…, 6e88a4da9a76…")
    assert isinstance(caught.value, StoreError)  # every caller's except clause still holds
    with pytest.raises(UnknownId, match="no sweep 'zzzz'; there are no sweeps yet"):
        resolve_id("sweep", "zzzz", [], list)


def test_a_prefix_too_short_to_be_meant_is_an_error_even_if_unique():
    short = "abc"
    assert len(short) < MIN_PREFIX and _matching(short) == [IDS[3]]
    with pytest.raises(UnknownId, match=r"run id 'abc' is too short: give at least 4 "
                                        r"characters of the id \(e.g. abcdef012345…\)"):
        resolve_id("run", short, _matching(short), _never)


def test_an_empty_id_is_an_error():
    with pytest.raises(UnknownId, match="no run id given"):
        resolve_id("run", "  ", [], lambda: IDS)


def test_closest_ranks_the_longest_shared_start_then_the_likest():
    assert closest("6e88a4db", IDS, n=2) == [IDS[2], IDS[0]]
    assert closest("abcdXf", IDS, n=1) == [IDS[3]]
    assert closest("x", [], n=3) == []


def test_the_store_resolves_runs_by_id_or_prefix(store: RunStore):
    chat = scripted_chat({"Ann": [(0.9, "hi")], "Bo": [(0.1, "")]}, max_loops=1)
    store.attach(chat)
    chat.run("go")
    run_id = chat.last_run.run_id
    assert store.resolve(run_id) == run_id
    assert store.resolve(run_id[:8]) == run_id
    with pytest.raises(UnknownId, match=rf"no run 'zzzz' in .*; closest: {run_id[:12]}…"):
        store.resolve("zzzz")
    with pytest.raises(UnknownId, match="too short"):
        store.resolve(run_id[:2])


def test_the_store_resolves_sweeps_by_id_or_prefix(store: RunStore,
                                                   monkeypatch: pytest.MonkeyPatch):
    chosen = iter(["6e88a4da9a76" + "0" * 20, "6e88a4da9a77" + "0" * 20, "old", "old-sweep"])
    monkeypatch.setattr(sweeps_module, "uuid", SimpleNamespace(
        uuid4=lambda: SimpleNamespace(hex=next(chosen))))
    ids = [store.create_sweep(f"s{i}", {"threshold": [0.5]}) for i in range(4)]
    assert store.resolve_sweep("6e88a4da9a76") == ids[0]
    assert store.get_sweep("6e88a4da9a77")["sweep_id"] == ids[1]
    assert store.get_sweep("old")["sweep_id"] == "old"  # a full id, though it starts another
    assert store.resolve_sweep("old-") == "old-sweep"
    with pytest.raises(UnknownId, match=r"sweep id '6e88a4da' is ambiguous"):
        store.get_sweep("6e88a4da")
    with pytest.raises(UnknownId, match=r"no sweep '6e88a4da9a78'; closest: 6e88a4da9a7"):
        store.resolve_sweep("6e88a4da9a78")


def test_many_longer_ids_do_not_hide_the_full_one(store: RunStore,
                                                  monkeypatch: pytest.MonkeyPatch):
    names = itertools.chain([f"run-{i}" for i in range(8)], ["run"])
    monkeypatch.setattr(sweeps_module, "uuid", SimpleNamespace(
        uuid4=lambda: SimpleNamespace(hex=next(names))))
    for i in range(9):
        store.create_sweep(f"s{i}", {})
    assert store.resolve_sweep("run") == "run"
