"""Hosts emulated on this machine with network namespaces (tests, benchmarks, docs)."""
