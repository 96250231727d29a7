"""Benchmarks behind ``omdp bench ...``: each measures one part and reports medians with the
machine and the command."""
