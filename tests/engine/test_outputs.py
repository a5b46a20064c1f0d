"""Specification tests for groupchat_core.engine._outputs (docs/engine.md §8).

Private imports (`engine._outputs`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from xml.etree import ElementTree as ET

import pytest
import yaml

from groupchat_core import OUTPUT_TYPES, Message, RunRecord
from groupchat_core.engine._outputs import chunks, format_output, stream_message

T0 = "2024-05-01T12:00:00+00:00"
T1 = "2024-05-01T12:00:01.500000+00:00"
T2 = "2024-05-01T12:00:03+00:00"
TASK = "Plan a picnic for Saturday"
ALICE = "Let's bring <script>alert('x')</script> & \"snacks\""
BOB = "Agreed.\nI'll bring a blanket."


def _record(*replies: Message) -> RunRecord:
    messages = [Message(role="User", content=TASK, timestamp=T0), *replies]
    return RunRecord(run_id="run-1", config={"threshold": 0.5}, task=TASK, messages=messages)


@pytest.fixture
def record() -> RunRecord:
    return _record(
        Message(role="Alice", content=ALICE, timestamp=T1, score=0.9),
        Message(role="Bob", content=BOB, timestamp=T2, score=0.75),
    )


@pytest.fixture
def quiet() -> RunRecord:
    return _record()


TASK_DICT = {"role": "User", "content": TASK, "timestamp": T0}
ALICE_DICT = {"role": "Alice", "content": ALICE, "timestamp": T1, "score": 0.9}
BOB_DICT = {"role": "Bob", "content": BOB, "timestamp": T2, "score": 0.75}


def test_output_types_are_exactly_the_spec_table() -> None:
    assert set(OUTPUT_TYPES) == {
        "list", "dict", "dictionary", "str", "string", "all", "final", "last", "json", "yaml",
        "xml", "dict-all-except-first", "str-all-except-first", "dict-final", "list-final",
        "basemodel",
    }
    assert len(OUTPUT_TYPES) == len(set(OUTPUT_TYPES))


def test_unknown_output_type_is_a_value_error(record: RunRecord) -> None:
    with pytest.raises(ValueError, match="bogus"):
        format_output(record, "bogus")


def test_message_dict_shape(record: RunRecord) -> None:
    dicts = format_output(record, "dict")
    assert list(dicts[0].keys()) == ["role", "content", "timestamp"]  # the task has no score
    assert list(dicts[1].keys()) == ["role", "content", "timestamp", "score"]


def test_default_timestamps_are_iso_utc() -> None:
    from datetime import datetime

    stamp = datetime.fromisoformat(Message(role="User", content="x").timestamp)
    assert stamp.utcoffset() == timedelta(0)


def test_list(record: RunRecord, quiet: RunRecord) -> None:
    assert format_output(record, "list") == [f"User: {TASK}", f"Alice: {ALICE}", f"Bob: {BOB}"]
    assert format_output(quiet, "list") == [f"User: {TASK}"]


@pytest.mark.parametrize("output_type", ["dict", "dictionary"])
def test_dict(record: RunRecord, quiet: RunRecord, output_type: str) -> None:
    assert format_output(record, output_type) == [TASK_DICT, ALICE_DICT, BOB_DICT]
    assert format_output(quiet, output_type) == [TASK_DICT]


@pytest.mark.parametrize(
    "output_type", ["dict", "dictionary", "dict-all-except-first", "dict-final"])
def test_dict_outputs_are_copies(record: RunRecord, output_type: str) -> None:
    out = format_output(record, output_type)
    items = out if isinstance(out, list) else [out]
    for d in items:
        d["content"] = "tampered"
        d["role"] = "Mallory"
        d["extra"] = 1
    if isinstance(out, list):
        out.clear()
    assert [m.content for m in record.messages] == [TASK, ALICE, BOB]
    assert [m.role for m in record.messages] == ["User", "Alice", "Bob"]
    assert format_output(record, "dict") == [TASK_DICT, ALICE_DICT, BOB_DICT]


@pytest.mark.parametrize("output_type", ["str", "string", "all"])
def test_str(record: RunRecord, quiet: RunRecord, output_type: str) -> None:
    assert format_output(record, output_type) == (
        f"[{T0}] User: {TASK}\n\n[{T1}] Alice: {ALICE}\n\n[{T2}] Bob: {BOB}"
    )
    assert format_output(quiet, output_type) == f"[{T0}] User: {TASK}"


@pytest.mark.parametrize("output_type", ["final", "last"])
def test_final(record: RunRecord, quiet: RunRecord, output_type: str) -> None:
    assert format_output(record, output_type) == BOB
    assert format_output(quiet, output_type) == TASK


def test_json_parses_back(record: RunRecord, quiet: RunRecord) -> None:
    out = format_output(record, "json")
    assert isinstance(out, str)
    assert json.loads(out) == [TASK_DICT, ALICE_DICT, BOB_DICT]
    assert json.loads(format_output(quiet, "json")) == [TASK_DICT]


def test_json_keeps_unicode(record: RunRecord) -> None:
    rec = _record(Message(role="Zoë", content="café ☕ 日本", timestamp=T1, score=0.6))
    assert json.loads(format_output(rec, "json"))[1]["content"] == "café ☕ 日本"


def test_yaml_parses_back(record: RunRecord, quiet: RunRecord) -> None:
    out = format_output(record, "yaml")
    assert isinstance(out, str)
    loaded = yaml.safe_load(out)
    assert loaded == [TASK_DICT, ALICE_DICT, BOB_DICT]
    assert isinstance(loaded[0]["timestamp"], str)  # not turned into a datetime
    assert yaml.safe_load(format_output(quiet, "yaml")) == [TASK_DICT]


def test_yaml_round_trips_awkward_content() -> None:
    awkward = ["yes", "null", "1.5", "- item", "key: value", "#hash", "", "  padded  ", "x\ty"]
    rec = _record(*(Message(role="A", content=c, timestamp=T1, score=0.6) for c in awkward))
    loaded = yaml.safe_load(format_output(rec, "yaml"))
    assert [d["content"] for d in loaded[1:]] == awkward


def _xml_messages(text: str) -> list[dict[str, str | None]]:
    root = ET.fromstring(text)
    return [{child.tag: child.text for child in node} for node in root]


def test_xml_parses_back(record: RunRecord, quiet: RunRecord) -> None:
    out = format_output(record, "xml")
    assert isinstance(out, str)
    messages = _xml_messages(out)
    assert [m["role"] for m in messages] == ["User", "Alice", "Bob"]
    assert [m["content"] for m in messages] == [TASK, ALICE, BOB]
    assert [m["timestamp"] for m in messages] == [T0, T1, T2]
    assert "score" not in messages[0]
    assert float(messages[1]["score"] or "nan") == 0.9
    assert [m["role"] for m in _xml_messages(format_output(quiet, "xml"))] == ["User"]


def test_xml_escapes_markup(record: RunRecord) -> None:
    out = format_output(record, "xml")
    assert "<script>" not in out
    assert "&lt;script&gt;" in out
    assert len(ET.fromstring(out).findall("./message")) == 3


def test_xml_stays_well_formed_with_control_characters() -> None:
    content = "red \x1b[31mALERT\x1b[0m bell\x07 nul\x00 end"
    out = format_output(_record(Message(role="A", content=content, timestamp=T1)), "xml")
    text = _xml_messages(out)[1]["content"] or ""
    assert text.startswith("red ") and text.endswith(" end")
    assert "ALERT" in text


@pytest.mark.parametrize("output_type", ["dict-all-except-first"])
def test_dict_all_except_first(record: RunRecord, quiet: RunRecord, output_type: str) -> None:
    assert format_output(record, output_type) == [ALICE_DICT, BOB_DICT]
    assert format_output(quiet, output_type) == []


def test_str_all_except_first(record: RunRecord, quiet: RunRecord) -> None:
    assert format_output(record, "str-all-except-first") == f"Alice: {ALICE}\n\nBob: {BOB}"
    assert format_output(quiet, "str-all-except-first") == ""


def test_dict_final(record: RunRecord, quiet: RunRecord) -> None:
    assert format_output(record, "dict-final") == BOB_DICT
    assert format_output(quiet, "dict-final") == TASK_DICT


def test_list_final(record: RunRecord, quiet: RunRecord) -> None:
    assert format_output(record, "list-final") == [BOB]
    assert format_output(quiet, "list-final") == [TASK]


def test_basemodel_is_an_independent_copy(record: RunRecord) -> None:
    out = format_output(record, "basemodel")
    assert isinstance(out, RunRecord)
    assert out == record
    assert out is not record
    out.messages[1].content = "tampered"
    out.messages.append(Message(role="X", content="y"))
    out.config["threshold"] = 0.9
    assert record.messages[1].content == ALICE
    assert len(record.messages) == 3
    assert record.config == {"threshold": 0.5}


ONLY_THE_TASK = {  # a run that never got past the task, in every output type
    "list": [f"User: {TASK}"],
    "dict": [TASK_DICT],
    "dictionary": [TASK_DICT],
    "str": f"[{T0}] User: {TASK}",
    "string": f"[{T0}] User: {TASK}",
    "all": f"[{T0}] User: {TASK}",
    "final": TASK,
    "last": TASK,
    "json": f'[{{"role": "User", "content": "{TASK}", "timestamp": "{T0}"}}]',
    "yaml": f"- role: User\n  content: {TASK}\n  timestamp: '{T0}'\n",
    "xml": (f"<messages><message><role>User</role><content>{TASK}</content>"
            f"<timestamp>{T0}</timestamp></message></messages>"),
    "dict-all-except-first": [],
    "str-all-except-first": "",
    "dict-final": TASK_DICT,
    "list-final": [TASK],
}


@pytest.mark.parametrize("output_type", OUTPUT_TYPES)
def test_every_output_type_works_with_only_the_task(quiet: RunRecord, output_type: str) -> None:
    out = format_output(quiet, output_type)
    if output_type == "basemodel":
        assert out == quiet and out is not quiet
    else:
        assert out == ONLY_THE_TASK[output_type]
    assert set(ONLY_THE_TASK) | {"basemodel"} == set(OUTPUT_TYPES)


# --- streaming a posted message ------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("hello world", ["hello ", "world"]),
        ("a b c", ["a ", "b ", "c"]),
        ("single", ["single"]),
        ("trailing ", ["trailing "]),
        ("two trailing  ", ["two ", "trailing ", " "]),
        (" leading", [" ", "leading"]),
        ("a  b", ["a ", " ", "b"]),
        ("a   b", ["a ", " ", " ", "b"]),
        ("", []),
        (" ", [" "]),
        ("  ", [" ", " "]),
        ("line\nbreak and\ttab", ["line\nbreak ", "and\ttab"]),
    ],
)
def test_chunks(content: str, expected: list[str]) -> None:
    got = list(chunks(content))
    assert got == expected
    assert "".join(got) == content


def _check_chunk_rules(content: str) -> None:
    got = list(chunks(content))
    assert "".join(got) == content
    assert all(got), "no empty chunks"
    for chunk in got[:-1]:
        assert chunk.endswith(" ")
    for chunk in got:
        assert " " not in chunk[:-1], "a chunk never spans a split point"
    expected_count = content.count(" ") + (1 if content and not content.endswith(" ") else 0)
    assert len(got) == expected_count


def test_chunks_randomized() -> None:
    rng = random.Random(0)
    for _ in range(400):
        content = "".join(rng.choice("a b") for _ in range(rng.randint(0, 25)))
        _check_chunk_rules(content)


def test_stream_message_calls_back_in_order_then_final() -> None:
    calls: list[tuple[str, str, bool]] = []
    stream_message(lambda *args: calls.append(args), Message(role="Alice", content="hi  there all"))
    assert calls == [
        ("Alice", "hi ", False),
        ("Alice", " ", False),
        ("Alice", "there ", False),
        ("Alice", "all", False),
        ("Alice", "", True),
    ]


def test_stream_message_of_empty_content_is_only_the_final_marker() -> None:
    calls: list[tuple[str, str, bool]] = []
    stream_message(lambda *args: calls.append(args), Message(role="User", content=""))
    assert calls == [("User", "", True)]


def test_stream_message_concatenation_equals_content() -> None:
    content = "  Multi-line\nreply  with  odd   spacing "
    calls: list[tuple[str, str, bool]] = []
    stream_message(lambda *args: calls.append(args), Message(role="Bob", content=content))
    assert "".join(chunk for _, chunk, final in calls if not final) == content
    assert [final for _, _, final in calls].count(True) == 1
    assert calls[-1] == ("Bob", "", True)
