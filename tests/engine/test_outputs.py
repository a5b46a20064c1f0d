"""Specification tests for groupchat_core.engine._outputs (docs/engine.md §8).
Private imports (`engine._outputs`): units with no public name."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
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


def test_unknown_output_type_is_a_value_error(record: RunRecord) -> None:
    with pytest.raises(ValueError, match="bogus"):
        format_output(record, "bogus")


def test_message_dict_shape(record: RunRecord) -> None:
    dicts = format_output(record, "dict")
    assert list(dicts[0].keys()) == ["role", "content", "timestamp"]  # the task has no score
    assert list(dicts[1].keys()) == ["role", "content", "timestamp", "score"]


def test_default_timestamps_are_iso_utc() -> None:
    stamp = datetime.fromisoformat(Message(role="User", content="x").timestamp)
    assert stamp.utcoffset() == timedelta(0)


FULL = {  # the run with Alice's and Bob's replies; json, yaml, xml and basemodel are below
    "list": [f"User: {TASK}", f"Alice: {ALICE}", f"Bob: {BOB}"],
    "dict": [TASK_DICT, ALICE_DICT, BOB_DICT],
    "dictionary": [TASK_DICT, ALICE_DICT, BOB_DICT],
    **dict.fromkeys(["str", "string", "all"],
                    f"[{T0}] User: {TASK}\n\n[{T1}] Alice: {ALICE}\n\n[{T2}] Bob: {BOB}"),
    "final": BOB,
    "last": BOB,
    "dict-all-except-first": [ALICE_DICT, BOB_DICT],
    "str-all-except-first": f"Alice: {ALICE}\n\nBob: {BOB}",
    "dict-final": BOB_DICT,
    "list-final": [BOB],
}


@pytest.mark.parametrize("output_type", FULL)
def test_each_output_type_of_a_run_with_replies(record: RunRecord, output_type: str) -> None:
    assert format_output(record, output_type) == FULL[output_type]


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


def test_json_parses_back_and_keeps_unicode(record: RunRecord) -> None:
    out = format_output(record, "json")
    assert isinstance(out, str)
    assert json.loads(out) == [TASK_DICT, ALICE_DICT, BOB_DICT]
    rec = _record(Message(role="Zoë", content="café ☕ 日本", timestamp=T1, score=0.6))
    assert json.loads(format_output(rec, "json"))[1]["content"] == "café ☕ 日本"


def test_yaml_parses_back_even_awkward_content(record: RunRecord) -> None:
    out = format_output(record, "yaml")
    assert isinstance(out, str)
    loaded = yaml.safe_load(out)
    assert loaded == [TASK_DICT, ALICE_DICT, BOB_DICT]
    assert isinstance(loaded[0]["timestamp"], str)  # not turned into a datetime
    awkward = ["yes", "null", "1.5", "- item", "key: value", "#hash", "", "  padded  ", "x\ty"]
    rec = _record(*(Message(role="A", content=c, timestamp=T1, score=0.6) for c in awkward))
    loaded = yaml.safe_load(format_output(rec, "yaml"))
    assert [d["content"] for d in loaded[1:]] == awkward


def _xml_messages(text: str) -> list[dict[str, str | None]]:
    root = ET.fromstring(text)
    return [{child.tag: child.text for child in node} for node in root]


def test_xml_parses_back_and_escapes_markup(record: RunRecord) -> None:
    out = format_output(record, "xml")
    assert isinstance(out, str)
    messages = _xml_messages(out)
    assert [m["role"] for m in messages] == ["User", "Alice", "Bob"]
    assert [m["content"] for m in messages] == [TASK, ALICE, BOB]
    assert [m["timestamp"] for m in messages] == [T0, T1, T2]
    assert "score" not in messages[0]
    assert float(messages[1]["score"] or "nan") == 0.9
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert len(ET.fromstring(out).findall("./message")) == 3


def test_xml_stays_well_formed_with_control_characters() -> None:
    content = "red \x1b[31mALERT\x1b[0m bell\x07 nul\x00 end"
    out = format_output(_record(Message(role="A", content=content, timestamp=T1)), "xml")
    text = _xml_messages(out)[1]["content"] or ""
    assert text.startswith("red ") and text.endswith(" end")
    assert "ALERT" in text


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
    **dict.fromkeys(["str", "string", "all"], f"[{T0}] User: {TASK}"),
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


def test_output_types_are_exactly_the_spec_table() -> None:
    assert set(ONLY_THE_TASK) | {"basemodel"} == set(OUTPUT_TYPES)  # the table, row by row
    assert len(OUTPUT_TYPES) == len(set(OUTPUT_TYPES))


# --- streaming a posted message ------------------------------------------------------------


@pytest.mark.parametrize(("content", "expected"), [
    ("hello world", ["hello ", "world"]), ("a b c", ["a ", "b ", "c"]), ("single", ["single"]),
    ("trailing ", ["trailing "]), ("two trailing  ", ["two ", "trailing ", " "]),
    (" leading", [" ", "leading"]), ("a  b", ["a ", " ", "b"]), ("a   b", ["a ", " ", " ", "b"]),
    ("", []), (" ", [" "]), ("  ", [" ", " "]),
    ("line\nbreak and\ttab", ["line\nbreak ", "and\ttab"]),
])
def test_chunks(content: str, expected: list[str]) -> None:
    got = list(chunks(content))
    assert got == expected
    assert "".join(got) == content


def test_chunks_randomized() -> None:
    rng = random.Random(0)
    for _ in range(400):
        content = "".join(rng.choice("a b") for _ in range(rng.randint(0, 25)))
        got = list(chunks(content))
        assert "".join(got) == content
        assert all(got), "no empty chunks"
        assert all(chunk.endswith(" ") for chunk in got[:-1])
        assert all(" " not in chunk[:-1] for chunk in got), "a chunk never spans a split point"
        assert len(got) == content.count(" ") + (1 if content and not content.endswith(" ") else 0)


@pytest.mark.parametrize(("content", "expected"), [
    ("hi  there all", ["hi ", " ", "there ", "all"]),
    ("", []),  # only the final marker
    ("  Multi-line\nreply  with  odd   spacing ",
     [" ", " ", "Multi-line\nreply ", " ", "with ", " ", "odd ", " ", " ", "spacing "]),
])
def test_stream_message_calls_back_in_order_then_final_once(content: str,
                                                            expected: list[str]) -> None:
    calls: list[tuple[str, str, bool]] = []
    stream_message(lambda *args: calls.append(args), Message(role="Bob", content=content))
    assert calls == [("Bob", c, False) for c in expected] + [("Bob", "", True)]
    assert "".join(chunk for _, chunk, _ in calls) == content
