"""Writing one benchmark's figures into BENCHMARKS.md, between that benchmark's own markers."""

from __future__ import annotations

from pathlib import Path

BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def write_section(name: str, figures: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace only the text between `<!-- bench.NAME:begin/end -->` (re-read just before
    writing, so benchmarks run one after another never overwrite each other's sections)."""
    begin, end = f"<!-- bench.{name}:begin -->", f"<!-- bench.{name}:end -->"
    text = path.read_text()
    block = f"{begin}\n{figures}{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)
