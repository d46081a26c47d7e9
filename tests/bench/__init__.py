"""Benchmarks (scripts, not pytest tests): run e.g. `python -m tests.bench.bench_proxy`."""
