"""`crag bench ...`: benchmarks that print ratios measured within one run (never timed tests)."""
