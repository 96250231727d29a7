"""Nightly analytics on Spark: historical feeds (``feeds_job``), latency breakdowns and
sustainable-rate curves of the day's runs (``latency_job``), and the report that puts both
on one page (``nightly_job``). Each job module has a ``main`` for ``spark-submit``."""
