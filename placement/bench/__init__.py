"""Benchmarking tools: seeded instance generation, solver benchmarks, baselines, MILP export."""
