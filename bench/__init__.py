"""Benchmarks. Each compares the console with a reference measured in the same run and writes
its figures to bench/results/ (JSON per benchmark, and summary.md)."""
