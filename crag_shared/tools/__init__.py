"""crag's tooling, apart from the runtime: the `crag` command, batch runs (local and on Ray Data),
threshold calibration, combination fitting, evaluator training, the data readers and the benchmarks.
The runtime never imports it."""
