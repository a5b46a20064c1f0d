"""Benchmarks, one runnable module per issue (`python -m bench.engine`, ...); results and method
in BENCHMARKS.md."""
