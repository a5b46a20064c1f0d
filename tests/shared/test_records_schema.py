"""The run records describe themselves (docs/engine.md §9): every field of Message, Bid, Turn and
RunRecord has a description, and the JSON schema of a RunRecord (what a run bundle exports)
carries them; fixed value sets are Literals that match what the engine produces.

Private imports (`_records`, `engine._selection`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from groupchat_core import RESPOND_TOOL, Bid, Message, RunRecord, RunStatus, Turn, select_speaker
from groupchat_core._records import BidPath, StopReason, TurnReason
from groupchat_core.engine._selection import Candidate
from groupchat_core.store import RUN_STATUSES
from tests.helpers import ROOT

RECORD_MODELS: list[type[BaseModel]] = [Message, Bid, Turn, RunRecord]
ENGINE_DOC = ROOT / "docs" / "engine.md"


@pytest.mark.parametrize("model", RECORD_MODELS, ids=lambda m: m.__name__)
def test_every_field_has_a_description(model: type[BaseModel]) -> None:
    missing = [name for name, info in model.model_fields.items()
               if not (info.description or "").strip()]
    assert missing == [], f"{model.__name__} fields without a description: {missing}"


def _properties(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The properties of one model in a JSON schema (the root, or one of its $defs)."""
    node: dict[str, Any] = schema if schema.get("title") == name else schema["$defs"][name]
    properties: dict[str, Any] = node["properties"]
    return properties


@pytest.mark.parametrize("model", RECORD_MODELS, ids=lambda m: m.__name__)
def test_run_record_schema_carries_every_description(model: type[BaseModel]) -> None:
    schema = RunRecord.model_json_schema()
    properties = _properties(schema, model.__name__)
    assert set(properties) == set(model.model_fields)
    for name, info in model.model_fields.items():
        described = properties[name].get("description")
        assert described and described == info.description, (model.__name__, name)


def _enum_values(prop: dict[str, Any]) -> set[Any]:
    """Every value an enum-typed schema property allows (it may be split over an anyOf)."""
    values: set[Any] = set(prop.get("enum", []))
    if "const" in prop:
        values.add(prop["const"])
    for option in prop.get("anyOf", []):
        values |= _enum_values(option)
    return values


def test_schema_lists_the_fixed_value_sets() -> None:
    schema = RunRecord.model_json_schema()
    assert _enum_values(_properties(schema, "Turn")["reason"]) == {*get_args(TurnReason), ""}
    assert _enum_values(_properties(schema, "Bid")["path"]) == set(get_args(BidPath))
    assert _enum_values(_properties(schema, "RunRecord")["stop_reason"]) == set(
        get_args(StopReason))


def test_turn_reason_rejects_values_outside_the_set() -> None:
    with pytest.raises(ValidationError):
        Turn(turn=1, reason="because")  # type: ignore[arg-type]
    assert Turn(turn=1, reason="tie_by_order").reason == "tie_by_order"


@pytest.mark.parametrize(("bids", "recent", "reason"), [
    ([Candidate("A", 0.9, "a"), Candidate("B", 0.6, "b")], [], "highest_bid"),
    ([Candidate("A", 0.7, "a"), Candidate("B", 0.7, "b")], [], "tie_by_order"),
    ([Candidate("A", 0.9, "a"), Candidate("B", 0.7, "b")], ["A"], "penalty_changed_winner"),
    ([Candidate("A", 0.2, "a"), Candidate("B", 0.9, "")], [], "lull"),
    ([Candidate("A", 0.0, "", failed=True), Candidate("B", 0.0, "", failed=True)], [],
     "all_failed"),
])
def test_each_turn_reason_is_produced_and_accepted_by_turn(
    bids: list[Candidate], recent: list[str], reason: str,
) -> None:
    selection = select_speaker(bids, recent, threshold=0.5, recency_penalty=0.3)
    assert selection.reason == reason
    assert Turn.model_validate({"turn": 1, "reason": selection.reason}).reason == reason


def test_run_status_matches_the_store() -> None:
    assert get_args(RunStatus) == RUN_STATUSES


def test_engine_doc_lists_every_record_field() -> None:
    """docs/engine.md §9 names every field, so the contract and the models cannot drift apart."""
    text = ENGINE_DOC.read_text(encoding="utf-8")
    section = text[text.index("## 9. The run record"):text.index("## 10.")]
    for model in RECORD_MODELS:
        for name in model.model_fields:
            assert f"`{name}`" in section, f"§9 does not mention {model.__name__}.{name}"


def test_engine_doc_shows_the_respond_tool_exactly() -> None:
    """The JSON block of docs/engine.md §4 is RESPOND_TOOL, keys and their order included."""
    text = ENGINE_DOC.read_text(encoding="utf-8")
    section = text[text.index("## 4. "):text.index("## 5. ")]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    assert json.dumps(json.loads(block)) == json.dumps(RESPOND_TOOL)
