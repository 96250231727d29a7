"""Metrics: latency and ingest collectors, the shared-memory stats segment, run records."""
