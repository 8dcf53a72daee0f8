"""Speed benchmarks (throughput, latency, peak memory) and, in bench/peers/, the peers'
scripts they compare with. Run from the repository root as `python -m bench.<name>` (the
peers' scripts, in each peer's own environment, as `python bench/peers/<name>.py`); results
and commands are in docs/performance.md."""
