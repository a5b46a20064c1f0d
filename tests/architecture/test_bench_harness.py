"""bench/_harness.py, what every benchmark shares: the order variants alternate in (the method
BENCHMARKS.md states), and `--write` replacing only its own block."""

from __future__ import annotations

from pathlib import Path

from bench import _harness as h


def test_alternate_rotates_the_order_each_round_and_keeps_each_variants_results_in_rounds():
    ran: list[str] = []
    found = h.alternate({k: (lambda k=k: ran.append(k) or f"{k}{len(ran)}") for k in "abc"}, 4)
    assert ran == list("abc" "bca" "cab" "abc")
    assert found == {"a": ["a1", "a6", "a8", "a10"], "b": ["b2", "b4", "b9", "b11"],
                     "c": ["c3", "c5", "c7", "c12"]}
    assert h.alternate({"x": lambda: 1, "y": lambda: 2}, 3) == {"x": [1, 1, 1], "y": [2, 2, 2]}


def test_repeat_times_each_call_after_its_warmup_on_the_clock_given():
    ticks = iter(range(100))
    calls: list[int] = []
    times = h.repeat(lambda: calls.append(1), 3, warmup=2, clock=lambda: float(next(ticks)))
    assert len(calls) == 5 and times == [1.0, 1.0, 1.0]
    assert h.quartiles([4.0, 1.0, 3.0, 2.0])[1] == h.median([1, 2, 3, 4]) == 2.5
    assert h.quantile(range(10), 0.9) == 9


def test_write_section_replaces_only_its_block_and_adds_a_missing_one(tmp_path: Path):
    doc = tmp_path / "B.md"
    doc.write_text("# B\n<!-- bench.a:begin -->\nold a\n<!-- bench.a:end -->\ntail\n")
    h.write_section("a", "new a\n", doc)
    h.write_section("b", "first b", doc)
    assert doc.read_text() == ("# B\n<!-- bench.a:begin -->\nnew a\n<!-- bench.a:end -->\ntail\n"
                               "\n<!-- bench.b:begin -->\nfirst b\n<!-- bench.b:end -->\n")
    assert h.table(["what", "s"], [["load", 0.5]]) == "| what | s |\n|---|---:|\n| load | 0.5 |"
