"""The latency job: the day's run records into per-hop breakdowns, sustainability, sweep
curves and regressions against earlier nights."""
