"""Formatting a finished conversation per output_type (docs/engine.md §8) and streaming a posted
message to the caller's callback, chunk by chunk."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET

from .._config import OUTPUT_TYPES

if TYPE_CHECKING:
    from .._records import Message, RunRecord

StreamingCallback = Callable[[str, str, bool], None]



def _line(m: Message) -> str:
    return f"{m.role}: {m.content}"


# Characters XML 1.0 cannot hold at all (not even escaped); replaced so the output stays parseable.
_XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _to_xml(dicts: Sequence[dict[str, Any]]) -> str:
    root = ET.Element("messages")
    for d in dicts:
        node = ET.SubElement(root, "message")
        for key, value in d.items():
            ET.SubElement(node, key).text = _XML_ILLEGAL.sub("\ufffd", str(value))
    return ET.tostring(root, encoding="unicode")


def format_output(record: RunRecord, output_type: str) -> Any:
    """The conversation of a run, shaped as output_type asks (validated at construction)."""
    messages = record.messages
    dicts = [m.as_dict() for m in messages]
    last = messages[-1]
    if output_type == "list":
        return [_line(m) for m in messages]
    if output_type in ("dict", "dictionary"):
        return dicts
    if output_type in ("str", "string", "all"):
        return "\n\n".join(f"[{m.timestamp}] {_line(m)}" for m in messages)
    if output_type in ("final", "last"):
        return last.content
    if output_type == "json":
        return json.dumps(dicts, ensure_ascii=False)
    if output_type == "yaml":
        import yaml

        return yaml.safe_dump(dicts, sort_keys=False, allow_unicode=True)
    if output_type == "xml":
        return _to_xml(dicts)
    if output_type == "dict-all-except-first":
        return dicts[1:]
    if output_type == "str-all-except-first":
        return "\n\n".join(_line(m) for m in messages[1:])
    if output_type == "dict-final":
        return dicts[-1]
    if output_type == "list-final":
        return [last.content]
    if output_type == "basemodel":
        return record.model_copy(deep=True)
    raise ValueError(f"output_type {output_type!r} is not one of: {', '.join(OUTPUT_TYPES)}")


def chunks(content: str) -> Iterator[str]:
    """Split on single spaces; every chunk but the last keeps its space; no empty chunks."""
    parts = content.split(" ")
    for i, part in enumerate(parts):
        chunk = part if i == len(parts) - 1 else part + " "
        if chunk:
            yield chunk


def stream_message(callback: StreamingCallback, message: Message) -> None:
    """Replay one posted message to a streaming callback, then mark it final."""
    for chunk in chunks(message.content):
        callback(message.role, chunk, False)
    callback(message.role, "", True)
