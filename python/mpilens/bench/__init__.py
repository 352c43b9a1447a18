"""Benchmark drivers: launching mpilens-bench, its tables and plots, and the
engine benchmarks (alltoall, repro)."""
