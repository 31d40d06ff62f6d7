"""`crag-bench NAME`: benchmarks that print ratios measured within one run (never timed tests)."""
