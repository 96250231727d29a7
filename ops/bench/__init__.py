"""Benchmarks behind ``omdp bench ...``: each module adds one command to the ``bench`` group."""
