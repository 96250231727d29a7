"""Benchmarks behind ``omdp bench ...``: each measures, judges its targets and writes JSON."""
