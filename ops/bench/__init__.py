"""Benchmarks behind ``omdp bench ...``: each writes JSON and prints what it measured."""
